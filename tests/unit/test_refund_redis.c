/* test_refund_redis.c -- places given back (core/refund.h) in evaluate.lua
 * against the memory store: seeded random traces of reservations (sent
 * as the daemon sends them: a batch call that reports what the place
 * held), refunds of places held earlier (some after their moment, some
 * after later charges, some twice) and time steps, through
 * sl__reserve()/sl__refund() on a memory store and through the script on
 * a real redis-server, must give identical decisions, identical held
 * places, and identical states (a peek of every key, every limit's report)
 * at every step. Also: a refund gives the next waiter the place, and one
 * that is no longer exact changes nothing in Redis, byte for byte. */
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
#define MAX_HELD 64

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

/* A reservation as the daemon sends it: a batch of one that reports what
 * its place held. */
static void redis_reserve(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                          sl_usec_t wait, sl_usec_t not_before, bool peek, sl_decision_t *out,
                          sl_limit_report_t *limits, sl__held_t *held) {
    sl__redis_eval_req_t req = {.p = p, .key = key, .key_len = strlen(key), .cost = cost, .peek = peek,
                                .max_wait = wait, .not_before = not_before, .held = held};
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(&req, 1, now, &call), SL_OK);
    redisReply *r = send_frozen(&call, atoi(call.argv[2]));
    size_t at = 0;
    const char *why = NULL;
    if (sl__redis_batch_offsets(&req, 1, r->element[0], &at, &why) != SL_OK ||
        sl__redis_parse_evaluate_at(&req, r->element[0], at, out, limits, &why) != SL_OK)
        fail_msg("reply not parsed (%s): %s", why,
                 r->element[0]->type == REDIS_REPLY_ERROR ? r->element[0]->str : "");
    sl__redis_parse_held_at(&req, r->element[0], at, held);
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

/* The refund through the script: the limits it changed. */
static long long redis_refund(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                              const sl__held_t *held) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_refund(p, key, strlen(key), cost, now, held, &call), SL_OK);
    redisReply *r = send_frozen(&call, 1);
    redisReply *e = r->element[0];
    if (e->type != REDIS_REPLY_INTEGER)
        fail_msg("refund: %s", e->type == REDIS_REPLY_ERROR ? e->str : "not an integer");
    long long changed = e->integer;
    freeReplyObject(r);
    sl__redis_call_free(&call);
    return changed;
}

static void redis_peek(const sl_policy_t *p, const char *key, sl_usec_t now, sl_decision_t *out,
                       sl_limit_report_t *limits) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate(p, key, strlen(key), 1, now, true, &call), SL_OK);
    redisReply *r = send_frozen(&call, atoi(call.argv[2]));
    const char *why = NULL;
    if (sl__redis_parse_evaluate(p, r->element[0], out, limits, &why) != SL_OK)
        fail_msg("peek not parsed (%s)", why);
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

static void mem_peek(mem_t *m, const sl_policy_t *p, const char *key, sl_usec_t now, sl_decision_t *out,
                     sl_limit_report_t *limits) {
    m->now = now;
    assert_int_equal(sl_decide(m->limiter, p, key, strlen(key), 1, SL_DECIDE_PEEK, out, limits), SL_OK);
}

typedef struct config {
    const char *name;
    sl_limit_t limits[4];
    size_t n;
    sl_mode_t mode;
    sl_limit_t pool;
} config_t;

#define L(alg, lim, ...) {.algorithm = (alg), .limit = (lim), .period = __VA_ARGS__}

static const config_t configs[] = {
    {"f-gcra", {L(SL_GCRA, 10, SEC(1), .burst = 4)}, 1},
    {"f-gcra0", {L(SL_GCRA, 7, MIN(60), .burst = 0)}, 1},
    {"f-gcra-7us", {L(SL_GCRA, 3, US(7), .burst = 2)}, 1},
    {"f-gcra-cd", {L(SL_GCRA, 5, MS(100), .burst = 3, .count_denied = true)}, 1},
    {"f-tb", {L(SL_TOKEN_BUCKET, 13, SEC(7), .burst = 6)}, 1},
    {"f-lb", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5)}, 1},
    {"f-shaper", {L(SL_LEAKY_BUCKET, 10, SEC(1), .burst = 5, .shaper = true)}, 1},
    {"f-shaper-cd", {L(SL_LEAKY_BUCKET, 3, MS(100), .shaper = true, .count_denied = true)}, 1},
    {"f-fw", {L(SL_FIXED_WINDOW, 5, SEC(1))}, 1},
    {"f-fw-7us", {L(SL_FIXED_WINDOW, 7, US(7))}, 1},
    {"f-fw-cd", {L(SL_FIXED_WINDOW, 4, MS(300), .count_denied = true)}, 1},
    {"f-two", {L(SL_GCRA, 10, SEC(1), .burst = 2), L(SL_FIXED_WINDOW, 30, SEC(10))}, 2},
    {"f-mix", {L(SL_TOKEN_BUCKET, 4, MS(500)), L(SL_LEAKY_BUCKET, 6, SEC(1), .shaper = true),
               L(SL_FIXED_WINDOW, 9, SEC(2), .count_denied = true), L(SL_GCRA, 20, SEC(3))},
     4},
    {"f-shadow", {L(SL_FIXED_WINDOW, 3, SEC(1))}, 1, SL_MODE_SHADOW},
    {"f-elastic", {L(SL_TOKEN_BUCKET, 3, SEC(1))}, 1, SL_MODE_ELASTIC, L(SL_TOKEN_BUCKET, 10, SEC(1))},
};

