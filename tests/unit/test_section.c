/* test_section.c -- what fronts register with the configuration
 * (src/server/config/section.c, listen.c): a test front's listen key (off
 * unless given, with its own option) and secret read with the file's rules
 * and messages beside the real fronts'; names given twice, built-in names,
 * bad options and too many keys refused, leaving the tables as they were;
 * unknown keys under listen: keep their line-numbered message; secrets
 * copied by the admin API's copies; the listen keys' names for messages. */
#include <stdlib.h>

#include "rig.h"
#include "server/config/config.h"
#include "server/config/section.h"
#include "server/gateway/gateway_config.h"
#include "server/http/http_config.h"
#include "server/resp/resp_config.h"

#define ONE_POLICY                                                                        \
    "policies:\n"                                                                         \
    "  - name: a\n"                                                                       \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

/* A front of the tests' own: listen.test (off unless given, --test) and
 * test_secret. */
static const sld_config_listen_t test_listen = {
    .name = "test", .fallback = NULL, .option = "--test", .help = "a test front"};
static const sld_config_section_t test_secret = {
    .name = "test_secret", .kind = SLD_SECTION_SECRET, .secret = "a test secret"};

static const sld_config_listen_t *const listens[] = {&sld_resp_listen_key, &sld_http_listen_key,
                                                     &test_listen};
static const sld_config_section_t *const sections[] = {
    &sld_http_admin_token_section, &sld_resp_requirepass_section, &test_secret, &sld_gateway_section};

static int setup(void **state) {
    (void)state;
    int rc = sld_config_listens_set(listens, 3);
    return rc ? rc : sld_config_sections_set(sections, 4);
}

static int teardown(void **state) {
    (void)state;
    sld_config_listens_set(NULL, 0);
    return sld_config_sections_set(NULL, 0);
}

static sld_config_t *parse_ok(const char *yaml) {
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("expected the file to load, got %s (%s)\n--- yaml:\n%s", sl_errname(rc), err, yaml);
    return cfg;
}

static void refused(const char *yaml, const char *want) {
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    assert_int_equal(sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err), SL_EINVAL);
    assert_null(cfg);
    if (strcmp(err, want) != 0)
        fail_msg("expected \"%s\"\n     got \"%s\"", want, err);
}

static void test_listen_key_off_unless_given(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(ONE_POLICY);
    assert_string_equal(sld_config_listen(cfg, "test"), "");
    assert_string_equal(sld_config_listen(cfg, "resp"), "127.0.0.1:6390");
    assert_string_equal(sld_config_listen(cfg, "http"), "127.0.0.1:8090");
    assert_null(sld_config_listen(cfg, "nosuch"));
    sld_config_free(cfg);

    cfg = parse_ok("listen:\n  test: \"[::1]:0\"\n" ONE_POLICY);
    assert_string_equal(sld_config_listen(cfg, "test"), "[::1]:0");
    assert_string_equal(sld_resp_listen(cfg), "127.0.0.1:6390");
    sld_config_free(cfg);

    /* the test front alone answers: the other two may be off */
    cfg = parse_ok("listen: {resp: off, http: off, test: 127.0.0.1:9}\n" ONE_POLICY);
    assert_string_equal(sld_config_listen(cfg, "test"), "127.0.0.1:9");
    assert_string_equal(sld_resp_listen(cfg), "");
    assert_string_equal(sld_http_listen(cfg), "");
    assert_true(sld_config_serves(cfg));
    sld_config_free(cfg);
}

static void test_listen_key_messages(void **state) {
    (void)state;
    /* the file's rules and messages, under the registered key's path */
    refused("listen:\n  test: localhost:1\n" ONE_POLICY,
            "test.yaml:2: listen.test: \"localhost\" is not an IPv4 address (host names are not "
            "resolved)");
    refused("threads: 1\nlisten:\n  test: [a]\n" ONE_POLICY,
            "test.yaml:3: listen.test: expected a single value, got a list");
    /* unknown keys under listen: as before, naming every registered key */
    refused("listen:\n  resp: 127.0.0.1:1\n  htp: off\n" ONE_POLICY,
            "test.yaml:3: unknown key \"htp\" in listen (expected one of resp, http, test)");
    /* nothing answering names every key */
    refused("listen: {resp: off, http: off}\n" ONE_POLICY,
            "test.yaml:1: listen: turns off every front (resp, http and test): nothing would answer");
    char names[64];
    assert_int_equal(sld_config_listen_names(names, sizeof names), 3);
    assert_string_equal(names, "resp, http and test");
}

