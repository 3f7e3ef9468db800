/* test_reserve_redis.c -- reservations (sl_reserve) in evaluate.lua against
 * the memory store: seeded random traces of reservations with random waits,
 * plain checks and time steps (forward, onto window boundaries, now and
 * then backwards) through sl_reserve()/sl_decide() on a memory store and
 * through the script on a real redis-server must give identical decisions
 * and per-limit reports at every step, for the algorithms that reserve and
 * their mixes, one call at a time and in batches. Also: waiters on one key
 * get the schedule, and a denied reservation leaves the key's value in
 * Redis byte for byte as it was. */
#include "rig.h"
#include "redis_rig.h"
#include "script_rig.h"

#include <inttypes.h>

#include "core/policy.h"
#include "store/redis/script.h"
#include "store/reserve.h"

/* Far in the future (2096), below the script's 2^52 us. */
#define T0 INT64_C(4000000000000000)
#define STEPS 1500

static int setup(void **state) {
    if (script_rig_setup(state) != 0)
        return -1;
    redisReply *r = redisCommand(ctx, "SCRIPT LOAD %b", sl__redis_evaluate_lua,
                                 (size_t)sl__redis_evaluate_lua_len);
    int rc = r && r->type == REDIS_REPLY_STRING ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "SCRIPT LOAD: %s\n", r && r->str ? r->str : "?");
    freeReplyObject(r);
    return rc;
}


static void redis_ex(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                     sl_usec_t wait, sl_usec_t not_before, bool peek, sl_decision_t *out,
                     sl_limit_report_t *limits) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_reserve(p, key, strlen(key), cost, now, wait, not_before, peek, &call),
                     SL_OK);
    redisReply *r = send_frozen(&call, call.argv[2][0] - '0');
    const char *why = NULL;
    if (sl__redis_parse_evaluate(p, r->element[0], out, limits, &why) != SL_OK)
        fail_msg("reply not parsed (%s): %s", why,
                 r->element[0]->type == REDIS_REPLY_ERROR ? r->element[0]->str : "");
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

static void redis_one(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                      sl_usec_t wait, sl_decision_t *out, sl_limit_report_t *limits) {
    redis_ex(p, key, cost, now, wait, 0, false, out, limits);
}

/* ---- the memory store side (mem_t, make_policy, same: script_rig.h) ------------------ */

static void mem_ex(mem_t *m, const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                   sl_usec_t wait, sl_usec_t not_before, bool peek, sl_decision_t *out,
                   sl_limit_report_t *limits) {
    m->now = now;
    assert_int_equal(sl__reserve(m->limiter, p, key, strlen(key), cost, wait, not_before, peek, out, limits, NULL),
                     SL_OK);
}

static void mem_one(mem_t *m, const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                    sl_usec_t wait, sl_decision_t *out, sl_limit_report_t *limits) {
    m->now = now;
    assert_int_equal(sl_reserve(m->limiter, p, key, strlen(key), cost, wait, out, limits), SL_OK);
}

/* ---- the traces ------------------------------------------------------------------------- */

typedef struct config {
    const char *name;
    sl_limit_t limits[4];
    size_t n;
    sl_mode_t mode;
    uint32_t soft;
    sl_limit_t pool;
} config_t;

#define L(alg, lim, ...) {.algorithm = (alg), .limit = (lim), .period = __VA_ARGS__}

static const config_t configs[] = {
    {"r-gcra", {L(SL_GCRA, 10, SEC(1), .burst = 4)}, 1},
    {"r-gcra0", {L(SL_GCRA, 7, MIN(60), .burst = 0)}, 1},
    {"r-gcra-7us", {L(SL_GCRA, 3, US(7), .burst = 2)}, 1},
    {"r-gcra-cd", {L(SL_GCRA, 5, MS(100), .burst = 3, .count_denied = true)}, 1},
    {"r-tb", {L(SL_TOKEN_BUCKET, 13, SEC(7), .burst = 6)}, 1},
    {"r-tb-cd", {L(SL_TOKEN_BUCKET, 3, SEC(1), .burst = 10, .count_denied = true)}, 1},
    {"r-lb", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5)}, 1},
    {"r-shaper", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5, .shaper = true)}, 1},
    {"r-shaper-cd", {L(SL_LEAKY_BUCKET, 3, MS(100), .shaper = true, .count_denied = true)}, 1},
    {"r-fw", {L(SL_FIXED_WINDOW, 5, SEC(1))}, 1},
    {"r-fw-7us", {L(SL_FIXED_WINDOW, 7, US(7))}, 1},
    {"r-fw-cd", {L(SL_FIXED_WINDOW, 4, MS(300), .count_denied = true)}, 1},
    {"r-two", {L(SL_GCRA, 10, SEC(1), .burst = 2), L(SL_FIXED_WINDOW, 30, SEC(10))}, 2},
    {"r-mix", {L(SL_TOKEN_BUCKET, 4, MS(500)), L(SL_LEAKY_BUCKET, 6, SEC(1), .shaper = true),
               L(SL_FIXED_WINDOW, 9, SEC(2), .count_denied = true), L(SL_GCRA, 20, SEC(3))},
     4},
    {"r-soft", {L(SL_GCRA, 10, SEC(1), .burst = 3), L(SL_FIXED_WINDOW, 10, SEC(1))}, 2, SL_MODE_SOFT, 50},
    {"r-shadow", {L(SL_FIXED_WINDOW, 3, SEC(1))}, 1, SL_MODE_SHADOW},
    {"r-elastic", {L(SL_TOKEN_BUCKET, 3, SEC(1))}, 1, SL_MODE_ELASTIC, 0, L(SL_TOKEN_BUCKET, 10, SEC(1))},
};

