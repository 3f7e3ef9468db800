/* test_rates.c -- per-second decision counts (src/server/observe/rates.c)
 * on a fake clock: summed over workers, placed in their second, forgotten
 * after 15 minutes. */
#include "rig.h"
#include "server/observe/rates.h"

#define T0 (SEC(6000))

static void counts_land_in_their_second(void **state) {
    (void)state;
    sld_rates_t *r;
    assert_int_equal(sld_rates_new(2, 3, &r), SL_OK);
    static uint64_t out[SLD_RATES_SECONDS][SLD_RATE_COLUMNS];
    assert_int_equal(sld_rates_read(r, 1, T0, 10, out), 0); /* never counted */
    sld_rates_note(r, 0, 1, SLD_ALLOWED, false, T0);
    sld_rates_note(r, 1, 1, SLD_ALLOWED, false, T0 + MS(999));
    sld_rates_note(r, 1, 1, SLD_DENIED, false, T0 + SEC(1));
    sld_rates_note(r, 0, 2, SLD_DENIED, false, T0); /* another slot */
    /* the current second is not shown; a second on it is the last */
    assert_int_equal(sld_rates_read(r, 1, T0 + SEC(2), 3, out), 1);
    assert_int_equal(out[0][SLD_ALLOWED], 0);
    assert_int_equal(out[1][SLD_ALLOWED], 2);
    assert_int_equal(out[1][SLD_DENIED], 0);
    assert_int_equal(out[2][SLD_DENIED], 1);
    assert_int_equal(out[2][SLD_LIMITED], 0);
    /* 15 minutes on, the bucket of T0 is reused and starts at zero */
    sld_rates_note(r, 0, 1, SLD_LIMITED, false, T0 + SEC(SLD_RATES_SECONDS));
    assert_int_equal(sld_rates_read(r, 1, T0 + SEC(SLD_RATES_SECONDS + 1), SLD_RATES_SECONDS, out), 1);
    uint64_t sum[SLD_RESULTS] = {0};
    for (size_t i = 0; i < SLD_RATES_SECONDS; i++)
        for (size_t k = 0; k < SLD_RESULTS; k++)
            sum[k] += out[i][k];
    assert_int_equal(sum[SLD_ALLOWED], 0); /* T0's second is past the window */
    assert_int_equal(sum[SLD_DENIED], 1);  /* T0 + 1 s is its first second */
    assert_int_equal(sum[SLD_LIMITED], 1);
    sld_rates_free(r);
}

/* delayed is a column beside the results: an admitted decision with a
 * delay counts in its result and in delayed. */
static void delayed_is_counted_beside_its_result(void **state) {
    (void)state;
    sld_rates_t *r;
    assert_int_equal(sld_rates_new(2, 1, &r), SL_OK);
    sld_rates_note(r, 0, 0, SLD_ALLOWED, true, T0);
    sld_rates_note(r, 1, 0, SLD_ALLOWED, true, T0 + MS(10));
    sld_rates_note(r, 1, 0, SLD_ALLOWED, false, T0 + MS(20));
    sld_rates_note(r, 0, 0, SLD_LIMITED, true, T0 + MS(30));
    static uint64_t out[SLD_RATES_SECONDS][SLD_RATE_COLUMNS];
    assert_int_equal(sld_rates_read(r, 0, T0 + SEC(1), 1, out), 1);
    assert_int_equal(out[0][SLD_ALLOWED], 3);
    assert_int_equal(out[0][SLD_LIMITED], 1);
    assert_int_equal(out[0][SLD_RATE_DELAYED], 3);
    /* a reused bucket starts its delayed column at zero too */
    sld_rates_note(r, 0, 0, SLD_DENIED, false, T0 + SEC(SLD_RATES_SECONDS));
    assert_int_equal(sld_rates_read(r, 0, T0 + SEC(SLD_RATES_SECONDS + 1), 1, out), 1);
    assert_int_equal(out[0][SLD_RATE_DELAYED], 0);
    assert_int_equal(out[0][SLD_DENIED], 1);
    sld_rates_free(r);
}

