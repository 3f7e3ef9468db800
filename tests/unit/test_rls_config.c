/* test_rls_config.c -- loading Envoy ratelimit's configuration directory
 * (src/server/rls/rls_load.c) from the fixtures in tests/unit/rls/: a good
 * directory (the reference's basic_config.yaml, sluice's extensions,
 * aliases; hidden and non-YAML files skipped) loads with the values
 * written; each file of rls/bad/ is refused with its exact "FILE:LINE:
 * message" (the reference's own bad test files among them); a domain in
 * two files and a missing directory are refused; every truncated prefix of
 * the good files is read or refused without a crash or a leak. */
#include <unistd.h>

#include "rig.h"
#include "server/rls/rls.h"

static const char *source_dir(void) {
    const char *dir = getenv("SLUICE_SOURCE_DIR");
    return dir ? dir : "../..";
}

static char *fixture(const char *rel, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/unit/rls/%s", source_dir(), rel);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("%s: not found (set SLUICE_SOURCE_DIR to the source tree)", path);
    char *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static const sld_rls_limit_t *limit_of(const sld_rls_config_t *c, const char *domain,
                                       const char *k, const char *v) {
    sld_rls_entry_t e = {k, strlen(k), v, strlen(v)};
    return sld_rls_match(c, domain, strlen(domain), &e, 1);
}

static void good_directory(void **state) {
    (void)state;
    char dir[4096], err[512] = "";
    snprintf(dir, sizeof dir, "%s/tests/unit/rls/good", source_dir());
    sld_rls_config_t *c = NULL;
    int rc = sld_rls_load_dir(dir, &c, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("refused: %s", err);
    assert_int_equal(sld_rls_domain_count(c), 3); /* .hidden.yaml and notes.txt not read */
    assert_int_equal(sld_rls_limit_count(c), 16);
    assert_true(sld_rls_has_domain(c, "nothing_limited", 15));
    assert_false(sld_rls_has_domain(c, "this file is hidden", 19));

    const sld_rls_limit_t *l = limit_of(c, "test-domain", "key4", "x");
    assert_non_null(l);
    assert_string_equal(l->name, "key4_rate_limit");
    assert_int_equal(l->unit, SLD_RLS_DAY);
    assert_int_equal(l->requests_per_unit, 1);
    assert_non_null(strstr(l->file, "good/basic.yaml"));
    assert_int_equal(l->line, 45);
    l = limit_of(c, "test-domain", "key6", "x");
    assert_true(l->unlimited);
    assert_null(l->policy);
    assert_int_equal(l->unit, 0);
    assert_true(limit_of(c, "test-domain", "key7", "x")->detailed_metric);

    l = limit_of(c, "api", "user", "alice");
    assert_int_equal(l->unit, SLD_RLS_MINUTE); /* "Minute": any case, as the reference */
    const sl_limit_t *lim = sl_policy_limit(l->policy, 0);
    assert_int_equal(lim->algorithm, SL_TOKEN_BUCKET);
    assert_int_equal(lim->limit, 100);
    assert_int_equal(lim->burst, 20);
    assert_int_equal(lim->period, 60 * SL_USEC_PER_SEC);
    lim = sl_policy_limit(limit_of(c, "api", "tenant", "t")->policy, 0);
    assert_int_equal(lim->algorithm, SL_SLIDING_WINDOW);
    assert_int_equal(lim->precision, 60);
    assert_int_equal(lim->period, 3600 * SL_USEC_PER_SEC);
    l = limit_of(c, "api", "path", "/search/x");
    assert_int_equal(sl_policy_mode(l->policy), SL_MODE_SOFT);
    assert_int_equal(sl_policy_limit(l->policy, 0)->algorithm, SL_GCRA);
    assert_int_equal(sl_policy_limit(l->policy, 0)->period, 7 * 86400 * SL_USEC_PER_SEC);
    l = limit_of(c, "api", "trial", "x");
    assert_true(l->shadow_mode);
    assert_false(l->quota_mode);
    assert_int_equal(sl_policy_mode(l->policy), SL_MODE_SHADOW);
    assert_int_equal(l->unit, SLD_RLS_YEAR);
    /* an anchor and its alias: two limits with the same values */
    assert_int_equal(limit_of(c, "api", "anchors", "x")->requests_per_unit, 9);
    assert_int_equal(limit_of(c, "api", "anchors2", "x")->requests_per_unit, 9);
    assert_string_equal(sl_policy_name(limit_of(c, "api", "anchors2", "x")->policy),
                        "rls:api.anchors2");
    sld_rls_free(c);
}

typedef struct bad {
    const char *file;
    const char *message;  /* after "bad/FILE:" */
} bad_t;

static const bad_t bads[] = {
    /* the reference's own test files */
    {"bad_limit_unit.yaml",
     "6: invalid rate limit unit 'foo' (expected second, minute, hour, day, week, month or year)"},
    {"bad_yaml.yaml",
     "2: YAML syntax error: found unexpected end of stream while scanning a quoted scalar"},
    {"duplicate_key.yaml", "6: duplicate descriptor composite key 'test-domain.key1_value1'"},
    {"empty_domain.yaml", "1: config file cannot have empty domain"},
    {"empty_key.yaml", "3: descriptor has empty key"},
    {"misspelled_key.yaml",
     "5: config error, unknown key 'ratelimit' in a descriptor (expected one of key, value, "
     "rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, "
     "share_threshold, metadata)"},
    {"misspelled_key2.yaml",
     "7: config error, unknown key 'requestsperunit' in rate_limit (expected one of unit, "
     "requests_per_unit, unlimited, name, replaces, algorithm, burst, precision, mode, "
     "soft_percent)"},
    {"non_map_list.yaml", "3: config error, yaml file contains list of type other than map: a"},
    {"non_string_key.yaml", "1: config error, key is not of type string (in the file)"},
    {"replaces_empty.yaml", "10: should not have an empty replaces entry"},
    {"replaces_self.yaml", "10: replaces should not contain name of same descriptor"},
    {"unlimited_with_unit.yaml", "6: should not specify rate limit unit when unlimited"},
    /* the reference's other rules */
    {"duplicate_nested_key.yaml", "7: duplicate descriptor composite key 'test-domain.key1.sub'"},
    {"share_threshold_no_wildcard.yaml",
     "5: share_threshold can only be used with wildcard values (containing '*'), but found key "
     "'foo_bar'"},
    {"missing_unit.yaml",
     "4: invalid rate limit unit '' (expected second, minute, hour, day, week, month or year)"},
    /* values of the wrong type, which the reference's YAML library refuses */
    {"negative_rpu.yaml",
     "4: requests_per_unit: expected a whole number from 0 to 4294967295, got -1"},
    {"huge_rpu.yaml",
     "4: requests_per_unit: expected a whole number from 0 to 4294967295, got 4294967296"},
    {"bad_bool.yaml", "4: shadow_mode: expected true or false, got maybe"},
    {"key_list.yaml", "3: key: expected a value, got a list"},
    {"descriptors_mapping.yaml", "2: descriptors: expected a list, got a mapping"},
    {"not_a_mapping.yaml", "1: expected a mapping with domain and descriptors, got a list"},
    /* what the reference lets pass silently */
    {"misplaced_unit.yaml",
     "4: config error, unknown key 'unit' in a descriptor (expected one of key, value, "
     "rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, "
     "share_threshold, metadata)"},
    {"twice.yaml", "2: key 'domain' appears twice in the file"},
    {"two_documents.yaml", "3: a second YAML document (---): a file holds one domain"},
    /* sluice's extensions */
    {"bad_algorithm.yaml",
     "7: rate_limit: algorithm: expected one of gcra, token_bucket, leaky_bucket, fixed_window, "
     "sliding_log, sliding_window"},
    {"burst_fixed_window.yaml",
     "7: rate_limit: burst applies to gcra, token_bucket and leaky_bucket only"},
    {"mode_elastic.yaml", "7: rate_limit: mode: expected one of hard, soft, shadow"},
    {"shadow_and_hard.yaml",
     "8: rate_limit: mode: only shadow goes with the descriptor's shadow_mode: true"},
    {"soft_without_percent.yaml", "7: rate_limit: mode: soft needs soft_percent"},
    /* bounds */
    {"too_deep.yaml", "35: descriptors nested deeper than 16 levels"},
    {"alias_bomb.yaml", "4: more than 100000 descriptors in all"},
};

static void bad_files(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        char name[256], want[1024], err[1024] = "";
        snprintf(name, sizeof name, "bad/%s", bads[i].file);
        size_t len;
        char *yaml = fixture(name, &len);
        sld_rls_config_t *c = NULL;
        int rc = sld_rls_load_buffer(name, yaml, len, &c, err, sizeof err);
        free(yaml);
        if (rc == SL_OK)
            fail_msg("%s: accepted", name);
        assert_null(c);
        snprintf(want, sizeof want, "%s:%s", name, bads[i].message);
        if (strcmp(err, want) != 0)
            fail_msg("%s:\n  got  %s\n  want %s", name, err, want);
    }
}

/* In a directory, the message names the file by its path. */
static void bad_file_in_a_directory(void **state) {
    (void)state;
    char dir[] = "/tmp/test_rls_config.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/z.yml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight}\n", f);
    fclose(f);
    sld_rls_config_t *c = NULL;
    assert_int_equal(sld_rls_load_dir(dir, &c, err, sizeof err), SL_EINVAL);
    char want[1024];
    snprintf(want, sizeof want,
             "%s:4: invalid rate limit unit 'fortnight' (expected second, minute, hour, day, "
             "week, month or year)",
             path);
    assert_string_equal(err, want);
    unlink(path);
    /* an empty directory is an empty configuration */
    assert_int_equal(sld_rls_load_dir(dir, &c, err, sizeof err), SL_OK);
    assert_int_equal(sld_rls_domain_count(c), 0);
    sld_rls_entry_t e = {"a", 1, "b", 1};
    assert_null(sld_rls_match(c, "d", 1, &e, 1));
    sld_rls_free(c);
    rmdir(dir);
}