static void test_listen_override(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(ONE_POLICY);
    char err[SLD_MAX_ERROR] = "";
    const sld_config_listen_t *def = sld_config_listen_def(2);
    assert_ptr_equal(def, &test_listen);
    assert_null(sld_config_listen_def(3));
    assert_int_equal(sld_config_listen_override(cfg, 2, "127.0.0.1:7", err, sizeof err), SL_OK);
    assert_string_equal(sld_config_listen(cfg, "test"), "127.0.0.1:7");
    assert_int_equal(sld_config_listen_override(cfg, 2, "nowhere:7", err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "command line: --test: \"nowhere\" is not an IPv4 address (host names "
                             "are not resolved)");
    assert_int_equal(sld_config_listen_override(cfg, 0, "off", err, sizeof err), SL_OK);
    assert_string_equal(sld_resp_listen(cfg), "");
    assert_int_equal(sld_config_listen_override(cfg, 3, "off", err, sizeof err), SL_EINVAL);
    sld_config_free(cfg);
}

static void test_secret_of_a_test_front(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok("test_secret: 0123456789abcdef-test\n" ONE_POLICY);
    assert_string_equal(sld_config_value(cfg, &test_secret), "0123456789abcdef-test");
    assert_string_equal(sld_config_section(cfg, "test_secret"), "0123456789abcdef-test");
    assert_null(sld_resp_requirepass(cfg));
    assert_null(sld_http_admin_token(cfg));
    /* the admin API's copies own their copy of it */
    sld_config_t *copy = sld_config_edit(cfg, NULL, NULL);
    assert_non_null(copy);
    const char *mine = sld_config_value(copy, &test_secret);
    assert_string_equal(mine, "0123456789abcdef-test");
    assert_ptr_not_equal(mine, sld_config_value(cfg, &test_secret));
    sld_config_free(cfg);
    assert_string_equal(mine, "0123456789abcdef-test");
    sld_config_free(copy);

    /* the one set of rules, its own words */
    refused("test_secret: short\n" ONE_POLICY,
            "test.yaml:1: test_secret: a test secret needs at least 16 characters (this one has 5)");
    refused("test_secret: [a]\n" ONE_POLICY, "test.yaml:1: test_secret: expected a single value, got a list");
    /* listed among the built-in scalars, after the other secrets */
    refused("thread: 4\n" ONE_POLICY,
            "test.yaml:1: unknown key \"thread\" at the top level (expected one of listen, threads, "
            "limits, store, trusted_proxies, ipv6_prefix, user_header, admin_token, requirepass, "
            "test_secret, auth_deny_status, policies, gateway)");
}

static void test_refused_tables_change_nothing(void **state) {
    (void)state;
    static const sld_config_listen_t resp_again = {.name = "resp", .option = "--resp2"};
    static const sld_config_listen_t option_again = {.name = "other", .option = "--resp"};
    static const sld_config_listen_t no_dashes = {.name = "other", .option = "other"};
    static const sld_config_section_t secret_again = {
        .name = "requirepass", .kind = SLD_SECTION_SECRET, .secret = "a password"};
    static const sld_config_section_t builtin = {
        .name = "threads", .kind = SLD_SECTION_SECRET, .secret = "a thread"};
    static const sld_config_section_t no_words = {.name = "quiet", .kind = SLD_SECTION_SECRET};

    const sld_config_listen_t *twice[] = {&sld_resp_listen_key, &resp_again};
    assert_int_equal(sld_config_listens_set(twice, 2), SL_EINVAL);
    const sld_config_listen_t *same_option[] = {&sld_resp_listen_key, &option_again};
    assert_int_equal(sld_config_listens_set(same_option, 2), SL_EINVAL);
    const sld_config_listen_t *bad_option[] = {&no_dashes};
    assert_int_equal(sld_config_listens_set(bad_option, 1), SL_EINVAL);
    const sld_config_listen_t *many[SLD_MAX_LISTENS + 1] = {NULL};
    assert_int_equal(sld_config_listens_set(many, SLD_MAX_LISTENS + 1), SL_EINVAL);

    const sld_config_section_t *dup[] = {&sld_resp_requirepass_section, &secret_again};
    assert_int_equal(sld_config_sections_set(dup, 2), SL_EINVAL);
    const sld_config_section_t *taken[] = {&builtin};
    assert_int_equal(sld_config_sections_set(taken, 1), SL_EINVAL);
    const sld_config_section_t *wordless[] = {&no_words};
    assert_int_equal(sld_config_sections_set(wordless, 1), SL_EINVAL);

    /* the registered tables still stand */
    assert_ptr_equal(sld_config_listen_def(2), &test_listen);
    sld_config_t *cfg = parse_ok("listen: {test: 127.0.0.1:1}\ntest_secret: 0123456789abcdef-test\n"
                                 "requirepass: 0123456789abcdef-pass\n" ONE_POLICY);
    assert_string_equal(sld_config_listen(cfg, "test"), "127.0.0.1:1");
    assert_string_equal(sld_resp_requirepass(cfg), "0123456789abcdef-pass");
    sld_config_free(cfg);
}

static void test_nothing_registered(void **state) {
    (void)state;
    /* config/ alone knows no front: no default listener, no secret, and
     * nothing to answer is not its business */
    sld_config_listens_set(NULL, 0);
    sld_config_sections_set(NULL, 0);
    sld_config_t *cfg = parse_ok(ONE_POLICY);
    assert_null(sld_resp_requirepass(cfg));
    assert_null(sld_config_listen(cfg, "resp"));
    assert_false(sld_config_serves(cfg));
    sld_config_free(cfg);
    refused("requirepass: 0123456789abcdef-pass\n" ONE_POLICY,
            "test.yaml:1: unknown key \"requirepass\" at the top level (expected one of listen, "
            "threads, limits, store, trusted_proxies, ipv6_prefix, user_header, auth_deny_status, "
            "policies)");
    assert_int_equal(setup(NULL), SL_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_key_off_unless_given),
        cmocka_unit_test(test_listen_key_messages),
        cmocka_unit_test(test_listen_override),
        cmocka_unit_test(test_secret_of_a_test_front),
        cmocka_unit_test(test_refused_tables_change_nothing),
        cmocka_unit_test(test_nothing_registered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