static sl_usec_t next_time(uint64_t *seed, const sl_policy_t *p, sl_usec_t now) {
    const sl__limit_t *l = &p->limits[rng_below(seed, p->nlimits)];
    sl_usec_t period = l->period;
    sl_usec_t t = now;
    switch (rng_below(seed, 12)) {
    case 0:
    case 1:
    case 2:
    case 3:
        break;
    case 4:
    case 5:
        t += 1 + (sl_usec_t)rng_below(seed, (uint64_t)(period / 10 + 1));
        break;
    case 6:
    case 7:
        t += period / (sl_usec_t)l->rate + (sl_usec_t)rng_below(seed, 3) - 1;
        break;
    case 8: /* onto a boundary, or one us either side */
        t = (t / period + 1) * period + (sl_usec_t)rng_below(seed, 3) - 1;
        break;
    case 9:
        t += (sl_usec_t)rng_below(seed, (uint64_t)(3 * period));
        break;
    case 10: /* the clock goes back */
        t -= 1 + (sl_usec_t)rng_below(seed, (uint64_t)period);
        break;
    default:
        t += period * (sl_usec_t)(5 + rng_below(seed, 20));
        break;
    }
    return t;
}

/* A wait: none, a little, a few periods, past an hour's reach. */
static sl_usec_t wait_of(uint64_t *seed, const sl_policy_t *p) {
    sl_usec_t period = p->limits[rng_below(seed, p->nlimits)].period;
    switch (rng_below(seed, 6)) {
    case 0:
        return 0;
    case 1:
        return 1 + (sl_usec_t)rng_below(seed, (uint64_t)period);
    case 2:
    case 3:
        return (sl_usec_t)rng_below(seed, (uint64_t)(4 * period)) + 1;
    case 4:
        return SL_MAX_WAIT - (sl_usec_t)rng_below(seed, 3);
    default:
        return period / 3 + 1;
    }
}

static sl_usec_t next_wait(uint64_t *seed, const sl_policy_t *p) {
    sl_usec_t w = wait_of(seed, p);
    return w < SL_MAX_WAIT ? w : SL_MAX_WAIT;
}

static void run_trace(const config_t *c, uint64_t seed) {
    sl_policy_t *p = make_policy(c->name, c->limits, c->n, c->mode, c->soft,
                                 c->mode == SL_MODE_ELASTIC ? &c->pool : NULL);
    mem_t m;
    mem_open(&m, 5);
    freeReplyObject(redisCommand(ctx, "FLUSHALL"));
    const char *keys[] = {"a", "b"};
    sl_usec_t now = T0;
    int held = 0; /* admitted to wait: the trace did test reservations */
    for (int step = 0; step < STEPS; step++) {
        now = next_time(&seed, p, now);
        if (now < T0)
            now = T0;
        const char *key = keys[rng_below(&seed, 2)];
        uint64_t cost = rng_below(&seed, 8) == 0 ? rng_below(&seed, 4) : 1;
        sl_usec_t wait = next_wait(&seed, p);
        /* now and then a floor (another policy's later place) or a peek */
        sl_usec_t floor = wait > 0 && rng_below(&seed, 4) == 0 ? (sl_usec_t)rng_below(&seed, (uint64_t)wait + 1) : 0;
        bool peek = rng_below(&seed, 6) == 0;
        sl_decision_t dm, dr;
        sl_limit_report_t rm[4], rr[4];
        mem_ex(&m, p, key, cost, now, wait, floor, peek, &dm, rm);
        redis_ex(p, key, cost, now, wait, floor, peek, &dr, rr);
        if (!same(&dm, rm, &dr, rr, c->n)) {
            fprintf(stderr, "%s seed step %d: key %s cost %" PRIu64 " now T0+%" PRId64
                            " wait %" PRId64 " floor %" PRId64 " peek %d\n",
                    c->name, step, key, cost, now - T0, wait, floor, peek);
            print_decision("memory", &dm, rm, c->n);
            print_decision("redis", &dr, rr, c->n);
            fail_msg("%s: the script's reservation differs from sl_reserve", c->name);
        }
        held += dm.allowed && dm.delay > 0;
    }
    fprintf(stderr, "  %-12s %d of %d admitted to wait\n", c->name, held, STEPS);
    assert_true(held >= STEPS / 150);
    mem_close(&m);
    sl_policy_free(p);
}

