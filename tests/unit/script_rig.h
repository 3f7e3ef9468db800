/* script_rig.h -- the memory store's side of the differential tests that
 * run one trace through the Redis scripts and through the library
 * (test_redis_script.c, test_reserve_redis.c): a memory limiter on a fake
 * clock, a policy the Redis store must support, and how two decisions are
 * compared and shown; the redis-server both run against, and one call
 * sent to it with its keys frozen. Header-only; include after rig.h and redis_rig.h.
 */
#ifndef SL_TEST_SCRIPT_RIG_H
#define SL_TEST_SCRIPT_RIG_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/policy.h"
#include "store/redis/script.h"

/* One redis-server for the whole group and a connection to it. */
static redis_proc_t server;
static redisContext *ctx;

static int script_rig_setup(void **state) {
    (void)state;
    if (redis_rig_start(&server, NULL) != 0)
        return -1;
    ctx = redis_rig_connect(server.port);
    return ctx ? 0 : -1;
}

static int script_rig_teardown(void **state) {
    (void)state;
    if (ctx)
        redisFree(ctx);
    redis_rig_stop(&server);
    return 0;
}

/* One call, its keys made persistent in the same MULTI: expiry runs on the
 * real clock and the traces on a fake one (as test_redis_script.c). */
static inline redisReply *send_frozen(sl__redis_call_t *call, int nkeys) {
    redisAppendCommand(ctx, "MULTI");
    redisAppendCommandArgv(ctx, call->argc, (const char **)call->argv, call->argvlen);
    for (int k = 0; k < nkeys; k++)
        redisAppendCommand(ctx, "PERSIST %b", call->argv[3 + k], call->argvlen[3 + k]);
    redisAppendCommand(ctx, "EXEC");
    redisReply *r = NULL;
    for (int i = 0; i < 3 + nkeys; i++) {
        if (r)
            freeReplyObject(r);
        assert_int_equal(redisGetReply(ctx, (void **)&r), REDIS_OK);
    }
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    return r;
}

typedef struct mem {
    sl_usec_t now;
    sl_store_t *store;
    sl_limiter_t *limiter;
} mem_t;

static sl_usec_t mem_clock(void *c) { return ((mem_t *)c)->now; }

static void mem_open(mem_t *m, uint64_t seed) {
    memset(m, 0, sizeof *m);
    sl_memory_options_t mo = {.shards = 4, .seed = seed};
    assert_int_equal(sl_store_memory_new(&mo, &m->store), SL_OK);
    sl_limiter_options_t lo = {.clock = mem_clock, .clock_ctx = m};
    assert_int_equal(sl_limiter_new(m->store, &lo, &m->limiter), SL_OK);
}

static void mem_close(mem_t *m) {
    sl_limiter_free(m->limiter);
    sl_store_free(m->store);
}

static sl_policy_t *make_policy(const char *name, const sl_limit_t *limits, size_t n, sl_mode_t mode,
                                uint32_t soft, const sl_limit_t *pool) {
    sl_policy_config_t cfg = {.name = name, .limits = limits, .nlimits = n, .mode = mode,
                              .soft_percent = soft};
    if (pool)
        cfg.pool = *pool;
    sl_policy_t *p = NULL;
    char why[256] = "";
    if (sl_policy_new(&cfg, &p, why, sizeof why) != SL_OK)
        fail_msg("policy %s rejected: %s", name, why);
    const char *reason = NULL;
    if (!sl__redis_policy_supported(p, &reason))
        fail_msg("policy %s not supported by the Redis store: %s", name, reason);
    return p;
}

static void print_decision(const char *who, const sl_decision_t *d, const sl_limit_report_t *r,
                           size_t n) {
    fprintf(stderr,
            "  %-6s allowed=%d limited=%d limit=%" PRIu64 " remaining=%" PRIu64
            " reset=%" PRId64 " retry=%" PRId64 " delay=%" PRId64 " index=%d\n",
            who, d->allowed, d->limited, d->limit, d->remaining, d->reset_after, d->retry_after,
            d->delay, d->limit_index);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr,
                "         [%zu] allowed=%d limit=%" PRIu64 " remaining=%" PRIu64 " reset=%" PRId64
                " retry=%" PRId64 "\n",
                i, r[i].allowed, r[i].limit, r[i].remaining, r[i].reset_after, r[i].retry_after);
}

static bool same(const sl_decision_t *a, const sl_limit_report_t *ra, const sl_decision_t *b,
                 const sl_limit_report_t *rb, size_t n) {
    if (a->allowed != b->allowed || a->limited != b->limited || a->limit != b->limit ||
        a->remaining != b->remaining || a->reset_after != b->reset_after ||
        a->retry_after != b->retry_after || a->delay != b->delay ||
        a->limit_index != b->limit_index)
        return false;
    for (size_t i = 0; i < n; i++)
        if (ra[i].allowed != rb[i].allowed || ra[i].limit != rb[i].limit ||
            ra[i].remaining != rb[i].remaining || ra[i].reset_after != rb[i].reset_after ||
            ra[i].retry_after != rb[i].retry_after)
            return false;
    return true;
}

#endif
