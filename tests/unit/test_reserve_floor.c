/* test_reserve_floor.c -- sl__reserve (store/reserve.h): a peek at the
 * place a reservation would get charges nothing, and a floor (not_before)
 * puts the place no earlier than that, charged then -- what a request
 * under several policies needs to wait all or nothing at the latest of
 * their places. Fake clock throughout. */
#include "rig.h"

#include "store/reserve.h"

static sl_decision_t ex(rig_t *r, const char *key, sl_usec_t wait, sl_usec_t floor, bool peek) {
    sl_decision_t d;
    memset(&d, 0xA5, sizeof d);
    assert_int_equal(sl__reserve(r->limiter, r->policy, key, strlen(key), 1, wait, floor, peek, &d, NULL, NULL),
                     SL_OK);
    return d;
}

static void assert_same(sl_decision_t a, sl_decision_t b) {
    assert_int_equal(a.allowed, b.allowed);
    assert_int_equal(a.remaining, b.remaining);
    assert_int_equal(a.reset_after, b.reset_after);
    assert_int_equal(a.retry_after, b.retry_after);
}

/* gcra 10/s, burst 0: a peek says where the place is and leaves it free;
 * a floor of 300 ms charges the slot at 300 ms, so the next waiter's slot
 * is 400 ms: the slots at 100 and 200 ms are not given to later waiters
 * (the schedule goes on from the last place held: conservative). */
static void gcra_peek_and_floor(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    r->now = SEC(100);
    assert_true(rig_check(r, "k").allowed); /* slot 0 taken: the next is 100 ms away */
    sl_decision_t before = rig_peek_cost(r, "k", 1);
    for (int i = 0; i < 3; i++) {
        sl_decision_t d = ex(r, "k", SEC(1), 0, true);
        assert_true(d.allowed);
        assert_int_equal(d.delay, MS(100));
        assert_same(before, rig_peek_cost(r, "k", 1));
    }
    /* a peek past max_wait: denied, with the usual retry */
    sl_decision_t d = ex(r, "k", MS(40), 0, true);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(60));
    /* a peek with a floor reports the floor */
    assert_int_equal(ex(r, "k", SEC(1), MS(300), true).delay, MS(300));
    assert_same(before, rig_peek_cost(r, "k", 1));
    /* charged at the floor */
    d = ex(r, "k", SEC(1), MS(300), false);
    assert_true(d.allowed);
    assert_int_equal(d.delay, MS(300));
    assert_int_equal(ex(r, "k", SEC(1), 0, false).delay, MS(400));
    /* a floor earlier than the own place changes nothing */
    assert_int_equal(ex(r, "k", SEC(1), MS(100), false).delay, MS(500));
    rig_free(r);
}

/* fixed_window 3/s from the middle of a full window: a floor of 700 ms is
 * in the next window, charged there; the window of now stays as it was. */
static void fixed_window_floor(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(1)});
    r->now = SEC(10) + MS(500);
    assert_true(rig_check(r, "w").allowed);
    sl_decision_t d = ex(r, "w", SEC(1), MS(700), false);
    assert_true(d.allowed);
    assert_int_equal(d.delay, MS(700));
    /* the request runs in [11 s, 12 s): this window is behind it, full */
    assert_false(rig_check(r, "w").allowed);
    /* the held window has 2 more places, then the one after */
    assert_int_equal(ex(r, "w", SEC(2), 0, false).delay, MS(500));
    assert_int_equal(ex(r, "w", SEC(2), 0, false).delay, MS(500));
    assert_int_equal(ex(r, "w", SEC(2), 0, false).delay, MS(1500));
    rig_free(r);
}

/* Several limits: the floor is the common moment when it is the latest. */
static void several_limits_floor(void **state) {
    (void)state;
    sl_limit_t limits[] = {{.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)},
                           {.algorithm = SL_FIXED_WINDOW, .limit = 5, .period = SEC(1)}};
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    r->now = SEC(20);
    sl_decision_t d = ex(r, "m", SEC(2), MS(1200), false);
    assert_true(d.allowed);
    assert_int_equal(d.delay, MS(1200));
    /* gcra charged from 1.2 s: the next slot is 1.3 s; the window of 21 s
     * holds it, so this window is full (held ahead) */
    d = ex(r, "m", SEC(2), 0, false);
    assert_true(d.allowed);
    assert_int_equal(d.delay, MS(1300));
    rig_free(r);
}

static void bad_arguments(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    sl_decision_t d;
    assert_int_equal(sl__reserve(r->limiter, r->policy, "k", 1, 1, MS(10), MS(11), false, &d, NULL, NULL), SL_ERANGE);
    assert_int_equal(sl__reserve(r->limiter, r->policy, "k", 1, 1, MS(10), -1, false, &d, NULL, NULL), SL_ERANGE);
    assert_int_equal(sl__reserve(r->limiter, r->policy, "k", 1, 1, SL_MAX_WAIT + 1, 0, false, &d, NULL, NULL),
                     SL_ERANGE);
    assert_int_equal(sl__reserve(NULL, r->policy, "k", 1, 1, 0, 0, false, &d, NULL, NULL), SL_EINVAL);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra_peek_and_floor),
        cmocka_unit_test(fixed_window_floor),
        cmocka_unit_test(several_limits_floor),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
