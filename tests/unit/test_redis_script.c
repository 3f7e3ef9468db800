/* test_redis_script.c -- evaluate.lua against the memory store: the same
 * seeded random traces (keys, costs, peeks, time steps forward, backward and
 * across period boundaries) through sl_decide() on a memory store and through
 * the script on a real redis-server must give identical decisions and
 * per-limit reports at every step, for every algorithm, mode and mix of
 * limits, one call at a time and in batches of up to 64 (the same key often
 * twice in one). Also: a failed request inside a batch, key expiry,
 * recovered == fresh, reloads, refused policies, NOSCRIPT, reset, reply
 * parsing, and what a key costs Redis (memory and time, printed). */
#include "rig.h"
#include "redis_rig.h"
#include "script_rig.h"

#include <inttypes.h>

#include "core/policy.h"
#include "store/redis/cluster.h"
#include "store/redis/script.h"

/* Far in the future (2096), below the script's 2^52 us. */
#define T0 INT64_C(4000000000000000)
#define STEPS 2500


static redisReply *command(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    return r;
}

static void simple(const char *cmd) { freeReplyObject(command(cmd)); }

static void load_script(void) {
    redisReply *r = command("SCRIPT LOAD %b", sl__redis_evaluate_lua, (size_t)sl__redis_evaluate_lua_len);
    if (r->type != REDIS_REPLY_STRING)
        fail_msg("SCRIPT LOAD: %s", r->str ? r->str : "?");
    assert_string_equal(r->str, sl__redis_evaluate_lua_sha1);
    freeReplyObject(r);
}

static redisReply *send_call(const sl__redis_call_t *c) {
    redisReply *r = redisCommandArgv(ctx, c->argc, (const char **)c->argv, c->argvlen);
    assert_non_null(r);
    return r;
}

/* One evaluation through the script (EVALSHA, or EVAL with the body). */
static void redis_decide_with(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                              sl_usec_t now, bool peek, bool eval_body, sl_decision_t *out,
                              sl_limit_report_t *limits) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate(p, key, key_len, cost, now, peek, &call), SL_OK);
    if (eval_body) {
        call.argv[0] = "EVAL";
        call.argvlen[0] = 4;
        call.argv[1] = sl__redis_evaluate_lua;
        call.argvlen[1] = sl__redis_evaluate_lua_len;
    }
    redisReply *r = send_call(&call);
    const char *why = NULL;
    int rc = sl__redis_parse_evaluate(p, r, out, limits, &why);
    if (rc != SL_OK)
        fail_msg("reply not parsed (%s): %s", why, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

static void redis_decide(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                         sl_usec_t now, bool peek, sl_decision_t *out, sl_limit_report_t *limits) {
    redis_decide_with(p, key, key_len, cost, now, peek, false, out, limits);
}

/* The same, but in one MULTI with PERSIST of the keys it touched: their
 * expiry runs on the real clock and the traces on a fake one, so the
 * differential test stops Redis from dropping a state the fake clock still
 * needs (which the memory store would keep) -- only the script's logic is
 * compared. Expiry has tests of its own. */
static void redis_decide_frozen(const sl_policy_t *p, const void *key, size_t key_len,
                                uint64_t cost, sl_usec_t now, bool peek, sl_decision_t *out,
                                sl_limit_report_t *limits) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate(p, key, key_len, cost, now, peek, &call), SL_OK);
    int nkeys = call.argv[2][0] - '0';
    redisAppendCommand(ctx, "MULTI");
    redisAppendCommandArgv(ctx, call.argc, (const char **)call.argv, call.argvlen);
    for (int k = 0; k < nkeys; k++)
        redisAppendCommand(ctx, "PERSIST %b", call.argv[3 + k], call.argvlen[3 + k]);
    redisAppendCommand(ctx, "EXEC");
    redisReply *r = NULL;
    for (int i = 0; i < 3 + nkeys; i++) {
        if (r)
            freeReplyObject(r);
        assert_int_equal(redisGetReply(ctx, (void **)&r), REDIS_OK);
    }
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1 + (size_t)nkeys);
    const char *why = NULL;
    int rc = sl__redis_parse_evaluate(p, r->element[0], out, limits, &why);
    if (rc != SL_OK)
        fail_msg("reply not parsed (%s): %s", why,
                 r->element[0]->type == REDIS_REPLY_ERROR ? r->element[0]->str : "");
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

/* ---- the memory store side (mem_t, make_policy, same: script_rig.h) ------------------ */

static void mem_decide(mem_t *m, const sl_policy_t *p, const void *key, size_t key_len,
                       uint64_t cost, sl_usec_t now, bool peek, sl_decision_t *out,
                       sl_limit_report_t *limits) {
    m->now = now;
    assert_int_equal(sl_decide(m->limiter, p, key, key_len, cost, peek ? SL_DECIDE_PEEK : 0, out,
                               limits),
                     SL_OK);
}

/* ---- the traces --------------------------------------------------------------------- */

typedef struct config {
    const char *name;
    sl_limit_t limits[SL_MAX_LIMITS];
    size_t n;
    sl_mode_t mode;
    uint32_t soft;
    sl_limit_t pool;
} config_t;

#define L(alg, lim, ...) {.algorithm = (alg), .limit = (lim), .period = __VA_ARGS__}
#define HOUR MIN(60)

