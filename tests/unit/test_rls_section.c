/* test_rls_section.c -- the rls: section (src/server/rls/rls_section.c)
 * read through the section registry: config_dir loads the directory with
 * the file and its rules come with the configuration; a bad directory fails
 * the whole load with the file's line and the directory's own FILE:LINE;
 * config_dir is required; --rls-config overrides it, and is added to a
 * file (or text) that has no rls: section, quoted safely; without the
 * section registered, rls: is an unknown key as any other. */
#include <unistd.h>

#include "rig.h"
#include "server/config/config.h"
#include "server/config/section.h"
#include "server/rls/rls_section.h"

static const sld_config_section_t *const sections[] = {&sld_rls_section};

static int setup(void **state) {
    (void)state;
    sld_rls_section_override(NULL);
    return sld_config_sections_set(sections, 1);
}

static int teardown(void **state) {
    (void)state;
    sld_rls_section_override(NULL);
    return sld_config_sections_set(NULL, 0);
}

#define POLICIES                                                                          \
    "policies:\n"                                                                         \
    "  - name: p\n"                                                                       \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static char good_dir[1024], dup_dir[1024];

static void dirs(void) {
    const char *src = getenv("SLUICE_SOURCE_DIR");
    snprintf(good_dir, sizeof good_dir, "%s/tests/unit/rls/good", src ? src : "../..");
    snprintf(dup_dir, sizeof dup_dir, "%s/tests/unit/rls/dup_domain", src ? src : "../..");
}

static int parse(const char *yaml, sld_config_t **cfg, char *err, size_t err_size) {
    *cfg = NULL;
    return sld_config_parse("test.yaml", yaml, strlen(yaml), cfg, err, err_size);
}

static void section_loads_the_directory(void **state) {
    (void)state;
    dirs();
    char yaml[2048], err[SLD_MAX_ERROR] = "";
    snprintf(yaml, sizeof yaml, POLICIES "rls:\n  config_dir: %s\n", good_dir);
    sld_config_t *cfg;
    if (parse(yaml, &cfg, err, sizeof err) != SL_OK)
        fail_msg("%s", err);
    sld_rls_config_t *rules = sld_rls_rules(cfg);
    assert_non_null(rules);
    assert_int_equal(sld_rls_domain_count(rules), 3);
    const sld_rls_settings_t *s = sld_config_section(cfg, "rls");
    assert_string_equal(s->config_dir, good_dir);
    sld_config_free(cfg);

    /* no section: no rules */
    assert_int_equal(parse(POLICIES, &cfg, err, sizeof err), SL_OK);
    assert_null(sld_rls_rules(cfg));
    sld_config_free(cfg);
}

static void bad_directory_fails_the_load(void **state) {
    (void)state;
    dirs();
    char yaml[2048], err[SLD_MAX_ERROR] = "", want[4096];
    snprintf(yaml, sizeof yaml, POLICIES "rls:\n  config_dir: %s\n", dup_dir);
    sld_config_t *cfg;
    assert_int_equal(parse(yaml, &cfg, err, sizeof err), SL_EINVAL);
    assert_null(cfg);
    snprintf(want, sizeof want,
             "test.yaml:5: rls.config_dir: %s/b.yaml:2: duplicate domain 'shared' in config file "
             "(also in %s/a.yaml)",
             dup_dir, dup_dir);
    assert_string_equal(err, want);

    assert_int_equal(parse(POLICIES "rls:\n  config_dir: /nonexistent/rls\n", &cfg, err, sizeof err),
                     SL_EINVAL);
    assert_string_equal(err, "test.yaml:5: rls.config_dir: /nonexistent/rls: No such file or "
                             "directory");
    assert_int_equal(parse(POLICIES "rls:\n  other: x\n", &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "test.yaml:5:"));
    assert_non_null(strstr(err, "other"));
}

