/* test_store_memory_memo.c -- denials a thread decides again from its kept
 * copy (src/store/store_memory_memo.c) are the decisions the lock gives:
 * against a twin store whose every decision is made inside a group (where
 * nothing is kept or reused), over random clocks, costs (0 and above any
 * capacity too), peeks, resets, reservations, refunds and CLOCK evictions
 * under max_memory; a change made by another thread, alone or in a group
 * and told through memory, and a snapshot loaded over 65,536 shards, are
 * seen at once; what is never kept (blocks, three limits, reservations);
 * and a hot key decided by two threads still admits exactly its limit. */
#define _DEFAULT_SOURCE /* usleep */
#include <pthread.h>
#include <stdatomic.h>
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
        uint64_t c = (x >> 40) % 64;
        uint64_t cost = c == 0 ? 0 : c == 1 ? UINT64_MAX : 1 + c % 3; /* nothing; never fits */
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

/* A store whose every shard is one of 65,536, so that two keys can be
 * found in shards far apart. */
static rig_t *rig_shards(sl_limit_t l, uint32_t shards, size_t max_memory) {
    rig_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    sl_memory_options_t mo = {.shards = shards, .seed = 12345, .max_memory = max_memory};
    assert_int_equal(sl_store_memory_new(&mo, &r->store), SL_OK);
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = r};
    assert_int_equal(sl_limiter_new(r->store, &lo, &r->limiter), SL_OK);
    sl_policy_config_t cfg = {.name = "test", .limits = &l, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &r->policy, NULL, 0), SL_OK);
    return r;
}

/* Under max_memory, CLOCK evicts the same states whether or not denials
 * are decided from copies (a copy does not set the reference bit; the
 * hand that clears it drops the copies). */
static void evictions_decide_as_the_lock(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_GCRA, .limit = 3, .period = SEC(100), .burst = 2};
    rig_t *kept = rig_shards(l, 1, 64 * 1024), *locked = rig_shards(l, 1, 64 * 1024);
    uint64_t rng = 7, hits0 = sl__mem_memo_hits();
    sl_usec_t now = SEC(1000);
    for (size_t step = 0; step < 200000; step++) {
        uint64_t x = next_rand(&rng);
        char key[32];
        if (x % 4 != 0)
            snprintf(key, sizeof key, "hot%u", (unsigned)((x >> 8) % 6));
        else
            snprintf(key, sizeof key, "k%u", (unsigned)((x >> 8) % 20000));
        if ((x >> 40) % 50 == 0)
            now += MS(3);
        kept->now = locked->now = now;
        if ((x >> 32) % 5000 == 0) {
            assert_int_equal(sl_store_sweep(kept->store, now, 0, NULL), SL_OK);
            assert_int_equal(sl_store_sweep(locked->store, now, 0, NULL), SL_OK);
        }
        unsigned flags = (x >> 50) % 10 == 0 ? SL_DECIDE_PEEK : 0;
        sl_decision_t a, b;
        assert_int_equal(sl_decide(kept->limiter, kept->policy, key, strlen(key), 1, flags, &a, NULL), SL_OK);
        locked_decide(locked, key, 1, flags, &b, NULL);
        same_decision(&a, &b, step);
    }
    sl_store_stats_t sa, sb;
    assert_int_equal(sl_store_stats(kept->store, &sa), SL_OK);
    assert_int_equal(sl_store_stats(locked->store, &sb), SL_OK);
    assert_true(sa.evictions > 1000);
    assert_int_equal(sa.evictions, sb.evictions);
    assert_true(sl__mem_memo_hits() - hits0 > 10000);
    rig_free(kept);
    rig_free(locked);
}

/* Policies whose decisions are never kept: blocks, more than two limits,
 * reservations. */