static void differential(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        run_trace(&configs[i], 0x5eed0000u + i);
}

/* A batch of reservations (the daemon's normal path) gives what one call
 * at a time gives. */
static void batch_matches_single(void **state) {
    (void)state;
    sl_limit_t lims[] = {L(SL_GCRA, 10, SEC(1), .burst = 0), L(SL_FIXED_WINDOW, 25, SEC(5))};
    sl_policy_t *p = make_policy("r-batch", lims, 2, SL_MODE_HARD, 0, NULL);
    mem_t m;
    mem_open(&m, 5);
    freeReplyObject(redisCommand(ctx, "FLUSHALL"));
    sl__redis_eval_req_t reqs[40];
    for (size_t i = 0; i < 40; i++)
        reqs[i] = (sl__redis_eval_req_t){.p = p, .key = i % 3 ? "k" : "j", .key_len = 1,
                                         .cost = 1, .max_wait = i % 5 == 4 ? 0 : SEC(2)};
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, 40, T0, &call), SL_OK);
    redisReply *r = send_frozen(&call, 40);
    size_t offsets[40];
    const char *why = NULL;
    assert_int_equal(sl__redis_batch_offsets(reqs, 40, r->element[0], offsets, &why), SL_OK);
    for (size_t i = 0; i < 40; i++) {
        sl_decision_t dm, dr;
        sl_limit_report_t rm[2], rr[2];
        mem_one(&m, p, reqs[i].key, 1, T0, reqs[i].max_wait, &dm, rm);
        assert_int_equal(sl__redis_parse_evaluate_at(&reqs[i], r->element[0], offsets[i], &dr, rr, &why),
                         SL_OK);
        if (!same(&dm, rm, &dr, rr, 2)) {
            print_decision("memory", &dm, rm, 2);
            print_decision("redis", &dr, rr, 2);
            fail_msg("batch request %zu differs", i);
        }
    }
    freeReplyObject(r);
    sl__redis_call_free(&call);
    mem_close(&m);
    sl_policy_free(p);
}

/* 10/s, burst 0: waiters get 0, 100, 200 ... ms, the one past max_wait is
 * denied and the key's value in Redis is unchanged by it. */
static void waiters_get_the_schedule(void **state) {
    (void)state;
    sl_limit_t lim = L(SL_GCRA, 10, SEC(1), .burst = 0);
    sl_policy_t *p = make_policy("r-sched", &lim, 1, SL_MODE_HARD, 0, NULL);
    freeReplyObject(redisCommand(ctx, "FLUSHALL"));
    for (int i = 0; i < 10; i++) {
        sl_decision_t d;
        sl_limit_report_t r[1];
        redis_one(p, "w", 1, T0, MS(950), &d, r);
        assert_true(d.allowed);
        assert_int_equal(d.delay, MS(100) * i);
    }
    redisReply *before = redisCommand(ctx, "GET %b", "sl:{r-sched\0w}", (size_t)14);
    assert_int_equal(before->type, REDIS_REPLY_STRING);
    sl_decision_t d;
    sl_limit_report_t r[1];
    redis_one(p, "w", 1, T0, MS(950), &d, r);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(50));
    redisReply *after = redisCommand(ctx, "GET %b", "sl:{r-sched\0w}", (size_t)14);
    assert_int_equal(after->type, REDIS_REPLY_STRING);
    assert_int_equal(after->len, before->len);
    assert_memory_equal(after->str, before->str, before->len);
    freeReplyObject(before);
    freeReplyObject(after);
    sl_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waiters_get_the_schedule),
        cmocka_unit_test(differential),
        cmocka_unit_test(batch_matches_single),
    };
    return cmocka_run_group_tests(tests, setup, script_rig_teardown);
}
