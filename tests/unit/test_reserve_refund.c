/* test_reserve_refund.c -- giving back a reservation whose waiter left
 * (core/refund.c through sl__reserve/sl__refund): exactly what can be
 * given back is, so the next request gets that place; a place charged
 * after it, a window held ahead of it or a moment that has come keep the
 * charge. Fake clock throughout. */
#include "rig.h"

#include "store/reserve.h"

static sl_decision_t hold(rig_t *r, const char *key, sl_usec_t wait, sl__held_t *held) {
    sl_decision_t d;
    assert_int_equal(sl__reserve(r->limiter, r->policy, key, strlen(key), 1, wait, 0, false, &d, NULL, held),
                     SL_OK);
    return d;
}

static void give_back(rig_t *r, const char *key, const sl__held_t *held) {
    assert_int_equal(sl__refund(r->limiter, r->policy, key, strlen(key), 1, held), SL_OK);
}

static void assert_same(sl_decision_t a, sl_decision_t b) {
    assert_int_equal(a.allowed, b.allowed);
    assert_int_equal(a.remaining, b.remaining);
    assert_int_equal(a.reset_after, b.reset_after);
    assert_int_equal(a.retry_after, b.retry_after);
}

/* gcra 10/s, burst 0: A, B, C hold 100, 200, 300 ms. C (the last) leaves:
 * its place goes to the next waiter. A leaves: B and C hold places after
 * it, so nothing moves (the next is still 400 ms). */
static void gcra_last_place_given_back(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    r->now = SEC(100);
    assert_true(rig_check(r, "k").allowed);
    sl__held_t a, b, c, now_held;
    assert_int_equal(hold(r, "k", SEC(1), &a).delay, MS(100));
    assert_int_equal(hold(r, "k", SEC(1), &b).delay, MS(200));
    sl_decision_t before_c = rig_peek_cost(r, "k", 1);
    assert_int_equal(hold(r, "k", SEC(1), &c).delay, MS(300));
    assert_int_equal(c.at, SEC(100) + MS(300));
    r->now += MS(50);
    give_back(r, "k", &c);
    r->now -= MS(50);
    assert_same(before_c, rig_peek_cost(r, "k", 1));
    sl__held_t d;
    assert_int_equal(hold(r, "k", SEC(1), &d).delay, MS(300)); /* C's place */
    sl_decision_t before_a = rig_peek_cost(r, "k", 1);
    give_back(r, "k", &a); /* places after it: kept */
    assert_same(before_a, rig_peek_cost(r, "k", 1));
    /* given back twice: the second finds the state moved, nothing more */
    give_back(r, "k", &d);
    sl_decision_t once = rig_peek_cost(r, "k", 1);
    give_back(r, "k", &d);
    assert_same(once, rig_peek_cost(r, "k", 1));
    /* admitted at once: nothing held, nothing to give back */
    r->now = SEC(200);
    sl_decision_t now_d = hold(r, "k", SEC(1), &now_held);
    assert_true(now_d.allowed);
    assert_int_equal(now_d.delay, 0);
    assert_int_equal(now_held.at, 0);
    rig_free(r);
}

/* Its moment came: it ran, as far as the limit knows. */
static void moment_passed_keeps_the_charge(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    r->now = SEC(100);
    assert_true(rig_check(r, "k").allowed);
    sl__held_t a;
    assert_int_equal(hold(r, "k", SEC(1), &a).delay, MS(100));
    r->now += MS(100);
    sl_decision_t before = rig_peek_cost(r, "k", 1);
    give_back(r, "k", &a);
    assert_same(before, rig_peek_cost(r, "k", 1));
    rig_free(r);
}

/* A place far ahead (a state holding reservations past its capacity)
 * given back: the state reads as it did before, flag and all. */
static void far_place_given_back(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 1, .period = SEC(60)});
    r->now = SEC(1000);
    assert_true(rig_check(r, "t").allowed);
    sl__held_t h[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(hold(r, "t", SL_MAX_WAIT, &h[i]).delay, SEC(60) * (i + 1));
    sl_decision_t before = rig_peek_cost(r, "t", 1);
    sl__held_t last;
    assert_int_equal(hold(r, "t", SL_MAX_WAIT, &last).delay, SEC(360));
    give_back(r, "t", &last);
    assert_same(before, rig_peek_cost(r, "t", 1));
    for (int i = 4; i >= 0; i--) /* the last first: each is then the last */
        give_back(r, "t", &h[i]);
    r->now += SEC(60);
    assert_true(rig_check(r, "t").allowed); /* nothing held any more */
    rig_free(r);
}

/* fixed_window 3/s from the middle of a full window: three waiters hold
 * the next window (500 ms). One leaves (any of them: a window's count has
 * no order): the next waiter gets the next window, not the one after. */
static void fixed_window_uncounts(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(1)});
    r->now = SEC(10) + MS(500);
    for (int i = 0; i < 3; i++)
        assert_true(rig_check(r, "w").allowed);
    sl__held_t h[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(hold(r, "w", SEC(2), &h[i]).delay, MS(500));
    sl__held_t x;
    give_back(r, "w", &h[0]);
    assert_int_equal(hold(r, "w", SEC(2), &x).delay, MS(500));
    assert_int_equal(hold(r, "w", SEC(2), &x).delay, MS(1500));
    /* a window held ahead of it: h[1]'s window is no longer the last held */
    sl_decision_t before = rig_peek_cost(r, "w", 1);
    give_back(r, "w", &h[1]);
    assert_same(before, rig_peek_cost(r, "w", 1));
    rig_free(r);
}

/* Several limits: each gives back what it can. */
static void several_limits(void **state) {
    (void)state;
    sl_limit_t limits[] = {{.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)},
                           {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(10)}};
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    r->now = SEC(20);
    assert_true(rig_check(r, "m").allowed);
    sl_decision_t before = rig_peek_cost(r, "m", 1);
    sl__held_t h;
    assert_int_equal(hold(r, "m", SEC(1), &h).delay, MS(100));
    give_back(r, "m", &h);
    sl_decision_t after = rig_peek_cost(r, "m", 1);
    assert_same(before, after);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra_last_place_given_back),
        cmocka_unit_test(moment_passed_keeps_the_charge),
        cmocka_unit_test(far_place_given_back),
        cmocka_unit_test(fixed_window_uncounts),
        cmocka_unit_test(several_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