static void config_dir_is_required(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg;
    assert_int_equal(parse(POLICIES "rls:\n  config_dir: ''\n", &cfg, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "test.yaml:4: rls: config_dir: is required (the directory of Envoy "
                             "ratelimit's YAML files)");
}

static void response_headers_mode(void **state) {
    (void)state;
    dirs();
    static const char *const names[] = {"both", "ietf", "x-ratelimit", "off"};
    static const sld_rls_headers_t modes[] = {SLD_RLS_HEADERS_BOTH, SLD_RLS_HEADERS_IETF, SLD_RLS_HEADERS_X,
                                              SLD_RLS_HEADERS_OFF};
    char yaml[2048], err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg;
    for (size_t i = 0; i < 4; i++) {
        snprintf(yaml, sizeof yaml, POLICIES "rls:\n  config_dir: %s\n  response_headers: %s\n", good_dir,
                 names[i]);
        if (parse(yaml, &cfg, err, sizeof err) != SL_OK)
            fail_msg("%s", err);
        assert_int_equal(sld_rls_response_headers(cfg), modes[i]);
        sld_config_free(cfg);
    }
    /* unset, and without a section: both, as before the key existed */
    snprintf(yaml, sizeof yaml, POLICIES "rls:\n  config_dir: %s\n", good_dir);
    assert_int_equal(parse(yaml, &cfg, err, sizeof err), SL_OK);
    assert_int_equal(sld_rls_response_headers(cfg), SLD_RLS_HEADERS_BOTH);
    sld_config_free(cfg);
    assert_int_equal(parse(POLICIES, &cfg, err, sizeof err), SL_OK);
    assert_int_equal(sld_rls_response_headers(cfg), SLD_RLS_HEADERS_BOTH);
    sld_config_free(cfg);
    snprintf(yaml, sizeof yaml, POLICIES "rls:\n  config_dir: %s\n  response_headers: IETF\n", good_dir);
    assert_int_equal(parse(yaml, &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "rls.response_headers"));
    assert_non_null(strstr(err, "'IETF' is not one of ietf, x-ratelimit, both, off"));
}

static void command_line_override(void **state) {
    (void)state;
    dirs();
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    /* replaces the file's directory */
    sld_rls_section_override(good_dir);
    assert_int_equal(parse(POLICIES "rls:\n  config_dir: /nonexistent\n", &cfg, err, sizeof err),
                     SL_OK);
    assert_int_equal(sld_rls_domain_count(sld_rls_rules(cfg)), 3);
    sld_config_free(cfg);
    /* added to text that has no section, with the same line numbers */
    const char *text = POLICIES;
    assert_int_equal(sld_rls_config_load(NULL, "builtin", text, strlen(text), &cfg, err, sizeof err),
                     SL_OK);
    assert_non_null(sld_rls_rules(cfg));
    sld_config_free(cfg);
    /* and to a file */
    char path[] = "/tmp/test_rls_section.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(sld_rls_config_load(path, NULL, NULL, 0, &cfg, err, sizeof err), SL_OK);
    assert_non_null(sld_rls_rules(cfg));
    assert_string_equal(cfg->source, path);
    sld_config_free(cfg);
    /* an error in the file keeps its own line */
    const char *bad = "policies:\n  - name: p\n    limits: []\n";
    assert_int_not_equal(sld_rls_config_load(NULL, "builtin", bad, strlen(bad), &cfg, err, sizeof err),
                         SL_OK);
    assert_non_null(strstr(err, "builtin:3:"));
    /* without --rls-config nothing is added */
    sld_rls_section_override(NULL);
    assert_int_equal(sld_rls_config_load(path, NULL, NULL, 0, &cfg, err, sizeof err), SL_OK);
    assert_null(sld_rls_rules(cfg));
    sld_config_free(cfg);
    unlink(path);
}

static void override_quoting(void **state) {
    (void)state;
    char buf[64];
    sld_rls_section_override(NULL);
    assert_null(sld_rls_section_yaml(buf, sizeof buf));
    sld_rls_section_override("/etc/it's: here");
    assert_string_equal(sld_rls_section_yaml(buf, sizeof buf),
                        "\nrls:\n  config_dir: '/etc/it''s: here'\n");
    sld_rls_section_override("/a\nb");
    assert_null(sld_rls_section_yaml(buf, sizeof buf));
    sld_rls_section_override("/a/very/long/directory/name/that/does/not/fit/in/the/buffer");
    assert_null(sld_rls_section_yaml(buf, sizeof buf));
    for (size_t size = 0; size < sizeof buf; size++) /* every size: NULL or whole */
        assert_true(sld_rls_section_yaml(buf, size) == NULL);
    sld_rls_section_override(NULL);
}

static void unregistered_is_unknown(void **state) {
    (void)state;
    sld_config_sections_set(NULL, 0);
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg;
    assert_int_equal(parse(POLICIES "rls:\n  config_dir: /x\n", &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "rls"));
    sld_config_sections_set(sections, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(section_loads_the_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_directory_fails_the_load, setup, teardown),
        cmocka_unit_test_setup_teardown(config_dir_is_required, setup, teardown),
        cmocka_unit_test_setup_teardown(response_headers_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(command_line_override, setup, teardown),
        cmocka_unit_test_setup_teardown(override_quoting, setup, teardown),
        cmocka_unit_test_setup_teardown(unregistered_is_unknown, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
