/* test_store_memory_memo.c -- denials a thread decides again from its kept
 * copy (src/store/store_memory_memo.c) are the decisions the lock gives:
 * against a twin store whose every decision is made inside a group (where
 * nothing is kept or reused), over random clocks, costs, peeks, resets,
 * reservations and refunds; a change made by another thread or a snapshot
 * loaded is seen at once; and a hot key decided by two threads
 * still admits exactly its limit. */
#include <pthread.h>
#include <unistd.h>

#include "rig.h"
#include "store/group.h"
#include "store/reserve.h"
#include "store/store_memory_private.h"

/* A deterministic generator (splitmix64): the same run every time. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void same_decision(const sl_decision_t *a, const sl_decision_t *b, size_t step) {
    if (a->allowed != b->allowed || a->limited != b->limited || a->limit != b->limit ||
        a->remaining != b->remaining || a->reset_after != b->reset_after ||
        a->retry_after != b->retry_after || a->delay != b->delay || a->limit_index != b->limit_index)
        fail_msg("step %zu: kept {%d %d %lu %lu %ld %ld %ld %d} locked {%d %d %lu %lu %ld %ld %ld %d}",
                 step, a->allowed, a->limited, (unsigned long)a->limit, (unsigned long)a->remaining,
                 (long)a->reset_after, (long)a->retry_after, (long)a->delay, a->limit_index,
                 b->allowed, b->limited, (unsigned long)b->limit, (unsigned long)b->remaining,
                 (long)b->reset_after, (long)b->retry_after, (long)b->delay, b->limit_index);
}

static void same_reports(const sl_limit_report_t *a, const sl_limit_report_t *b, size_t n, size_t step) {
    for (size_t i = 0; i < n; i++)
        if (a[i].allowed != b[i].allowed || a[i].limit != b[i].limit ||
            a[i].remaining != b[i].remaining || a[i].reset_after != b[i].reset_after ||
            a[i].retry_after != b[i].retry_after)
            fail_msg("step %zu: limit %zu reported differently", step, i);
}

/* One decision on the twin, inside a group: always under the lock. */
static void locked_decide(rig_t *r, const char *key, uint64_t cost, unsigned flags, sl_decision_t *out,
                          sl_limit_report_t *limits) {
    sl__group_key_t g = {r->policy, key, strlen(key)};
    assert_int_equal(sl__limiter_group_begin(r->limiter, &g, 1, false), SL_OK);
    assert_int_equal(sl_decide(r->limiter, r->policy, key, strlen(key), cost, flags, out, limits), SL_OK);
    sl__limiter_group_end(r->limiter);
}

