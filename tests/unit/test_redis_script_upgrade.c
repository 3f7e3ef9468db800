/* test_redis_script_upgrade.c -- evaluate.lua beside the script of an older
 * sluiced on one Redis (a rolling upgrade), and the keys' lifetimes:
 *
 * - the same seeded random traces through the memory store and through
 *   Redis, each call sent at random to this build's script (one call, or
 *   a batch, whose one-limit decisions answer compactly) or to the
 *   script of fb0ec63 (tests/unit/fixtures/evaluate_fb0ec63.lua, the state
 *   format both keep): every decision must be the memory store's, so each
 *   reads what the other wrote;
 * - a write that keeps the key's expiry (SET ... KEEPTTL) does so only when
 *   the value it replaces ended no earlier, and the key never expires
 *   before its last state has recovered, on the test clock;
 * - the compact batch answer of a one-limit decision read, and refused when
 *   malformed.
 */
#include "rig.h"
#include "redis_rig.h"
#include "script_rig.h"

#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/policy.h"
#include "store/redis/script.h"

/* Far in the future (2096), below the script's 2^52 us. */
#define T0 INT64_C(4000000000000000)
#define L(alg, lim, ...) {.algorithm = (alg), .limit = (lim), .period = __VA_ARGS__}

static char old_sha[41];

static void flushall(void) {
    redisReply *r = redis_rig_command(server.port, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
}

static bool load(const char *body, size_t len, char *sha) {
    redisReply *r = redisCommand(ctx, "SCRIPT LOAD %b", body, len);
    bool ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok && sha)
        memcpy(sha, r->str, 41);
    if (!ok)
        fprintf(stderr, "SCRIPT LOAD: %s\n", r && r->str ? r->str : "?");
    freeReplyObject(r);
    return ok;
}

/* Both scripts loaded; the old one is a fixture read from the source tree. */
static int setup(void **state) {
    if (script_rig_setup(state) != 0)
        return -1;
    if (!load(sl__redis_evaluate_lua, sl__redis_evaluate_lua_len, NULL))
        return -1;
    char path[4096];
    const char *dir = getenv("SLUICE_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/unit/fixtures/evaluate_fb0ec63.lua", dir ? dir : "../..");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s not found (set SLUICE_SOURCE_DIR to the source tree)\n", path);
        return -1;
    }
    static char body[1 << 17];
    size_t len = fread(body, 1, sizeof body, f);
    fclose(f);
    return load(body, len, old_sha) ? 0 : -1;
}

/* One single call, to the old script (old) or this one, keys frozen. */
static void redis_single(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now, bool old,
                         sl_decision_t *out, sl_limit_report_t *limits) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate(p, key, strlen(key), cost, now, false, &call), SL_OK);
    if (old)
        call.argv[1] = old_sha;
    redisReply *r = send_frozen(&call, call.argv[2][0] - '0');
    const char *why = NULL;
    if (sl__redis_parse_evaluate(p, r->element[0], out, limits, &why) != SL_OK)
        fail_msg("reply not parsed (%s): %s", why,
                 r->element[0]->type == REDIS_REPLY_ERROR ? r->element[0]->str : "");
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

