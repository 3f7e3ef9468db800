/* test_decide.c -- the daemon's store kinds (src/server/engine/decide.c)
 * behind the engine, with their own context (sld_decide_ctx_t) and a fake
 * runtime, on a fake clock: the memory kind decides in the limiter and is
 * counted once per decision (a peek not at all), one clock read per batch;
 * the Redis kind, when Redis cannot be asked, decides by each policy's
 * on_store_failure (open, closed with the breaker's cooldown, local with
 * the limits divided by store.nodes), counts the fallbacks, and lets go of
 * the runtime it pinned; a caller that cannot wait is decided in memory.
 * No Redis runs here: a Redis store whose workers never attached answers
 * nothing, which is what the fallbacks are for.
 */
#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */
#include "rig.h"
#include "server/engine/decide.h"

/* The runtime a request came from, as the daemon's would hold it. */
typedef struct fake_rt {
    sld_config_t *cfg;
    sld_policies_t *policies;
    int pins;
    sl_usec_t now;
    int batches_begun, batches_ended;
} fake_rt_t;

static fake_rt_t *running; /* for the batch_end hook, which has no ctx */

static const struct sld_runtime *fake_current(void *ctx) { return ctx; }

static const sld_config_t *fake_config(const struct sld_runtime *rt) {
    return ((const fake_rt_t *)(const void *)rt)->cfg;
}

static const sld_policies_t *fake_policies(const struct sld_runtime *rt) {
    return ((const fake_rt_t *)(const void *)rt)->policies;
}

static void fake_pin(const struct sld_runtime *rt, int delta) {
    ((fake_rt_t *)(void *)rt)->pins += delta;
}

static sl_usec_t fake_now(void *ctx) { return ((fake_rt_t *)ctx)->now; }

static void fake_batch_begin(void *ctx) { ((fake_rt_t *)ctx)->batches_begun++; }

static void fake_batch_end(void) { running->batches_ended++; }

typedef struct fixture {
    fake_rt_t rt;
    sl_store_t *store;
    sl_limiter_t *limiter;
    sld_metrics_t *metrics;
    sld_stats_t stats;
    sld_remote_t *remote;
    sld_decide_ctx_t ctx;
    sld_engine_t *engine;
} fixture_t;

static sl_usec_t limiter_clock(void *ctx) { return ((fake_rt_t *)ctx)->now; }

static const char *const POLICIES =
    "policies:\n"
    "  - name: open\n    on_store_failure: open\n"
    "    limits:\n      - {algorithm: fixed_window, limit: 2, period: 1h}\n"
    "  - name: closed\n    on_store_failure: closed\n"
    "    limits:\n      - {algorithm: fixed_window, limit: 2, period: 1h}\n"
    "  - name: local\n    on_store_failure: local\n"
    "    limits:\n      - {algorithm: fixed_window, limit: 4, period: 1h}\n";

/* redis: with a Redis store (nothing listens there, and no worker attaches). */
static fixture_t *start(bool redis) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char yaml[2048], err[SLD_MAX_ERROR] = "";
    snprintf(yaml, sizeof yaml, "%s%s",
             redis ? "store:\n  type: redis\n  url: redis://127.0.0.1:1\n  nodes: 2\n"
                     "  breaker: {failures: 3, cooldown: 250ms}\n"
                   : "",
             POLICIES);
    if (sld_config_parse("test.yaml", yaml, strlen(yaml), &f->rt.cfg, err, sizeof err) != SL_OK)
        fail_msg("configuration refused: %s", err);
    assert_int_equal(sld_metrics_new(1, &f->metrics), SL_OK);
    if (sld_policies_build(f->rt.cfg, f->metrics, &f->rt.policies, err, sizeof err) != SL_OK)
        fail_msg("policies refused: %s", err);
    f->rt.now = SEC(1000);
    sl_memory_options_t mo = {.shards = 4};
    assert_int_equal(sl_store_memory_new(&mo, &f->store), SL_OK);
    sl_limiter_options_t lo = {.clock = limiter_clock, .clock_ctx = &f->rt};
    assert_int_equal(sl_limiter_new(f->store, &lo, &f->limiter), SL_OK);
    if (redis && sld_remote_new(f->rt.cfg, 1, &f->remote, err, sizeof err) != SL_OK)
        fail_msg("store refused: %s", err);
    running = &f->rt;
    f->ctx = (sld_decide_ctx_t){
        .limiter = f->limiter, .remote = f->remote, .metrics = f->metrics, .stats = &f->stats,
        .rt = {.ctx = &f->rt, .current = fake_current, .config = fake_config,
               .policies = fake_policies, .pin = fake_pin, .now = fake_now},
        .batch_begin = fake_batch_begin, .batch_end = fake_batch_end};
    assert_int_equal(sld_decide_engine_new(&f->ctx, &f->engine), SL_OK);
    return f;
}

