/* test_policy.c -- policies (src/core/policy.c): several limits
 * all-or-nothing, the modes, validation. */
#include "rig.h"

/* The articles' problem 1: at most 500 per hour and 10 per minute. One
 * request a second for an hour passes exactly 500. */
static void five_hundred_an_hour_and_ten_a_minute(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 500, .period = MIN(60)},
        {.algorithm = SL_SLIDING_LOG, .limit = 10, .period = MIN(1)},
    };
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    int allowed = 0, by_hour = 0, by_minute = 0;
    for (sl_usec_t t = 0; t < MIN(60); t += SEC(1)) {
        r->now = t;
        sl_decision_t d = rig_check(r, "user42");
        if (d.allowed) {
            allowed++;
        } else {
            by_hour += d.limit_index == 0;
            by_minute += d.limit_index == 1;
        }
    }
    assert_int_equal(allowed, 500);
    assert_true(by_hour > 0 && by_minute > 0);
    r->now = MIN(60) - SEC(1);
    sl_decision_t d = rig_check(r, "user42");
    assert_int_equal(d.limit_index, 0);
    assert_int_equal(d.limit, 500);
    rig_free(r);
}

/* The articles' problem 2: 10 per minute and at least 2 s between requests. */
static void ten_a_minute_two_seconds_apart(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 10, .period = MIN(1)},
        {.algorithm = SL_GCRA, .limit = 1, .period = SEC(2)},
    };
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    sl_usec_t passed[64];
    int n = 0;
    for (sl_usec_t t = 0; t < SEC(130); t += SEC(1))
        if (rig_allowed_at(r, t, "u"))
            passed[n++] = t;
    /* 0, 2, ..., 18; then 60, 62, ..., 78; then 120, ..., 128. */
    assert_int_equal(n, 25);
    for (int i = 0; i < n; i++)
        assert_int_equal(passed[i], SEC(60) * (i / 10) + SEC(2) * (i % 10));
    rig_free(r);
}

/* A request one limit denies charges no limit. */
static void all_or_nothing(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_GCRA, .limit = 1, .period = SEC(1)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 10, .period = MIN(1)},
    };
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    for (int i = 0; i < 20; i++) /* gcra lets the first through */
        rig_check(r, "u");
    for (int s = 1; s < 10; s++)
        assert_true(rig_allowed_at(r, SEC(s), "u"));
    sl_decision_t d = rig_check(r, "u"); /* at 9 s: gcra denies, window has 0 left */
    assert_false(d.allowed);
    r->now = SEC(10);
    d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_int_equal(d.limit_index, 1);
    assert_int_equal(d.retry_after, SEC(50));
    assert_int_equal(d.limit, 10);
    rig_free(r);
}

/* Reported values are the most restrictive of all limits. */
static void most_restrictive_values(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = MIN(60)},
        {.algorithm = SL_TOKEN_BUCKET, .limit = 5, .period = SEC(10)},
    };
    rig_t *r = rig_limits(limits, 2, SL_MODE_HARD);
    r->now = MIN(30);
    sl_decision_t d = rig_check(r, "u");
    assert_int_equal(d.limit_index, 1);
    assert_int_equal(d.limit, 5);
    assert_int_equal(d.remaining, 4);
    assert_int_equal(d.reset_after, MIN(30)); /* the hour window lasts longest */
    rig_free(r);
}

static void soft_mode_tolerates_a_share_over(void **state) {
    (void)state;
    const sl_limit_t limit = {.algorithm = SL_FIXED_WINDOW, .limit = 10, .period = MIN(1)};
    sl_policy_config_t cfg = {.name = "soft", .limits = &limit, .nlimits = 1, .mode = SL_MODE_SOFT, .soft_percent = 20};
    rig_t *r = rig_policy(&cfg);
    for (int i = 0; i < 10; i++) {
        sl_decision_t d = rig_check(r, "u");
        assert_true(d.allowed);
        assert_false(d.limited);
        assert_int_equal(d.limit, 10);
        assert_int_equal(d.remaining, (uint64_t)(9 - i));
    }
    for (int i = 0; i < 2; i++) {
        sl_decision_t d = rig_check(r, "u");
        assert_true(d.allowed);
        assert_true(d.limited);
        assert_int_equal(d.remaining, 0);
    }
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_true(d.limited);
    rig_free(r);
}

