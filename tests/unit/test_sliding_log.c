/* test_sliding_log.c -- the exact sliding window (src/core/sliding_log.c). */
#include "rig.h"

/* The trace that lets a fixed window pass 6 at 3 per minute: the log
 * passes 3. */
static void three_where_the_fixed_window_passes_six(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 3, .period = MIN(1)});
    const sl_usec_t at[] = {MS(59000), MS(59500), MS(59900), MS(60000), MS(60500), MS(60900)};
    int allowed = 0;
    for (int i = 0; i < 6; i++)
        allowed += rig_allowed_at(r, at[i], "u");
    assert_int_equal(allowed, 3);
    r->now = MS(60900);
    sl_decision_t d = rig_check(r, "u");
    assert_int_equal(d.retry_after, MS(59000) + MIN(1) - MS(60900));
    assert_int_equal(d.reset_after, MS(59900) + MIN(1) - MS(60900));
    /* The first entry leaves exactly one period after it came. */
    assert_false(rig_allowed_at(r, MS(119000) - 1, "u"));
    assert_true(rig_allowed_at(r, MS(119000), "u"));
    rig_free(r);
}

static void costs_take_several_entries(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 10, .period = SEC(10)});
    r->now = SEC(1);
    assert_true(rig_check_cost(r, "u", 4).allowed);
    r->now = SEC(2);
    sl_decision_t d = rig_check_cost(r, "u", 6);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(d.reset_after, SEC(10));
    r->now = SEC(3);
    d = rig_check_cost(r, "u", 5);
    assert_false(d.allowed);
    /* 5 must leave: the 4 of t=1 and one of t=2. */
    assert_int_equal(d.retry_after, SEC(9));
    d = rig_check_cost(r, "u", 4);
    assert_int_equal(d.retry_after, SEC(8));
    assert_int_equal(rig_check_cost(r, "u", 11).retry_after, SL_NEVER);
    rig_free(r);
}

/* Periods over 2^31 us keep 64-bit timestamps: 500 per hour. */
static void long_periods(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 500, .period = MIN(60)});
    int allowed = 0;
    for (int i = 0; i < 1000; i++)
        allowed += rig_allowed_at(r, SEC(1000) + SEC(3) * i, "u");
    assert_int_equal(allowed, 500);
    /* The first came at 1000 s: it leaves at 4600 s. */
    r->now = SEC(4600) - 1;
    assert_false(rig_peek_cost(r, "u", 1).allowed);
    r->now = SEC(4600);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 1);
    rig_free(r);
}

/* 32-bit timestamps wrap every ~71 minutes; ages must not. */
static void wrapping_timestamps(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 2, .period = MIN(30)});
    sl_usec_t t = (INT64_C(1) << 32) * 5 - MIN(20);
    assert_true(rig_allowed_at(r, t, "u"));
    assert_true(rig_allowed_at(r, t + MIN(29), "u")); /* past a wrap */
    assert_false(rig_allowed_at(r, t + MIN(29) + 1, "u"));
    assert_true(rig_allowed_at(r, t + MIN(30), "u"));
    /* Idle for hours: the whole log has expired. */
    r->now = t + MIN(600);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 2);
    rig_free(r);
}

static void count_denied_keeps_a_hammering_client_out(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 3, .period = SEC(10), .count_denied = true});
    for (sl_usec_t t = 0; t < SEC(60); t += SEC(1))
        rig_allowed_at(r, t, "u");
    /* Hammered once a second for a minute: still out, until it pauses a
     * whole period. */
    assert_false(rig_allowed_at(r, SEC(60), "u"));
    assert_true(rig_allowed_at(r, SEC(70), "u"));
    rig_free(r);
}

static void time_going_backwards(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 2, .period = SEC(10)});
    r->now = MIN(100);
    assert_true(rig_check(r, "u").allowed);
    assert_true(rig_check(r, "u").allowed);
    r->now = MIN(40);
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(10));
    r->now += d.retry_after;
    assert_true(rig_check(r, "u").allowed);
    rig_free(r);
}

static void limits_of_the_log(void **state) {
    (void)state;
    const char *why = NULL;
    sl_limit_t l = {.algorithm = SL_SLIDING_LOG, .limit = (UINT64_C(1) << 20) + 1, .period = SEC(1)};
    assert_int_equal(sl_limit_validate(&l, &why), SL_ERANGE);
    assert_non_null(strstr(why, "sliding_window"));
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 1, .period = 1});
    for (sl_usec_t t = 1; t < 50; t++) {
        assert_true(rig_allowed_at(r, t, "u"));
        assert_false(rig_allowed_at(r, t, "u"));
    }
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(three_where_the_fixed_window_passes_six),
        cmocka_unit_test(costs_take_several_entries),
        cmocka_unit_test(long_periods),
        cmocka_unit_test(wrapping_timestamps),
        cmocka_unit_test(count_denied_keeps_a_hammering_client_out),
        cmocka_unit_test(time_going_backwards),
        cmocka_unit_test(limits_of_the_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
