/* test_throttle.c -- CL.THROTTLE / GCRA arguments and the table of their
 * policies (src/server/engine/throttle.c): every argument error redis-cell users can
 * hit, the interval arithmetic in nanoseconds, redis-cell's rounding of
 * seconds, one policy per distinct parameter set (shared by threads that race
 * to create it), the bound on distinct sets, and one node's share. */
#include <pthread.h>

#include "rig.h"
#include "server/engine/throttle.h"

#define ARGS(...) argv_of((const char *[]){__VA_ARGS__, NULL})

static sld_arg_t args_buf[8];

static sld_arg_t *argv_of(const char **words) {
    size_t n = 0;
    for (; words[n]; n++)
        args_buf[n] = (sld_arg_t){words[n], strlen(words[n])};
    return args_buf;
}

static size_t count_of(const char **words) {
    size_t n = 0;
    while (words[n])
        n++;
    return n;
}

#define THROTTLE(out, ...) \
    sld_throttle_parse(ARGS(__VA_ARGS__), count_of((const char *[]){__VA_ARGS__, NULL}), out)
#define GCRA(out, ...) sld_gcra_parse(ARGS(__VA_ARGS__), count_of((const char *[]){__VA_ARGS__, NULL}), out)

static void test_throttle_arguments(void **state) {
    (void)state;
    sld_throttle_args_t a;
    assert_null(THROTTLE(&a, "CL.THROTTLE", "user123", "15", "30", "60"));
    assert_int_equal(a.key.len, 7);
    assert_memory_equal(a.key.ptr, "user123", 7);
    assert_int_equal(a.max_burst, 15);
    assert_int_equal(a.interval_ns, INT64_C(2000000000)); /* 60 s / 30 */
    assert_int_equal(a.quantity, 1);

    assert_null(THROTTLE(&a, "CL.THROTTLE", "k", "0", "3", "1", "0"));
    assert_int_equal(a.interval_ns, 333333333); /* truncated, as redis-cell does */
    assert_int_equal(a.quantity, 0);
}

static void test_throttle_errors(void **state) {
    (void)state;
    sld_throttle_args_t a;
    assert_non_null(strstr(THROTTLE(&a, "CL.THROTTLE", "k", "1", "2"), "wrong number of arguments"));
    assert_non_null(strstr(THROTTLE(&a, "CL.THROTTLE", "k", "1", "2", "3", "4", "5"), "wrong number"));
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "-1", "30", "60"),
                        "ERR max_burst must be an integer >= 0");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "x", "30", "60"),
                        "ERR max_burst must be an integer >= 0");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "0", "60"),
                        "ERR count per period must be an integer >= 1");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "30", "0"),
                        "ERR period must be a number of seconds >= 1");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "30", "1.5"),
                        "ERR period must be a number of seconds >= 1");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "30", "9223372037"),
                        "ERR period is too long");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "30", "60", "-1"),
                        "ERR quantity must be an integer >= 0");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "2000000000", "1"),
                        "ERR rate too high: more than one request per nanosecond");
}

static void test_gcra_arguments(void **state) {
    (void)state;
    sld_throttle_args_t a;
    assert_null(GCRA(&a, "GCRA", "k", "15", "30", "60"));
    assert_int_equal(a.interval_ns, INT64_C(2000000000));
    assert_null(GCRA(&a, "GCRA", "k", "0", "2", "0.5", "TOKENS", "3"));
    assert_int_equal(a.interval_ns, 250000000);
    assert_int_equal(a.quantity, 3);
    assert_null(GCRA(&a, "GCRA", "k", "0", "1", "0.000000001"));
    assert_int_equal(a.interval_ns, 1);
    assert_null(GCRA(&a, "GCRA", "k", "0", "1", "1", "tokens", "0")); /* keywords in any case */
    assert_int_equal(a.quantity, 0);
}

static void test_gcra_errors(void **state) {
    (void)state;
    sld_throttle_args_t a;
    const char *period = "ERR period must be a positive number of seconds (up to 9 decimals)";
    assert_non_null(strstr(GCRA(&a, "GCRA", "k", "1", "2", "3", "TOKENS"), "wrong number of arguments"));
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "0", "1"), "ERR tokens_per_period must be an integer >= 1");
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "0"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "0.0"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "1."), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", ".5"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "0.0000000001"), period); /* 10 decimals */
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "-1"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "1e3"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "99999999999999999999"), period);
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "1", "COST", "2"), "ERR syntax error: expected TOKENS <n>");
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "1", "1", "TOKENS", "-2"), "ERR TOKENS must be an integer >= 0");
    assert_string_equal(GCRA(&a, "GCRA", "k", "1", "3", "0.000000002"),
                        "ERR rate too high: more than one request per nanosecond");
}

