/* test_grpc_config.c -- the grpc: section (src/server/grpc/grpc_config.c)
 * read through the section registry: grpc.tls reads both PEM files with the
 * file; a missing, empty-named, non-PEM or oversized file, or a missing
 * key, fails the load with the file's line of the key; grpc: without tls is
 * cleartext, as is a file without the section. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rig.h"
#include "server/config/config.h"
#include "server/config/section.h"
#include "server/grpc/grpc_config.h"

static const sld_config_section_t *const sections[] = {&sld_grpc_section};
static char dir[64], cert[128], key[128], not_pem[128], big[128];

static void write_file(const char *path, const char *text, size_t repeat) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < repeat; i++)
        fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sluice-grpc-config-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(not_pem, sizeof not_pem, "%s/not.pem", dir);
    snprintf(big, sizeof big, "%s/big.pem", dir);
    write_file(cert, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 1);
    write_file(key, "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n", 1);
    write_file(not_pem, "hello\n", 1);
    write_file(big, "-----BEGIN CERTIFICATE-----\n", 40000); /* over 1 MiB */
    return sld_config_sections_set(sections, 1);
}

static int teardown(void **state) {
    (void)state;
    unlink(cert);
    unlink(key);
    unlink(not_pem);
    unlink(big);
    rmdir(dir);
    return sld_config_sections_set(NULL, 0);
}

#define POLICIES                                                                          \
    "policies:\n"                                                                         \
    "  - name: p\n"                                                                       \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static int parse_tls(const char *c, const char *k, sld_config_t **cfg, char *err, size_t err_size) {
    char yaml[1024];
    snprintf(yaml, sizeof yaml, POLICIES "grpc:\n  tls:\n    cert: %s\n    key: %s\n", c, k);
    *cfg = NULL;
    return sld_config_parse("test.yaml", yaml, strlen(yaml), cfg, err, err_size);
}

static void tls_reads_both_files(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg;
    if (parse_tls(cert, key, &cfg, err, sizeof err) != SL_OK)
        fail_msg("%s", err);
    const sld_grpc_settings_t *s = sld_grpc_tls(cfg);
    assert_non_null(s);
    assert_string_equal(s->cert_path, cert);
    assert_string_equal(s->key_path, key);
    assert_non_null(strstr(s->cert_pem, "BEGIN CERTIFICATE"));
    assert_non_null(strstr(s->key_pem, "BEGIN PRIVATE KEY"));
    sld_config_free(cfg);
}

static void without_tls_is_cleartext(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    const char *texts[] = {POLICIES, POLICIES "grpc:\n", POLICIES "grpc: {}\n"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        if (sld_config_parse("test.yaml", texts[i], strlen(texts[i]), &cfg, err, sizeof err) != SL_OK)
            fail_msg("%s: %s", texts[i], err);
        assert_null(sld_grpc_tls(cfg));
        sld_config_free(cfg);
    }
    assert_null(sld_grpc_tls(NULL));
}

static void bad_files_name_the_line(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR] = "", want[512], missing[160];
    sld_config_t *cfg;
    snprintf(missing, sizeof missing, "%s/missing.pem", dir);
    assert_int_equal(parse_tls(missing, key, &cfg, err, sizeof err), SL_EINVAL);
    assert_null(cfg);
    snprintf(want, sizeof want, "test.yaml:6: grpc.tls.cert: cannot read '%s'", missing);
    assert_string_equal(err, want);

    assert_int_equal(parse_tls(cert, not_pem, &cfg, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "test.yaml:7: grpc.tls.key: '%s' is not a PEM file (no '-----BEGIN ')", not_pem);
    assert_string_equal(err, want);

    assert_int_equal(parse_tls(big, key, &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "test.yaml:6: grpc.tls.cert: "));
    assert_non_null(strstr(err, "is larger than 1 MiB"));

    assert_int_equal(parse_tls("''", key, &cfg, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "test.yaml:6: grpc.tls.cert: is empty (a PEM file is expected)");
}

static void tls_needs_both_keys(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR] = "", yaml[512];
    sld_config_t *cfg = NULL;
    snprintf(yaml, sizeof yaml, POLICIES "grpc:\n  tls:\n    cert: %s\n", cert);
    assert_int_equal(sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err), SL_EINVAL);
    assert_null(cfg);
    assert_non_null(strstr(err, "key"));
    snprintf(yaml, sizeof yaml, POLICIES "grpc:\n  tls:\n    cert: %s\n    key: %s\n    ca: x\n", cert, key);
    assert_int_equal(sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "ca"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tls_reads_both_files, setup, teardown),
        cmocka_unit_test_setup_teardown(without_tls_is_cleartext, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_files_name_the_line, setup, teardown),
        cmocka_unit_test_setup_teardown(tls_needs_both_keys, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
