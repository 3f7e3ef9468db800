/* test_grpc_stats.c -- Envoy ratelimit's per-rule stats
 * (server/grpc/grpc_stats.c): hits classified as the reference counts them
 * (near_limit past 80 %, shadow_mode on top of over_limit), counters summed
 * over the workers' tables in /metrics text, and the bounds: detailed
 * series fall back to their rule's name, anything past the table to
 * "_overflow". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/grpc/grpc_stats.h"

static void expect_hits(sld_grpc_hits_t h, uint64_t total, uint64_t within, uint64_t near, uint64_t over,
                        uint64_t shadow) {
    assert_int_equal(h.n[SLD_STAT_TOTAL], total);
    assert_int_equal(h.n[SLD_STAT_WITHIN], within);
    assert_int_equal(h.n[SLD_STAT_NEAR], near);
    assert_int_equal(h.n[SLD_STAT_OVER], over);
    assert_int_equal(h.n[SLD_STAT_SHADOW], shadow);
}

static void classifies_as_the_reference(void **state) {
    (void)state;
    /* limit 10: near from the 9th unit on (floor(10 * 0.8) = 8) */
    expect_hits(sld_grpc_hits_classify(10, 0, 1, true, false, false), 1, 1, 0, 0, 0);
    expect_hits(sld_grpc_hits_classify(10, 7, 1, true, false, false), 1, 1, 0, 0, 0);
    expect_hits(sld_grpc_hits_classify(10, 8, 1, true, false, false), 1, 1, 1, 0, 0);
    /* a hits_addend across the threshold: only its part past it */
    expect_hits(sld_grpc_hits_classify(10, 6, 3, true, false, false), 3, 3, 1, 0, 0);
    expect_hits(sld_grpc_hits_classify(10, 9, 1, true, false, false), 1, 1, 1, 0, 0);
    /* denied: nothing charged, every hit over */
    expect_hits(sld_grpc_hits_classify(10, 9, 3, false, true, false), 3, 0, 0, 3, 0);
    /* shadow mode let it through */
    expect_hits(sld_grpc_hits_classify(1, 1, 2, true, true, true), 2, 0, 0, 2, 2);
    /* a soft tolerance let it through: over, not shadow */
    expect_hits(sld_grpc_hits_classify(1, 1, 1, true, true, false), 1, 0, 0, 1, 0);
    /* limit 1: floor(0.8) = 0, so its one unit is near */
    expect_hits(sld_grpc_hits_classify(1, 0, 1, true, false, false), 1, 1, 1, 0, 0);
    /* no overflow near the top */
    expect_hits(sld_grpc_hits_classify(UINT64_MAX, UINT64_MAX - 1, 5, true, false, false), 5, 5, 1, 0, 0);
}

static char *render(sld_grpc_stats_t *s) {
    sld_buf_t b = {0};
    sld_grpc_stats_write(s, &b);
    char *text = calloc(1, b.len + 1);
    assert_non_null(text);
    if (b.len)
        memcpy(text, b.data, b.len);
    sld_buf_free(&b);
    return text;
}

static void sums_workers_in_name_order(void **state) {
    (void)state;
    sld_grpc_stats_t *s = sld_grpc_stats_new(2);
    assert_non_null(s);
    char *empty = render(s);
    assert_string_equal(empty, ""); /* no family before a series */
    free(empty);
    sld_grpc_hits_t h = sld_grpc_hits_classify(10, 0, 2, true, false, false);
    sld_grpc_stats_count(s, 0, "d", 1, "d.b", 3, "d.b", 3, false, &h);
    sld_grpc_stats_count(s, 1, "d", 1, "d.b", 3, "d.b", 3, false, &h);
    sld_grpc_stats_count(s, 1, "d", 1, "d.a\"x", 5, "d.a\"x", 5, false, &h);
    sld_grpc_stats_count(s, 7, "d", 1, "d.c", 3, "d.c", 3, false, &h); /* no such worker: ignored */
    char *text = render(s);
    assert_non_null(strstr(text, "# TYPE sluice_rls_hits_total counter\n"));
    assert_non_null(strstr(text, "sluice_rls_hits_total{domain=\"d\",rule=\"d.b\",stat=\"total_hits\"} 4\n"));
    assert_non_null(strstr(text, "sluice_rls_hits_total{domain=\"d\",rule=\"d.b\",stat=\"within_limit\"} 4\n"));
    assert_non_null(strstr(text, "sluice_rls_hits_total{domain=\"d\",rule=\"d.b\",stat=\"shadow_mode\"} 0\n"));
    const char *a = strstr(text, "rule=\"d.a\\\"x\",stat=\"total_hits\"} 2\n");
    assert_non_null(a);
    assert_true(a < strstr(text, "rule=\"d.b\""));
    assert_null(strstr(text, "d.c"));
    free(text);
    sld_grpc_stats_free(s);
}

static void bounded(void **state) {
    (void)state;
    sld_grpc_stats_t *s = sld_grpc_stats_new(1);
    assert_non_null(s);
    sld_grpc_hits_t h = sld_grpc_hits_classify(10, 0, 1, true, false, false);
    char name[64];
    for (int i = 0; i < SLD_GRPC_STATS_MAX_DETAILED + 5; i++) {
        int n = snprintf(name, sizeof name, "d.k_%d", i);
        sld_grpc_stats_count(s, 0, "d", 1, name, (size_t)n, "d.k", 3, true, &h);
    }
    /* a known detailed series still counts under its own name */
    sld_grpc_stats_count(s, 0, "d", 1, "d.k_0", 5, "d.k", 3, true, &h);
    char *text = render(s);
    assert_non_null(strstr(text, "rule=\"d.k_0\",stat=\"total_hits\"} 2\n"));
    assert_non_null(strstr(text, "rule=\"d.k\",stat=\"total_hits\"} 5\n"));
    snprintf(name, sizeof name, "rule=\"d.k_%d\"", SLD_GRPC_STATS_MAX_DETAILED);
    assert_null(strstr(text, name));
    free(text);
    /* the table full: what has no room goes to _overflow */
    for (int i = 0; i < SLD_GRPC_STATS_MAX + 3; i++) {
        int n = snprintf(name, sizeof name, "r.%d", i);
        sld_grpc_stats_count(s, 0, "r", 1, name, (size_t)n, name, (size_t)n, false, &h);
    }
    text = render(s);
    /* the detailed and their rule took 1025 places */
    assert_non_null(strstr(text, "sluice_rls_hits_total{domain=\"\",rule=\"_overflow\",stat=\"total_hits\"} 1028\n"));
    free(text);
    sld_grpc_stats_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classifies_as_the_reference),
        cmocka_unit_test(sums_workers_in_name_order),
        cmocka_unit_test(bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