static const config_t configs[] = {
    {"gcra", {L(SL_GCRA, 10, SEC(1), .burst = 4)}, 1},
    {"gcra-odd", {L(SL_GCRA, 7, HOUR, .burst = 0)}, 1},
    {"gcra-7us", {L(SL_GCRA, 3, US(7), .burst = 2)}, 1},
    {"gcra-cd", {L(SL_GCRA, 5, MS(100), .burst = 3, .count_denied = true)}, 1},
    {"tb", {L(SL_TOKEN_BUCKET, 5, US(7))}, 1},
    {"tb-burst-cd", {L(SL_TOKEN_BUCKET, 3, SEC(1), .burst = 10, .count_denied = true)}, 1},
    {"tb-day", {L(SL_TOKEN_BUCKET, 1000000, SEC(86400), .burst = 1000)}, 1},
    {"tb-odd", {L(SL_TOKEN_BUCKET, 13, SEC(7), .burst = 6)}, 1},
    {"lb-meter", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5)}, 1},
    {"lb-shaper", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5, .shaper = true)}, 1},
    {"lb-shaper-cd", {L(SL_LEAKY_BUCKET, 3, MS(100), .shaper = true, .count_denied = true)}, 1},
    {"fw", {L(SL_FIXED_WINDOW, 5, SEC(1))}, 1},
    {"fw-7us", {L(SL_FIXED_WINDOW, 7, US(7))}, 1},
    {"fw-cd-hour", {L(SL_FIXED_WINDOW, 4, HOUR, .count_denied = true)}, 1},
    {"log", {L(SL_SLIDING_LOG, 5, SEC(1))}, 1},
    {"log-7us", {L(SL_SLIDING_LOG, 3, US(7))}, 1},
    {"log-cd", {L(SL_SLIDING_LOG, 4, SEC(1), .count_denied = true)}, 1},
    {"log-hour", {L(SL_SLIDING_LOG, 20, HOUR)}, 1},
    {"log-wide", {L(SL_SLIDING_LOG, 5, 2 * HOUR, .count_denied = true)}, 1},
    {"log-100", {L(SL_SLIDING_LOG, 100, MS(50))}, 1}, /* records past 255 bytes */
    {"log-100-wide-cd", {L(SL_SLIDING_LOG, 100, 3 * HOUR, .count_denied = true)}, 1},
    {"sw1", {L(SL_SLIDING_WINDOW, 10, SEC(1))}, 1},
    {"sw1-7us", {L(SL_SLIDING_WINDOW, 7, US(7), .precision = 1)}, 1},
    {"sw1-cd", {L(SL_SLIDING_WINDOW, 5, SEC(3), .count_denied = true)}, 1},
    {"swN", {L(SL_SLIDING_WINDOW, 6, MS(60), .precision = 6)}, 1},
    {"swN-hour", {L(SL_SLIDING_WINDOW, 10, HOUR, .precision = 60)}, 1},
    {"swN-cd", {L(SL_SLIDING_WINDOW, 8, SEC(1), .precision = 4, .count_denied = true)}, 1},
    {"swN-7us", {L(SL_SLIDING_WINDOW, 5, US(7), .precision = 7)}, 1},
    {"swN-70", {L(SL_SLIDING_WINDOW, 50, SEC(7), .precision = 70)}, 1},
    /* counters far past 2^53 / period: the script's long multiplication */
    {"sw-huge-cd", {L(SL_SLIDING_WINDOW, 4000000000u, HOUR, .precision = 3, .count_denied = true)}, 1},
    {"sw1-huge-cd", {L(SL_SLIDING_WINDOW, 3000000000u, SEC(86400), .count_denied = true)}, 1},
    {"soft", {L(SL_GCRA, 10, SEC(1), .burst = 9), L(SL_FIXED_WINDOW, 10, SEC(1)),
              L(SL_SLIDING_LOG, 7, SEC(2)), L(SL_SLIDING_WINDOW, 9, SEC(3), .precision = 3)},
     4, SL_MODE_SOFT, 50},
    {"soft-tb", {L(SL_TOKEN_BUCKET, 7, SEC(1), .burst = 3), L(SL_LEAKY_BUCKET, 5, MS(500), .shaper = true)},
     2, SL_MODE_SOFT, 130},
    {"shadow", {L(SL_FIXED_WINDOW, 3, SEC(1)), L(SL_SLIDING_LOG, 4, MS(700))}, 2, SL_MODE_SHADOW},
    {"elastic", {L(SL_TOKEN_BUCKET, 3, SEC(1))}, 1, SL_MODE_ELASTIC, 0,
     L(SL_TOKEN_BUCKET, 10, SEC(1))},
    {"elastic-mix", {L(SL_FIXED_WINDOW, 2, SEC(1), .count_denied = true), L(SL_SLIDING_LOG, 3, SEC(2))},
     2, SL_MODE_ELASTIC, 0, L(SL_GCRA, 4, SEC(1), .burst = 2)},
    {"elastic-sw", {L(SL_SLIDING_WINDOW, 3, SEC(1), .precision = 5)}, 1, SL_MODE_ELASTIC, 0,
     L(SL_SLIDING_WINDOW, 5, SEC(1))},
    {"multi", {L(SL_GCRA, 10, SEC(1), .burst = 2), L(SL_FIXED_WINDOW, 30, SEC(10)),
               L(SL_SLIDING_LOG, 5, SEC(1))},
     3},
    {"all-six", {L(SL_GCRA, 5, SEC(1), .burst = 1), L(SL_TOKEN_BUCKET, 20, SEC(7), .count_denied = true),
                 L(SL_LEAKY_BUCKET, 4, MS(300), .shaper = true), L(SL_FIXED_WINDOW, 9, SEC(2)),
                 L(SL_SLIDING_LOG, 6, MS(1500), .count_denied = true),
                 L(SL_SLIDING_WINDOW, 8, SEC(1)), L(SL_SLIDING_WINDOW, 12, SEC(3), .precision = 3)},
     7},
    {"sixteen", {L(SL_GCRA, 1, SEC(1)), L(SL_GCRA, 2, SEC(1)), L(SL_GCRA, 3, SEC(1)),
                 L(SL_TOKEN_BUCKET, 4, SEC(1)), L(SL_TOKEN_BUCKET, 5, SEC(2)),
                 L(SL_LEAKY_BUCKET, 6, SEC(1)), L(SL_LEAKY_BUCKET, 7, SEC(1), .shaper = true),
                 L(SL_FIXED_WINDOW, 8, SEC(1)), L(SL_FIXED_WINDOW, 9, SEC(3)),
                 L(SL_SLIDING_LOG, 10, SEC(1)), L(SL_SLIDING_LOG, 11, SEC(2)),
                 L(SL_SLIDING_WINDOW, 12, SEC(1)), L(SL_SLIDING_WINDOW, 13, SEC(2), .precision = 2),
                 L(SL_SLIDING_WINDOW, 14, SEC(4), .precision = 4), L(SL_GCRA, 15, SEC(5)),
                 L(SL_FIXED_WINDOW, 16, US(7))},
     16},
};

static uint64_t capacity_of(const sl__limit_t *l) { return l->nominal; }

/* Steps: none, short, one emission interval, onto and around a boundary
 * of some limit, a period or more, now and then backwards. */
static sl_usec_t next_time(uint64_t *seed, const sl_policy_t *p, sl_usec_t now) {
    const sl__limit_t *l = &p->limits[rng_below(seed, p->nlimits)];
    sl_usec_t period = l->period;
    sl_usec_t grid = l->sub ? l->sub : period;
    sl_usec_t t = now;
    switch (rng_below(seed, 16)) {
    case 0:
    case 1:
    case 2:
        break;
    case 3:
    case 4:
        t += 1 + (sl_usec_t)rng_below(seed, (uint64_t)(period / 10 + 1));
        break;
    case 5:
    case 6:
    case 7:
        t += period / (sl_usec_t)(l->rate ? l->rate : 1) + (sl_usec_t)rng_below(seed, 3) - 1;
        break;
    case 8:
    case 9: { /* onto a boundary, or one us either side */
        sl_usec_t b = (t / grid + 1) * grid;
        t = b + (sl_usec_t)rng_below(seed, 3) - 1;
        break;
    }
    case 10:
    case 11:
        t += (sl_usec_t)rng_below(seed, (uint64_t)(2 * period));
        break;
    case 12:
        t += period + (sl_usec_t)rng_below(seed, (uint64_t)(10 * period));
        break;
    case 13:
        t += (sl_usec_t)rng_below(seed, (uint64_t)period / 3 + 1);
        break;
    case 14: /* the clock goes back */
        t -= 1 + (sl_usec_t)rng_below(seed, (uint64_t)period);
        break;
    default:
        if (rng_below(seed, 4) == 0) /* a long way back */
            t -= (sl_usec_t)rng_below(seed, (uint64_t)(3 * period));
        else
            t += (sl_usec_t)rng_below(seed, 5);
        break;
    }
    return t < T0 ? T0 : t;
}