static void differential(const sl_limit_t *limits, size_t n, sl_mode_t mode, uint64_t min_hits) {
    rig_t *kept = rig_limits(limits, n, mode), *locked = rig_limits(limits, n, mode);
    static const char *const keys[] = {"hot", "warm", "cold"};
    uint64_t rng = 42 + (uint64_t)limits[0].algorithm * 7 + n + (uint64_t)mode * 131;
    sl_usec_t now = SEC(1000);
    sl_usec_t step_max = limits[0].period / 40 + 1;
    uint64_t hits0 = sl__mem_memo_hits();
    for (size_t step = 0; step < 20000; step++) {
        uint64_t x = next_rand(&rng);
        const char *key = keys[(x >> 8) % 8 < 6 ? 0 : (x >> 8) % 8 == 6 ? 1 : 2];
        size_t len = strlen(key);
        unsigned op = (unsigned)(x % 100);
        if (op < 10)
            now += (sl_usec_t)((x >> 20) % (uint64_t)step_max);
        else if (op == 30)
            now -= (sl_usec_t)((x >> 20) % (uint64_t)step_max); /* the clock steps back */
        kept->now = locked->now = now;
        if (op == 31) {
            assert_int_equal(sl_reset(kept->limiter, kept->policy, key, len), SL_OK);
            assert_int_equal(sl_reset(locked->limiter, locked->policy, key, len), SL_OK);
            continue;
        }
        if (op == 32) { /* a place held, then given back */
            sl__held_t ha, hb;
            sl_decision_t a, b;
            int ra = sl__reserve(kept->limiter, kept->policy, key, len, 1, SEC(1), 0, false, &a, NULL, &ha);
            int rb = sl__reserve(locked->limiter, locked->policy, key, len, 1, SEC(1), 0, false, &b, NULL,
                                 &hb);
            assert_int_equal(ra, rb); /* not every algorithm reserves */
            if (ra != SL_OK)
                continue;
            same_decision(&a, &b, step);
            assert_int_equal(sl__refund(kept->limiter, kept->policy, key, len, 1, &ha), SL_OK);
            assert_int_equal(sl__refund(locked->limiter, locked->policy, key, len, 1, &hb), SL_OK);
            continue;
        }
        uint64_t cost = 1 + (x >> 40) % 3;
        unsigned flags = op >= 90 ? SL_DECIDE_PEEK : 0;
        sl_decision_t a, b;
        sl_limit_report_t la[SL_MAX_LIMITS], lb[SL_MAX_LIMITS];
        assert_int_equal(sl_decide(kept->limiter, kept->policy, key, len, cost, flags, &a, la), SL_OK);
        locked_decide(locked, key, cost, flags, &b, lb);
        same_decision(&a, &b, step);
        same_reports(la, lb, n, step);
    }
    /* the copies were used, or this compared the lock with itself */
    print_message("%lu of 20000 from kept copies\n", (unsigned long)(sl__mem_memo_hits() - hits0));
    assert_true(sl__mem_memo_hits() - hits0 >= min_hits);
    rig_free(kept);
    rig_free(locked);
}

static void every_algorithm_decides_as_the_lock(void **state) {
    (void)state;
    const sl_limit_t cases[] = {
        {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 4},
        {.algorithm = SL_TOKEN_BUCKET, .limit = 10, .period = SEC(1), .burst = 5},
        {.algorithm = SL_LEAKY_BUCKET, .limit = 10, .period = SEC(1)},
        {.algorithm = SL_LEAKY_BUCKET, .limit = 10, .period = SEC(1), .shaper = true},
        {.algorithm = SL_FIXED_WINDOW, .limit = 10, .period = SEC(1)},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 10, .period = SEC(1), .precision = 1},
        {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .count_denied = true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) /* counted denials charge: peeks only */
        differential(&cases[i], 1, SL_MODE_HARD, cases[i].count_denied ? 100 : 10000);
}

static void several_limits_and_modes(void **state) {
    (void)state;
    const sl_limit_t two[] = {
        {.algorithm = SL_GCRA, .limit = 5, .period = SEC(1), .burst = 2},
        {.algorithm = SL_FIXED_WINDOW, .limit = 40, .period = SEC(10)},
    };
    differential(two, 2, SL_MODE_HARD, 10000);
    differential(two, 1, SL_MODE_SHADOW, 10000);
    sl_policy_config_t soft = {.name = "test", .limits = two, .nlimits = 2, .mode = SL_MODE_SOFT,
                               .soft_percent = 20};
    rig_t *a = rig_policy(&soft), *b = rig_policy(&soft);
    for (size_t step = 0; step < 2000; step++) {
        a->now = b->now = SEC(1000) + (sl_usec_t)step * MS(7);
        sl_decision_t da, db;
        assert_int_equal(sl_check(a->limiter, a->policy, "hot", 3, 1, &da), SL_OK);
        locked_decide(b, "hot", 1, 0, &db, NULL);
        same_decision(&da, &db, step);
    }
    rig_free(a);
    rig_free(b);
}

typedef struct other {
    rig_t *r;
    int what; /* 0 reset, 1 a check */
} other_t;

