/* test_limiter.c -- the public API's contract (src/store/limiter.c,
 * src/store/store.c, src/core/errors.c): bad arguments, errors, clocks. */
#include <time.h>

#include "rig.h"

static void bad_arguments_are_errors_not_crashes(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_GCRA, .limit = 1, .period = SEC(1)});
    sl_decision_t d;
    assert_int_equal(sl_check(NULL, r->policy, "k", 1, 1, &d), SL_EINVAL);
    assert_int_equal(sl_check(r->limiter, NULL, "k", 1, 1, &d), SL_EINVAL);
    assert_int_equal(sl_check(r->limiter, r->policy, "k", 1, 1, NULL), SL_EINVAL);
    assert_int_equal(sl_check(r->limiter, r->policy, NULL, 3, 1, &d), SL_EINVAL);
    assert_int_equal(sl_peek(NULL, r->policy, "k", 1, 1, &d), SL_EINVAL);
    assert_int_equal(sl_reset(r->limiter, NULL, "k", 1), SL_EINVAL);
    assert_int_equal(sl_reset(r->limiter, r->policy, NULL, 1), SL_EINVAL);
    sl_limiter_t *l = NULL;
    assert_int_equal(sl_limiter_new(NULL, NULL, &l), SL_EINVAL);
    assert_int_equal(sl_limiter_new(r->store, NULL, NULL), SL_EINVAL);
    assert_int_equal(sl_store_memory_new(NULL, NULL), SL_EINVAL);
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(NULL, &st), SL_EINVAL);
    assert_int_equal(sl_store_stats(r->store, NULL), SL_EINVAL);
    assert_int_equal(sl_store_sweep(NULL, 0, 0, NULL), SL_EINVAL);
    assert_int_equal(sl_store_save(r->store, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_store_load(NULL, "x", 0, NULL), SL_EINVAL);
    assert_int_equal(sl_policy_new(NULL, NULL, NULL, 0), SL_EINVAL);
    sl_limiter_free(NULL);
    sl_store_free(NULL);
    rig_free(r);
}

static void one_error_table(void **state) {
    (void)state;
    const int codes[] = {SL_OK, SL_EINVAL, SL_ENOMEM, SL_ERANGE, SL_EIO, SL_EFORMAT, SL_ECORRUPT, SL_ESEED, SL_EFULL, SL_ENOTSUP};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_true(codes[i] <= 0);
        assert_true(strlen(sl_strerror(codes[i])) > 5);
        assert_string_not_equal(sl_strerror(codes[i]), "unknown error");
        assert_memory_equal(sl_errname(codes[i]), "SL_", 3);
        for (size_t k = 0; k < i; k++)
            assert_int_not_equal(codes[i], codes[k]);
    }
    assert_string_equal(sl_strerror(-999), "unknown error");
    assert_string_equal(sl_errname(42), "SL_UNKNOWN");
    assert_string_equal(sl_errname(SL_ECORRUPT), "SL_ECORRUPT");
}

static void the_real_clock(void **state) {
    (void)state;
    sl_usec_t now = sl_clock_realtime(NULL);
    sl_usec_t wall = (sl_usec_t)time(NULL) * SL_USEC_PER_SEC;
    assert_true(now >= wall - SEC(2) && now <= wall + SEC(2));
    /* A limiter without options uses it. */
    sl_store_t *s;
    sl_limiter_t *l;
    sl_policy_t *p;
    sl_limit_t lim = {.algorithm = SL_SLIDING_LOG, .limit = 2, .period = MIN(60)};
    sl_policy_config_t cfg = {.name = "p", .limits = &lim, .nlimits = 1};
    assert_int_equal(sl_store_memory_new(NULL, &s), SL_OK);
    assert_int_equal(sl_limiter_new(s, NULL, &l), SL_OK);
    assert_int_equal(sl_policy_new(&cfg, &p, NULL, 0), SL_OK);
    sl_decision_t d;
    assert_int_equal(sl_check(l, p, "k", 1, 1, &d), SL_OK);
    assert_true(d.allowed);
    assert_true(d.reset_after > MIN(59) && d.reset_after <= MIN(60));
    sl_policy_free(p);
    sl_limiter_free(l);
    sl_store_free(s);
}

/* A batch decides exactly as one sl_check() per request at the same instant,
 * repeated keys included (a later request sees an earlier one's charge). */
static void batch_equals_single_checks(void **state) {
    (void)state;
    const sl_limit_t limits[] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 5, .period = SEC(10)},
        {.algorithm = SL_GCRA, .limit = 3, .period = SEC(1), .burst = 2},
    };
    rig_t *batch = rig_limits(limits, 2, SL_MODE_HARD), *single = rig_limits(limits, 2, SL_MODE_HARD);
    uint64_t seed = 21;
    enum { N = 300 };
    char keys[N][16];
    sl_request_t reqs[N];
    sl_decision_t out[N];
    for (int round = 0; round < 20; round++) {
        batch->now = single->now = SEC(round);
        for (int i = 0; i < N; i++) {
            snprintf(keys[i], sizeof keys[i], "k%d", (int)rng_below(&seed, 40));
            reqs[i] = (sl_request_t){keys[i], strlen(keys[i]), 1 + rng_below(&seed, 2)};
        }
        size_t done = 0;
        assert_int_equal(sl_check_batch(batch->limiter, batch->policy, reqs, N, out, &done), SL_OK);
        assert_int_equal(done, N);
        for (int i = 0; i < N; i++) {
            sl_decision_t d = rig_check_cost(single, keys[i], reqs[i].cost);
            assert_int_equal(out[i].allowed, d.allowed);
            assert_int_equal(out[i].remaining, d.remaining);
            assert_int_equal(out[i].retry_after, d.retry_after);
            assert_int_equal(out[i].reset_after, d.reset_after);
            assert_int_equal(out[i].limit_index, d.limit_index);
        }
    }
    /* An error stops the batch; what came before it stands. */
    reqs[7].key = NULL;
    size_t done = 99;
    assert_int_equal(sl_check_batch(batch->limiter, batch->policy, reqs, N, out, &done), SL_EINVAL);
    assert_int_equal(done, 7);
    assert_int_equal(sl_check_batch(batch->limiter, batch->policy, reqs, 0, NULL, &done), SL_OK);
    assert_int_equal(done, 0);
    assert_int_equal(sl_check_batch(batch->limiter, NULL, reqs, 1, out, NULL), SL_EINVAL);
    assert_int_equal(sl_check_batch(batch->limiter, batch->policy, NULL, 1, out, NULL), SL_EINVAL);
    rig_free(batch);
    rig_free(single);
}

static void version(void **state) {
    (void)state;
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", SL_VERSION_MAJOR, SL_VERSION_MINOR, SL_VERSION_PATCH);
    assert_string_equal(v, SL_VERSION_STRING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments_are_errors_not_crashes),
        cmocka_unit_test(one_error_table),
        cmocka_unit_test(the_real_clock),
        cmocka_unit_test(batch_equals_single_checks),
        cmocka_unit_test(version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