static uint64_t next_cost(uint64_t *seed, const sl_policy_t *p) {
    uint64_t cap = capacity_of(&p->limits[rng_below(seed, p->nlimits)]);
    switch (rng_below(seed, 24)) {
    case 0:
        return 0;
    case 1:
        return cap;
    case 2:
        return cap + 1;
    case 3:
        return UINT64_MAX;
    case 4:
        return (UINT64_C(1) << 53) + 1;
    case 5:
    case 6:
    case 7:
        return 1 + rng_below(seed, cap);
    default:
        return 1;
    }
}

static const char *const keys[] = {"alice", "bob", "", "x}{y\0z"};
static const size_t key_lens[] = {5, 3, 0, 6};

static uint64_t run_trace(const config_t *c, uint64_t seed0, int steps) {
    sl_limit_t pool = c->pool;
    sl_policy_t *p = make_policy(c->name, c->limits, c->n, c->mode, c->soft,
                                 c->mode == SL_MODE_ELASTIC ? &pool : NULL);
    mem_t m;
    mem_open(&m, 777);
    simple("FLUSHALL");
    uint64_t seed = seed0;
    sl_usec_t now = T0 + (sl_usec_t)rng_below(&seed, (uint64_t)SEC(1000));
    for (int step = 0; step < steps; step++) {
        now = next_time(&seed, p, now);
        size_t k = rng_below(&seed, 4);
        uint64_t cost = next_cost(&seed, p);
        bool peek = rng_below(&seed, 10) == 0;
        sl_decision_t dm, dr;
        sl_limit_report_t rm[SL_MAX_LIMITS], rr[SL_MAX_LIMITS];
        memset(&dr, 0x5A, sizeof dr);
        memset(rr, 0x5A, sizeof rr);
        mem_decide(&m, p, keys[k], key_lens[k], cost, now, peek, &dm, rm);
        redis_decide_frozen(p, keys[k], key_lens[k], cost, now, peek, &dr, rr);
        if (!same(&dm, rm, &dr, rr, c->n)) {
            fprintf(stderr, "%s seed %" PRIu64 " step %d: now=T0+%" PRId64 " key=%zu cost=%" PRIu64
                    " peek=%d\n", c->name, seed0, step, now - T0, k, cost, peek);
            print_decision("memory", &dm, rm, c->n);
            print_decision("redis", &dr, rr, c->n);
            fail_msg("the Redis store decided differently");
        }
    }
    mem_close(&m);
    sl_policy_free(p);
    return (uint64_t)steps;
}

/* Random policies: any algorithm, odd periods, random bursts, precisions,
 * flags and modes. */
static sl_limit_t random_limit(uint64_t *seed) {
    sl_limit_t l = {.algorithm = (sl_algorithm_t)rng_below(seed, SL_ALGORITHM_COUNT)};
    static const sl_usec_t periods[] = {7, 13, 1000, MS(250), SEC(1), SEC(7), MIN(1), HOUR, 3 * HOUR};
    l.period = rng_below(seed, 3) ? periods[rng_below(seed, 9)] : 1 + (sl_usec_t)rng_below(seed, SEC(100));
    l.limit = rng_below(seed, 8) ? 1 + rng_below(seed, 20) : 1 + rng_below(seed, 100000);
    if (l.algorithm == SL_GCRA || l.algorithm == SL_TOKEN_BUCKET || l.algorithm == SL_LEAKY_BUCKET)
        l.burst = rng_below(seed, 2) ? rng_below(seed, 30) : 0;
    if (l.algorithm == SL_LEAKY_BUCKET)
        l.shaper = rng_below(seed, 2);
    if (l.algorithm == SL_SLIDING_LOG && l.limit > 200)
        l.limit = 1 + l.limit % 200;
    if (l.algorithm == SL_SLIDING_WINDOW) {
        l.precision = (uint32_t)(rng_below(seed, 2) ? 1 : 1 + rng_below(seed, 12));
        l.period = l.precision * (1 + l.period / l.precision);
    }
    l.count_denied = rng_below(seed, 4) == 0;
    return l;
}

static void random_policies(uint64_t *total) {
    uint64_t seed = 424242;
    static char names[40][16];
    for (int i = 0; i < 40; i++) {
        config_t c;
        memset(&c, 0, sizeof c);
        snprintf(names[i], sizeof names[i], "random-%d", i);
        c.name = names[i];
        c.n = 1 + rng_below(&seed, 3);
        for (size_t k = 0; k < c.n; k++)
            c.limits[k] = random_limit(&seed);
        c.mode = (sl_mode_t)rng_below(&seed, 4);
        if (c.mode == SL_MODE_SOFT)
            c.soft = 1 + (uint32_t)rng_below(&seed, 200);
        if (c.mode == SL_MODE_ELASTIC)
            c.pool = random_limit(&seed);
        *total += run_trace(&c, seed, 1000);
    }
}

static void differential(void **state) {
    (void)state;
    load_script();
    uint64_t total = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n = sizeof configs / sizeof configs[0];
    for (size_t i = 0; i < n; i++)
        for (uint64_t s = 1; s <= 2; s++)
            total += run_trace(&configs[i], s * 1000 + i, STEPS);
    random_policies(&total);
    n += 40;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "differential: %zu configurations, %" PRIu64 " steps, identical, %.1f s\n", n,
            total, secs);
}

/* ---- batches ------------------------------------------------------------------------ */

/* What a batch reply of all-decided requests takes (script.c): a status
 * byte each, then a decision with its reports (status 1), or for a
 * one-limit decision of the script's fast path (status 3 to 6) its three
 * numbers alone. */
static size_t batch_reply_bytes(const sl__redis_eval_req_t *reqs, size_t n, const redisReply *rep) {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char status = bytes < rep->len ? (unsigned char)rep->str[bytes] : 0;
        if (status >= 3 && status <= 6 && reqs[i].p->nlimits == 1)
            bytes += 1 + 22;
        else
            bytes += 1 + 40 + 30 * reqs[i].p->nlimits;
    }
    return bytes;
}