static void *other_thread(void *arg) {
    other_t *o = arg;
    if (o->what == 0)
        assert_int_equal(sl_reset(o->r->limiter, o->r->policy, "hot", 3), SL_OK);
    else
        (void)rig_check(o->r, "hot");
    return NULL;
}

static void run_other(rig_t *r, int what) {
    pthread_t t;
    other_t o = {r, what};
    assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* What another thread changes, this thread's next decision sees. */
static void another_threads_change_is_seen(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(60)});
    r->now = SEC(100);
    for (int i = 0; i < 3; i++)
        assert_true(rig_check(r, "hot").allowed);
    uint64_t h = sl__mem_memo_hits();
    assert_false(rig_check(r, "hot").allowed); /* kept */
    assert_false(rig_check(r, "hot").allowed); /* from the copy */
    assert_int_equal(sl__mem_memo_hits() - h, 1);
    run_other(r, 0); /* another thread resets the key */
    sl_decision_t d = rig_check(r, "hot");
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 2);
    rig_free(r);

    /* a token bucket: the other thread's charge shows in what remains */
    r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 2, .period = SEC(60)});
    r->now = SEC(100);
    assert_true(rig_check_cost(r, "hot", 1).allowed);
    assert_false(rig_check_cost(r, "hot", 2).allowed); /* kept: 1 token left */
    assert_false(rig_check_cost(r, "hot", 2).allowed);
    run_other(r, 1); /* takes the last token */
    d = rig_peek_cost(r, "hot", 1);
    assert_false(d.allowed);
    assert_int_equal(d.remaining, 0);
    rig_free(r);
}

/* A snapshot loaded over the store is seen at once. */
static void a_load_is_seen(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(60)});
    char path[] = "/tmp/sluice-memo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    r->now = SEC(100);
    assert_true(rig_check(r, "hot").allowed);
    assert_int_equal(sl_store_save(r->store, path, r->now), SL_OK); /* one of two used */
    assert_true(rig_check(r, "hot").allowed);
    uint64_t h = sl__mem_memo_hits();
    assert_false(rig_check(r, "hot").allowed); /* kept */
    assert_false(rig_check(r, "hot").allowed);
    assert_int_equal(sl__mem_memo_hits() - h, 1);
    size_t loaded = 0;
    assert_int_equal(sl_store_load(r->store, path, r->now, &loaded), SL_OK);
    assert_int_equal(loaded, 1);
    sl_decision_t d = rig_check(r, "hot"); /* the loaded state: one left */
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    unlink(path);
    rig_free(r);
}

typedef struct hammer {
    rig_t *r;
    int n;
    uint64_t allowed, hits;
} hammer_t;

static void *hammer_run(void *arg) {
    hammer_t *h = arg;
    uint64_t h0 = sl__mem_memo_hits();
    for (int i = 0; i < h->n; i++) {
        sl_decision_t d;
        assert_int_equal(sl_check(h->r->limiter, h->r->policy, "hot", 3, 1, &d), SL_OK);
        h->allowed += d.allowed;
    }
    h->hits = sl__mem_memo_hits() - h0;
    return NULL;
}

/* Two threads on one key: exactly the limit passes, and both decide most
 * denials from their copies. */
static void a_hot_key_on_two_threads_admits_the_limit(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 700, .period = MIN(10), .burst = 699});
    r->now = SEC(5);
    pthread_t t[2];
    hammer_t h[2] = {{r, 20000, 0, 0}, {r, 20000, 0, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_run, &h[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(h[0].allowed + h[1].allowed, 700);
    assert_true(h[0].hits + h[1].hits > 30000);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_algorithm_decides_as_the_lock),
        cmocka_unit_test(several_limits_and_modes),
        cmocka_unit_test(another_threads_change_is_seen),
        cmocka_unit_test(a_load_is_seen),
        cmocka_unit_test(a_hot_key_on_two_threads_admits_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