static void finish(fixture_t *f) {
    sld_engine_free(f->engine);
    sld_remote_free(f->remote);
    sl_limiter_free(f->limiter);
    sl_store_free(f->store);
    sld_policies_free(f->rt.policies);
    sld_config_free(f->rt.cfg);
    sld_metrics_free(f->metrics);
    running = NULL;
    free(f);
}

static sld_request_t request(fixture_t *f, const char *name, const char *key) {
    size_t n = sld_policies_count(f->rt.policies);
    for (size_t i = 0; i < n; i++)
        if (strcmp(sld_policies_config(f->rt.policies, i)->name, name) == 0)
            return (sld_request_t){.origin = {.rt = (const struct sld_runtime *)(void *)&f->rt, .index = i,
                                              .slot = sld_policies_slot(f->rt.policies, i)},
                                   .p = sld_policies_compiled(f->rt.policies, i), .key = key,
                                   .key_len = strlen(key), .cost = 1};
    fail_msg("no policy %s", name);
    return (sld_request_t){0};
}

typedef struct later {
    int calls;
} later_t;

static void on_decided(void *arg, int rc, const sl_decision_t *out, const sl_limit_report_t *limits) {
    (void)rc, (void)out, (void)limits;
    ((later_t *)arg)->calls++;
}

/* Decides r now (a store that can always answer at once): returns allowed. */
static bool decide_now(fixture_t *f, sld_request_t r, bool can_wait, sl_decision_t *out) {
    later_t later = {0};
    sl_limit_report_t limits[SL_MAX_LIMITS];
    int rc = sld_engine_decide(f->engine, 0, &r, out, limits, can_wait ? on_decided : NULL, &later);
    assert_int_equal(rc, SL_OK);
    assert_int_equal(later.calls, 0); /* answered now: never called back */
    return out->allowed;
}

static void memory_decides_and_counts_once(void **state) {
    (void)state;
    fixture_t *f = start(false);
    sld_store_status_t st = {0};
    sld_engine_status(f->engine, &st);
    assert_false(st.shared);
    assert_false(sld_engine_defers(f->engine, request(f, "open", "k").p));

    sl_decision_t d;
    sld_engine_batch_begin(f->engine, 0);
    assert_true(decide_now(f, request(f, "open", "k"), true, &d));
    assert_true(decide_now(f, request(f, "open", "k"), true, &d));
    assert_false(decide_now(f, request(f, "open", "k"), true, &d));
    sld_engine_batch_flush(f->engine, 0);
    assert_int_equal(f->rt.batches_begun, 1);
    assert_int_equal(f->rt.batches_ended, 1);

    sld_request_t peek = request(f, "open", "k");
    peek.flags = SL_DECIDE_PEEK;
    assert_false(decide_now(f, peek, true, &d));
    uint64_t allowed = 0, denied = 0;
    sld_metrics_totals(f->metrics, &allowed, &denied);
    assert_int_equal(allowed, 2);
    assert_int_equal(denied, 1); /* the peek is not a decision */
    assert_int_equal(atomic_load(&f->stats.decision_errors), 0);

    /* a reset forgets the key at once */
    assert_int_equal(sld_engine_reset(f->engine, 0, &peek, on_decided, &(later_t){0}), SL_OK);
    assert_true(decide_now(f, request(f, "open", "k"), true, &d));
    assert_int_equal(f->rt.pins, 0);
    finish(f);
}

/* Redis never answers (no worker attached): each policy's on_store_failure
 * decides, now, and the runtime pinned for the call is let go. */