/* One batch through the script, frozen as redis_decide_frozen() is: the
 * decisions of reqs[0..n) into d[] and r[] (SL_MAX_LIMITS reports each). */
static void redis_decide_batch_frozen(const sl__redis_eval_req_t *reqs, size_t n, sl_usec_t now,
                                      sl_decision_t *d, sl_limit_report_t (*r)[SL_MAX_LIMITS]) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, n, now, &call), SL_OK);
    int nkeys = atoi(call.argv[2]);
    redisAppendCommand(ctx, "MULTI");
    redisAppendCommandArgv(ctx, call.argc, (const char **)call.argv, call.argvlen);
    for (int k = 0; k < nkeys; k++)
        redisAppendCommand(ctx, "PERSIST %b", call.argv[3 + k], call.argvlen[3 + k]);
    redisAppendCommand(ctx, "EXEC");
    redisReply *rep = NULL;
    for (int i = 0; i < 3 + nkeys; i++) {
        if (rep)
            freeReplyObject(rep);
        assert_int_equal(redisGetReply(ctx, (void **)&rep), REDIS_OK);
    }
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1 + (size_t)nkeys);
    for (size_t i = 0; i < n; i++) {
        const char *why = NULL;
        int rc = sl__redis_parse_evaluate_batch(reqs, n, rep->element[0], i, &d[i], r[i], &why);
        if (rc != SL_OK)
            fail_msg("batch reply %zu not parsed (%s): %s", i, why,
                     rep->element[0]->type == REDIS_REPLY_ERROR ? rep->element[0]->str : "");
        if (i == n - 1) /* nothing after the last */
            assert_int_equal(rep->element[0]->len, batch_reply_bytes(reqs, n, rep->element[0]));
    }
    freeReplyObject(rep);
    sl__redis_call_free(&call);
}

/* Random batches of 1..64 requests over several policies (every mode) and
 * a few keys -- so one batch often holds the same key more than once --
 * decide as the memory store deciding them one after the other. */
static void run_batches(const size_t *which, size_t npol, uint64_t seed0, int batches) {
    sl_policy_t *pol[8];
    for (size_t i = 0; i < npol; i++) {
        const config_t *c = &configs[which[i]];
        sl_limit_t pool = c->pool;
        pol[i] = make_policy(c->name, c->limits, c->n, c->mode, c->soft,
                             c->mode == SL_MODE_ELASTIC ? &pool : NULL);
    }
    mem_t m;
    mem_open(&m, 777);
    simple("FLUSHALL");
    uint64_t seed = seed0;
    sl_usec_t now = T0 + (sl_usec_t)rng_below(&seed, (uint64_t)SEC(1000));
    static sl_decision_t dr[SL__REDIS_MAX_BATCH];
    static sl_limit_report_t rr[SL__REDIS_MAX_BATCH][SL_MAX_LIMITS];
    for (int b = 0; b < batches; b++) {
        now = next_time(&seed, pol[rng_below(&seed, npol)], now);
        size_t n = rng_below(&seed, 4) ? 1 + rng_below(&seed, 8) : 1 + rng_below(&seed, 64);
        sl__redis_eval_req_t reqs[SL__REDIS_MAX_BATCH];
        for (size_t i = 0; i < n; i++) {
            const sl_policy_t *p = pol[rng_below(&seed, npol)];
            size_t k = rng_below(&seed, 4);
            reqs[i] = (sl__redis_eval_req_t){p, keys[k], key_lens[k], next_cost(&seed, p),
                                             rng_below(&seed, 10) == 0};
        }
        memset(dr, 0x5A, sizeof dr);
        memset(rr, 0x5A, sizeof rr);
        redis_decide_batch_frozen(reqs, n, now, dr, rr);
        for (size_t i = 0; i < n; i++) {
            sl_decision_t dm;
            sl_limit_report_t rm[SL_MAX_LIMITS];
            mem_decide(&m, reqs[i].p, reqs[i].key, reqs[i].key_len, reqs[i].cost, now,
                       reqs[i].peek, &dm, rm);
            if (!same(&dm, rm, &dr[i], rr[i], reqs[i].p->nlimits)) {
                fprintf(stderr, "batch seed %" PRIu64 " batch %d request %zu of %zu: policy %s "
                        "now=T0+%" PRId64 " cost=%" PRIu64 " peek=%d\n", seed0, b, i, n,
                        reqs[i].p->name, now - T0, reqs[i].cost, reqs[i].peek);
                print_decision("memory", &dm, rm, reqs[i].p->nlimits);
                print_decision("redis", &dr[i], rr[i], reqs[i].p->nlimits);
                fail_msg("the Redis store decided a batch differently");
            }
        }
    }
    mem_close(&m);
    for (size_t i = 0; i < npol; i++)
        sl_policy_free(pol[i]);
}

static size_t config_index(const char *name) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (strcmp(configs[i].name, name) == 0)
            return i;
    fail_msg("no configuration %s", name);
    return 0;
}

static void batch_differential(void **state) {
    (void)state;
    load_script();
    static const char *const sets[][6] = {
        {"gcra", "tb-odd", "fw", "sw1", "log", "swN"},
        {"soft", "shadow", "elastic", "elastic-mix", "multi", "lb-shaper"},
        {"gcra-cd", "log-100", "swN-70", "elastic-sw", "all-six", "fw-cd-hour"},
        {"sixteen", "sw-huge-cd", "log-wide", "tb-burst-cd", "gcra-7us", "elastic"},
        {"gcra", NULL},
        {"elastic", NULL},
    };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        size_t which[6], n = 0;
        while (n < 6 && sets[s][n])
            which[n] = config_index(sets[s][n]), n++;
        run_batches(which, n, 9000 + s, 400);
    }
}

/* A request that fails inside the script is an error element; the others
 * in its batch are answered. */
