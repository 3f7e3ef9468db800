/* test_properties.c -- properties that must hold on any trace, checked on
 * seeded random traces for every algorithm: retry_after, remaining and
 * reset_after mean exactly what they say; denied requests change nothing;
 * sliding_log never admits more than the limit in any window; gcra and
 * token_bucket agree; policies are all-or-nothing; shadow and soft modes. */
#include "rig.h"

#define ROUNDS 30
#define STEPS 400

static sl_limit_t random_limit(uint64_t *seed, sl_algorithm_t a) {
    sl_limit_t l = {.algorithm = a};
    l.limit = 1 + rng_below(seed, 20);
    l.period = 1 + (sl_usec_t)rng_below(seed, rng_below(seed, 2) ? SEC(10) : 1000);
    if (a == SL_GCRA)
        l.burst = rng_below(seed, 10);
    if (a == SL_TOKEN_BUCKET || a == SL_LEAKY_BUCKET)
        l.burst = rng_below(seed, 3) ? 1 + rng_below(seed, 20) : 0;
    if (a == SL_LEAKY_BUCKET)
        l.shaper = rng_below(seed, 2);
    if (a == SL_SLIDING_WINDOW) {
        static const uint32_t precisions[] = {1, 1, 2, 3, 5, 10, 60};
        l.precision = precisions[rng_below(seed, 7)];
        l.period = l.precision * (1 + (sl_usec_t)rng_below(seed, SEC(10) / l.precision));
    }
    return l;
}

static uint64_t capacity_of(const sl_limit_t *l) {
    if (l->algorithm == SL_GCRA)
        return l->burst + 1;
    if ((l->algorithm == SL_TOKEN_BUCKET || l->algorithm == SL_LEAKY_BUCKET) && l->burst)
        return l->burst;
    return l->limit;
}

/* Time moves forward by bursts, pauses and now and then a long silence. */
static sl_usec_t random_gap(uint64_t *seed, const sl_limit_t *l) {
    switch (rng_below(seed, 10)) {
    case 0:
        return 0;
    case 1:
        return l->period + (sl_usec_t)rng_below(seed, (uint64_t)l->period);
    default:
        return (sl_usec_t)rng_below(seed, (uint64_t)(2 * l->period / (sl_usec_t)l->limit) + 2);
    }
}

static uint64_t random_cost(uint64_t *seed, uint64_t capacity) {
    uint64_t r = rng_below(seed, 20);
    if (r == 0)
        return 0;
    if (r == 1)
        return capacity + 1;
    return 1 + rng_below(seed, r < 15 ? 1 : capacity);
}

static const char *label(const sl_limit_t *l) {
    static char buf[160];
    snprintf(buf, sizeof buf, "%s limit=%lu period=%ld burst=%lu precision=%u shaper=%d",
             sl_algorithm_name(l->algorithm), (unsigned long)l->limit, (long)l->period,
             (unsigned long)l->burst, l->precision, l->shaper);
    return buf;
}

/* retry_after is exact: denied a microsecond earlier, admitted at it.
 * remaining is exact: that many unit requests pass now, not one more.
 * reset_after is exact: at it the key is as new. */
static void reported_times_and_counts_are_exact(void **state) {
    (void)state;
    uint64_t seed = 1;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        int retries = 0, remainders = 0, resets = 0; /* the checks really ran */
        for (int round = 0; round < ROUNDS; round++) {
            sl_limit_t l = random_limit(&seed, (sl_algorithm_t)a);
            uint64_t cap = capacity_of(&l);
            rig_t *r = rig_one(l);
            r->now = SEC(1000);
            for (int i = 0; i < STEPS; i++) {
                r->now += random_gap(&seed, &l);
                uint64_t cost = random_cost(&seed, cap);
                sl_decision_t d = rig_check_cost(r, "k", cost);
                if (!d.allowed && d.retry_after != SL_NEVER) {
                    sl_usec_t at = r->now + d.retry_after;
                    r->now = at - 1;
                    if (rig_peek_cost(r, "k", cost).allowed)
                        fail_msg("%s: cost %lu passes before retry_after", label(&l), (unsigned long)cost);
                    r->now = at;
                    if (!rig_check_cost(r, "k", cost).allowed)
                        fail_msg("%s: cost %lu denied at retry_after", label(&l), (unsigned long)cost);
                    retries++;
                } else if (!d.allowed) {
                    assert_true(cost > cap);
                } else if (rng_below(&seed, 8) == 0 && d.remaining <= 64) {
                    for (uint64_t k = 0; k < d.remaining; k++)
                        if (!rig_check(r, "k").allowed)
                            fail_msg("%s: %lu remaining, denied after %lu", label(&l),
                                     (unsigned long)d.remaining, (unsigned long)k);
                    if (rig_check(r, "k").allowed)
                        fail_msg("%s: more than %lu remaining", label(&l), (unsigned long)d.remaining);
                    remainders++;
                } else if (rng_below(&seed, 16) == 0) {
                    r->now += d.reset_after;
                    sl_decision_t fresh = rig_peek_cost(r, "k", 1);
                    if (fresh.remaining != cap || fresh.reset_after != 0)
                        fail_msg("%s: not new at reset_after", label(&l));
                    resets++;
                }
                assert_true(d.remaining <= cap);
                assert_true(d.reset_after >= 0);
                if (d.allowed)
                    assert_int_equal(d.retry_after, 0);
                if (!(l.algorithm == SL_LEAKY_BUCKET && l.shaper) || !d.allowed)
                    assert_int_equal(d.delay, 0);
            }
            rig_free(r);
        }
        print_message("%-14s retry_after %d, remaining %d, reset_after %d checked\n",
                      sl_algorithm_name((sl_algorithm_t)a), retries, remainders, resets);
        assert_true(retries > 100 && remainders > 50 && resets > 50);
    }
}