static void shadow_mode_reports_but_never_denies(void **state) {
    (void)state;
    const sl_limit_t limit = {.algorithm = SL_SLIDING_LOG, .limit = 3, .period = SEC(10)};
    rig_t *r = rig_limits(&limit, 1, SL_MODE_SHADOW);
    int limited = 0;
    for (int i = 0; i < 10; i++) {
        sl_decision_t d = rig_check(r, "u");
        assert_true(d.allowed);
        assert_int_equal(d.retry_after, 0);
        limited += d.limited;
    }
    assert_int_equal(limited, 7);
    /* The state is what hard mode would hold: only 3 were charged. */
    r->now = SEC(10);
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.limited);
    assert_int_equal(d.remaining, 2);
    rig_free(r);
}

static void elastic_mode_borrows_from_a_shared_pool(void **state) {
    (void)state;
    const sl_limit_t limit = {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = MIN(1)};
    sl_policy_config_t cfg = {.name = "elastic", .limits = &limit, .nlimits = 1, .mode = SL_MODE_ELASTIC,
                              .pool = {.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = MIN(1)}};
    rig_t *r = rig_policy(&cfg);
    for (int i = 0; i < 2; i++) {
        sl_decision_t d = rig_check(r, "a");
        assert_true(d.allowed);
        assert_false(d.limited);
        assert_int_equal(d.limit_index, 0);
    }
    for (int i = 0; i < 3; i++) {
        sl_decision_t d = rig_check(r, "a");
        assert_true(d.allowed);
        assert_true(d.limited);
        assert_int_equal(d.limit_index, -1);
        assert_int_equal(d.remaining, 0);
    }
    assert_false(rig_check(r, "a").allowed);
    /* The pool is shared: b has its own 2, nothing more to borrow. */
    assert_true(rig_check(r, "b").allowed);
    assert_true(rig_check(r, "b").allowed);
    sl_decision_t d = rig_check(r, "b");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MIN(1));
    rig_free(r);
}

/* sl_decide() reports every limit as a one-limit policy would see it. */
static void per_limit_reports(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 4, .period = SEC(10)},
        {.algorithm = SL_GCRA, .limit = 1, .period = SEC(1), .burst = 2},
    };
    rig_t *both = rig_limits(limits, 2, SL_MODE_HARD);
    rig_t *one[2] = {rig_one(limits[0]), rig_one(limits[1])};
    uint64_t seed = 9;
    for (int i = 0; i < 300; i++) {
        sl_usec_t gap = (sl_usec_t)rng_below(&seed, MS(1500));
        both->now += gap;
        one[0]->now += gap;
        one[1]->now += gap;
        sl_limit_report_t rep[2];
        sl_decision_t d;
        assert_int_equal(sl_decide(both->limiter, both->policy, "k", 1, 1, 0, &d, rep), SL_OK);
        for (int k = 0; k < 2; k++) {
            /* charged when every limit passed: compare with the one-limit
             * state after the same charge, else with it as it is */
            sl_decision_t o = d.allowed ? rig_check(one[k], "k") : rig_peek_cost(one[k], "k", 1);
            assert_int_equal(rep[k].allowed, o.allowed);
            assert_int_equal(rep[k].limit, o.limit);
            assert_int_equal(rep[k].remaining, o.remaining);
            assert_int_equal(rep[k].reset_after, o.reset_after);
            assert_int_equal(rep[k].retry_after, o.retry_after);
        }
    }
    rig_free(both);
    rig_free(one[0]);
    rig_free(one[1]);
}

