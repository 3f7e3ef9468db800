/* test_gateway_diff.c -- two gateway: sections compared (src/server/
 * gateway/gateway_diff.c), as a reload compares the running one with the
 * file's: the same text is equal; each route value changed makes the
 * routes differ; what changed is said by name (added, removed, changed,
 * order); the keys that need a restart (listen addresses, TLS files, the
 * access log's file) are named, and a change of routes alone names none;
 * the text is cut with "..." when it does not fit. */
#include "rig.h"
#include "server/config/config.h"
#include "server/config/section.h"
#include "server/daemon/front_config.h"
#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_diff.h"

static int setup(void **state) {
    (void)state;
    return sld_daemon_config_register();
}

static int teardown(void **state) {
    (void)state;
    sld_config_listens_set(NULL, 0);
    return sld_config_sections_set(NULL, 0);
}

#define POLICIES                                                                          \
    "policies:\n"                                                                         \
    "  - name: per_ip\n"                                                                  \
    "    key: [ip]\n"                                                                     \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

#define ROUTE_A "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
#define ROUTE_B "    - name: b\n      match: {path_prefix: /b/}\n      upstream: http://127.0.0.1:9001\n"
#define ROUTE_C "    - name: c\n      upstream: http://127.0.0.1:9002\n"

static sld_config_t *parse_ok(const char *yaml) {
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("refused (%s): %s\n--- yaml:\n%s", sl_errname(rc), err, yaml);
    return cfg;
}

static const sld_gw_config_t *gw(const sld_config_t *cfg) { return sld_config_section(cfg, "gateway"); }

/* A section with `listen` and `routes` (and `extra` lines of the section). */
static sld_config_t *section(const char *listen, const char *extra, const char *routes) {
    char yaml[2048];
    snprintf(yaml, sizeof yaml, "gateway:\n  listen: %s\n%s  routes:\n%s" POLICIES, listen, extra, routes);
    return parse_ok(yaml);
}

static void test_same_text_is_equal(void **state) {
    (void)state;
    sld_config_t *a = section("127.0.0.1:8080", "", ROUTE_A ROUTE_B);
    sld_config_t *b = section("127.0.0.1:8080", "", ROUTE_A ROUTE_B);
    assert_true(sld_gw_routes_equal(gw(a), gw(b)));
    sld_gw_routes_change_t ch;
    char text[256];
    assert_false(sld_gw_routes_change(gw(a), gw(b), &ch, text, sizeof text));
    assert_string_equal(text, "");
    assert_int_equal(sld_gw_restart_keys(gw(a), gw(b), text, sizeof text), 0);
    assert_string_equal(text, "");
    sld_config_free(a);
    sld_config_free(b);
}

/* Each value of a route, changed alone, makes the routes differ. */
static void test_each_route_value_counts(void **state) {
    (void)state;
    static const char *const changed[] = {
        "    - name: a\n      match: {path_prefix: /x/}\n      upstream: http://127.0.0.1:9000\n",
        "    - name: a\n      match: {path_prefix: /a/, methods: [GET]}\n      upstream: http://127.0.0.1:9000\n",
        "    - name: a\n      match: {path_prefix: /a/, host: h.example}\n      upstream: http://127.0.0.1:9000\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9009\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: [http://127.0.0.1:9000, "
        "http://127.0.0.1:9001]\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      policies: [per_ip]\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      excess: shadow\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      status: 503\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      body: \"no\\n\"\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      timeout: 2s\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      concurrency: {limit: 3}\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      policies: [per_ip]\n      excess: delay\n      queue: 5\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      policies: [per_ip]\n      excess: delay\n      max_delay: 3s\n",
        "    - name: a\n      match: {path_prefix: /a/}\n      upstream: http://127.0.0.1:9000\n"
        "      headers: {upstream: on}\n",
    };
    sld_config_t *a = section("127.0.0.1:8080", "", ROUTE_A);
    for (size_t i = 0; i < sizeof changed / sizeof changed[0]; i++) {
        sld_config_t *b = section("127.0.0.1:8080", "", changed[i]);
        if (sld_gw_routes_equal(gw(a), gw(b)))
            fail_msg("case %zu: seen as the same routes:\n%s", i, changed[i]);
        sld_gw_routes_change_t ch;
        char text[256];
        assert_true(sld_gw_routes_change(gw(a), gw(b), &ch, text, sizeof text));
        assert_int_equal(ch.changed, 1);
        assert_string_equal(text, "changed: a");
        assert_int_equal(sld_gw_restart_keys(gw(a), gw(b), text, sizeof text), 0); /* routes apply */
        sld_config_free(b);
    }
    /* queue alone, on a delay route (where it applies) */
    sld_config_t *q1 = section("127.0.0.1:8080", "", ROUTE_A "      policies: [per_ip]\n      excess: delay\n");
    sld_config_t *q2 = section("127.0.0.1:8080", "",
                               ROUTE_A "      policies: [per_ip]\n      excess: delay\n      queue: 5\n");
    assert_false(sld_gw_routes_equal(gw(q1), gw(q2)));
    sld_config_free(q1);
    sld_config_free(q2);
    /* the section's timeout is the routes' default: a change of it changes them */
    sld_config_t *b = section("127.0.0.1:8080", "  timeout: 7s\n", ROUTE_A);
    assert_false(sld_gw_routes_equal(gw(a), gw(b)));
    sld_config_free(b);
    sld_config_free(a);
}