static void batch_survives_a_failed_request(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_limit_t one = L(SL_GCRA, 5, SEC(1), .burst = 1);
    sl_limit_t two = L(SL_FIXED_WINDOW, 3, SEC(1));
    sl_policy_t *a = make_policy("ba", &one, 1, SL_MODE_HARD, 0, NULL);
    sl_policy_t *b = make_policy("bb", &two, 1, SL_MODE_HARD, 0, NULL);
    sl__redis_eval_req_t reqs[3] = {{a, "k", 1, 1, false}, {b, "k", 1, 1, false}, {a, "k", 1, 1, false}};
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, 3, T0, &call), SL_OK);
    assert_int_equal(call.argc, 3 + 3 + 3 + 2);
    assert_ptr_equal(call.key, call.argv[3]);
    call.argvlen[10]--; /* b's limits, cut short */
    redisReply *r = send_call(&call);
    sl__redis_call_free(&call);
    sl_decision_t d;
    sl_limit_report_t rep[1];
    const char *why = NULL;
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, r, 0, &d, rep, &why), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(rep[0].remaining, 1);
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, r, 1, &d, rep, &why), SL_EINVAL);
    assert_string_equal(why, "the script failed for this request");
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, r, 2, &d, rep, &why), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(rep[0].remaining, 0);
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, r, 3, &d, rep, &why), SL_EINVAL);
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 2, r, 0, &d, rep, &why), SL_EINVAL);
    /* every prefix of the reply, and a bad status byte, read as no reply */
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    redisReply cut = *r;
    for (cut.len = 0; cut.len < r->len; cut.len++)
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, &cut, i, &d, rep, &why),
                             SL_EINVAL);
    cut.len = r->len;
    char *copy = malloc(r->len);
    memcpy(copy, r->str, r->len);
    cut.str = copy;
    copy[0] = 2;
    assert_int_equal(sl__redis_parse_evaluate_batch(reqs, 3, &cut, 2, &d, rep, &why), SL_EINVAL);
    free(copy);
    freeReplyObject(r);

    /* the server's clock, read once for the batch (a key of its own: "k"
     * lives in 2096) */
    sl__redis_eval_req_t srv = {a, "srv", 3, 1, false};
    assert_int_equal(sl__redis_build_evaluate_batch(&srv, 1, SL__REDIS_SERVER_TIME, &call), SL_OK);
    assert_int_equal(call.argvlen[4], 0);
    r = send_call(&call);
    sl__redis_call_free(&call);
    assert_int_equal(sl__redis_parse_evaluate_batch(&srv, 1, r, 0, &d, rep, &why), SL_OK);
    assert_true(d.allowed);
    freeReplyObject(r);

    /* bounds, and an unsupported policy refuses the whole batch */
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, 0, T0, &call), SL_EINVAL);
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, SL__REDIS_MAX_BATCH + 1, T0, &call),
                     SL_EINVAL);
    sl_limit_t big = L(SL_TOKEN_BUCKET, 1, INT64_C(1) << 40, .burst = UINT64_C(1) << 20);
    sl_policy_config_t cfg = {.name = "big", .limits = &big, .nlimits = 1};
    sl_policy_t *bad = NULL;
    char err[256];
    assert_int_equal(sl_policy_new(&cfg, &bad, err, sizeof err), SL_OK);
    reqs[1].p = bad;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, 3, T0, &call), SL_EINVAL);
    sl_policy_free(bad);
    sl_policy_free(a);
    sl_policy_free(b);
}

/* A full batch of distinct elastic policies with long keys: the argument
 * vector holds it (on the heap); every key's slot is its hash tag's. */
static void batch_of_the_largest_shape(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_limit_t own = L(SL_TOKEN_BUCKET, 2, SEC(1));
    sl_limit_t pool = L(SL_GCRA, 3, SEC(1));
    sl_policy_t *pol[SL__REDIS_MAX_BATCH];
    sl__redis_eval_req_t reqs[SL__REDIS_MAX_BATCH];
    static char names[SL__REDIS_MAX_BATCH][16], key[300];
    memset(key, 'q', sizeof key);
    for (size_t i = 0; i < SL__REDIS_MAX_BATCH; i++) {
        snprintf(names[i], sizeof names[i], "el%zu", i);
        pol[i] = make_policy(names[i], &own, 1, SL_MODE_ELASTIC, 0, &pool);
        reqs[i] = (sl__redis_eval_req_t){pol[i], key, sizeof key, 1, false};
    }
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, SL__REDIS_MAX_BATCH, T0, &call), SL_OK);
    assert_int_equal(call.argc, SL__REDIS_MAX_ARGS);
    assert_non_null(call.heap);
    /* ...which a Cluster would refuse (many slots): a plain server answers */
    redisReply *r = send_call(&call);
    for (size_t i = 0; i < SL__REDIS_MAX_BATCH; i++) {
        sl_decision_t d;
        assert_int_equal(sl__redis_parse_evaluate_batch(reqs, SL__REDIS_MAX_BATCH, r, i, &d, NULL,
                                                        NULL), SL_OK);
        assert_true(d.allowed);
        assert_int_equal(sl__redis_slot_of(pol[i], key, sizeof key),
                         sl__redis_key_slot(call.argv[3 + 2 * i], call.argvlen[3 + 2 * i]));
        assert_int_equal(sl__redis_slot_of(pol[i], key, sizeof key),
                         sl__redis_key_slot(call.argv[4 + 2 * i], call.argvlen[4 + 2 * i]));
    }
    freeReplyObject(r);
    sl__redis_call_free(&call);
    /* a hard policy's tag ends at a '}' in the key */
    sl_policy_t *hard = make_policy("api", &own, 1, SL_MODE_HARD, 0, NULL);
    assert_int_equal(sl__redis_slot_of(hard, "x}{y", 4), sl__redis_key_slot("{api\0x}", 7));
    assert_int_equal(sl__redis_slot_of(hard, "", 0), sl__redis_key_slot("{api\0}", 6));
    sl_policy_free(hard);
    for (size_t i = 0; i < SL__REDIS_MAX_BATCH; i++)
        sl_policy_free(pol[i]);
}

/* ---- expiry, recovery, reset -------------------------------------------------------------- */

static const sl_limit_t mix[] = {
    L(SL_GCRA, 10, SEC(1), .burst = 3), L(SL_FIXED_WINDOW, 5, SEC(2)), L(SL_SLIDING_LOG, 4, SEC(3)),
    L(SL_SLIDING_WINDOW, 6, SEC(4), .precision = 4), L(SL_SLIDING_WINDOW, 6, SEC(5)),
    L(SL_TOKEN_BUCKET, 2, SEC(6), .burst = 4),
};

static long long integer_of(const char *fmt, const char *key, size_t len) {
    redisReply *r = command(fmt, key, len);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void key_of(const sl_policy_t *p, const char *key, char *out, size_t *len) {
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_reset(p, key, strlen(key), &c), SL_OK);
    memcpy(out, c.key, c.key_len);
    *len = c.key_len;
    sl__redis_call_free(&c);
}

/* The key expires when its last state recovers, counted from the
 * evaluation's `now` (rounded up to the millisecond), whether that is the
 * caller's clock -- even one far from Redis's -- or the server's. */
