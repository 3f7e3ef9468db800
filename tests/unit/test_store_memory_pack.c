/* test_store_memory_pack.c -- the memory store's 16-byte slot (see
 * store_memory_private.h): a state packs into the slot when its word and
 * expiry are small, and goes out of line, exactly as it was, when not (a
 * large limit's word, two large sliding_window counters, a reservation's
 * held flag, an expiry before the shard's epoch or years past it).
 *
 * Each trace runs on the store and, beside it, on cells this test keeps
 * itself and decides with the core alone (sl__policy_evaluate, written back
 * the way the store writes back): every decision must be the same. */
#include <unistd.h>

#include "rig.h"
#include "core/arith.h"
#include "core/policy.h"
#include "store/journal.h"

#define KEYS 48

typedef struct model {
    sl__cell_t cells[KEYS][SL_MAX_LIMITS];
} model_t;

/* One decision on the model, as the store takes it: the cells the core
 * changed are written back only when charged; blocks are replaced (and
 * tidied) in place whatever happens. */
static int model_decide(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, uint64_t cost,
                        bool peek, sl_usec_t max_wait, sl_decision_t *out) {
    sl__cell_t tmp[SL_MAX_LIMITS];
    for (size_t i = 0; i < p->nlimits; i++) {
        tmp[i] = cells[i];
        tmp[i].dirty = false;
    }
    uint32_t charged = 0;
    int rc = max_wait >= 0
                 ? sl__policy_reserve(p, tmp, now, cost, max_wait, 0, peek, sl__cells_prepare, (void *)p,
                                      &charged, out, NULL, NULL)
                 : sl__policy_evaluate(p, tmp, now, cost, peek, sl__cells_prepare, (void *)p, &charged,
                                       NULL, out, NULL);
    for (size_t i = 0; i < p->nlimits; i++) {
        cells[i].block = tmp[i].block;
        if (rc == SL_OK && (charged & (1u << i))) {
            cells[i].expire_at = tmp[i].expire_at;
            cells[i].word = tmp[i].word;
        }
    }
    return rc;
}

static void model_free(model_t *m, size_t nlimits) {
    for (int k = 0; k < KEYS; k++)
        sl__cells_release(m->cells[k], nlimits);
}

static void same(const sl_decision_t *a, const sl_decision_t *b, int step) {
    if (a->allowed != b->allowed || a->remaining != b->remaining || a->reset_after != b->reset_after ||
        a->retry_after != b->retry_after || a->delay != b->delay || a->limit != b->limit ||
        a->limit_index != b->limit_index)
        fail_msg("step %d: store allowed=%d remaining=%llu reset=%lld retry=%lld delay=%lld, "
                 "core allowed=%d remaining=%llu reset=%lld retry=%lld delay=%lld",
                 step, a->allowed, (unsigned long long)a->remaining, (long long)a->reset_after,
                 (long long)a->retry_after, (long long)a->delay, b->allowed,
                 (unsigned long long)b->remaining, (long long)b->reset_after, (long long)b->retry_after,
                 (long long)b->delay);
}

typedef struct trace {
    sl_usec_t start;
    uint64_t max_cost;
    bool reserve;   /* some requests are reservations */
    bool jumps;     /* the clock steps back past the epoch, or years ahead */
} trace_t;

/* Runs a seeded trace on r (whose clock it moves) and on a model. */
static void run_trace(rig_t *r, const trace_t *t, uint64_t seed, int steps) {
    model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    r->now = t->start;
    for (int step = 0; step < steps; step++) {
        switch (rng_below(&seed, 20)) {
        case 0:
            if (t->jumps) /* back more than EPOCH_BACK (2^36 us) */
                r->now = r->now > (INT64_C(1) << 37) ? r->now - (INT64_C(1) << 37) : 0;
            break;
        case 1:
            if (t->jumps) /* ahead past the packed expiry's 2^46 us */
                r->now += INT64_C(1) << 47;
            break;
        default:
            r->now += (sl_usec_t)rng_below(&seed, rng_below(&seed, 4) ? 2000 : SEC(3));
        }
        int k = (int)rng_below(&seed, KEYS);
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        uint64_t cost = rng_below(&seed, t->max_cost + 1);
        bool peek = rng_below(&seed, 8) == 0;
        sl_usec_t wait = t->reserve && !peek && rng_below(&seed, 3) == 0 ? (sl_usec_t)rng_below(&seed, SEC(2)) : -1;
        sl_decision_t got, want;
        int rc_got = wait >= 0 ? sl_reserve(r->limiter, r->policy, key, strlen(key), cost, wait, &got, NULL)
                               : sl_decide(r->limiter, r->policy, key, strlen(key), cost,
                                           peek ? SL_DECIDE_PEEK : 0, &got, NULL);
        int rc_want = model_decide(r->policy, m->cells[k], r->now, cost, peek, wait, &want);
        assert_int_equal(rc_got, rc_want);
        if (rc_got == SL_OK)
            same(&got, &want, step);
    }
    model_free(m, r->policy->nlimits);
    free(m);
}

