/* rig.h -- what every unit test needs: cmocka, a fake clock, and a limiter
 * with one policy on a fresh memory store. Header-only; each test program
 * includes it once. */
#ifndef SL_TEST_RIG_H
#define SL_TEST_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sluice.h"

#define US(x) ((sl_usec_t)(x))
#define MS(x) ((sl_usec_t)(x) * 1000)
#define SEC(x) ((sl_usec_t)(x) * 1000000)
#define MIN(x) (SEC(x) * 60)

typedef struct rig {
    sl_usec_t now;  /* the fake clock: tests set it, nothing else moves it */
    sl_store_t *store;
    sl_limiter_t *limiter;
    sl_policy_t *policy;
} rig_t;

static inline sl_usec_t rig_clock(void *ctx) { return ((rig_t *)ctx)->now; }

static inline rig_t *rig_policy(const sl_policy_config_t *cfg) {
    rig_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    sl_memory_options_t mo = {.shards = 4, .seed = 12345};
    assert_int_equal(sl_store_memory_new(&mo, &r->store), SL_OK);
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = r};
    assert_int_equal(sl_limiter_new(r->store, &lo, &r->limiter), SL_OK);
    char why[256] = "";
    int rc = sl_policy_new(cfg, &r->policy, why, sizeof why);
    if (rc != SL_OK)
        fail_msg("policy rejected: %s", why);
    return r;
}

static inline rig_t *rig_limits(const sl_limit_t *limits, size_t n, sl_mode_t mode) {
    sl_policy_config_t cfg = {.name = "test", .limits = limits, .nlimits = n, .mode = mode};
    return rig_policy(&cfg);
}

static inline rig_t *rig_one(sl_limit_t limit) { return rig_limits(&limit, 1, SL_MODE_HARD); }

static inline void rig_free(rig_t *r) {
    sl_policy_free(r->policy);
    sl_limiter_free(r->limiter);
    sl_store_free(r->store);
    free(r);
}

/* One check of `cost` on `key` at the rig's current time. */
static inline sl_decision_t rig_check_cost(rig_t *r, const char *key, uint64_t cost) {
    sl_decision_t d;
    memset(&d, 0xA5, sizeof d); /* every field must be written */
    assert_int_equal(sl_check(r->limiter, r->policy, key, strlen(key), cost, &d), SL_OK);
    return d;
}

static inline sl_decision_t rig_check(rig_t *r, const char *key) { return rig_check_cost(r, key, 1); }

static inline sl_decision_t rig_peek_cost(rig_t *r, const char *key, uint64_t cost) {
    sl_decision_t d;
    memset(&d, 0xA5, sizeof d);
    assert_int_equal(sl_peek(r->limiter, r->policy, key, strlen(key), cost, &d), SL_OK);
    return d;
}

static inline bool rig_allowed_at(rig_t *r, sl_usec_t t, const char *key) {
    r->now = t;
    return rig_check(r, key).allowed;
}

/* A small deterministic PRNG (splitmix64) for property tests. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return rng_next(s) % n; }

#endif