static bool same_decision(const sl_decision_t *x, const sl_decision_t *y) {
    return x->allowed == y->allowed && x->remaining == y->remaining &&
           x->reset_after == y->reset_after && x->retry_after == y->retry_after &&
           x->delay == y->delay && x->limit == y->limit;
}

/* Key b sees key a's trace plus extra requests, each made only when a peek
 * says it will be denied. Without count_denied they must change nothing. */
static void denied_requests_change_no_state(void **state) {
    (void)state;
    uint64_t seed = 2;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        for (int round = 0; round < ROUNDS; round++) {
            sl_limit_t l = random_limit(&seed, (sl_algorithm_t)a);
            uint64_t cap = capacity_of(&l);
            rig_t *r = rig_one(l);
            int extra = 0;
            for (int i = 0; i < STEPS; i++) {
                r->now += random_gap(&seed, &l);
                uint64_t cost = random_cost(&seed, cap);
                sl_decision_t da = rig_check_cost(r, "a", cost);
                sl_decision_t db = rig_check_cost(r, "b", cost);
                if (!same_decision(&da, &db))
                    fail_msg("%s: step %d: a and b differ after %d denied extras", label(&l), i, extra);
                uint64_t probe = 1 + rng_below(&seed, cap + 1);
                if (!rig_peek_cost(r, "b", probe).allowed) {
                    assert_false(rig_check_cost(r, "b", probe).allowed);
                    extra++;
                }
            }
            assert_true(extra > 0);
            rig_free(r);
        }
    }
}

/* The log is exact: no window of length period ever holds more than limit. */
static void sliding_log_never_exceeds_the_limit(void **state) {
    (void)state;
    uint64_t seed = 3;
    for (int round = 0; round < ROUNDS; round++) {
        sl_limit_t l = random_limit(&seed, SL_SLIDING_LOG);
        rig_t *r = rig_one(l);
        sl_usec_t when[STEPS];
        uint64_t cost_of[STEPS];
        int n = 0;
        for (int i = 0; i < STEPS; i++) {
            r->now += random_gap(&seed, &l);
            uint64_t cost = 1 + rng_below(&seed, 3);
            if (rig_check_cost(r, "k", cost).allowed) {
                when[n] = r->now;
                cost_of[n++] = cost;
            }
        }
        /* Every window that ends at an admission: (t - period, t]. */
        for (int i = 0; i < n; i++) {
            uint64_t sum = 0;
            for (int k = 0; k <= i; k++)
                if (when[k] > when[i] - l.period)
                    sum += cost_of[k];
            if (sum > l.limit)
                fail_msg("%s: %lu admitted in a window", label(&l), (unsigned long)sum);
        }
        rig_free(r);
    }
}

/* gcra with burst b is a token bucket of capacity b + 1: same decisions. */
static void gcra_and_token_bucket_agree(void **state) {
    (void)state;
    uint64_t seed = 4;
    for (int round = 0; round < ROUNDS * 3; round++) {
        sl_limit_t g = random_limit(&seed, SL_GCRA);
        sl_limit_t t = {.algorithm = SL_TOKEN_BUCKET, .limit = g.limit, .period = g.period, .burst = g.burst + 1};
        rig_t *rg = rig_one(g), *rt = rig_one(t);
        for (int i = 0; i < STEPS; i++) {
            sl_usec_t gap = random_gap(&seed, &g);
            rg->now += gap;
            rt->now += gap;
            uint64_t cost = random_cost(&seed, g.burst + 1);
            sl_decision_t dg = rig_check_cost(rg, "k", cost), dt = rig_check_cost(rt, "k", cost);
            if (!same_decision(&dg, &dt))
                fail_msg("%s: step %d: gcra and token_bucket differ", label(&g), i);
        }
        rig_free(rg);
        rig_free(rt);
    }
}