static size_t store_bytes(rig_t *r) {
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(r->store, &st), SL_OK);
    return st.bytes;
}

/* A small state takes no memory beyond its slot; one too large to pack
 * takes a 16-byte record (32 bytes from malloc) beside it. */
static void small_states_pack_large_ones_go_out_of_line(void **state) {
    (void)state;
    rig_t *small = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 100, .period = SEC(60)});
    /* a word of 999998 (frac = 2 * 999999 - 1000000) */
    rig_t *large = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 999999, .period = SEC(1)});
    small->now = large->now = SEC(1000000);
    sl_decision_t d;
    size_t before = store_bytes(small);
    assert_int_equal(sl_check(small->limiter, small->policy, "a", 1, 1, &d), SL_OK);
    assert_int_equal(store_bytes(small), before);
    before = store_bytes(large);
    assert_int_equal(sl_check(large->limiter, large->policy, "a", 1, 1, &d), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(store_bytes(large), before + 32);
    /* counters 300 and 1: out of line; 0 and 1 two periods later: packed again */
    rig_t *win = rig_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 1000, .period = SEC(1), .precision = 1});
    win->now = SEC(1000000);
    before = store_bytes(win);
    assert_int_equal(sl_check(win->limiter, win->policy, "a", 1, 300, &d), SL_OK);
    assert_int_equal(store_bytes(win), before);
    win->now += SEC(1);
    assert_int_equal(sl_check(win->limiter, win->policy, "a", 1, 1, &d), SL_OK);
    assert_int_equal(store_bytes(win), before + 32);
    win->now += SEC(2);
    assert_int_equal(sl_check(win->limiter, win->policy, "a", 1, 1, &d), SL_OK);
    assert_int_equal(store_bytes(win), before);
    rig_free(win);
    rig_free(small);
    rig_free(large);
}

static void trace_one(sl_limit_t l, const trace_t *t, uint64_t seed) {
    rig_t *r = rig_one(l);
    run_trace(r, t, seed, 4000);
    rig_free(r);
}

/* gcra, token_bucket and fixed_window with words past 2^16, and a
 * sliding_window p1 whose counters pass 2^8: out of line, the same
 * decisions; a small limit beside them in one policy stays packed. */
static void large_words(void **state) {
    (void)state;
    trace_t t = {.start = SEC(5000000), .max_cost = 300};
    trace_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1000000, .period = SEC(1), .burst = 5000}, &t, 1);
    trace_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 70000, .period = SEC(1), .burst = 200}, &t, 2);
    trace_t big = {.start = SEC(5000000), .max_cost = 40000};
    trace_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 200000, .period = SEC(2)}, &big, 3);
    trace_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 2000, .period = SEC(1), .precision = 1},
              &t, 4);
    sl_limit_t mixed[] = {
        {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)},
        {.algorithm = SL_GCRA, .limit = 1000000, .period = SEC(10)},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 400, .period = SEC(1), .precision = 1},
    };
    rig_t *r = rig_limits(mixed, 3, SL_MODE_HARD);
    run_trace(r, &(trace_t){.start = SEC(5000000), .max_cost = 12}, 5, 4000);
    rig_free(r);
}

/* Reservations set SL__HELD in the word: out of line while they hold. */
static void reservations(void **state) {
    (void)state;
    trace_t t = {.start = SEC(3000000), .max_cost = 4, .reserve = true};
    trace_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 20, .period = SEC(1)}, &t, 6);
    trace_one((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 20, .period = MS(300)}, &t, 7);
}

/* The clock steps back further than the shard's epoch lies behind, or
 * years ahead: expiries that cannot be packed, for every algorithm (the
 * block ones keep theirs in their record). */