static void what_is_never_kept(void **state) {
    (void)state;
    const sl_limit_t log = {.algorithm = SL_SLIDING_LOG, .limit = 2, .period = SEC(60)};
    const sl_limit_t three[] = {
        {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(60)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 5, .period = SEC(600)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 9, .period = SEC(6000)},
    };
    rig_t *rigs[] = {rig_one(log), rig_limits(three, 3, SL_MODE_HARD)};
    for (size_t k = 0; k < 2; k++) {
        rig_t *r = rigs[k];
        r->now = SEC(100);
        uint64_t h = sl__mem_memo_hits();
        for (int i = 0; i < 10; i++)
            (void)rig_check(r, "hot");
        assert_false(rig_check(r, "hot").allowed);
        assert_int_equal(sl__mem_memo_hits(), h);
        rig_free(r);
    }
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(60)});
    r->now = SEC(100);
    assert_true(rig_check(r, "hot").allowed);
    assert_false(rig_check(r, "hot").allowed); /* kept */
    uint64_t h = sl__mem_memo_hits();
    for (int i = 0; i < 5; i++) { /* a reservation always locks, and may hold a place */
        sl_decision_t d;
        sl__held_t held;
        assert_int_equal(sl__reserve(r->limiter, r->policy, "hot", 3, 1, SEC(1), 0, true, &d, NULL, &held),
                         SL_OK);
        assert_false(d.allowed);
    }
    assert_int_equal(sl__mem_memo_hits(), h);
    rig_free(r);
}

typedef struct loader {
    rig_t *r;
    const char *path;
} loader_t;

static void *load_run(void *arg) {
    loader_t *l = arg;
    usleep(20000);
    size_t n = 0;
    assert_int_equal(sl_store_load(l->r->store, l->path, l->r->now, &n), SL_OK);
    return NULL;
}

/* A snapshot load is one change of every shard: a thread that sees it in
 * one shard does not decide from an older copy in another. */
static void a_load_is_seen_in_every_shard_at_once(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = 1, .period = SEC(600)};
    int stale = 0;
    for (int round = 0; round < 5; round++) {
        rig_t *r = rig_shards(l, 65536, 0);
        memory_store_t *m = (memory_store_t *)r->store;
        char a[32] = "", b[32] = ""; /* a in one of the last shards unlocked, b in one of the first */
        for (unsigned i = 0; a[0] == 0 || b[0] == 0; i++) {
            char k[32];
            snprintf(k, sizeof k, "key%u", i);
            uint32_t sh = sl__mem_shard_of_key(m, r->policy, k, strlen(k));
            if (a[0] == 0 && sh > 65000)
                strcpy(a, k);
            if (b[0] == 0 && sh < 100)
                strcpy(b, k);
        }
        r->now = SEC(100);
        char path[] = "/tmp/sluice-memo-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_true(rig_check(r, a).allowed);
        assert_true(rig_check(r, b).allowed);
        assert_int_equal(sl_store_save(r->store, path, r->now), SL_OK); /* both used up */
        assert_int_equal(sl_reset(r->limiter, r->policy, a, strlen(a)), SL_OK);
        assert_int_equal(sl_reset(r->limiter, r->policy, b, strlen(b)), SL_OK);
        assert_true(rig_peek_cost(r, a, 1).allowed); /* kept: fresh */
        assert_true(rig_peek_cost(r, b, 1).allowed);
        pthread_t t;
        loader_t ld = {r, path};
        assert_int_equal(pthread_create(&t, NULL, load_run, &ld), 0);
        while (rig_peek_cost(r, a, 1).allowed) /* until the load shows in a's shard */
            ;
        if (rig_peek_cost(r, b, 1).allowed)
            stale++;
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_false(rig_peek_cost(r, b, 1).allowed);
        unlink(path);
        rig_free(r);
    }
    assert_int_equal(stale, 0);
}

typedef struct ping {
    rig_t *r;
    _Atomic int changed, seen;
    int rounds, wrong;
} ping_t;

/* Changes the key (a reset, alone or in a group of the key or of the
 * whole store) and then says so. */