static void expiry_is_reset_time(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_policy_t *p = make_policy("ttl", mix, 6, SL_MODE_HARD, 0, NULL);
    char k[256];
    size_t klen;
    key_of(p, "u1", k, &klen);
    sl_decision_t d;
    sl_limit_report_t r[6];
    for (int i = 0; i < 3; i++)
        redis_decide(p, "u1", 2, 1, T0 + i, false, &d, r);
    assert_true(d.allowed);
    long long pttl = integer_of("PTTL %b", k, klen);
    long long want = (d.reset_after + 999) / 1000;
    assert_true(pttl <= want);
    assert_true(pttl > want - 1000); /* however slow the machine */
    for (int i = 0; i < 6; i++)
        assert_true(r[i].reset_after <= d.reset_after);

    /* A caller's clock decades behind Redis's: the same lifetime. */
    redis_decide(p, "u4", 2, 1, INT64_C(1000000000000000), false, &d, r);
    key_of(p, "u4", k, &klen);
    pttl = integer_of("PTTL %b", k, klen);
    assert_true(pttl <= (d.reset_after + 999) / 1000);
    assert_true(pttl > d.reset_after / 1000 - 1000);

    /* Server time: the deadline is when the reset time ends on Redis's
     * clock (PXAT), rounded up to its millisecond: one more millisecond at
     * most than the reset time rounded up, read in the same millisecond. */
    redis_decide(p, "u2", 2, 2, SL__REDIS_SERVER_TIME, false, &d, r);
    key_of(p, "u2", k, &klen);
    pttl = integer_of("PTTL %b", k, klen);
    assert_true(pttl > 0);
    assert_true(pttl <= (d.reset_after + 999) / 1000 + 1);
    assert_true(pttl > d.reset_after / 1000 - 1000);

    /* A peek that changes nothing writes nothing. */
    simple("FLUSHALL");
    redis_decide(p, "u3", 2, 1, T0, true, &d, r);
    key_of(p, "u3", k, &klen);
    assert_int_equal(integer_of("EXISTS %b", k, klen), 0);
    sl_policy_free(p);
}

/* Once every state has recovered, a used key answers exactly as a new one,
 * whether or not Redis has dropped it yet. */
static void recovered_is_fresh(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_policy_t *p = make_policy("recover", mix, 6, SL_MODE_HARD, 0, NULL);
    sl_usec_t now = T0;
    sl_decision_t d, fresh;
    sl_limit_report_t r[6], rf[6];
    sl_usec_t last = now;
    for (int i = 0; i < 40; i++) {
        last = now + i * MS(50);
        redis_decide(p, "used", 4, 1 + (uint64_t)(i % 3), last, false, &d, r);
    }
    redis_decide(p, "used", 4, 1, last, true, &d, r);
    sl_usec_t t = last + d.reset_after;
    for (uint64_t cost = 0; cost < 8; cost++) {
        redis_decide(p, "used", 4, cost, t, true, &d, r);
        redis_decide(p, "new", 3, cost, t, true, &fresh, rf);
        assert_true(same(&d, r, &fresh, rf, 6));
    }
    redis_decide(p, "used", 4, 3, t, false, &d, r);
    redis_decide(p, "new", 3, 3, t, false, &fresh, rf);
    assert_true(same(&d, r, &fresh, rf, 6));
    sl_policy_free(p);
}

static void reset_forgets_the_key(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_policy_t *p = make_policy("reset", mix, 6, SL_MODE_HARD, 0, NULL);
    mem_t m;
    mem_open(&m, 777);
    sl_decision_t d, dm;
    sl_limit_report_t r[6], rm[6];
    for (int i = 0; i < 6; i++) {
        redis_decide(p, "k", 1, 1, T0, false, &d, r);
        mem_decide(&m, p, "k", 1, 1, T0, false, &dm, rm);
    }
    assert_false(d.allowed);
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_reset(p, "k", 1, &c), SL_OK);
    assert_string_equal(c.argv[0], "DEL");
    redisReply *rep = send_call(&c);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    sl__redis_call_free(&c);
    assert_int_equal(sl_reset(m.limiter, p, "k", 1), SL_OK);
    redis_decide(p, "k", 1, 1, T0, false, &d, r);
    mem_decide(&m, p, "k", 1, 1, T0, false, &dm, rm);
    assert_true(d.allowed);
    assert_true(same(&d, r, &dm, rm, 6));
    mem_close(&m);
    sl_policy_free(p);
}

/* A reload that keeps a limit keeps its state; a changed limit starts
 * afresh, and the old limit's record goes at the next write -- as in the
 * memory store. */
static void reload_keeps_unchanged_limits(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    sl_limit_t before[] = {L(SL_GCRA, 10, SEC(1), .burst = 2), L(SL_FIXED_WINDOW, 5, SEC(10))};
    sl_limit_t after[] = {L(SL_GCRA, 10, SEC(1), .burst = 2), L(SL_FIXED_WINDOW, 6, SEC(10))};
    sl_policy_t *p1 = make_policy("reload", before, 2, SL_MODE_HARD, 0, NULL);
    sl_policy_t *p2 = make_policy("reload", after, 2, SL_MODE_HARD, 0, NULL);
    mem_t m;
    mem_open(&m, 777);
    sl_decision_t d, dm;
    sl_limit_report_t r[2], rm[2];
    for (int i = 0; i < 4; i++) {
        redis_decide(p1, "k", 1, 1, T0 + i * MS(100), false, &d, r);
        mem_decide(&m, p1, "k", 1, 1, T0 + i * MS(100), false, &dm, rm);
        assert_true(d.allowed);
        assert_true(same(&d, r, &dm, rm, 2));
    }
    char k[64];
    size_t klen;
    key_of(p1, "k", k, &klen);
    assert_int_equal(integer_of("STRLEN %b", k, klen), 2 * 9 + 14 + 12);
    for (int i = 0; i < 4; i++) {
        sl_usec_t t = T0 + MS(350) + i * MS(100);
        redis_decide(p2, "k", 1, 1, t, i == 0, &d, r);
        mem_decide(&m, p2, "k", 1, 1, t, i == 0, &dm, rm);
        assert_true(d.allowed);
        assert_true(same(&d, r, &dm, rm, 2));
        if (i == 0)
            assert_int_equal(r[0].remaining, 2); /* gcra kept its state */
    }
    /* the gcra record kept its state, the old fixed_window record is gone */
    assert_int_equal(integer_of("STRLEN %b", k, klen), 2 * 9 + 14 + 12);
    assert_int_equal(r[1].remaining, 3);
    redis_decide(p1, "k", 1, 0, T0 + MS(900), true, &d, r);
    assert_int_equal(r[1].remaining, 5); /* going back, the old limit starts afresh too */
    mem_close(&m);
    sl_policy_free(p1);
    sl_policy_free(p2);
}

/* After SCRIPT FLUSH, EVALSHA fails with NOSCRIPT; EVAL with the body (what
 * the client falls back to) answers as the memory store does. */