/* A batch through this script, keys frozen. */
static void redis_batch(const sl__redis_eval_req_t *reqs, size_t n, sl_usec_t now, sl_decision_t *d,
                        sl_limit_report_t (*lr)[SL_MAX_LIMITS]) {
    sl__redis_call_t call;
    assert_int_equal(sl__redis_build_evaluate_batch(reqs, n, now, &call), SL_OK);
    int nkeys = atoi(call.argv[2]);
    redisReply *r = send_frozen(&call, nkeys);
    for (size_t i = 0; i < n; i++) {
        const char *why = NULL;
        if (sl__redis_parse_evaluate_batch(reqs, n, r->element[0], i, &d[i], lr[i], &why) != SL_OK)
            fail_msg("batch reply %zu not parsed (%s): %s", i, why,
                     r->element[0]->type == REDIS_REPLY_ERROR ? r->element[0]->str : "");
    }
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

static void mem_one(mem_t *m, const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                    sl_decision_t *out, sl_limit_report_t *limits) {
    m->now = now;
    assert_int_equal(sl_decide(m->limiter, p, key, strlen(key), cost, 0, out, limits), SL_OK);
}

static const sl_limit_t one_gcra[] = {L(SL_GCRA, 10, SEC(1), .burst = 4)};
static const sl_limit_t one_leaky[] = {L(SL_LEAKY_BUCKET, 5, SEC(2), .shaper = true)};
static const sl_limit_t one_fixed[] = {L(SL_FIXED_WINDOW, 6, SEC(2))};
static const sl_limit_t one_log[] = {L(SL_SLIDING_LOG, 4, SEC(3))};
static const sl_limit_t mixed[] = {L(SL_GCRA, 10, SEC(1), .burst = 3), L(SL_FIXED_WINDOW, 5, SEC(2)),
                                   L(SL_SLIDING_WINDOW, 6, SEC(4), .precision = 4)};

static const char *const keys[] = {"a", "b", "c"};

/* Old and new scripts take turns at random on the same keys (the one-limit
 * gcra keys are the new script's fast path: its compact batch answers and
 * its writes), every decision the memory store's. */
static void old_and_new_read_each_other(void **state) {
    (void)state;
    flushall();
    sl_policy_t *pol[] = {
        make_policy("up-gcra", one_gcra, 1, SL_MODE_HARD, 0, NULL),
        make_policy("up-gcra-cd", (sl_limit_t[]){L(SL_GCRA, 3, MS(300), .count_denied = true)}, 1,
                    SL_MODE_HARD, 0, NULL),
        make_policy("up-leaky", one_leaky, 1, SL_MODE_HARD, 0, NULL),
        make_policy("up-soft", one_gcra, 1, SL_MODE_SOFT, 50, NULL),
        make_policy("up-fixed", one_fixed, 1, SL_MODE_HARD, 0, NULL),
        make_policy("up-log", one_log, 1, SL_MODE_HARD, 0, NULL),
        make_policy("up-mixed", mixed, 3, SL_MODE_HARD, 0, NULL),
    };
    size_t npol = sizeof pol / sizeof pol[0];
    mem_t m;
    mem_open(&m, 42);
    uint64_t seed = 2411;
    sl_usec_t now = T0;
    size_t calls[3] = {0};
    for (int step = 0; step < 3000; step++) {
        uint64_t dt = rng_below(&seed, 8);
        now += dt == 0 ? 0 : dt < 6 ? (sl_usec_t)rng_below(&seed, (uint64_t)MS(200)) : SEC(3);
        unsigned how = (unsigned)rng_below(&seed, 3); /* 0 old, 1 new, 2 new batch */
        calls[how]++;
        size_t n = how == 2 ? 1 + rng_below(&seed, 8) : 1;
        sl__redis_eval_req_t reqs[8];
        for (size_t i = 0; i < n; i++) {
            const sl_policy_t *p = pol[rng_below(&seed, npol)];
            const char *k = keys[rng_below(&seed, 3)];
            reqs[i] = (sl__redis_eval_req_t){p, k, strlen(k), rng_below(&seed, 5) ? 1 : rng_below(&seed, 4)};
        }
        sl_decision_t d[8];
        sl_limit_report_t lr[8][SL_MAX_LIMITS];
        if (how == 2)
            redis_batch(reqs, n, now, d, lr);
        else
            redis_single(reqs[0].p, reqs[0].key, reqs[0].cost, now, how == 0, &d[0], lr[0]);
        for (size_t i = 0; i < n; i++) {
            sl_decision_t dm;
            sl_limit_report_t rm[SL_MAX_LIMITS];
            mem_one(&m, reqs[i].p, reqs[i].key, reqs[i].cost, now, &dm, rm);
            if (!same(&dm, rm, &d[i], lr[i], reqs[i].p->nlimits)) {
                fprintf(stderr, "step %d (%s) request %zu: policy %s key %s now=T0+%" PRId64 " cost=%" PRIu64 "\n",
                        step, how == 0 ? "old script" : how == 1 ? "new script" : "new batch", i,
                        reqs[i].p->name, (const char *)reqs[i].key, now - T0, reqs[i].cost);
                print_decision("memory", &dm, rm, reqs[i].p->nlimits);
                print_decision("redis", &d[i], lr[i], reqs[i].p->nlimits);
                fail_msg("old and new scripts on one Redis decided differently from the memory store");
            }
        }
    }
    assert_true(calls[0] > 500 && calls[1] > 500 && calls[2] > 500);
    mem_close(&m);
    for (size_t i = 0; i < npol; i++)
        sl_policy_free(pol[i]);
}

static long long pttl_of(const sl_policy_t *p, const char *key) {
    sl__redis_call_t c;
    assert_int_equal(sl__redis_build_reset(p, key, strlen(key), &c), SL_OK);
    redisReply *r = redis_rig_command(server.port, "PTTL %b", c.key, c.key_len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    sl__redis_call_free(&c);
    return v;
}

/* Not frozen: the keys keep the expiries the script gave them. */
static void redis_live(const sl_policy_t *p, const char *key, uint64_t cost, sl_usec_t now,
                       sl_decision_t *out) {
    sl__redis_call_t call;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    assert_int_equal(sl__redis_build_evaluate(p, key, strlen(key), cost, now, false, &call), SL_OK);
    redisReply *r = redisCommandArgv(ctx, call.argc, (const char **)call.argv, call.argvlen);
    assert_non_null(r);
    const char *why = NULL;
    assert_int_equal(sl__redis_parse_evaluate(p, r, out, lr, &why), SL_OK);
    freeReplyObject(r);
    sl__redis_call_free(&call);
}

/* A fixed window charged again within its window ends where it did: the
 * write keeps the key's expiry (KEEPTTL), which still covers the window's
 * end -- the test clock runs ahead of Redis's here, so a write that set the
 * expiry again would have shortened it by the clock's step. A charge that
 * moves the end (a gcra, a new window) sets it again: the key lives until
 * its last state has recovered, never less. */
static void expiry_kept_only_when_it_covers(void **state) {
    (void)state;
    flushall();
    sl_policy_t *fw = make_policy("ttl-fixed", (sl_limit_t[]){L(SL_FIXED_WINDOW, 100, SEC(60))}, 1,
                                  SL_MODE_HARD, 0, NULL);
    sl_policy_t *gc = make_policy("ttl-gcra", (sl_limit_t[]){L(SL_GCRA, 100, SEC(60), .burst = 99)}, 1,
                                  SL_MODE_HARD, 0, NULL);
    sl_usec_t start = SEC(60) * 66666666; /* a window's start */
    sl_decision_t d;
    redis_live(fw, "k", 1, start + SEC(1), &d);
    long long first = pttl_of(fw, "k");
    assert_true(first <= (d.reset_after + 999) / 1000 && first > d.reset_after / 1000 - 1000);
    /* 30 s later on the test clock, the same window: the expiry stays */
    redis_live(fw, "k", 1, start + SEC(31), &d);
    long long kept = pttl_of(fw, "k");
    assert_true(kept <= first);
    assert_true(kept > first - 1000); /* not first - 30000: kept, not set again */
    assert_true(kept >= d.reset_after / 1000); /* and it covers the window's end */
    /* the next window: set again, to its end */
    redis_live(fw, "k", 1, start + SEC(61), &d);
    long long next = pttl_of(fw, "k");
    assert_true(next <= (d.reset_after + 999) / 1000 && next > d.reset_after / 1000 - 1000);

    /* gcra: each charge moves the state's end: the expiry follows it */
    redis_live(gc, "k", 1, start, &d);
    long long g1 = pttl_of(gc, "k");
    for (int i = 1; i <= 5; i++) {
        redis_live(gc, "k", 1, start + i * MS(100), &d);
        long long g = pttl_of(gc, "k");
        assert_true(g <= (d.reset_after + 999) / 1000);
        assert_true(g > d.reset_after / 1000 - 1000); /* however slow the machine */
        assert_true(g > g1);
        g1 = g;
    }
    sl_policy_free(fw);
    sl_policy_free(gc);
}

static redisReply *string_reply(const unsigned char *bytes, size_t len) {
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_STRING;
    r->str = malloc(len + 1);
    memcpy(r->str, bytes, len);
    r->len = len;
    return r;
}

/* status, remaining, reset, wait: what evaluate.lua packs as '<BI7I7i8' */
static size_t compact(unsigned char *out, unsigned status, uint64_t rem, uint64_t reset, int64_t wait) {
    out[0] = (unsigned char)status;
    for (int i = 0; i < 7; i++) {
        out[1 + i] = (unsigned char)(rem >> (8 * i));
        out[8 + i] = (unsigned char)(reset >> (8 * i));
    }
    for (int i = 0; i < 8; i++)
        out[15 + i] = (unsigned char)((uint64_t)wait >> (8 * i));
    return 23;
}

static int parse_one(const sl__redis_eval_req_t *req, const unsigned char *b, size_t len, sl_decision_t *d,
                     sl_limit_report_t *r) {
    redisReply *rep = string_reply(b, len);
    const char *why = NULL;
    int rc = sl__redis_parse_evaluate_batch(req, 1, rep, 0, d, r, &why);
    freeReplyObject(rep);
    return rc;
}

static void compact_replies_parse(void **state) {
    (void)state;
    sl_policy_t *p1 = make_policy("c1", one_gcra, 1, SL_MODE_HARD, 0, NULL);
    sl_policy_t *p3 = make_policy("c3", mixed, 3, SL_MODE_HARD, 0, NULL);
    sl__redis_eval_req_t one = {p1, "a", 1, 1}, three = {p3, "a", 1, 1};
    unsigned char b[32];
    sl_decision_t d;
    sl_limit_report_t r[SL_MAX_LIMITS];
    /* allowed, a shaper's delay of 40 */
    assert_int_equal(parse_one(&one, b, compact(b, 4, 3, 300, 40), &d, r), SL_OK);
    assert_true(d.allowed && !d.limited);
    assert_int_equal(d.limit, p1->limits[0].nominal);
    assert_int_equal(d.remaining, 3);
    assert_int_equal(d.reset_after, 300);
    assert_int_equal(d.retry_after, 0);
    assert_int_equal(d.delay, 40);
    assert_int_equal(d.limit_index, 0);
    assert_true(r[0].allowed);
    assert_int_equal(r[0].limit, p1->limits[0].nominal);
    assert_int_equal(r[0].remaining, 3);
    assert_int_equal(r[0].reset_after, 300);
    assert_int_equal(r[0].retry_after, 0);
    /* allowed over a soft limit */
    assert_int_equal(parse_one(&one, b, compact(b, 6, 0, 300, 0), &d, r), SL_OK);
    assert_true(d.allowed && d.limited);
    /* denied: the wait is the retry, -1 never */
    assert_int_equal(parse_one(&one, b, compact(b, 5, 0, 900, 250), &d, r), SL_OK);
    assert_true(!d.allowed && d.limited);
    assert_int_equal(d.retry_after, 250);
    assert_int_equal(d.delay, 0);
    assert_int_equal(r[0].retry_after, 250);
    assert_int_equal(parse_one(&one, b, compact(b, 5, 0, 900, -1), &d, r), SL_OK);
    assert_int_equal(d.retry_after, SL_NEVER);
    assert_int_equal(r[0].retry_after, SL_NEVER);
    /* malformed: a wait below -1, an allowed one never, a status past 6,
     * cut short, something after it, or a policy of several limits */
    assert_int_equal(parse_one(&one, b, compact(b, 5, 0, 900, -2), &d, r), SL_EINVAL);
    assert_int_equal(parse_one(&one, b, compact(b, 4, 0, 900, -1), &d, r), SL_EINVAL);
    assert_int_equal(parse_one(&one, b, compact(b, 7, 0, 900, 0), &d, r), SL_EINVAL);
    assert_int_equal(parse_one(&one, b, compact(b, 4, 0, 900, 0) - 1, &d, r), SL_EINVAL);
    b[23] = 0;
    assert_int_equal(parse_one(&one, b, compact(b, 4, 0, 900, 0) + 1, &d, r), SL_EINVAL);
    assert_int_equal(parse_one(&three, b, compact(b, 4, 0, 900, 0), &d, r), SL_EINVAL);
    sl_policy_free(p1);
    sl_policy_free(p3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(old_and_new_read_each_other),
        cmocka_unit_test(expiry_kept_only_when_it_covers),
        cmocka_unit_test(compact_replies_parse),
    };
    return cmocka_run_group_tests(tests, setup, script_rig_teardown);
}