/* The engine's run hook adds a run's counts at once: the same as noting
 * them one by one, into an existing or a reused bucket; bad input ignored. */
static void added_counts_are_the_notes_summed(void **state) {
    (void)state;
    sld_rates_t *a, *b;
    assert_int_equal(sld_rates_new(2, 2, &a), SL_OK);
    assert_int_equal(sld_rates_new(2, 2, &b), SL_OK);
    sld_rates_note(a, 1, 1, SLD_ALLOWED, true, T0);
    sld_rates_note(a, 1, 1, SLD_ALLOWED, false, T0);
    sld_rates_note(a, 1, 1, SLD_DENIED, false, T0);
    sld_rates_note(a, 0, 1, SLD_LIMITED, false, T0 + SEC(1));
    sld_rates_note(b, 1, 1, SLD_ALLOWED, true, T0); /* then two more the run adds */
    uint32_t run[SLD_RATE_COLUMNS] = {0};
    run[SLD_ALLOWED] = 1, run[SLD_DENIED] = 1;
    sld_rates_add_second(b, 1, 1, T0 / SEC(1), run);
    uint32_t next[SLD_RATE_COLUMNS] = {0};
    next[SLD_LIMITED] = 1;
    sld_rates_add_second(b, 0, 1, T0 / SEC(1) + 1, next);
    sld_rates_add_second(b, 2, 1, T0 / SEC(1), run);  /* no such worker */
    sld_rates_add_second(b, 0, 2, T0 / SEC(1), run);  /* no such slot */
    sld_rates_add_second(b, 0, 1, -1, run);           /* no clock */
    static uint64_t oa[SLD_RATES_SECONDS][SLD_RATE_COLUMNS], ob[SLD_RATES_SECONDS][SLD_RATE_COLUMNS];
    assert_int_equal(sld_rates_read(a, 1, T0 + SEC(2), 3, oa), 1);
    assert_int_equal(sld_rates_read(b, 1, T0 + SEC(2), 3, ob), 1);
    assert_memory_equal(oa, ob, 3 * sizeof oa[0]);
    assert_int_equal(ob[1][SLD_ALLOWED], 2);
    assert_int_equal(ob[1][SLD_RATE_DELAYED], 1);
    assert_int_equal(ob[2][SLD_LIMITED], 1);
    /* 15 minutes on, an add to the reused bucket starts it at zero */
    sld_rates_add_second(b, 1, 1, T0 / SEC(1) + SLD_RATES_SECONDS, next);
    assert_int_equal(sld_rates_read(b, 1, T0 + SEC(SLD_RATES_SECONDS + 1), 1, ob), 1);
    assert_int_equal(ob[0][SLD_LIMITED], 1);
    assert_int_equal(ob[0][SLD_ALLOWED], 0);
    sld_rates_free(a);
    sld_rates_free(b);
}

static void bad_input_is_ignored(void **state) {
    (void)state;
    sld_rates_t *r;
    assert_int_equal(sld_rates_new(0, 3, &r), SL_EINVAL);
    assert_int_equal(sld_rates_new(1, 1, &r), SL_OK);
    sld_rates_note(r, 1, 0, SLD_ALLOWED, false, T0);
    sld_rates_note(r, 0, 1, SLD_ALLOWED, false, T0);
    sld_rates_note(r, 0, 0, SLD_RESULTS, false, T0);
    sld_rates_note(r, 0, 0, SLD_ALLOWED, false, -1);
    static uint64_t out[SLD_RATES_SECONDS][SLD_RATE_COLUMNS];
    assert_int_equal(sld_rates_read(r, 0, T0 + SEC(1), SLD_RATES_SECONDS + 5, out), 0);
    assert_int_equal(sld_rates_read(r, 7, T0, 1, out), 0);
    sld_rates_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_land_in_their_second),
        cmocka_unit_test(delayed_is_counted_beside_its_result),
        cmocka_unit_test(added_counts_are_the_notes_summed),
        cmocka_unit_test(bad_input_is_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