static void test_seconds_round_as_redis_cell(void **state) {
    (void)state;
    assert_int_equal(sld_throttle_seconds(0), 0);
    assert_int_equal(sld_throttle_seconds(999), 0);     /* under a millisecond: truncated */
    assert_int_equal(sld_throttle_seconds(1000), 1);    /* a millisecond or more: one more */
    assert_int_equal(sld_throttle_seconds(SEC(2)), 2);
    assert_int_equal(sld_throttle_seconds(SEC(2) + 999), 2);
    assert_int_equal(sld_throttle_seconds(SEC(2) + 1000), 3);
}

static void test_one_policy_per_parameter_set(void **state) {
    (void)state;
    sld_throttles_t *t;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    const sl_policy_t *p1, *p2, *p3, *local;
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p1, &local), SL_OK);
    assert_ptr_equal(local, p1); /* one node: its share is the whole limit */
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p2, NULL), SL_OK);
    assert_ptr_equal(p1, p2);
    assert_int_equal(sld_throttles_get(t, 14, 2000000000, &p3, NULL), SL_OK);
    assert_ptr_not_equal(p1, p3);
    const sl_limit_t *l = sl_policy_limit(p1, 0);
    assert_int_equal(l->algorithm, SL_GCRA);
    assert_int_equal(l->burst, 15);
    /* 1000 per interval_ns microseconds: an emission interval of interval_ns ns */
    assert_int_equal(l->limit, 1000);
    assert_int_equal(l->period, 2000000000);
    sld_throttles_free(t);
}

static void test_distinct_sets_are_bounded(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    for (int64_t i = 0; i < SLD_THROTTLE_MAX_SETS; i++)
        assert_int_equal(sld_throttles_get(t, i, 1000000, &p, NULL), SL_OK);
    assert_int_equal(sld_throttles_get(t, SLD_THROTTLE_MAX_SETS, 1000000, &p, NULL), SL_ETOOMANY);
    /* a set already known still answers when the table is full */
    assert_int_equal(sld_throttles_get(t, 7, 1000000, &p, NULL), SL_OK);
    assert_int_equal(sl_policy_limit(p, 0)->burst, 7);
    sld_throttles_free(t);
}

static void test_out_of_range_parameters(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p = NULL;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    /* burst x interval beyond the library's range: refused, nothing kept */
    assert_int_not_equal(sld_throttles_get(t, INT64_MAX / 2, INT64_MAX / 2, &p, NULL), SL_OK);
    assert_int_equal(sld_throttles_get(t, 1, 1000, &p, NULL), SL_OK);
    sld_throttles_free(t);
}

static void test_one_node_share(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p, *local;
    assert_int_equal(sld_throttles_new(3, &t), SL_OK);
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p, &local), SL_OK);
    assert_ptr_not_equal(p, local);
    /* three nodes: each gets a third of the rate and (15 + 1) / 3 - 1 = 4 of the burst */
    assert_int_equal(sl_policy_limit(local, 0)->period, INT64_C(6000000000));
    assert_int_equal(sl_policy_limit(local, 0)->burst, 4);
    /* a burst smaller than the nodes: no burst, never a negative one */
    assert_int_equal(sld_throttles_get(t, 1, 2000000000, &p, &local), SL_OK);
    assert_int_equal(sl_policy_limit(local, 0)->burst, 0);
    /* an interval whose share is beyond the library's range: the node keeps the whole limit */
    assert_int_equal(sld_throttles_get(t, 0, INT64_C(1) << 60, &p, &local), SL_OK);
    assert_ptr_equal(p, local);
    sld_throttles_free(t);
}

typedef struct racer {
    sld_throttles_t *t;
    const sl_policy_t *seen[64];
} racer_t;

static void *race(void *arg) {
    racer_t *r = arg;
    for (int i = 0; i < 64; i++)
        if (sld_throttles_get(r->t, i, 1000000 + i, &r->seen[i], NULL) != SL_OK)
            r->seen[i] = NULL;
    return NULL;
}

static void test_threads_racing_share_one_policy(void **state) {
    (void)state;
    sld_throttles_t *t;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    racer_t racers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        racers[i].t = t;
        assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    for (int k = 0; k < 64; k++) {
        assert_non_null(racers[0].seen[k]);
        for (int i = 1; i < 4; i++)
            assert_ptr_equal(racers[0].seen[k], racers[i].seen[k]);
    }
    sld_throttles_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttle_arguments),
        cmocka_unit_test(test_throttle_errors),
        cmocka_unit_test(test_gcra_arguments),
        cmocka_unit_test(test_gcra_errors),
        cmocka_unit_test(test_seconds_round_as_redis_cell),
        cmocka_unit_test(test_one_policy_per_parameter_set),
        cmocka_unit_test(test_distinct_sets_are_bounded),
        cmocka_unit_test(test_out_of_range_parameters),
        cmocka_unit_test(test_one_node_share),
        cmocka_unit_test(test_threads_racing_share_one_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
