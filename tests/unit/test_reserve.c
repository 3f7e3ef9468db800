/* test_reserve.c -- sl_reserve (src/core/gcra.c, window.c, policy.c): waiters
 * on one key are admitted exactly at each algorithm's schedule, in order,
 * never more than the limit; over max_wait they are denied with nothing
 * charged. Fake clock throughout. */
#include "rig.h"

static sl_decision_t reserve_cost(rig_t *r, const char *key, uint64_t cost, sl_usec_t wait) {
    sl_decision_t d;
    memset(&d, 0xA5, sizeof d); /* every field must be written */
    assert_int_equal(sl_reserve(r->limiter, r->policy, key, strlen(key), cost, wait, &d, NULL), SL_OK);
    if (!d.allowed)
        assert_int_equal(d.delay, 0);
    return d;
}

static sl_decision_t reserve(rig_t *r, const char *key, sl_usec_t wait) {
    return reserve_cost(r, key, 1, wait);
}

/* The state as a plain peek sees it: what a denied reservation must not move. */
static void assert_same(sl_decision_t a, sl_decision_t b) {
    assert_int_equal(a.allowed, b.allowed);
    assert_int_equal(a.remaining, b.remaining);
    assert_int_equal(a.reset_after, b.reset_after);
    assert_int_equal(a.retry_after, b.retry_after);
}

/* gcra 10/s, burst 0: T = 100 ms. Waiters arriving together get the slots
 * 0, T, 2T ... in order; the one past max_wait is denied and charges nothing. */
static void gcra_waiters_in_order(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    r->now = SEC(100);
    for (int i = 0; i <= 10; i++) {
        sl_decision_t d = reserve(r, "k", SEC(1));
        assert_true(d.allowed);
        assert_false(d.limited);
        assert_int_equal(d.delay, MS(100) * i);
        assert_int_equal(d.retry_after, 0);
    }
    sl_decision_t before = rig_peek_cost(r, "k", 1);
    sl_decision_t d = reserve(r, "k", SEC(1));
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(100)); /* then a wait of 1 s reaches the next slot */
    assert_same(before, rig_peek_cost(r, "k", 1));
    /* a plain check does not jump the queue, nor forgive it */
    assert_false(rig_check(r, "k").allowed);
    r->now += MS(100);
    assert_int_equal(reserve(r, "k", SEC(1)).delay, SEC(1));
    /* the queue drains at the rate: at the last slot a check still waits */
    r->now = SEC(101) + MS(100);
    assert_false(rig_check(r, "k").allowed);
    r->now = SEC(101) + MS(200);
    assert_true(rig_check(r, "k").allowed);
    rig_free(r);
}

/* A rate that is no whole number of microseconds: slots keep the exact
 * schedule (k * period / limit, rounded up), with no drift. */
static void gcra_exact_schedule(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 3, .period = SEC(1)});
    r->now = 0;
    for (int64_t i = 0; i < 300; i++) {
        sl_decision_t d = reserve(r, "k", SEC(100));
        assert_true(d.allowed);
        assert_int_equal(d.delay, (i * SEC(1) + 2) / 3);
    }
    rig_free(r);
}

/* Waiters arrive every 10 ms for 20 s with max_wait 2 s on a 10/s gcra with
 * burst 4: run times are in arrival order, never closer than the limit
 * allows (any 1 s holds at most limit + burst... and the spacing is T), and
 * the total is the rate over the time plus the burst. */
static void gcra_sustained(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 4});
    sl_usec_t runs[4096];
    size_t n = 0;
    for (sl_usec_t t = 0; t < SEC(20); t += MS(10)) {
        r->now = t;
        sl_decision_t d = reserve(r, "k", SEC(2));
        if (d.allowed) {
            assert_true(n == 0 || t + d.delay >= runs[n - 1]);
            assert_true(d.delay <= SEC(2));
            runs[n++] = t + d.delay;
        }
    }
    /* GCRA conformance of the run times themselves */
    sl_usec_t tat = 0;
    for (size_t i = 0; i < n; i++) {
        sl_usec_t at = runs[i] > tat ? runs[i] : tat;
        assert_true(at + MS(100) - runs[i] <= MS(500));
        tat = at + MS(100);
    }
    /* exactly as many as GCRA allows up to the last run: the burst, then
     * one per T */
    assert_int_equal(n, 5 + runs[n - 1] / MS(100));
    assert_true(runs[n - 1] > SEC(21));
    rig_free(r);
}

/* token_bucket 5/s, capacity 5: the bucket empties at once, then a token
 * every 200 ms. */
static void token_bucket_waiters(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 5, .period = SEC(1)});
    r->now = SEC(7);
    for (int i = 0; i < 5; i++)
        assert_int_equal(reserve(r, "k", MS(500)).delay, 0);
    assert_int_equal(reserve(r, "k", MS(500)).delay, MS(200));
    assert_int_equal(reserve(r, "k", MS(500)).delay, MS(400));
    sl_decision_t d = reserve(r, "k", MS(500));
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(100));
    /* cost above capacity never passes, whatever the wait */
    d = reserve_cost(r, "k", 6, SEC(60));
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SL_NEVER);
    rig_free(r);
}

