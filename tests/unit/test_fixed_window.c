/* test_fixed_window.c -- fixed_window (src/core/window.c). */
#include "rig.h"

static const sl_limit_t three_per_minute = {.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = MIN(1)};

/* The articles' flaw, kept on purpose: at 3 per minute, 6 requests pass in
 * under 2 s across a window boundary. */
static void six_in_two_seconds_across_a_boundary(void **state) {
    (void)state;
    rig_t *r = rig_one(three_per_minute);
    const sl_usec_t at[] = {MS(59000), MS(59500), MS(59900), MS(60000), MS(60500), MS(60900)};
    int allowed = 0;
    for (int i = 0; i < 6; i++)
        allowed += rig_allowed_at(r, at[i], "u");
    assert_int_equal(allowed, 6);
    assert_false(rig_allowed_at(r, MS(61000), "u"));
    rig_free(r);
}

static void counts_per_window(void **state) {
    (void)state;
    rig_t *r = rig_one(three_per_minute);
    r->now = SEC(10);
    sl_decision_t d = rig_check(r, "u");
    assert_true(d.allowed);
    assert_int_equal(d.limit, 3);
    assert_int_equal(d.remaining, 2);
    assert_int_equal(d.reset_after, SEC(50));
    assert_true(rig_check_cost(r, "u", 2).allowed);
    d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(d.retry_after, SEC(50));
    assert_int_equal(rig_check_cost(r, "u", 4).retry_after, SL_NEVER);
    /* A denied request is not counted: the next window starts at 0. */
    r->now = SEC(60);
    d = rig_peek_cost(r, "u", 3);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 3);
    rig_free(r);
}

static void count_denied_counts_every_request(void **state) {
    (void)state;
    sl_limit_t l = three_per_minute;
    l.count_denied = true;
    rig_t *r = rig_one(l);
    for (int i = 0; i < 10; i++)
        rig_check(r, "u");
    sl_decision_t d = rig_peek_cost(r, "u", 1);
    assert_false(d.allowed);
    assert_int_equal(d.remaining, 0);
    /* Still one window only. */
    assert_true(rig_allowed_at(r, SEC(60), "u"));
    rig_free(r);
}

static void time_going_backwards(void **state) {
    (void)state;
    rig_t *r = rig_one(three_per_minute);
    r->now = MIN(600);
    for (int i = 0; i < 3; i++)
        assert_true(rig_check(r, "u").allowed);
    /* Back ten minutes: the count moves to the window of now and lasts at
     * most one period. */
    r->now = MIN(590) + SEC(30);
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(30));
    r->now += d.retry_after;
    assert_true(rig_check(r, "u").allowed);
    rig_free(r);
}

static void one_microsecond_windows(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = 1});
    for (sl_usec_t t = 1; t < 100; t++) {
        assert_true(rig_allowed_at(r, t, "u"));
        assert_true(rig_allowed_at(r, t, "u"));
        assert_false(rig_allowed_at(r, t, "u"));
    }
    rig_free(r);
}

static void limits_of_the_counter(void **state) {
    (void)state;
    const char *why = NULL;
    sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = UINT64_C(1) << 32, .period = SEC(1)};
    assert_int_equal(sl_limit_validate(&l, &why), SL_ERANGE);
    l.limit = UINT32_MAX;
    assert_int_equal(sl_limit_validate(&l, &why), SL_OK);
    l.burst = 3;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    l.burst = 0;
    l.precision = 4;
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    /* The longest period; a request at the latest time. */
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 1, .period = INT64_C(1) << 61});
    r->now = INT64_MAX;
    assert_true(rig_check(r, "u").allowed);
    sl_decision_t d = rig_check_cost(r, "u", UINT64_MAX);
    assert_int_equal(d.retry_after, SL_NEVER);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(six_in_two_seconds_across_a_boundary),
        cmocka_unit_test(counts_per_window),
        cmocka_unit_test(count_denied_counts_every_request),
        cmocka_unit_test(time_going_backwards),
        cmocka_unit_test(one_microsecond_windows),
        cmocka_unit_test(limits_of_the_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