static sl_usec_t next_time(uint64_t *seed, const sl_policy_t *p, sl_usec_t now) {
    const sl__limit_t *l = &p->limits[rng_below(seed, p->nlimits)];
    sl_usec_t period = l->period;
    switch (rng_below(seed, 10)) {
    case 0:
    case 1:
    case 2:
    case 3:
        return now;
    case 4:
    case 5:
        return now + 1 + (sl_usec_t)rng_below(seed, (uint64_t)(period / 10 + 1));
    case 6:
        return now + period / (sl_usec_t)l->rate;
    case 7: /* onto a boundary, or one us either side */
        return (now / period + 1) * period + (sl_usec_t)rng_below(seed, 3) - 1;
    case 8: /* the clock goes back */
        return now - 1 - (sl_usec_t)rng_below(seed, (uint64_t)period);
    default:
        return now + (sl_usec_t)rng_below(seed, (uint64_t)(3 * period));
    }
}

typedef struct place {
    const char *key;
    uint64_t cost;
    sl__held_t held;
} place_t;

static void check_same(const char *what, const config_t *c, int step, const sl_decision_t *dm,
                       const sl_limit_report_t *rm, const sl_decision_t *dr, const sl_limit_report_t *rr) {
    if (same(dm, rm, dr, rr, c->n))
        return;
    fprintf(stderr, "%s step %d: %s differs\n", c->name, step, what);
    print_decision("memory", dm, rm, c->n);
    print_decision("redis", dr, rr, c->n);
    fail_msg("%s: the script differs from the library (%s)", c->name, what);
}

static void run_trace(const config_t *c, uint64_t seed) {
    sl_policy_t *p = make_policy(c->name, c->limits, c->n, c->mode, 0,
                                 c->mode == SL_MODE_ELASTIC ? &c->pool : NULL);
    mem_t m;
    mem_open(&m, 7);
    freeReplyObject(redisCommand(ctx, "FLUSHALL"));
    const char *keys[] = {"a", "b"};
    place_t places[MAX_HELD];
    size_t nplaces = 0;
    int refunds = 0, changed = 0;
    sl_usec_t now = T0;
    for (int step = 0; step < STEPS; step++) {
        now = next_time(&seed, p, now);
        if (now < T0)
            now = T0;
        if (nplaces > 0 && rng_below(&seed, 3) == 0) {
            /* a waiter leaves: most often the latest, now and then any */
            size_t i = rng_below(&seed, 2) ? nplaces - 1 : rng_below(&seed, nplaces);
            place_t pl = places[i];
            if (rng_below(&seed, 8) != 0) /* now and then it stays: given back twice */
                places[i] = places[--nplaces];
            m.now = now;
            assert_int_equal(sl__refund(m.limiter, p, pl.key, strlen(pl.key), pl.cost, &pl.held), SL_OK);
            long long bits = redis_refund(p, pl.key, pl.cost, now, &pl.held);
            assert_true(bits >= 0 && bits < (1 << c->n));
            refunds++;
            changed += bits != 0;
        } else {
            const char *key = keys[rng_below(&seed, 2)];
            uint64_t cost = rng_below(&seed, 8) == 0 ? rng_below(&seed, 4) : 1;
            sl_usec_t period = p->limits[rng_below(&seed, p->nlimits)].period;
            sl_usec_t wait = rng_below(&seed, 5) == 0 ? 0 : 1 + (sl_usec_t)rng_below(&seed, (uint64_t)(4 * period));
            if (wait > SL_MAX_WAIT)
                wait = SL_MAX_WAIT;
            sl_usec_t floor = wait > 0 && rng_below(&seed, 4) == 0 ? (sl_usec_t)rng_below(&seed, (uint64_t)wait + 1) : 0;
            bool peek = rng_below(&seed, 8) == 0;
            sl_decision_t dm, dr;
            sl_limit_report_t rm[4], rr[4];
            sl__held_t hm = {.at = -1}, hr = {.at = -1};
            m.now = now;
            assert_int_equal(sl__reserve(m.limiter, p, key, strlen(key), cost, wait, floor, peek, &dm, rm, &hm),
                             SL_OK);
            redis_reserve(p, key, cost, now, wait, floor, peek, &dr, rr, &hr);
            check_same("a reservation", c, step, &dm, rm, &dr, rr);
            if (hm.at != hr.at)
                fail_msg("%s step %d: held at %" PRId64 " (memory) and %" PRId64 " (redis)", c->name, step,
                         hm.at, hr.at);
            for (size_t i = 0; hm.at > 0 && i < c->n; i++)
                if (hm.exp[i] != hr.exp[i])
                    fail_msg("%s step %d: limit %zu held up to %" PRId64 " (memory) and %" PRId64 " (redis)",
                             c->name, step, i, hm.exp[i], hr.exp[i]);
            if (hm.at > 0 && nplaces < MAX_HELD)
                places[nplaces++] = (place_t){key, cost, hm};
        }
        for (size_t k = 0; k < 2; k++) { /* the states, as every limit reports them */
            sl_decision_t dm, dr;
            sl_limit_report_t rm[4], rr[4];
            mem_peek(&m, p, keys[k], now, &dm, rm);
            redis_peek(p, keys[k], now, &dr, rr);
            check_same("a peek after the step", c, step, &dm, rm, &dr, rr);
        }
    }
    fprintf(stderr, "  %-12s %d refunds, %d gave something back\n", c->name, refunds, changed);
    assert_true(refunds > STEPS / 10);
    assert_true(changed > 0);
    assert_true(changed < refunds); /* and some could not be given back exactly */
    mem_close(&m);
    sl_policy_free(p);
}