static void clock_jumps(void **state) {
    (void)state;
    trace_t t = {.start = SEC(4000000), .max_cost = 5, .jumps = true};
    static const sl_limit_t limits[] = {
        {.algorithm = SL_GCRA, .limit = 20, .period = SEC(1)},
        {.algorithm = SL_TOKEN_BUCKET, .limit = 20, .period = SEC(1), .burst = 10},
        {.algorithm = SL_LEAKY_BUCKET, .limit = 20, .period = SEC(1), .shaper = true},
        {.algorithm = SL_FIXED_WINDOW, .limit = 20, .period = SEC(1)},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 20, .period = SEC(1), .precision = 1},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 20, .period = SEC(1), .precision = 10},
        {.algorithm = SL_SLIDING_LOG, .limit = 20, .period = SEC(1)},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        trace_one(limits[i], &t, 100 + i);
}

/* A snapshot of packed and out-of-line states loads into a fresh store as
 * the same states. */
static void snapshot_round_trip(void **state) {
    (void)state;
    sl_limit_t mixed[] = {
        {.algorithm = SL_GCRA, .limit = 10, .period = SEC(100), .burst = 9},
        {.algorithm = SL_GCRA, .limit = 999999, .period = SEC(100), .burst = 9},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 1000, .period = SEC(100), .precision = 1},
        {.algorithm = SL_SLIDING_LOG, .limit = 5, .period = SEC(100)},
    };
    rig_t *a = rig_limits(mixed, 4, SL_MODE_HARD);
    rig_t *b = rig_limits(mixed, 4, SL_MODE_HARD);
    a->now = b->now = SEC(7000000);
    sl_decision_t d;
    for (int k = 0; k < 200; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        assert_int_equal(sl_check(a->limiter, a->policy, key, strlen(key), 1 + (uint64_t)(k % 4), &d), SL_OK);
    }
    char path[] = "/tmp/sluice-pack-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sl_store_save(a->store, path, a->now), SL_OK);
    size_t loaded = 0;
    assert_int_equal(sl_store_load(b->store, path, b->now, &loaded), SL_OK);
    unlink(path);
    sl_store_stats_t sa, sb;
    assert_int_equal(sl_store_stats(a->store, &sa), SL_OK);
    assert_int_equal(sl_store_stats(b->store, &sb), SL_OK);
    assert_int_equal(loaded, sa.states);
    assert_int_equal(sb.states, sa.states);
    assert_true(loaded > 600);
    for (int k = 0; k < 200; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        sl_decision_t x, y;
        a->now = b->now = SEC(7000000) + k;
        assert_int_equal(sl_check(a->limiter, a->policy, key, strlen(key), 2, &x), SL_OK);
        assert_int_equal(sl_check(b->limiter, b->policy, key, strlen(key), 2, &y), SL_OK);
        same(&x, &y, k);
    }
    rig_free(a);
    rig_free(b);
}

/* A snapshot written by the 24-byte-slot store (tests/unit/fixtures/
 * snapshot_v1_gen.c: packed, wide and block states) loads as the same
 * states: the per-limit reports of a peek equal what that store said. */
static const sl_limit_t v1_limits[] = {
    {.algorithm = SL_GCRA, .limit = 100, .period = 60000000, .burst = 2000},
    {.algorithm = SL_GCRA, .limit = 1000000, .period = INT64_C(2592000000000), .burst = 999},
    {.algorithm = SL_FIXED_WINDOW, .limit = 100000, .period = 60000000},
    {.algorithm = SL_SLIDING_WINDOW, .limit = 2000, .period = 1000000, .precision = 1},
    {.algorithm = SL_SLIDING_WINDOW, .limit = 1000, .period = 60000000, .precision = 10},
    {.algorithm = SL_SLIDING_LOG, .limit = 1000, .period = 60000000},
};

typedef struct v1_report {
    bool allowed;
    uint64_t remaining;
    sl_usec_t reset_after, retry_after;
} v1_report_t;