static void noscript_then_eval(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    simple("SCRIPT FLUSH");
    sl_policy_t *p = make_policy("noscript", mix, 6, SL_MODE_HARD, 0, NULL);
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_evaluate(p, "a", 1, 1, T0, false, &c), SL_OK);
    redisReply *r = send_call(&c);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_true(strncmp(r->str, "NOSCRIPT", 8) == 0);
    sl_decision_t d;
    assert_int_equal(sl__redis_parse_evaluate(p, r, &d, NULL, NULL), SL_EINVAL);
    freeReplyObject(r);
    sl__redis_call_free(&c);

    mem_t m;
    mem_open(&m, 777);
    sl_decision_t dm;
    sl_limit_report_t rr[6], rm[6];
    for (int i = 0; i < 8; i++) {
        redis_decide_with(p, "a", 1, 1, T0 + i * MS(100), false, true, &d, rr);
        mem_decide(&m, p, "a", 1, 1, T0 + i * MS(100), false, &dm, rm);
        assert_true(same(&d, rr, &dm, rm, 6));
    }
    mem_close(&m);
    sl_policy_free(p);
    load_script();
}

/* ---- what the script refuses, how keys are named, bad replies --------------------------- */

static void refuses_what_lua_cannot_compute(void **state) {
    (void)state;
    const char *why = NULL;
    sl_policy_t *p = NULL;
    char err[256];

    /* tau = 2^20 * 2^40 scaled units: far past 2^53 */
    sl_limit_t big = L(SL_TOKEN_BUCKET, 1, INT64_C(1) << 40, .burst = UINT64_C(1) << 20);
    sl_policy_config_t cfg = {.name = "big", .limits = &big, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &p, err, sizeof err), SL_OK);
    assert_false(sl__redis_policy_supported(p, &why));
    assert_non_null(why);
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_evaluate(p, "k", 1, 1, T0, false, &c), SL_EINVAL);
    sl__redis_call_free(&c);
    sl_policy_free(p);

    /* a period past 2^51 us */
    sl_limit_t longp = L(SL_FIXED_WINDOW, 5, (INT64_C(1) << 51) + 1);
    cfg = (sl_policy_config_t){.name = "long", .limits = &longp, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &p, err, sizeof err), SL_OK);
    why = NULL;
    assert_false(sl__redis_policy_supported(p, &why));
    assert_non_null(why);
    sl_policy_free(p);

    /* the pool counts too */
    sl_limit_t small = L(SL_GCRA, 5, SEC(1));
    cfg = (sl_policy_config_t){.name = "el", .limits = &small, .nlimits = 1,
                               .mode = SL_MODE_ELASTIC, .pool = big};
    assert_int_equal(sl_policy_new(&cfg, &p, err, sizeof err), SL_OK);
    assert_false(sl__redis_policy_supported(p, &why));
    sl_policy_free(p);

    /* a name that would end the hash tag */
    cfg = (sl_policy_config_t){.name = "a}b", .limits = &small, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &p, err, sizeof err), SL_OK);
    assert_false(sl__redis_policy_supported(p, &why));
    sl_policy_free(p);

    /* large but exact: a million a day (gcd(limit, period) keeps it small),
     * a log of an hour, a window of ten years */
    sl_limit_t fine[] = {L(SL_TOKEN_BUCKET, 1000000, SEC(86400), .burst = 1000000, .count_denied = true),
                         L(SL_SLIDING_LOG, 1000, HOUR),
                         L(SL_SLIDING_WINDOW, 4000000000u, SEC(86400) * 3650, .precision = 10)};
    cfg = (sl_policy_config_t){.name = "fine", .limits = fine, .nlimits = 3};
    assert_int_equal(sl_policy_new(&cfg, &p, err, sizeof err), SL_OK);
    assert_true(sl__redis_policy_supported(p, &why));
    sl_policy_free(p);
}

static void keys_share_a_slot_when_they_must(void **state) {
    (void)state;
    sl_limit_t one = L(SL_GCRA, 5, SEC(1));
    sl_limit_t pool = L(SL_GCRA, 50, SEC(1));
    sl_policy_t *hard = make_policy("api", &one, 1, SL_MODE_HARD, 0, NULL);
    sl_policy_t *el = make_policy("api", &one, 1, SL_MODE_ELASTIC, 0, &pool);
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_evaluate(hard, "u\0v", 3, 1, T0, false, &c), SL_OK);
    assert_int_equal(c.argc, 8);
    assert_string_equal(c.argv[2], "1");
    assert_int_equal(c.argvlen[3], 12);
    assert_memory_equal(c.argv[3], "sl:{api\0u\0v}", 12);
    assert_ptr_equal(c.key, c.argv[3]);
    sl__redis_call_free(&c);
    assert_int_equal(sl__redis_build_evaluate(el, "u", 1, 1, SL__REDIS_SERVER_TIME, true, &c), SL_OK);
    assert_int_equal(c.argc, 10);
    assert_string_equal(c.argv[2], "2");
    assert_memory_equal(c.argv[3], "sl:{api}\0u", 10);
    assert_memory_equal(c.argv[4], "sl:{api}", 8);
    assert_int_equal(c.argvlen[5], 0); /* server time */
    assert_string_equal(c.argv[7], "5"); /* peek | elastic */
    sl__redis_call_free(&c);

    /* a long key goes to the heap */
    char big[4000];
    memset(big, 'k', sizeof big);
    assert_int_equal(sl__redis_build_evaluate(hard, big, sizeof big, 1, T0, false, &c), SL_OK);
    assert_non_null(c.heap);
    assert_int_equal(c.argvlen[3], sizeof big + 9);
    sl__redis_call_free(&c);
    sl_policy_free(hard);
    sl_policy_free(el);
}

static redisReply *int_array(const long long *v, size_t n) {
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n, sizeof *r->element);
    for (size_t i = 0; i < n; i++) {
        r->element[i] = calloc(1, sizeof **r->element);
        r->element[i]->type = REDIS_REPLY_INTEGER;
        r->element[i]->integer = v[i];
    }
    return r;
}

