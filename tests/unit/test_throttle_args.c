/* test_throttle_args.c -- CL.THROTTLE / GCRA arguments
 * (src/server/resp/throttle_args.c): every argument error redis-cell users
 * can hit, the interval arithmetic in nanoseconds, redis-cell's rounding of
 * seconds. */
#include "rig.h"
#include "server/resp/throttle_args.h"

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

/* The integers: 18 digits are read without the general parser, the rest by
 * it; both give the same numbers and the same errors either side of the
 * boundary. */
static void test_integer_edges(void **state) {
    (void)state;
    sld_throttle_args_t a;
    assert_null(THROTTLE(&a, "CL.THROTTLE", "k", "999999999999999999", "1", "1")); /* 18 digits */
    assert_int_equal(a.max_burst, INT64_C(999999999999999999));
    assert_null(THROTTLE(&a, "CL.THROTTLE", "k", "9223372036854775807", "1", "1")); /* 19: INT64_MAX */
    assert_int_equal(a.max_burst, INT64_MAX);
    assert_null(THROTTLE(&a, "CL.THROTTLE", "k", "007", "010", "1", "0003"));
    assert_int_equal(a.max_burst, 7);
    assert_int_equal(a.interval_ns, 100000000); /* 1 s / 10 */
    assert_int_equal(a.quantity, 3);
    assert_null(THROTTLE(&a, "CL.THROTTLE", "k", "-0", "1", "1"));
    assert_int_equal(a.max_burst, 0);
    const char *burst = "ERR max_burst must be an integer >= 0";
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "+1", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", " 1", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1 ", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "12345678901234567x", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "9223372036854775808", "1", "1"), burst);
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "1", "1", "18446744073709551616"),
                        "ERR quantity must be an integer >= 0");
    assert_string_equal(THROTTLE(&a, "CL.THROTTLE", "k", "1", "1", "1", "00000000000000000001"), /* 20 digits */
                        "ERR quantity must be an integer >= 0");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttle_arguments),
        cmocka_unit_test(test_throttle_errors),
        cmocka_unit_test(test_gcra_arguments),
        cmocka_unit_test(test_gcra_errors),
        cmocka_unit_test(test_integer_edges),
        cmocka_unit_test(test_seconds_round_as_redis_cell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