static void test_change_by_name(void **state) {
    (void)state;
    sld_config_t *a = section("127.0.0.1:8080", "", ROUTE_A ROUTE_B ROUTE_C);
    sld_config_t *b = section("127.0.0.1:8080", "",
                              "    - name: d\n      match: {path_prefix: /d/}\n      upstream: http://127.0.0.1:9003\n"
                              ROUTE_C
                              "    - name: b\n      match: {path_prefix: /b/}\n      upstream: http://127.0.0.1:9004\n"
                              "    - name: e\n      upstream: http://127.0.0.1:9005\n");
    sld_gw_routes_change_t ch;
    char text[256];
    assert_true(sld_gw_routes_change(gw(a), gw(b), &ch, text, sizeof text));
    assert_int_equal(ch.added, 2);
    assert_int_equal(ch.removed, 1);
    assert_int_equal(ch.changed, 1);
    assert_true(ch.reordered); /* c before b now */
    assert_string_equal(text, "added: d, e; removed: a; changed: b; order changed");
    /* only the order */
    sld_config_t *c = section("127.0.0.1:8080", "", ROUTE_B ROUTE_A ROUTE_C);
    assert_false(sld_gw_routes_equal(gw(a), gw(c)));
    assert_true(sld_gw_routes_change(gw(a), gw(c), &ch, text, sizeof text));
    assert_int_equal(ch.added + ch.removed + ch.changed, 0);
    assert_string_equal(text, "order changed");
    /* a route removed keeps the others' order */
    sld_config_t *d = section("127.0.0.1:8080", "", ROUTE_A ROUTE_C);
    assert_true(sld_gw_routes_change(gw(a), gw(d), &ch, text, sizeof text));
    assert_false(ch.reordered);
    assert_string_equal(text, "removed: b");
    /* cut to fit, ended with "..." */
    char small[12];
    assert_true(sld_gw_routes_change(gw(a), gw(b), &ch, small, sizeof small));
    assert_string_equal(small, "added: d...");
    assert_int_equal(ch.added, 2); /* counted all the same */
    sld_config_free(a);
    sld_config_free(b);
    sld_config_free(c);
    sld_config_free(d);
}

static void test_restart_keys(void **state) {
    (void)state;
    char text[256];
    sld_config_t *a = section("[127.0.0.1:8080, 127.0.0.1:8081]", "  access_log: /tmp/a.log\n", ROUTE_A);
    /* the routes apply; the listeners stay */
    sld_config_t *b = section("[127.0.0.1:8080, 127.0.0.1:9091]", "  access_log: /tmp/a.log\n", ROUTE_B);
    assert_int_equal(sld_gw_restart_keys(gw(a), gw(b), text, sizeof text), 1);
    assert_string_equal(text, "gateway.listen[1] (its address)");
    sld_config_t *c = section("127.0.0.1:8080", "  access_log: /tmp/b.log\n", ROUTE_A);
    assert_int_equal(sld_gw_restart_keys(gw(a), gw(c), text, sizeof text), 2);
    assert_string_equal(text, "gateway.listen (1 listener instead of 2), gateway.access_log (the file)");
    /* turning the log off is not one: the routes' access_log follows the section */
    sld_config_t *d = section("[127.0.0.1:8080, 127.0.0.1:8081]", "", ROUTE_A);
    assert_int_equal(sld_gw_restart_keys(gw(a), gw(d), text, sizeof text), 0);
    assert_false(sld_gw_routes_equal(gw(a), gw(d))); /* the route logged, it does not now */
    sld_config_free(a);
    sld_config_free(b);
    sld_config_free(c);
    sld_config_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_text_is_equal),
        cmocka_unit_test(test_each_route_value_counts),
        cmocka_unit_test(test_change_by_name),
        cmocka_unit_test(test_restart_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
