/* test_http_ratelimit.c -- the rate limit header fields
 * (src/server/http/http_ratelimit.c; docs/protocol.md "Rate limit headers").
 *
 * The IETF draft's rules, read on the written header text: for every item,
 * RateLimit's remaining r is at most RateLimit-Policy's quota q, and its
 * reset t at most the window w. Each algorithm is driven on the fake clock
 * (rig.h) through fresh, partly used, exhausted (denials of several costs,
 * count_denied piling debt on) and recovering states, then through a long
 * seeded random walk of checks, peeks and clock steps; every decision's
 * fields are checked. The q and w each algorithm announces are pinned too,
 * as docs/protocol.md defines them.
 */
#include "rig.h"
#include "server/http/http_ratelimit.h"

#define MAX_ITEMS SL_MAX_LIMITS

typedef struct item {
    long long a, b;  /* q, w or r, t */
} item_t;

/* The header's value as a C string; fails when it is missing. */
static const char *header(const sld_http_reply_t *r, const char *name, char *out, size_t size) {
    for (size_t i = 0; i < r->nheaders; i++) {
        if (strcmp(r->headers[i].name, name) != 0)
            continue;
        assert_true(r->headers[i].len < size);
        memcpy(out, r->values.data + r->headers[i].off, r->headers[i].len);
        out[r->headers[i].len] = '\0';
        return out;
    }
    fail_msg("no %s header", name);
    return NULL;
}

/* Items `"name";<a>=N;<b>=N` separated by ", ": their two numbers. */
static size_t items(const char *text, const char *a, const char *b, item_t *out) {
    size_t n = 0;
    for (const char *p = text; p && *p; n++) {
        assert_true(n < MAX_ITEMS);
        const char *end = strstr(p, ", ");
        const char *pa = strstr(p, a), *pb = strstr(p, b);
        if (pa == NULL || pb == NULL || (end && (pa > end || pb > end)))
            fail_msg("item %zu of \"%s\" lacks %s or %s", n, text, a, b);
        out[n].a = strtoll(pa + strlen(a), NULL, 10);
        out[n].b = strtoll(pb + strlen(b), NULL, 10);
        p = end ? end + 2 : NULL;
    }
    return n;
}

typedef struct run {
    rig_t *rig;
    uint32_t soft;             /* the policy's soft tolerance, percent */
    sld_http_reply_t reply;
    const char *key;
    unsigned checked;          /* decisions whose fields were checked */
    unsigned limited;          /* decisions over a limit (denied, or let through by shadow or soft) */
} run_t;

/* One decision of `cost` (peek: charging nothing) and its fields checked. */
static void decide(run_t *run, uint64_t cost, bool peek) {
    sl_decision_t dec;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    rig_t *r = run->rig;
    assert_int_equal(sl_decide(r->limiter, r->policy, run->key, strlen(run->key), cost,
                               peek ? SL_DECIDE_PEEK : 0, &dec, lr),
                     SL_OK);
    sld_http_reply_reset(&run->reply);
    sld_http_rate_headers(&run->reply, "p", r->policy, run->soft, &dec, lr);
    char policy[1024], limit[1024];
    item_t qw[MAX_ITEMS], rt[MAX_ITEMS];
    size_t n = items(header(&run->reply, "RateLimit-Policy", policy, sizeof policy), ";q=", ";w=", qw);
    size_t m = items(header(&run->reply, "RateLimit", limit, sizeof limit), ";r=", ";t=", rt);
    assert_int_equal(n, sl_policy_limit_count(r->policy));
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++) {
        if (qw[i].b < 1 || rt[i].b < 0)
            fail_msg("item %zu: w=%lld, t=%lld (at %lld us): %s / %s", i, qw[i].b, rt[i].b,
                     (long long)r->now, policy, limit);
        if (rt[i].a > qw[i].a)
            fail_msg("item %zu: r=%lld > q=%lld (at %lld us, cost %llu%s): %s / %s", i, rt[i].a, qw[i].a,
                     (long long)r->now, (unsigned long long)cost, peek ? ", peek" : "", policy, limit);
        if (rt[i].b > qw[i].b)
            fail_msg("item %zu: t=%lld > w=%lld (at %lld us, cost %llu%s): %s / %s", i, rt[i].b, qw[i].b,
                     (long long)r->now, (unsigned long long)cost, peek ? ", peek" : "", policy, limit);
    }
    run->checked++;
    run->limited += dec.limited;
}

/* Fresh, partly used, exhausted, denied at several costs, recovering over
 * three periods, then a seeded random walk. */
static void drive(rig_t *rig, uint32_t soft, const char *key) {
    run_t run = {.rig = rig, .soft = soft, .key = key};
    sl_usec_t period = 0;
    for (size_t i = 0; i < sl_policy_limit_count(rig->policy); i++)
        if (sl_policy_limit(rig->policy, i)->period > period)
            period = sl_policy_limit(rig->policy, i)->period;
    rig->now = SEC(1000) + 1234;
    decide(&run, 1, true);  /* fresh */
    decide(&run, 0, false);
    for (int i = 0; i < 3; i++) /* partly used */
        decide(&run, 1, false);
    for (int i = 0; i < 200; i++) /* to exhaustion and past it */
        decide(&run, 1, false);
    decide(&run, 2, false);
    decide(&run, 3, true);
    decide(&run, 1000000, false); /* never passes */
    for (int step = 0; step < 60; step++) { /* recovering, hammered now and then */
        rig->now += period / 20 + 7;
        decide(&run, 1, true);
        if (step % 3 == 0)
            decide(&run, 1, false);
        if (step % 7 == 0)
            decide(&run, 2, false);
    }
    uint64_t seed = 42;
    for (int step = 0; step < 3000; step++) {
        rig->now += (sl_usec_t)rng_below(&seed, (uint64_t)period / 8 + 2);
        uint64_t cost = rng_below(&seed, 4);
        decide(&run, cost, rng_below(&seed, 5) == 0);
    }
    assert_true(run.limited > 0); /* the walk did reach the limit */
    sld_http_reply_free(&run.reply);
}