static void parses_replies(void **state) {
    (void)state;
    sl_limit_t two[] = {L(SL_GCRA, 5, SEC(1)), L(SL_FIXED_WINDOW, 3, SEC(1))};
    sl_policy_t *p = make_policy("parse", two, 2, SL_MODE_HARD, 0, NULL);
    long long good[18] = {0, 1, 3, 0, 900, -1, 0, 1, 1, 1, 4, 200, 0, 0, 3, 0, 900, -1};
    sl_decision_t d;
    sl_limit_report_t r[2];
    const char *why = NULL;
    redisReply *rep = int_array(good, 18);
    assert_int_equal(sl__redis_parse_evaluate(p, rep, &d, r, &why), SL_OK);
    assert_false(d.allowed);
    assert_true(d.limited);
    assert_int_equal(d.retry_after, SL_NEVER);
    assert_int_equal(d.limit_index, 1);
    assert_int_equal(r[1].retry_after, SL_NEVER);
    assert_int_equal(r[0].remaining, 4);
    freeReplyObject(rep);
    /* every prefix is the wrong shape; a negative or too-large field is bad */
    for (size_t n = 0; n < 18; n++) {
        rep = int_array(good, n);
        assert_int_equal(sl__redis_parse_evaluate(p, rep, &d, r, &why), SL_EINVAL);
        freeReplyObject(rep);
    }
    long long bad[18];
    for (size_t i = 0; i < 18; i++) {
        memcpy(bad, good, sizeof bad);
        bad[i] = i == 7 ? 2 : -2;
        rep = int_array(bad, 18);
        assert_int_equal(sl__redis_parse_evaluate(p, rep, &d, r, &why), SL_EINVAL);
        freeReplyObject(rep);
    }
    rep = calloc(1, sizeof *rep);
    rep->type = REDIS_REPLY_ERROR;
    rep->str = strdup("ERR boom");
    rep->len = 8;
    assert_int_equal(sl__redis_parse_evaluate(p, rep, &d, r, &why), SL_EINVAL);
    freeReplyObject(rep);
    assert_int_equal(sl__redis_parse_evaluate(p, NULL, &d, r, &why), SL_EINVAL);
    sl_policy_free(p);
}

/* ---- memory per key ------------------------------------------------------------------------ */

static long long memory_of(const sl_policy_t *p, const char *key) {
    char k[256];
    size_t klen;
    key_of(p, key, k, &klen);
    redisReply *r = command("MEMORY USAGE %b SAMPLES 0", k, klen);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

static void memory_per_key(void **state) {
    (void)state;
    load_script();
    simple("FLUSHALL");
    static const struct {
        const char *name;
        sl_limit_t l;
        uint64_t fill;
    } cases[] = {
        {"gcra", L(SL_GCRA, 10, SEC(1), .burst = 4), 1},
        {"token_bucket", L(SL_TOKEN_BUCKET, 100, SEC(60)), 1},
        {"leaky_bucket", L(SL_LEAKY_BUCKET, 100, SEC(60), .shaper = true), 1},
        {"fixed_window", L(SL_FIXED_WINDOW, 100, SEC(60)), 1},
        {"sliding_window/1", L(SL_SLIDING_WINDOW, 100, SEC(60)), 1},
        {"sliding_window/10", L(SL_SLIDING_WINDOW, 100, SEC(60), .precision = 10), 1},
        {"sliding_window/60", L(SL_SLIDING_WINDOW, 100, SEC(3600), .precision = 60), 1},
        {"sliding_log/10 one", L(SL_SLIDING_LOG, 10, SEC(60)), 1},
        {"sliding_log/10 full", L(SL_SLIDING_LOG, 10, SEC(60)), 10},
        {"sliding_log/100 full", L(SL_SLIDING_LOG, 100, SEC(60)), 100},
        {"sliding_log/100 wide", L(SL_SLIDING_LOG, 100, 2 * HOUR), 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_policy_t *p = make_policy("m", &cases[i].l, 1, SL_MODE_HARD, 0, NULL);
        sl_decision_t d;
        simple("FLUSHALL");
        for (uint64_t k = 0; k < cases[i].fill; k++)
            redis_decide(p, "user:12345", 10, 1, T0 + (sl_usec_t)k, false, &d, NULL);
        assert_true(d.allowed);
        long long bytes = memory_of(p, "user:12345");
        assert_true(bytes > 0);
        fprintf(stderr, "MEMORY USAGE %-22s %lld bytes (key \"user:12345\", policy \"m\")\n",
                cases[i].name, bytes);
        sl_policy_free(p);
    }
    simple("FLUSHALL");
    sl_policy_t *p = make_policy("m", mix, 6, SL_MODE_HARD, 0, NULL);
    sl_decision_t d;
    redis_decide(p, "user:12345", 10, 1, T0, false, &d, NULL);
    fprintf(stderr, "MEMORY USAGE %-22s %lld bytes\n", "six limits, one key", memory_of(p, "user:12345"));
    sl_policy_free(p);
}

/* What one evaluation costs Redis (server-side time, INFO commandstats);
 * printed, never checked. */
static double usec_per_evalsha(void) {
    redisReply *r = command("INFO commandstats");
    const char *at = r->str ? strstr(r->str, "cmdstat_evalsha:") : NULL;
    double us = -1;
    if (at)
        at = strstr(at, "usec_per_call=");
    if (at)
        us = strtod(at + strlen("usec_per_call="), NULL);
    freeReplyObject(r);
    return us;
}

static void script_cost(void **state) {
    (void)state;
    load_script();
    static const struct {
        const char *name;
        sl_limit_t l;
    } one[] = {
        {"gcra", L(SL_GCRA, 100, SEC(1), .burst = 10)},
        {"fixed_window", L(SL_FIXED_WINDOW, 100, SEC(1))},
        {"sliding_window/1", L(SL_SLIDING_WINDOW, 100, SEC(1))},
        {"sliding_window/60", L(SL_SLIDING_WINDOW, 100, SEC(60), .precision = 60)},
        {"sliding_log/100", L(SL_SLIDING_LOG, 100, SEC(1))},
    };
    for (size_t i = 0; i <= sizeof one / sizeof one[0]; i++) {
        bool six = i == sizeof one / sizeof one[0];
        sl_policy_t *p = six ? make_policy("c", mix, 6, SL_MODE_HARD, 0, NULL)
                             : make_policy("c", &one[i].l, 1, SL_MODE_HARD, 0, NULL);
        simple("FLUSHALL");
        simple("CONFIG RESETSTAT");
        sl_decision_t d;
        char key[16];
        for (int k = 0; k < 5000; k++) {
            snprintf(key, sizeof key, "u%d", k % 100);
            redis_decide(p, key, strlen(key), 1, T0 + k * MS(1), false, &d, NULL);
        }
        fprintf(stderr, "EVALSHA %-22s %.2f us per call in Redis\n", six ? "six limits" : one[i].name,
                usec_per_evalsha());
        sl_policy_free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_what_lua_cannot_compute),
        cmocka_unit_test(keys_share_a_slot_when_they_must),
        cmocka_unit_test(parses_replies),
        cmocka_unit_test(differential),
        cmocka_unit_test(batch_differential),
        cmocka_unit_test(batch_survives_a_failed_request),
        cmocka_unit_test(batch_of_the_largest_shape),
        cmocka_unit_test(expiry_is_reset_time),
        cmocka_unit_test(recovered_is_fresh),
        cmocka_unit_test(reset_forgets_the_key),
        cmocka_unit_test(reload_keeps_unchanged_limits),
        cmocka_unit_test(noscript_then_eval),
        cmocka_unit_test(memory_per_key),
        cmocka_unit_test(script_cost),
    };
    return cmocka_run_group_tests(tests, script_rig_setup, script_rig_teardown);
}