static void *ping_changer(void *arg) {
    ping_t *p = arg;
    for (int i = 1; i <= p->rounds; i++) {
        while (atomic_load_explicit(&p->seen, memory_order_acquire) != i - 1)
            ;
        char other[16];
        snprintf(other, sizeof other, "o%d", i % 50);
        (void)rig_check(p->r, other); /* other changes in the shard */
        sl__group_key_t g = {p->r->policy, "hot", 3};
        if (i % 3 != 0)
            assert_int_equal(sl__limiter_group_begin(p->r->limiter, &g, 1, i % 3 == 2), SL_OK);
        assert_int_equal(sl_reset(p->r->limiter, p->r->policy, "hot", 3), SL_OK);
        if (i % 3 != 0)
            sl__limiter_group_end(p->r->limiter);
        atomic_store_explicit(&p->changed, i, memory_order_release);
    }
    return NULL;
}

/* Once told, decides: the change must show, then its own denial is kept. */
static void *ping_decider(void *arg) {
    ping_t *p = arg;
    for (int i = 1; i <= p->rounds; i++) {
        while (atomic_load_explicit(&p->changed, memory_order_acquire) != i)
            ;
        p->wrong += !rig_check(p->r, "hot").allowed;
        (void)rig_check(p->r, "hot"); /* denied: kept */
        p->wrong += rig_check(p->r, "hot").allowed; /* from the copy */
        atomic_store_explicit(&p->seen, i, memory_order_release);
    }
    return NULL;
}

static void a_change_told_to_another_thread_is_seen(void **state) {
    (void)state;
    rig_t *r = rig_shards((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 1, .period = SEC(600)}, 1, 0);
    r->now = SEC(100);
    ping_t p = {.r = r, .rounds = 5000};
    atomic_init(&p.changed, 0);
    atomic_init(&p.seen, 0);
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, ping_changer, &p), 0);
    assert_int_equal(pthread_create(&b, NULL, ping_decider, &p), 0);
    assert_int_equal(pthread_join(a, NULL), 0);
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(p.wrong, 0);
    rig_free(r);
}

/* sl_check_batch decides a hot key's denials from the copy too, and as
 * one by one would. */
static void a_batch_takes_denials_from_copies(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 9};
    rig_t *batch = rig_one(l), *single = rig_one(l);
    batch->now = single->now = SEC(100);
    /* a run of the hot key, then a key of another shard (its admissions
     * change only its own shard) */
    memory_store_t *m = (memory_store_t *)batch->store;
    uint32_t hot_shard = sl__mem_shard_of_key(m, batch->policy, "hot", 3);
    char other[16];
    for (int k = 0;; k++) {
        snprintf(other, sizeof other, "other%d", k);
        if (sl__mem_shard_of_key(m, batch->policy, other, strlen(other)) != hot_shard)
            break;
    }
    sl_request_t reqs[32];
    for (int i = 0; i < 32; i++)
        reqs[i] = (sl_request_t){i < 28 ? "hot" : other, i < 28 ? 3 : strlen(other), 1};
    uint64_t hits0 = sl__mem_memo_hits();
    for (int round = 0; round < 20; round++) {
        batch->now = single->now += MS(30);
        sl_decision_t a[32], b[32];
        size_t done = 0;
        assert_int_equal(sl_check_batch(batch->limiter, batch->policy, reqs, 32, a, &done), SL_OK);
        assert_int_equal(done, 32);
        for (int i = 0; i < 32; i++) {
            locked_decide(single, reqs[i].key, 1, 0, &b[i], NULL);
            same_decision(&a[i], &b[i], (size_t)round * 32 + (size_t)i);
        }
    }
    assert_true(sl__mem_memo_hits() - hits0 > 400); /* of 560 hot requests, 8 admitted */
    rig_free(batch);
    rig_free(single);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_algorithm_decides_as_the_lock),
        cmocka_unit_test(several_limits_and_modes),
        cmocka_unit_test(another_threads_change_is_seen),
        cmocka_unit_test(a_load_is_seen),
        cmocka_unit_test(a_hot_key_on_two_threads_admits_the_limit),
        cmocka_unit_test(evictions_decide_as_the_lock),
        cmocka_unit_test(what_is_never_kept),
        cmocka_unit_test(a_load_is_seen_in_every_shard_at_once),
        cmocka_unit_test(a_change_told_to_another_thread_is_seen),
        cmocka_unit_test(a_batch_takes_denials_from_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