static void drive_limit(sl_limit_t l) {
    rig_t *r = rig_one(l);
    drive(r, 0, "k");
    rig_free(r);
    /* the same with denials charged, and in soft mode */
    l.count_denied = true;
    r = rig_one(l);
    drive(r, 0, "k");
    rig_free(r);
    l.count_denied = false;
    sl_policy_config_t cfg = {.name = "soft", .limits = &l, .nlimits = 1, .mode = SL_MODE_SOFT, .soft_percent = 50};
    r = rig_policy(&cfg);
    drive(r, 50, "k");
    rig_free(r);
}

/* The q and w announced for one limit. */
static void expect_quota(sl_limit_t l, uint32_t soft, uint64_t q, int64_t w) {
    uint64_t got_q = 0;
    int64_t got_w = 0;
    sld_http_limit_quota(&l, soft, &got_q, &got_w);
    if (got_q != q || got_w != w)
        fail_msg("%s limit %llu per %lld us, burst %llu: q=%llu;w=%lld, expected q=%llu;w=%lld",
                 sl_algorithm_name(l.algorithm), (unsigned long long)l.limit, (long long)l.period,
                 (unsigned long long)l.burst, (unsigned long long)got_q, (long long)got_w,
                 (unsigned long long)q, (long long)w);
}

static void gcra(void **state) {
    (void)state;
    /* a burst above the rate: q is the burst capacity, w the time to earn it */
    drive_limit((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 20});
    drive_limit((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = MS(1500), .burst = 5});
    drive_limit((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(10)});
    expect_quota((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 20}, 0, 21, 3);
    expect_quota((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = MS(1500), .burst = 5}, 0, 10, 2);
    expect_quota((sl_limit_t){.algorithm = SL_GCRA, .limit = 100, .period = SEC(1)}, 0, 100, 1);
    /* soft mode rounds capacity and rate apart: 3 -> 4 but 1 -> 1, a 4 s drain */
    drive_limit((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(1), .burst = 2});
    expect_quota((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(1), .burst = 2}, 50, 3, 4);
    /* count_denied: the debt may reach twice the capacity, the window says so */
    expect_quota((sl_limit_t){.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 20,
                              .count_denied = true}, 0, 21, 5);
}

static void token_bucket(void **state) {
    (void)state;
    drive_limit((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 5, .period = SEC(1), .burst = 12});
    drive_limit((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 7, .period = US(2500)});
    expect_quota((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 5, .period = SEC(1), .burst = 12}, 0, 12, 3);
    expect_quota((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 7, .period = US(2500)}, 0, 7, 1);
}

static void leaky_bucket(void **state) {
    (void)state;
    drive_limit((sl_limit_t){.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(1), .burst = 8});
    drive_limit((sl_limit_t){.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(1), .burst = 8, .shaper = true});
    expect_quota((sl_limit_t){.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(1), .burst = 8}, 0, 8, 2);
    expect_quota((sl_limit_t){.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(1)}, 0, 5, 1);
}

static void fixed_window(void **state) {
    (void)state;
    drive_limit((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 10, .period = MS(1500)});
    drive_limit((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(10)});
    expect_quota((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(10)}, 0, 3, 10);
    expect_quota((sl_limit_t){.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(10), .count_denied = true},
                 0, 3, 10);
}

static void sliding_window(void **state) {
    (void)state;
    /* the two-window estimate still weighs a request a period after its own */
    drive_limit((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 10, .period = SEC(10)});
    drive_limit((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 100, .period = SEC(60), .precision = 6});
    drive_limit((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 3, .period = MS(1500), .precision = 3});
    expect_quota((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 10, .period = SEC(10)}, 0, 10, 20);
    expect_quota((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 100, .period = SEC(60), .precision = 6}, 0,
                 100, 70);
}

static void sliding_log(void **state) {
    (void)state;
    drive_limit((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 5, .period = SEC(3)});
    drive_limit((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 3, .period = MS(1500)});
    expect_quota((sl_limit_t){.algorithm = SL_SLIDING_LOG, .limit = 5, .period = SEC(3)}, 0, 5, 3);
}

/* Several limits: a denial by one never raises another's t past its own w. */
static void several_limits(void **state) {
    (void)state;
    sl_limit_t windows[] = {
        {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(10)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(1)},
    };
    rig_t *r = rig_limits(windows, 2, SL_MODE_HARD);
    drive(r, 0, "windows");
    rig_free(r);
    sl_limit_t limits[] = {
        {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(10)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(1)},
        {.algorithm = SL_GCRA, .limit = 50, .period = SEC(1), .burst = 80},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 40, .period = SEC(2)},
    };
    r = rig_limits(limits, 4, SL_MODE_HARD);
    drive(r, 0, "several");
    rig_free(r);
    r = rig_limits(limits, 4, SL_MODE_SHADOW);
    drive(r, 0, "shadow");
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra),           cmocka_unit_test(token_bucket), cmocka_unit_test(leaky_bucket),
        cmocka_unit_test(fixed_window),   cmocka_unit_test(sliding_window), cmocka_unit_test(sliding_log),
        cmocka_unit_test(several_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