static const v1_report_t v1_expected[12][6] = {
    {{1, 2001, 0, 0}, {1, 997, 5276000, 0}, {1, 99997, 57500000, 0}, {1, 2000, 500000, 0}, {1, 997, 63500000, 0}, {1, 997, 58900000, 0}},
    {{1, 1822, 107301000, 0}, {1, 817, 471837000, 0}, {1, 99817, 57500000, 0}, {1, 1955, 500000, 0}, {1, 817, 63500000, 0}, {1, 817, 58901000, 0}},
    {{1, 1642, 215302000, 0}, {1, 637, 938398000, 0}, {1, 99637, 57500000, 0}, {1, 1910, 500000, 0}, {1, 637, 63500000, 0}, {1, 637, 58902000, 0}},
    {{1, 1462, 323303000, 0}, {1, 457, 1404959000, 0}, {1, 99457, 57500000, 0}, {1, 1865, 500000, 0}, {1, 457, 63500000, 0}, {1, 457, 58903000, 0}},
    {{1, 1282, 431304000, 0}, {1, 277, 1871520000, 0}, {1, 99277, 57500000, 0}, {1, 1820, 500000, 0}, {1, 277, 63500000, 0}, {1, 277, 58904000, 0}},
    {{1, 2001, 0, 0}, {1, 997, 5281000, 0}, {1, 99997, 57500000, 0}, {1, 2000, 500000, 0}, {1, 997, 63500000, 0}, {1, 997, 58905000, 0}},
    {{1, 1822, 107306000, 0}, {1, 817, 471842000, 0}, {1, 99817, 57500000, 0}, {1, 1955, 500000, 0}, {1, 817, 63500000, 0}, {1, 817, 58906000, 0}},
    {{1, 1642, 215307000, 0}, {1, 637, 938403000, 0}, {1, 99637, 57500000, 0}, {1, 1910, 500000, 0}, {1, 637, 63500000, 0}, {1, 637, 58907000, 0}},
    {{1, 1462, 323308000, 0}, {1, 457, 1404964000, 0}, {1, 99457, 57500000, 0}, {1, 1865, 500000, 0}, {1, 457, 63500000, 0}, {1, 457, 58908000, 0}},
    {{1, 1282, 431309000, 0}, {1, 277, 1871525000, 0}, {1, 99277, 57500000, 0}, {1, 1820, 500000, 0}, {1, 277, 63500000, 0}, {1, 277, 58909000, 0}},
    {{1, 2001, 0, 0}, {1, 997, 5286000, 0}, {1, 99997, 57500000, 0}, {1, 2000, 500000, 0}, {1, 997, 63500000, 0}, {1, 997, 58910000, 0}},
    {{1, 1822, 107311000, 0}, {1, 817, 471847000, 0}, {1, 99817, 57500000, 0}, {1, 1955, 500000, 0}, {1, 817, 63500000, 0}, {1, 817, 58911000, 0}},
};

static void v1_fixture_loads(void **state) {
    (void)state;
    char path[4096];
    const char *dir = getenv("SLUICE_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/unit/fixtures/snapshot_v1.snap", dir ? dir : "../..");
    if (access(path, R_OK) != 0) {
        print_message("skipped: %s not found (set SLUICE_SOURCE_DIR to the source tree)\n", path);
        skip();
    }
    sl_policy_config_t cfg = {.name = "v1fixture", .limits = v1_limits, .nlimits = 6};
    rig_t *r = rig_policy(&cfg);
    const sl_usec_t t0 = INT64_C(1800000000000000);
    size_t loaded = 0;
    assert_int_equal(sl_store_load(r->store, path, t0 + 2200000, &loaded), SL_OK);
    assert_true(loaded > 40);
    r->now = t0 + 2500000;
    for (int k = 0; k < 12; k++) {
        char key[16];
        snprintf(key, sizeof key, "key%d", k);
        sl_decision_t d;
        sl_limit_report_t rep[6];
        assert_int_equal(sl_decide(r->limiter, r->policy, key, strlen(key), 3, SL_DECIDE_PEEK, &d, rep), SL_OK);
        for (int i = 0; i < 6; i++) {
            const v1_report_t *w = &v1_expected[k][i];
            if (rep[i].allowed != w->allowed || rep[i].remaining != w->remaining ||
                rep[i].reset_after != w->reset_after || rep[i].retry_after != w->retry_after)
                fail_msg("key%d limit %d: allowed %d remaining %llu reset %lld retry %lld, the v1 store said "
                         "%d %llu %lld %lld", k, i, rep[i].allowed, (unsigned long long)rep[i].remaining,
                         (long long)rep[i].reset_after, (long long)rep[i].retry_after, w->allowed,
                         (unsigned long long)w->remaining, (long long)w->reset_after, (long long)w->retry_after);
        }
    }
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_states_pack_large_ones_go_out_of_line),
        cmocka_unit_test(large_words),
        cmocka_unit_test(reservations),
        cmocka_unit_test(clock_jumps),
        cmocka_unit_test(snapshot_round_trip),
        cmocka_unit_test(v1_fixture_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
