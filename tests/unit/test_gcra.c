/* test_gcra.c -- gcra (src/core/gcra.c) against hand-computed traces. */
#include "rig.h"

/* redis-cell's README: CL.THROTTLE user123 15 30 60 on a fresh key answers
 * limit 16, remaining 15, reset after 2 s. */
static void redis_cell_example(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 30, .period = SEC(60), .burst = 15});
    r->now = SEC(1000);
    sl_decision_t d = rig_check(r, "user123");
    assert_true(d.allowed);
    assert_false(d.limited);
    assert_int_equal(d.limit, 16);
    assert_int_equal(d.remaining, 15);
    assert_int_equal(d.reset_after, SEC(2));
    assert_int_equal(d.retry_after, 0);
    assert_int_equal(d.limit_index, 0);
    rig_free(r);
}

/* 10 per minute with a burst of 4: T = 6 s, tau = 30 s. */
static void burst_then_spacing(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(60), .burst = 4});
    for (int i = 0; i < 5; i++) {
        sl_decision_t d = rig_check(r, "k");
        assert_true(d.allowed);
        assert_int_equal(d.remaining, 4 - i);
        assert_int_equal(d.reset_after, SEC(6) * (i + 1));
    }
    sl_decision_t d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_true(d.limited);
    assert_int_equal(d.remaining, 0);
    assert_int_equal(d.retry_after, SEC(6));
    assert_int_equal(d.reset_after, SEC(30));
    /* Not a microsecond early. */
    assert_false(rig_allowed_at(r, SEC(6) - 1, "k"));
    assert_true(rig_allowed_at(r, SEC(6), "k"));
    assert_false(rig_allowed_at(r, SEC(6), "k"));
    /* A fully recovered key is a new key. */
    r->now = SEC(100);
    d = rig_peek_cost(r, "k", 1);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 5);
    assert_int_equal(d.reset_after, 0);
    rig_free(r);
}

/* burst 0: strictly spaced, one request per T. */
static void strictly_spaced(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(2)});
    assert_true(rig_allowed_at(r, SEC(10), "k"));
    assert_false(rig_allowed_at(r, SEC(11), "k"));
    sl_decision_t d = rig_check(r, "k");
    assert_int_equal(d.retry_after, SEC(1));
    assert_int_equal(d.limit, 1);
    assert_true(rig_allowed_at(r, SEC(12), "k"));
    rig_free(r);
}

/* T = 60 s / 7 is not a whole microsecond. An hour's worth (420) taken at
 * once comes back after exactly an hour: a truncated T would drift 240 us. */
static void non_integral_interval_is_exact(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 7, .period = SEC(60), .burst = 419});
    sl_decision_t d = rig_check_cost(r, "k", 420);
    assert_true(d.allowed);
    assert_int_equal(d.reset_after, SEC(3600));
    d = rig_peek_cost(r, "k", 420);
    assert_int_equal(d.retry_after, SEC(3600));
    d = rig_peek_cost(r, "k", 1);
    assert_int_equal(d.retry_after, 8571429); /* ceil(60e6 / 7) */
    r->now = SEC(3600) - 1;
    assert_false(rig_peek_cost(r, "k", 420).allowed);
    assert_int_equal(rig_peek_cost(r, "k", 1).remaining, 419);
    r->now = SEC(3600);
    assert_true(rig_check_cost(r, "k", 420).allowed);
    rig_free(r);
}

static void cost_and_peek(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(10), .burst = 9});
    sl_decision_t d = rig_check_cost(r, "k", 7);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 3);
    d = rig_peek_cost(r, "k", 4);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(1));
    assert_int_equal(d.remaining, 3);
    d = rig_check_cost(r, "k", 0); /* cost 0 charges nothing */
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 3);
    d = rig_check_cost(r, "k", 3);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    d = rig_check_cost(r, "k", 11); /* more than the capacity: never */
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SL_NEVER);
    rig_free(r);
}

static void period_of_one_microsecond(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = 1});
    for (sl_usec_t t = 5; t < 50; t++) {
        assert_true(rig_allowed_at(r, t, "k"));
        assert_false(rig_allowed_at(r, t, "k"));
    }
    rig_free(r);
    /* 10 per microsecond: T is a tenth of a microsecond, still exact. */
    r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = 1, .burst = 9});
    int allowed = 0;
    for (int i = 0; i < 30; i++)
        allowed += rig_allowed_at(r, 7, "k");
    assert_int_equal(allowed, 10);
    assert_true(rig_allowed_at(r, 8, "k"));
    rig_free(r);
}

static void time_going_backwards(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 2, .period = SEC(10), .burst = 1});
    r->now = SEC(100000);
    assert_true(rig_check(r, "k").allowed);
    assert_true(rig_check(r, "k").allowed);
    /* An hour back: the state looks far in the future. It counts as an empty
     * bucket, not as an hour of debt. */
    r->now = SEC(100000) - MIN(60);
    sl_decision_t d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_true(d.retry_after <= SEC(5));
    r->now += d.retry_after;
    assert_true(rig_check(r, "k").allowed);
    assert_false(rig_check(r, "k").allowed);
    /* Negative clocks are clamped to 0. */
    r->now = -SEC(5);
    d = rig_check(r, "other");
    assert_true(d.allowed);
    rig_free(r);
}

static void huge_values(void **state) {
    (void)state;
    /* The longest period accepted. */
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = INT64_C(1) << 61});
    r->now = SEC(1) << 20;
    assert_true(rig_check(r, "k").allowed);
    sl_decision_t d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, INT64_C(1) << 61);
    d = rig_check_cost(r, "k", UINT64_MAX);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SL_NEVER);
    rig_free(r);

    /* The latest time accepted, and beyond (clamped). */
    r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 5, .period = SEC(1), .burst = 4});
    r->now = INT64_MAX;
    assert_true(rig_check(r, "k").allowed);
    assert_int_equal(rig_check(r, "k").remaining, 3);
    rig_free(r);

    const char *why = NULL;
    sl_limit_t too_long = {.algorithm = SL_GCRA, .limit = 1, .period = (INT64_C(1) << 61) + 1};
    assert_int_equal(sl_limit_validate(&too_long, &why), SL_ERANGE);
    sl_limit_t too_wide = {.algorithm = SL_GCRA, .limit = 1, .period = SEC(86400), .burst = UINT64_C(1) << 40};
    assert_int_equal(sl_limit_validate(&too_wide, &why), SL_ERANGE);
    assert_non_null(strstr(why, "capacity"));
    sl_limit_t max_burst = {.algorithm = SL_GCRA, .limit = 1, .period = 1, .burst = UINT64_MAX};
    assert_int_equal(sl_limit_validate(&max_burst, &why), SL_ERANGE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis_cell_example),
        cmocka_unit_test(burst_then_spacing),
        cmocka_unit_test(strictly_spaced),
        cmocka_unit_test(non_integral_interval_is_exact),
        cmocka_unit_test(cost_and_peek),
        cmocka_unit_test(period_of_one_microsecond),
        cmocka_unit_test(time_going_backwards),
        cmocka_unit_test(huge_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
