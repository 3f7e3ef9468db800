/* test_config_requirepass.c -- the requirepass setting (config.c): a literal
 * or env:NAME, read as admin_token is; line-numbered errors that never show
 * the password; kept by the admin API's copies (config_edit.c); and the
 * constant-time comparison both secrets use (base/secret.c). */
#include <stdlib.h>

#include "rig.h"
#include "server/base/secret.h"
#include "server/config/config.h"
#include "server/daemon/front_config.h"
#include "server/http/http_config.h"
#include "server/resp/resp_config.h"

#define ONE_POLICY                                                                        \
    "policies:\n"                                                                         \
    "  - name: a\n"                                                                       \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static sld_config_t *parse(const char *yaml, int want, char *err, size_t n) {
    sld_config_t *cfg = NULL;
    err[0] = '\0';
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, n);
    if (rc != want)
        fail_msg("expected %s, got %s (%s)\n--- yaml:\n%s", sl_errname(want), sl_errname(rc), err,
                 yaml);
    return cfg;
}

static void refused(const char *yaml, const char *want) {
    char err[SLD_MAX_ERROR];
    assert_null(parse(yaml, SL_EINVAL, err, sizeof err));
    if (strcmp(err, want) != 0)
        fail_msg("expected \"%s\"\n     got \"%s\"", want, err);
}

static void test_absent_is_no_password(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = parse(ONE_POLICY, SL_OK, err, sizeof err);
    assert_null(sld_resp_requirepass(cfg));
    sld_config_free(cfg);
}

static void test_literal(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = parse("requirepass: 0123456789abcdef-pass\n" ONE_POLICY, SL_OK, err,
                              sizeof err);
    assert_string_equal(sld_resp_requirepass(cfg), "0123456789abcdef-pass");
    assert_null(sld_http_admin_token(cfg));
    sld_config_free(cfg);
}

static void test_bad_values_name_their_line(void **state) {
    (void)state;
    refused("threads: 2\nrequirepass: secret\n" ONE_POLICY,
            "test.yaml:2: requirepass: a password needs at least 16 characters (this one has 6)");
    refused("requirepass: \"0123456789 abcdef\"\n" ONE_POLICY,
            "test.yaml:1: requirepass: a password is printable ASCII without spaces");
    refused("requirepass: env:1BAD\n" ONE_POLICY,
            "test.yaml:1: requirepass: \"1BAD\" is not an environment variable name");
    refused("requirepass: [a, b]\n" ONE_POLICY,
            "test.yaml:1: requirepass: expected a single value, got a list");
    /* the message never shows the password */
    char err[SLD_MAX_ERROR];
    assert_null(parse("requirepass: \"hunter2 hunter2 hunter2\"\n" ONE_POLICY, SL_EINVAL, err,
                      sizeof err));
    assert_null(strstr(err, "hunter2"));
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char yaml[5200];
    snprintf(yaml, sizeof yaml, "requirepass: %s\n" ONE_POLICY, big);
    refused(yaml, "test.yaml:1: requirepass: a password has at most 4096 characters");
}

static void test_from_environment(void **state) {
    (void)state;
    const char *yaml = "requirepass: env:SLUICE_TEST_PASS\n" ONE_POLICY;
    char err[SLD_MAX_ERROR];
    assert_int_equal(setenv("SLUICE_TEST_PASS", "a-long-enough-password", 1), 0);
    sld_config_t *cfg = parse(yaml, SL_OK, err, sizeof err);
    assert_string_equal(sld_resp_requirepass(cfg), "a-long-enough-password");
    sld_config_free(cfg);
    assert_int_equal(setenv("SLUICE_TEST_PASS", "", 1), 0);
    refused(yaml, "test.yaml:1: requirepass: environment variable SLUICE_TEST_PASS is empty");
    assert_int_equal(setenv("SLUICE_TEST_PASS", "short", 1), 0);
    refused(yaml, "test.yaml:1: requirepass: a password needs at least 16 characters (this one has 5)");
    assert_int_equal(unsetenv("SLUICE_TEST_PASS"), 0);
    refused(yaml, "test.yaml:1: requirepass: environment variable SLUICE_TEST_PASS is not set");
}

static void test_admin_copies_keep_it(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = parse("requirepass: 0123456789abcdef-pass\n" ONE_POLICY, SL_OK, err,
                              sizeof err);
    sld_config_t *copy = sld_config_edit(cfg, NULL, NULL);
    assert_non_null(copy);
    assert_string_equal(sld_resp_requirepass(copy), "0123456789abcdef-pass");
    assert_ptr_not_equal(sld_resp_requirepass(copy), sld_resp_requirepass(cfg));
    sld_config_free(copy);
    sld_config_free(cfg);
}

static void test_same_secret(void **state) {
    (void)state;
    assert_true(sld_same_secret("abc", 3, "abc", 3));
    assert_true(sld_same_secret("", 0, "", 0));
    assert_false(sld_same_secret("abc", 3, "abd", 3));
    assert_false(sld_same_secret("abc", 3, "abcd", 4));
    assert_false(sld_same_secret("abcd", 4, "abc", 3));
    assert_false(sld_same_secret("", 0, "a", 1));
    /* a longer guess that starts with the secret is no match */
    assert_false(sld_same_secret("secret\0", 7, "secret", 6));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_is_no_password),
        cmocka_unit_test(test_literal),
        cmocka_unit_test(test_bad_values_name_their_line),
        cmocka_unit_test(test_from_environment),
        cmocka_unit_test(test_admin_copies_keep_it),
        cmocka_unit_test(test_same_secret),
    };
    /* the fronts' keys (listen:, admin_token, requirepass), as sluiced registers them */
    if (sld_daemon_config_register() != SL_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