static void duplicate_domain_across_files(void **state) {
    (void)state;
    char dir[1024], err[4096] = "", want[4096];
    snprintf(dir, sizeof dir, "%s/tests/unit/rls/dup_domain", source_dir());
    sld_rls_config_t *c = NULL;
    assert_int_equal(sld_rls_load_dir(dir, &c, err, sizeof err), SL_EINVAL);
    assert_null(c);
    snprintf(want, sizeof want,
             "%s/b.yaml:2: duplicate domain 'shared' in config file (also in %s/a.yaml)", dir,
             dir);
    assert_string_equal(err, want);
}

static void missing_directory(void **state) {
    (void)state;
    char err[256] = "";
    sld_rls_config_t *c = NULL;
    assert_int_equal(sld_rls_load_dir("/nonexistent/rls", &c, err, sizeof err), SL_EIO);
    assert_string_equal(err, "/nonexistent/rls: No such file or directory");
    assert_null(c);
    /* no room for a message: still refused, nothing written past it */
    assert_int_equal(sld_rls_load_dir("/nonexistent/rls", &c, NULL, 0), SL_EIO);
}

static void truncated_prefixes(void **state) {
    (void)state;
    static const char *const goods[] = {"good/basic.yaml", "good/extended.yml"};
    for (size_t g = 0; g < 2; g++) {
        size_t len;
        char *yaml = fixture(goods[g], &len);
        for (size_t cut = 0; cut <= len; cut++) {
            char *copy = malloc(cut + 1); /* exactly cut bytes: ASan sees any overread */
            memcpy(copy, yaml, cut);
            sld_rls_config_t *c = NULL;
            char err[512] = "";
            int rc = sld_rls_load_buffer(goods[g], copy, cut, &c, err, sizeof err);
            if (rc == SL_OK) {
                sld_rls_entry_t e = {"key1", 4, "value1", 6};
                (void)sld_rls_match(c, "test-domain", 11, &e, 1);
                sld_rls_free(c);
            } else {
                assert_non_null(strstr(err, goods[g]));
            }
            free(copy);
        }
        free(yaml);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_directory),
        cmocka_unit_test(bad_files),
        cmocka_unit_test(bad_file_in_a_directory),
        cmocka_unit_test(duplicate_domain_across_files),
        cmocka_unit_test(missing_directory),
        cmocka_unit_test(truncated_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