/* A two-limit policy decides like its limits composed by hand: peek both,
 * charge both only if both pass. */
static void policies_are_all_or_nothing(void **state) {
    (void)state;
    uint64_t seed = 5;
    for (int round = 0; round < ROUNDS * 4; round++) {
        sl_limit_t pair[2] = {random_limit(&seed, (sl_algorithm_t)rng_below(&seed, SL_ALGORITHM_COUNT)),
                              random_limit(&seed, (sl_algorithm_t)rng_below(&seed, SL_ALGORITHM_COUNT))};
        pair[0].shaper = pair[1].shaper = false;
        if (pair[0].algorithm == pair[1].algorithm && pair[0].limit == pair[1].limit)
            pair[1].limit++;
        rig_t *both = rig_limits(pair, 2, SL_MODE_HARD);
        rig_t *first = rig_one(pair[0]), *second = rig_one(pair[1]);
        for (int i = 0; i < STEPS; i++) {
            sl_usec_t gap = random_gap(&seed, &pair[rng_below(&seed, 2)]);
            both->now += gap;
            first->now += gap;
            second->now += gap;
            uint64_t cost = random_cost(&seed, 4);
            sl_decision_t d = rig_check_cost(both, "k", cost);
            sl_decision_t d1 = rig_peek_cost(first, "k", cost), d2 = rig_peek_cost(second, "k", cost);
            bool pass = d1.allowed && d2.allowed;
            if (pass) {
                d1 = rig_check_cost(first, "k", cost);
                d2 = rig_check_cost(second, "k", cost);
            }
            if (d.allowed != pass)
                fail_msg("round %d step %d: policy %d, composed %d", round, i, d.allowed, pass);
            uint64_t remaining = d1.remaining < d2.remaining ? d1.remaining : d2.remaining;
            assert_int_equal(d.remaining, remaining);
            sl_usec_t reset = d1.reset_after > d2.reset_after ? d1.reset_after : d2.reset_after;
            assert_int_equal(d.reset_after, reset);
        }
        rig_free(both);
        rig_free(first);
        rig_free(second);
    }
}

/* Shadow decides exactly as hard (state included) but always allows; soft
 * decides as hard with the limit raised by its tolerance. */
static void shadow_and_soft_modes(void **state) {
    (void)state;
    uint64_t seed = 6;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        for (int round = 0; round < ROUNDS / 3; round++) {
            sl_limit_t l = random_limit(&seed, (sl_algorithm_t)a);
            l.limit = 10 + rng_below(&seed, 20);
            if (l.burst)
                l.burst = 10 + rng_below(&seed, 20);
            sl_limit_t raised = l;
            raised.limit = l.limit + l.limit * 50 / 100;
            if (raised.burst)
                raised.burst = l.burst + l.burst * 50 / 100;
            if (l.algorithm == SL_GCRA)
                raised.burst = (l.burst + 1) + (l.burst + 1) * 50 / 100 - 1;
            rig_t *hard = rig_one(l), *loose = rig_one(raised);
            rig_t *shadow = rig_limits(&l, 1, SL_MODE_SHADOW);
            sl_policy_config_t cfg = {.name = "soft", .limits = &l, .nlimits = 1, .mode = SL_MODE_SOFT, .soft_percent = 50};
            rig_t *soft = rig_policy(&cfg);
            int denied = 0;
            for (int i = 0; i < STEPS; i++) {
                sl_usec_t gap = random_gap(&seed, &l);
                hard->now = loose->now = shadow->now = soft->now = hard->now + gap;
                uint64_t cost = 1 + rng_below(&seed, 3);
                sl_decision_t dh = rig_check_cost(hard, "k", cost);
                sl_decision_t ds = rig_check_cost(shadow, "k", cost);
                assert_true(ds.allowed);
                assert_int_equal(ds.limited, !dh.allowed);
                denied += !dh.allowed;
                assert_int_equal(ds.remaining, dh.remaining);
                sl_decision_t dl = rig_check_cost(loose, "k", cost);
                sl_decision_t dso = rig_check_cost(soft, "k", cost);
                if (dso.allowed != dl.allowed)
                    fail_msg("%s: step %d: soft %d, raised limit %d", label(&l), i, dso.allowed, dl.allowed);
                assert_true(dso.remaining <= capacity_of(&l));
            }
            assert_true(denied > 0);
            rig_free(hard);
            rig_free(loose);
            rig_free(shadow);
            rig_free(soft);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reported_times_and_counts_are_exact),
        cmocka_unit_test(denied_requests_change_no_state),
        cmocka_unit_test(sliding_log_never_exceeds_the_limit),
        cmocka_unit_test(gcra_and_token_bucket_agree),
        cmocka_unit_test(policies_are_all_or_nothing),
        cmocka_unit_test(shadow_and_soft_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