static void differential(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        run_trace(&configs[i], 0xf00d0000u + i);
}

static redisReply *value_of(const char *key, size_t len) { return redisCommand(ctx, "GET %b", key, len); }

/* 10/s, burst 0: three waiters at 0, 100 and 200 ms; the one at 100 ms
 * leaves, and its refund is not exact (the one at 200 ms was charged
 * after it): nothing changes, byte for byte. The one at 200 ms leaves:
 * the next waiter gets 200 ms, not 300. */
static void refund_gives_the_next_waiter_the_place(void **state) {
    (void)state;
    sl_limit_t lim = L(SL_GCRA, 10, SEC(1), .burst = 0);
    sl_policy_t *p = make_policy("f-next", &lim, 1, SL_MODE_HARD, 0, NULL);
    freeReplyObject(redisCommand(ctx, "FLUSHALL"));
    sl__held_t held[3];
    for (int i = 0; i < 3; i++) {
        sl_decision_t d;
        sl_limit_report_t r[1];
        redis_reserve(p, "w", 1, T0, SEC(1), 0, false, &d, r, &held[i]);
        assert_true(d.allowed);
        assert_int_equal(d.delay, MS(100) * i);
        assert_int_equal(held[i].at, i == 0 ? 0 : T0 + MS(100) * i);
    }
    redisReply *before = value_of("sl:{f-next\0w}", 13);
    assert_int_equal(before->type, REDIS_REPLY_STRING);
    assert_int_equal(redis_refund(p, "w", 1, T0 + MS(10), &held[1]), 0);
    redisReply *after = value_of("sl:{f-next\0w}", 13);
    assert_int_equal(after->len, before->len);
    assert_memory_equal(after->str, before->str, before->len);
    freeReplyObject(before);
    freeReplyObject(after);
    assert_int_equal(redis_refund(p, "w", 1, T0 + MS(10), &held[2]), 1);
    sl_decision_t d;
    sl_limit_report_t r[1];
    sl__held_t next;
    redis_reserve(p, "w", 1, T0 + MS(10), SEC(1), 0, false, &d, r, &next);
    assert_true(d.allowed);
    assert_int_equal(d.delay, MS(190)); /* its place at T0 + 200 ms */
    /* after its moment a place is not given back */
    assert_int_equal(redis_refund(p, "w", 1, T0 + MS(200), &next), 0);
    sl_policy_free(p);
}

/* Bad arguments are refused before anything is sent. */
static void refund_arguments(void **state) {
    (void)state;
    sl_limit_t lim = L(SL_GCRA, 10, SEC(1), .burst = 0);
    sl_policy_t *p = make_policy("f-args", &lim, 1, SL_MODE_HARD, 0, NULL);
    sl__redis_call_t call;
    sl__held_t none = {0}, some = {.at = T0, .exp = {T0}};
    assert_int_equal(sl__redis_build_refund(p, "k", 1, 1, T0, &none, &call), SL_EINVAL);
    assert_int_equal(sl__redis_build_refund(p, "k", 1, 1, T0, NULL, &call), SL_EINVAL);
    assert_int_equal(sl__redis_build_refund(NULL, "k", 1, 1, T0, &some, &call), SL_EINVAL);
    assert_int_equal(sl__redis_build_refund(p, NULL, 1, 1, T0, &some, &call), SL_EINVAL);
    assert_int_equal(sl__redis_build_refund(p, "k", 1, 1, T0, &some, &call), SL_OK);
    sl__redis_call_free(&call);
    sl_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refund_arguments),
        cmocka_unit_test(refund_gives_the_next_waiter_the_place),
        cmocka_unit_test(differential),
    };
    return cmocka_run_group_tests(tests, setup, script_rig_teardown);
}