/* leaky_bucket shaper, capacity 3, 1/s: sl_check queues 3 (delays 0, 1, 2 s);
 * a reservation adds max_wait to the queue, in the same order. */
static void shaper_queue_grows_by_wait(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_LEAKY_BUCKET, .limit = 1, .period = SEC(1),
                                    .burst = 3, .shaper = true});
    r->now = SEC(50);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rig_check(r, "k").delay, SEC(1) * i);
    assert_false(rig_check(r, "k").allowed);
    assert_int_equal(reserve(r, "k", SEC(2)).delay, SEC(3));
    assert_int_equal(reserve(r, "k", SEC(2)).delay, SEC(4));
    assert_false(reserve(r, "k", SEC(2)).allowed);
    rig_free(r);
}

/* fixed_window 3/s, from the middle of a window: 3 now, 3 when the next
 * window opens, 3 when the one after opens; each window runs exactly 3. */
static void fixed_window_spills_forward(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(1)});
    r->now = SEC(10) + MS(500);
    for (int i = 0; i < 3; i++)
        assert_int_equal(reserve(r, "k", MS(1600)).delay, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(reserve(r, "k", MS(1600)).delay, MS(500));
    for (int i = 0; i < 3; i++)
        assert_int_equal(reserve(r, "k", MS(1600)).delay, MS(1500));
    sl_decision_t before = rig_peek_cost(r, "k", 1);
    sl_decision_t d = reserve(r, "k", MS(1600));
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(900)); /* window 13 opens 2.5 s away */
    assert_same(before, rig_peek_cost(r, "k", 1));
    /* plain checks see every window held full, and are told when one has room */
    d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(2500));
    assert_int_equal(d.reset_after, MS(2500));
    r->now = SEC(11);
    assert_false(rig_check(r, "k").allowed);
    r->now = SEC(12) + MS(999);
    assert_false(rig_check(r, "k").allowed);
    r->now = SEC(13);
    assert_true(rig_check(r, "k").allowed);
    rig_free(r);
}

/* A window partly held: the next waiter takes its free room. */
static void fixed_window_fills_held_window(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(1)});
    r->now = SEC(4);
    for (int i = 0; i < 4; i++)
        reserve(r, "k", SEC(1));
    /* window 5 holds 1 of 3: two more fit there, a plain check waits for it */
    sl_decision_t d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(1));
    r->now = SEC(4) + MS(250);
    assert_int_equal(reserve(r, "k", SEC(1)).delay, MS(750));
    /* cost 2 does not fit window 5's last unit: it goes to window 6, and
     * that unit is given up (windows before the last held count as full) */
    r->now = SEC(4) + MS(500);
    assert_false(reserve_cost(r, "k", 2, SEC(1)).allowed);
    assert_int_equal(reserve_cost(r, "k", 2, SEC(2)).delay, MS(1500));
    assert_int_equal(reserve(r, "k", SEC(2)).delay, MS(1500));
    assert_false(reserve(r, "k", SEC(2)).allowed);
    r->now = SEC(5);
    assert_false(rig_check(r, "k").allowed);
    rig_free(r);
}

/* Waiters every 10 ms for 10 s, max_wait 3 s, on 7 per second: each window
 * runs exactly 7, in arrival order. */
static void fixed_window_sustained(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 7, .period = SEC(1)});
    int per_window[16] = {0};
    sl_usec_t last = 0;
    for (sl_usec_t t = 0; t < SEC(10); t += MS(10)) {
        r->now = t;
        sl_decision_t d = reserve(r, "k", SEC(3));
        if (!d.allowed)
            continue;
        sl_usec_t run = t + d.delay;
        assert_true(run >= last);
        last = run;
        assert_true(d.delay <= SEC(3));
        per_window[run / SEC(1)]++;
    }
    for (int w = 0; w < 13; w++)
        assert_int_equal(per_window[w], 7);
    assert_int_equal(per_window[13], 0);
    rig_free(r);
}

/* The sliding algorithms keep no schedule: waiting on them is refused. */
static void sliding_refused(void **state) {
    (void)state;
    sl_limit_t limits[2] = {
        {.algorithm = SL_SLIDING_WINDOW, .limit = 5, .period = SEC(1)},
        {.algorithm = SL_SLIDING_LOG, .limit = 5, .period = SEC(1)},
    };
    for (int i = 0; i < 2; i++) {
        rig_t *r = rig_one(limits[i]);
        sl_decision_t d;
        assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, MS(1), &d, NULL), SL_ENOWAIT);
        assert_int_equal(rig_peek_cost(r, "k", 1).remaining, 5); /* nothing charged */
        /* max_wait 0 is a plain check */
        assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, 0, &d, NULL), SL_OK);
        assert_true(d.allowed);
        assert_int_equal(d.remaining, 4);
        rig_free(r);
    }
    assert_string_equal(sl_errname(SL_ENOWAIT), "SL_ENOWAIT");
}

