/* test_route_figures.c -- the gateway's per-route series read back
 * (src/server/observe/route_figures.c): the text the gateway writes, other
 * writers' lines skipped, every truncated prefix and malformed lines taken
 * without a crash. */
#include "rig.h"
#include "server/observe/route_figures.h"

static const char text[] =
    "# HELP sluice_gateway_requests_total Gateway requests.\n"
    "# TYPE sluice_gateway_requests_total counter\n"
    "sluice_gateway_requests_total{route=\"api\",result=\"forwarded\"} 120\n"
    "sluice_gateway_requests_total{route=\"api\",result=\"delayed\"} 7\n"
    "sluice_gateway_requests_total{route=\"api\",result=\"rejected\"} 30\n"
    "sluice_gateway_requests_total{route=\"api\",result=\"busy\"} 2\n"
    "sluice_gateway_requests_total{route=\"static\",result=\"forwarded\"} 5\n"
    "sluice_gateway_upstream_errors_total{route=\"api\",status=\"502\"} 1\n"
    "sluice_gateway_upstream_errors_total{route=\"api\",status=\"504\"} 3\n"
    "sluice_gateway_inflight{route=\"api\"} 4\n"
    "sluice_gateway_queue_depth{route=\"api\"} 9\n"
    "sluice_gateway_queue_depth{route=\"static\"} 0\n"
    "sluice_gateway_upstream_seconds_bucket{route=\"api\",le=\"0.005\"} 100\n"
    "sluice_gateway_upstream_seconds_sum{route=\"api\"} 1.250000\n"
    "sluice_gateway_upstream_seconds_count{route=\"api\"} 125\n"
    "ratelimit_service_total_hits{domain=\"d\"} 77\n";

static void reads_what_the_gateway_writes(void **state) {
    (void)state;
    sld_route_figures_t r[4];
    assert_int_equal(sld_route_figures_parse(text, sizeof text - 1, r, 4), 2);
    assert_string_equal(r[0].name, "api");
    assert_int_equal(r[0].requests[SLD_ROUTE_FORWARDED], 120);
    assert_int_equal(r[0].requests[SLD_ROUTE_DELAYED], 7);
    assert_int_equal(r[0].requests[SLD_ROUTE_REJECTED], 30);
    assert_int_equal(r[0].requests[SLD_ROUTE_BUSY], 2);
    assert_int_equal(r[0].errors_502, 1);
    assert_int_equal(r[0].errors_504, 3);
    assert_true(r[0].has_inflight);
    assert_int_equal(r[0].inflight, 4);
    assert_int_equal(r[0].queue_depth, 9);
    assert_int_equal(r[0].upstream_count, 125);
    assert_true(r[0].upstream_sum > 1.249 && r[0].upstream_sum < 1.251);
    assert_string_equal(r[1].name, "static");
    assert_false(r[1].has_inflight); /* no concurrency: limit, no gauge */
    assert_int_equal(r[1].requests[SLD_ROUTE_FORWARDED], 5);
    /* room for one: the first route only */
    assert_int_equal(sld_route_figures_parse(text, sizeof text - 1, r, 1), 1);
    assert_string_equal(r[0].name, "api");
}

static void prefixes_and_bad_lines_are_taken(void **state) {
    (void)state;
    sld_route_figures_t r[4];
    for (size_t n = 0; n < sizeof text; n++) {
        char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
        memcpy(copy, text, n);
        assert_true(sld_route_figures_parse(copy, n, r, 4) <= 2);
        free(copy);
    }
    static const char *const bad[] = {
        "sluice_gateway_inflight{route=\"a\"} -1\n",
        "sluice_gateway_inflight{route=\"a\"} nan\n",
        "sluice_gateway_inflight{route=\"a\"}  \n",
        "sluice_gateway_inflight{route=\"a} 1\n",
        "sluice_gateway_inflight{route=\"\"} 1\n",
        "sluice_gateway_inflight{xroute=\"a\"} 1\n",
        "sluice_gateway_inflight route=\"a\" 1\n",
        "sluice_gateway_inflight{route=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"} 1\n",
        "sluice_gateway_inflight{route=\"a\"} 99999999999999999999999999\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(sld_route_figures_parse(bad[i], strlen(bad[i]), r, 4), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_what_the_gateway_writes),
        cmocka_unit_test(prefixes_and_bad_lines_are_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