static void validation(void **state) {
    (void)state;
    char why[256];
    sl_policy_t *p = NULL;
    sl_limit_t ok = {.algorithm = SL_GCRA, .limit = 1, .period = SEC(1)};
    sl_limit_t two[] = {ok, ok};
    sl_policy_config_t cfg = {.name = "p", .limits = two, .nlimits = 2};
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    assert_non_null(strstr(why, "limits 1 and 2 are the same"));
    assert_null(p);

    cfg.nlimits = 0;
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    cfg.nlimits = SL_MAX_LIMITS + 1;
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);

    sl_limit_t bad = {.algorithm = SL_SLIDING_WINDOW, .limit = 0, .period = SEC(1)};
    cfg = (sl_policy_config_t){.name = "p", .limits = &bad, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    assert_string_equal(why, "policy p: limit 1: limit must be at least 1");

    cfg = (sl_policy_config_t){.name = "", .limits = &ok, .nlimits = 1};
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    cfg.name = NULL;
    assert_int_equal(sl_policy_new(&cfg, &p, NULL, 0), SL_EINVAL);

    cfg = (sl_policy_config_t){.name = "p", .limits = &ok, .nlimits = 1, .mode = SL_MODE_ELASTIC};
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    assert_non_null(strstr(why, "pool"));
    cfg.mode = SL_MODE_HARD;
    cfg.soft_percent = 5;
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);
    cfg.mode = SL_MODE_SOFT;
    cfg.soft_percent = 1001;
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_ERANGE);
    cfg.mode = (sl_mode_t)9;
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_EINVAL);

    /* A good one, and its accessors. */
    sl_limit_t limits[] = {ok, {.algorithm = SL_SLIDING_WINDOW, .limit = 5, .period = SEC(60), .precision = 6}};
    cfg = (sl_policy_config_t){.name = "per_user", .limits = limits, .nlimits = 2, .mode = SL_MODE_SHADOW};
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_OK);
    assert_string_equal(sl_policy_name(p), "per_user");
    assert_int_equal(sl_policy_mode(p), SL_MODE_SHADOW);
    assert_int_equal(sl_policy_limit_count(p), 2);
    assert_int_equal(sl_policy_limit(p, 1)->precision, 6);
    assert_null(sl_policy_limit(p, 2));
    sl_policy_free(p);
    sl_policy_free(NULL);
}

static void names_round_trip(void **state) {
    (void)state;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        sl_algorithm_t back;
        assert_int_equal(sl_algorithm_parse(sl_algorithm_name((sl_algorithm_t)a), &back), SL_OK);
        assert_int_equal(back, a);
    }
    sl_algorithm_t a;
    assert_int_equal(sl_algorithm_parse("leaky", &a), SL_EINVAL);
    assert_int_equal(sl_algorithm_parse(NULL, &a), SL_EINVAL);
    assert_null(sl_algorithm_name(SL_ALGORITHM_COUNT));
    sl_mode_t m;
    assert_int_equal(sl_mode_parse("elastic", &m), SL_OK);
    assert_int_equal(m, SL_MODE_ELASTIC);
    assert_string_equal(sl_mode_name(SL_MODE_SOFT), "soft");
    assert_int_equal(sl_mode_parse("HARD", &m), SL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(five_hundred_an_hour_and_ten_a_minute),
        cmocka_unit_test(ten_a_minute_two_seconds_apart),
        cmocka_unit_test(all_or_nothing),
        cmocka_unit_test(most_restrictive_values),
        cmocka_unit_test(soft_mode_tolerates_a_share_over),
        cmocka_unit_test(shadow_mode_reports_but_never_denies),
        cmocka_unit_test(elastic_mode_borrows_from_a_shared_pool),
        cmocka_unit_test(per_limit_reports),
        cmocka_unit_test(validation),
        cmocka_unit_test(names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