static void without_redis_each_policy_falls_back(void **state) {
    (void)state;
    fixture_t *f = start(true);
    sld_store_status_t st = {0};
    sld_engine_status(f->engine, &st);
    assert_true(st.shared);
    assert_false(st.write_back);
    assert_true(sld_engine_defers(f->engine, request(f, "open", "k").p));

    sl_decision_t d;
    for (int i = 0; i < 5; i++)
        assert_true(decide_now(f, request(f, "open", "k"), true, &d));
    assert_int_equal(d.remaining, d.limit);

    assert_false(decide_now(f, request(f, "closed", "k"), true, &d));
    assert_int_equal(d.retry_after, MS(250)); /* the breaker's cooldown */
    assert_int_equal(d.remaining, 0);

    /* local: limit 4 over store.nodes 2, in this daemon's memory */
    assert_true(decide_now(f, request(f, "local", "k"), true, &d));
    assert_true(decide_now(f, request(f, "local", "k"), true, &d));
    assert_false(decide_now(f, request(f, "local", "k"), true, &d));
    assert_int_equal(d.limit, 2);

    sld_engine_status(f->engine, &st);
    assert_int_equal(st.fallback_open, 5);
    assert_int_equal(st.fallback_closed, 1);
    assert_int_equal(st.fallback_local, 3);
    assert_int_equal(st.calls, 9);
    assert_int_equal(st.failures, 9);
    assert_int_equal(f->rt.pins, 0);
    uint64_t allowed = 0, denied = 0;
    sld_metrics_totals(f->metrics, &allowed, &denied);
    assert_int_equal(allowed, 7);
    assert_int_equal(denied, 2);
    finish(f);
}

/* A caller that cannot wait is decided in this daemon's memory, with the
 * policy's own limits, and never reaches Redis; a reset it cannot wait
 * for is refused (Redis answers later), after the local state went. */
static void a_caller_that_cannot_wait_is_decided_in_memory(void **state) {
    (void)state;
    fixture_t *f = start(true);
    sl_decision_t d;
    assert_true(decide_now(f, request(f, "closed", "k"), false, &d));
    assert_true(decide_now(f, request(f, "closed", "k"), false, &d));
    assert_false(decide_now(f, request(f, "closed", "k"), false, &d));
    sld_store_status_t st = {0};
    sld_engine_status(f->engine, &st);
    assert_int_equal(st.calls, 0);
    assert_int_equal(st.fallback_closed, 0);
    sld_request_t r = request(f, "local", "k");
    assert_int_equal(sld_engine_reset(f->engine, 0, &r, NULL, NULL), SL_EIO);
    /* and one that can wait but cannot be sent either */
    assert_int_equal(sld_engine_reset(f->engine, 0, &r, on_decided, &(later_t){0}), SL_EIO);
    assert_int_equal(f->rt.pins, 0);
    finish(f);
}

/* The memory kind's batch (sl_check_batch over runs under one policy,
 * peeks and lone requests singly) decides as one call per request would,
 * in order: two daemons, one asked one by one and one in a batch, agree on
 * every field, a bad request in the middle fails alone, and the counts are
 * the same. */