static void bad_arguments(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)});
    sl_decision_t d;
    assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, -1, &d, NULL), SL_ERANGE);
    assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, SL_MAX_WAIT + 1, &d, NULL), SL_ERANGE);
    assert_int_equal(sl_reserve(NULL, r->policy, "k", 1, 1, 0, &d, NULL), SL_EINVAL);
    assert_int_equal(sl_reserve(r->limiter, r->policy, NULL, 1, 1, 0, &d, NULL), SL_EINVAL);
    assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, SL_MAX_WAIT, &d, NULL), SL_OK);
    rig_free(r);
}

/* Two limits: all or nothing; the delay is the largest, and the limit whose
 * place was earlier is charged at the common moment. */
static void several_limits(void **state) {
    (void)state;
    sl_limit_t limits[2] = {
        {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 9}, /* 10 at once */
        {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(1)},
    };
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    r->now = SEC(3) + MS(900);
    sl_limit_report_t rep[2];
    sl_decision_t d;
    assert_int_equal(sl_reserve(r->limiter, r->policy, "k", 1, 1, SEC(1), &d, rep), SL_OK);
    assert_int_equal(d.delay, 0);
    assert_true(rep[0].allowed && rep[1].allowed);
    assert_int_equal(reserve(r, "k", SEC(1)).delay, 0);
    /* the window is full: the next two run when window 4 opens */
    assert_int_equal(reserve(r, "k", SEC(1)).delay, MS(100));
    assert_int_equal(reserve(r, "k", SEC(1)).delay, MS(100));
    /* window 5 is 1.1 s away: denied, and the gcra is not charged */
    sl_decision_t before = rig_peek_cost(r, "k", 1);
    d = reserve(r, "k", SEC(1));
    assert_false(d.allowed);
    assert_int_equal(d.limit_index, 1);
    assert_int_equal(d.retry_after, MS(100));
    assert_same(before, rig_peek_cost(r, "k", 1));
    rig_free(r);
}

/* Shadow mode: a reservation it would deny is let through at once. */
static void shadow_mode(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_GCRA, .limit = 1, .period = SEC(1)};
    rig_t *r = rig_limits(&l, 1, SL_MODE_SHADOW);
    assert_int_equal(reserve(r, "k", SEC(1)).delay, 0);
    assert_int_equal(reserve(r, "k", SEC(1)).delay, SEC(1));
    sl_decision_t d = reserve(r, "k", SEC(1));
    assert_true(d.allowed);
    assert_true(d.limited);
    assert_int_equal(d.delay, 0);
    rig_free(r);
}

/* A state holding reservations is read as such by every later call; one
 * that is ahead by more than any reservation could be (the clock went back
 * far) is rebased as before. */
static void held_state_and_clock(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(1)});
    r->now = SEC(10000);
    for (int i = 0; i < 30; i++)
        assert_int_equal(reserve(r, "k", MIN(1)).delay, SEC(i));
    /* 30 s of queue: a peek 10 s later still sees 20 s ahead */
    r->now = SEC(10010);
    assert_int_equal(rig_peek_cost(r, "k", 1).retry_after, SEC(20));
    /* the clock jumps back two hours: more than a hold, so rebased to one period */
    r->now = SEC(10000) - MIN(120);
    assert_int_equal(rig_peek_cost(r, "k", 1).retry_after, SEC(1));
    rig_free(r);

    r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 1, .period = SEC(1)});
    r->now = SEC(10000);
    for (int i = 0; i < 30; i++)
        assert_int_equal(reserve(r, "k", MIN(1)).delay, SEC(i));
    r->now = SEC(10010);
    assert_int_equal(rig_peek_cost(r, "k", 1).retry_after, SEC(20));
    r->now = SEC(10000) - MIN(120);
    assert_int_equal(rig_peek_cost(r, "k", 1).retry_after, SEC(1));
    rig_free(r);
}

/* count_denied: a denied plain request behind reservations neither forgives
 * them nor is lost. */
static void count_denied_behind_reservations(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(1),
                                    .count_denied = true});
    r->now = SEC(20);
    for (int i = 0; i < 3; i++)
        reserve(r, "k", SEC(1));
    assert_false(rig_check(r, "k").allowed); /* counted into window 21 */
    r->now = SEC(21);
    assert_false(rig_check(r, "k").allowed);
    r->now = SEC(22);
    assert_true(rig_check(r, "k").allowed);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra_waiters_in_order),
        cmocka_unit_test(gcra_exact_schedule),
        cmocka_unit_test(gcra_sustained),
        cmocka_unit_test(token_bucket_waiters),
        cmocka_unit_test(shaper_queue_grows_by_wait),
        cmocka_unit_test(fixed_window_spills_forward),
        cmocka_unit_test(fixed_window_fills_held_window),
        cmocka_unit_test(fixed_window_sustained),
        cmocka_unit_test(sliding_refused),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(several_limits),
        cmocka_unit_test(shadow_mode),
        cmocka_unit_test(held_state_and_clock),
        cmocka_unit_test(count_denied_behind_reservations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