static void memory_batch_decides_as_one_by_one(void **state) {
    (void)state;
    fixture_t *one = start(false), *all = start(false);
    enum { N = 12 };
    sld_request_t reqs[2][N];
    for (int k = 0; k < 2; k++) {
        fixture_t *f = k ? all : one;
        const char *names[N] = {"open", "open", "open", "open", "local", "open",
                                "open", "local", "local", "local", "local", "closed"};
        const char *keys[N] = {"a", "b", "a", "a", "a", "a", "c", "a", "a", "b", "a", "a"};
        for (int i = 0; i < N; i++)
            reqs[k][i] = request(f, names[i], keys[i]);
        reqs[k][3].flags = SL_DECIDE_PEEK; /* a peek inside a run under one policy */
        reqs[k][6].cost = 2;
        reqs[k][8].key = NULL; /* a bad request: SL_EINVAL, alone */
        reqs[k][8].key_len = 3;
    }
    sl_decision_t want[N], got[N];
    int want_rc[N], got_rc[N];
    for (int i = 0; i < N; i++) {
        want[i] = (sl_decision_t){0};
        want_rc[i] = sld_engine_decide(one->engine, 0, &reqs[0][i], &want[i], NULL, NULL, NULL);
    }
    sld_engine_decide_batch(all->engine, 0, reqs[1], N, got, got_rc, on_decided, (void *[N]){0});
    for (int i = 0; i < N; i++) {
        assert_int_equal(got_rc[i], want_rc[i]);
        if (want_rc[i] != SL_OK)
            continue;
        assert_int_equal(got[i].allowed, want[i].allowed);
        assert_int_equal(got[i].limited, want[i].limited);
        assert_int_equal(got[i].limit, want[i].limit);
        assert_int_equal(got[i].remaining, want[i].remaining);
        assert_int_equal(got[i].retry_after, want[i].retry_after);
        assert_int_equal(got[i].reset_after, want[i].reset_after);
        assert_int_equal(got[i].delay, want[i].delay);
        assert_int_equal(got[i].limit_index, want[i].limit_index);
    }
    assert_int_equal(want_rc[8], SL_EINVAL);
    assert_false(want[5].allowed); /* the run really ran out of its limit */
    assert_true(want[4].allowed);
    uint64_t wa = 0, wd = 0, ga = 0, gd = 0;
    sld_metrics_totals(one->metrics, &wa, &wd);
    sld_metrics_totals(all->metrics, &ga, &gd);
    assert_int_equal(ga, wa);
    assert_int_equal(gd, wd);
    assert_int_equal(atomic_load(&all->stats.decision_errors), atomic_load(&one->stats.decision_errors));
    finish(one);
    finish(all);
}

/* With the per-second rates on, the engine's run hook sums a run's
 * counts by policy slot and adds them once: a batch spanning three
 * policies, with a peek and a bad request inside, counts in every slot
 * what the same requests decided one by one count. */
static void batch_counts_the_rates_as_one_by_one(void **state) {
    (void)state;
    enum { N = 12, SLOTS = 64 };
    fixture_t *f[2] = {start(false), start(false)};
    sld_rates_t *rates[2];
    sld_request_t reqs[2][N];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sld_rates_new(1, SLOTS, &rates[k]), SL_OK);
        sld_engine_free(f[k]->engine);
        f[k]->ctx.rates = rates[k];
        assert_int_equal(sld_decide_engine_new(&f[k]->ctx, &f[k]->engine), SL_OK);
        const char *names[N] = {"open", "open", "open", "local", "local", "open",
                                "closed", "local", "local", "closed", "closed", "open"};
        for (int i = 0; i < N; i++)
            reqs[k][i] = request(f[k], names[i], i % 2 ? "a" : "b");
        reqs[k][2].flags = SL_DECIDE_PEEK;
        reqs[k][7].key = NULL; /* SL_EINVAL: not counted */
        reqs[k][7].key_len = 3;
    }
    sl_decision_t out[N];
    int rcs[N];
    for (int i = 0; i < N; i++)
        sld_engine_decide(f[0]->engine, 0, &reqs[0][i], &out[i], NULL, NULL, NULL);
    sld_engine_decide_batch(f[1]->engine, 0, reqs[1], N, out, rcs, NULL, NULL);
    static uint64_t one[1][SLD_RATE_COLUMNS], all[1][SLD_RATE_COLUMNS];
    uint64_t total = 0;
    for (uint32_t slot = 0; slot < SLOTS; slot++) {
        sld_rates_read(rates[0], slot, f[0]->rt.now + SEC(1), 1, one);
        sld_rates_read(rates[1], slot, f[1]->rt.now + SEC(1), 1, all);
        assert_memory_equal(one, all, sizeof one);
        for (size_t k = 0; k < SLD_RESULTS; k++)
            total += all[0][k];
    }
    assert_int_equal(total, N - 2); /* all but the peek and the bad one */
    for (int k = 0; k < 2; k++) {
        finish(f[k]);
        sld_rates_free(rates[k]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_decides_and_counts_once),
        cmocka_unit_test(without_redis_each_policy_falls_back),
        cmocka_unit_test(a_caller_that_cannot_wait_is_decided_in_memory),
        cmocka_unit_test(memory_batch_decides_as_one_by_one),
        cmocka_unit_test(batch_counts_the_rates_as_one_by_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
