/* test_config.c -- the configuration loader (src/server/config/: config.c and
 * the schema, YAML, message, unit and policy files it reads with): the
 * shipped example loads; every key is read and every default filled; each
 * kind of error is refused with the right line and nothing returned;
 * durations and sizes parse exactly; truncated files never crash or leak. */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rig.h"
#include "server/config/config.h"
#include "server/daemon/front_config.h"
#include "server/http/http_config.h"
#include "server/resp/resp_config.h"

#define ONE_POLICY                                                                        \
    "policies:\n"                                                                         \
    "  - name: a\n"                                                                       \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

#define LIM "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static sld_config_t *parse_ok(const char *yaml) {
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("refused (%s): %s\n--- yaml:\n%s", sl_errname(rc), err, yaml);
    assert_non_null(cfg);
    return cfg;
}

/* Refused with SL_EINVAL, *out untouched, "test.yaml:LINE: ..." containing
 * `needle` (line 0: no line in the message). Prints both sides if not. */
static bool refused(const char *yaml, unsigned line, const char *needle) {
    static sld_config_t untouched;
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *sentinel = &untouched, *cfg = sentinel;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc != SL_EINVAL) {
        print_error("expected SL_EINVAL, got %s (%s)\n--- yaml:\n%s\n", sl_errname(rc), err,
                    yaml);
        if (rc == SL_OK && cfg != sentinel)
            sld_config_free(cfg);
        return false;
    }
    if (cfg != sentinel) {
        print_error("*out was written on error\n");
        return false;
    }
    char prefix[64];
    if (line)
        snprintf(prefix, sizeof prefix, "test.yaml:%u: ", line);
    else
        snprintf(prefix, sizeof prefix, "test.yaml: ");
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, needle) == NULL) {
        print_error("expected \"%s...%s\"\n     got \"%s\"\n--- yaml:\n%s\n", prefix, needle,
                    err, yaml);
        return false;
    }
    return true;
}

static void parse_err(const char *yaml, unsigned line, const char *needle) {
    if (!refused(yaml, line, needle))
        fail();
}

/* ---- the shipped example ------------------------------------------------ */

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void test_example_loads(void **state) {
    (void)state;
    char path[4096];
    const char *dir = getenv("SLUICE_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/sluice.example.yaml", dir ? dir : "../..");
    if (access(path, R_OK) != 0) {
        print_message("skipped: %s not found (set SLUICE_SOURCE_DIR to the source tree)\n",
                      path);
        skip();
    }
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    int rc = sld_config_load(path, &cfg, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("%s", err);
    assert_string_equal(cfg->source, path);
    assert_string_equal(sld_resp_listen(cfg), "127.0.0.1:6390");
    assert_string_equal(sld_http_listen(cfg), "127.0.0.1:8090");
    assert_null(sld_http_admin_token(cfg));
    assert_true(cfg->npolicies >= 4);

    /* what the brief asks the example to show */
    bool algos[SL_ALGORITHM_COUNT] = {false}, multi = false, tiers = false, relaxed = false;
    bool user = false, ip = false, endpoint = false;
    for (size_t i = 0; i < cfg->npolicies; i++) {
        const sld_policy_t *p = &cfg->policies[i];
        assert_non_null(p->name);
        for (size_t k = 0; k < p->nlimits; k++)
            algos[p->limits[k].algorithm] = true;
        multi |= p->nlimits >= 2;
        tiers |= p->ntiers >= 1;
        relaxed |= p->mode == SL_MODE_SHADOW || p->mode == SL_MODE_SOFT;
        for (size_t k = 0; k < p->nkey_attrs; k++) {
            user |= strcmp(p->key_attrs[k], "user") == 0;
            ip |= strcmp(p->key_attrs[k], "ip") == 0;
            endpoint |= strcmp(p->key_attrs[k], "endpoint") == 0;
        }
    }
    assert_true(algos[SL_GCRA] && algos[SL_SLIDING_WINDOW] && algos[SL_TOKEN_BUCKET]);
    assert_true(multi && tiers && relaxed && user && ip && endpoint);
    sld_config_free(cfg);

    /* and the same from a buffer */
    size_t len;
    char *text = read_text(path, &len);
    assert_non_null(text);
    cfg = parse_ok(text);
    sld_config_free(cfg);
    free(text);
}

/* ---- good configurations ------------------------------------------------- */

static void test_defaults(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(ONE_POLICY);
    assert_string_equal(cfg->source, "test.yaml");
    assert_string_equal(sld_resp_listen(cfg), "127.0.0.1:6390");
    assert_string_equal(sld_http_listen(cfg), "127.0.0.1:8090");
    assert_int_equal(cfg->threads, 0);
    assert_int_equal(cfg->max_connections, 10000);
    assert_int_equal(cfg->max_request_bytes, 1 << 20);
    assert_int_equal(cfg->max_key_bytes, 1024);
    assert_int_equal(cfg->idle_timeout, SEC(300));
    assert_int_equal(cfg->write_timeout, SEC(300)); /* as idle_timeout */
    assert_int_equal(cfg->max_memory, 0);
    assert_int_equal(cfg->shards, 0);
    assert_null(cfg->snapshot_path);
    assert_int_equal(cfg->snapshot_mode, SLD_SNAPSHOT_DEFAULT);
    assert_int_equal(cfg->snapshot_interval, SEC(60));
    assert_null(cfg->trusted_proxies);
    assert_int_equal(cfg->ntrusted_proxies, 0);
    assert_int_equal(cfg->ipv6_prefix, 64);
    assert_string_equal(cfg->user_header, "Authorization");
    assert_null(sld_http_admin_token(cfg));
    assert_int_equal(cfg->npolicies, 1);
    const sld_policy_t *p = &cfg->policies[0];
    assert_string_equal(p->name, "a");
    assert_int_equal(p->mode, SL_MODE_HARD);
    assert_int_equal(p->soft_percent, 0);
    assert_false(p->has_pool);
    assert_int_equal(p->nkey_attrs, 1);
    assert_string_equal(p->key_attrs[0], "key");
    assert_int_equal(p->ntiers, 0);
    assert_null(p->tiers);
    assert_int_equal(p->nlimits, 1);
    sl_limit_t want = {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1)};
    assert_memory_equal(&p->limits[0], &want, sizeof want);
    sld_config_free(cfg);

    /* sections written empty (every line commented out) read as absent */
    cfg = parse_ok("listen:\nlimits:\nstore:\n  snapshot:\ntrusted_proxies:\n" ONE_POLICY);
    assert_string_equal(sld_resp_listen(cfg), "127.0.0.1:6390");
    assert_null(cfg->snapshot_path);
    assert_int_equal(cfg->snapshot_mode, SLD_SNAPSHOT_DEFAULT);
    assert_int_equal(cfg->ntrusted_proxies, 0);
    sld_config_free(cfg);
}

static const char every_key[] =
    "# every key, none at its default\n"
    "listen:\n"
    "  resp: \"[::1]:0\"\n"
    "  http: 0.0.0.0:18090\n"
    "threads: 3\n"
    "limits:\n"
    "  max_connections: 500\n"
    "  max_request_bytes: 64KiB\n"
    "  max_key_bytes: 200\n"
    "  idle_timeout: 1.5m\n"
    "store:\n"
    "  type: memory\n"
    "  max_memory: 2GB\n"
    "  shards: 1024\n"
    "  snapshot:\n"
    "    path: /var/lib/sluice/state.snap\n"
    "    interval: 0\n"
    "trusted_proxies: [127.0.0.1/32, \"::1/128\", 10.0.0.0/8, \"2001:db8::/32\", 0.0.0.0/0]\n"
    "ipv6_prefix: 48\n"
    "user_header: X-User-Id\n"
    "admin_token: 0123456789abcdef-token\n"
    "policies:\n"
    "  - name: per_user.v2\n"
    "    key: [user, \"header:X-Tenant\", method, endpoint, ip]\n"
    "    mode: soft\n"
    "    soft_percent: 25\n"
    "    limits:\n"
    "      - algorithm: sliding_window\n"
    "        limit: 100\n"
    "        period: 1m\n"
    "        precision: 60\n"
    "        count_denied: true\n"
    "      - {algorithm: gcra, limit: 1000, period: 1h, burst: 50}\n"
    "      - {algorithm: token_bucket, limit: 5, period: 1s, burst: 0}\n"
    "      - {algorithm: leaky_bucket, limit: 5, period: 2s, burst: 10, shaper: yes}\n"
    "      - {algorithm: fixed_window, limit: 7, period: 1d, count_denied: false}\n"
    "      - {algorithm: sliding_log, limit: 9, period: 500ms}\n"
    "    tiers:\n"
    "      - name: premium\n"
    "        keys: [alice, acme-corp]\n"
    "        limits: [{algorithm: gcra, limit: 10000, period: 1h}]\n"
    "      - name: free\n"
    "        keys: []\n"
    "        limits: [{algorithm: fixed_window, limit: 10, period: 1h}]\n"
    "  - name: pooled\n"
    "    mode: elastic\n"
    "    pool: {algorithm: token_bucket, limit: 1000, period: 1s}\n"
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"
    "  - name: watched\n"
    "    mode: shadow\n"
    "    limits: [{algorithm: sliding_log, limit: 5, period: 1m}]\n";

static void test_every_key(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(every_key);
    assert_string_equal(sld_resp_listen(cfg), "[::1]:0");
    assert_string_equal(sld_http_listen(cfg), "0.0.0.0:18090");
    assert_int_equal(cfg->threads, 3);
    assert_int_equal(cfg->max_connections, 500);
    assert_int_equal(cfg->max_request_bytes, 65536);
    assert_int_equal(cfg->max_key_bytes, 200);
    assert_int_equal(cfg->idle_timeout, SEC(90));
    assert_int_equal(cfg->max_memory, UINT64_C(2000000000));
    assert_int_equal(cfg->shards, 1024);
    assert_string_equal(cfg->snapshot_path, "/var/lib/sluice/state.snap");
    assert_int_equal(cfg->snapshot_interval, 0);
    assert_int_equal(cfg->ntrusted_proxies, 5);
    assert_string_equal(cfg->trusted_proxies[1], "::1/128");
    assert_string_equal(cfg->trusted_proxies[3], "2001:db8::/32");
    assert_int_equal(cfg->ipv6_prefix, 48);
    assert_string_equal(cfg->user_header, "X-User-Id");
    assert_string_equal(sld_http_admin_token(cfg), "0123456789abcdef-token");
    assert_int_equal(cfg->npolicies, 3);

    const sld_policy_t *p = &cfg->policies[0];
    assert_string_equal(p->name, "per_user.v2");
    assert_int_equal(p->nkey_attrs, 5);
    assert_string_equal(p->key_attrs[1], "header:X-Tenant");
    assert_string_equal(p->key_attrs[4], "ip");
    assert_int_equal(p->mode, SL_MODE_SOFT);
    assert_int_equal(p->soft_percent, 25);
    assert_int_equal(p->nlimits, 6);
    const sl_limit_t want[] = {
        {.algorithm = SL_SLIDING_WINDOW, .limit = 100, .period = MIN(1), .precision = 60,
         .count_denied = true},
        {.algorithm = SL_GCRA, .limit = 1000, .period = MIN(60), .burst = 50},
        {.algorithm = SL_TOKEN_BUCKET, .limit = 5, .period = SEC(1)},
        {.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(2), .burst = 10, .shaper = true},
        {.algorithm = SL_FIXED_WINDOW, .limit = 7, .period = MIN(60 * 24)},
        {.algorithm = SL_SLIDING_LOG, .limit = 9, .period = MS(500)},
    };
    for (size_t i = 0; i < 6; i++) {
        sl_limit_t got;
        memset(&got, 0, sizeof got);
        got = p->limits[i];
        assert_int_equal(got.algorithm, want[i].algorithm);
        assert_int_equal(got.limit, want[i].limit);
        assert_int_equal(got.period, want[i].period);
        assert_int_equal(got.burst, want[i].burst);
        assert_int_equal(got.precision, want[i].precision);
        assert_int_equal(got.shaper, want[i].shaper);
        assert_int_equal(got.count_denied, want[i].count_denied);
    }
    assert_int_equal(p->ntiers, 2);
    assert_string_equal(p->tiers[0].name, "premium");
    assert_int_equal(p->tiers[0].nkeys, 2);
    assert_string_equal(p->tiers[0].keys[0], "alice");
    assert_string_equal(p->tiers[0].keys[1], "acme-corp");
    assert_int_equal(p->tiers[0].nlimits, 1);
    assert_int_equal(p->tiers[0].limits[0].limit, 10000);
    assert_int_equal(p->tiers[1].nkeys, 0);
    assert_int_equal(p->tiers[1].limits[0].algorithm, SL_FIXED_WINDOW);

    p = &cfg->policies[1];
    assert_int_equal(p->mode, SL_MODE_ELASTIC);
    assert_true(p->has_pool);
    assert_int_equal(p->pool.algorithm, SL_TOKEN_BUCKET);
    assert_int_equal(p->pool.limit, 1000);
    assert_int_equal(p->pool.period, SEC(1));
    assert_int_equal(cfg->policies[2].mode, SL_MODE_SHADOW);

    /* the policies compile in the library exactly as written */
    for (size_t i = 0; i < cfg->npolicies; i++) {
        const sld_policy_t *q = &cfg->policies[i];
        sl_policy_config_t pc = {.name = q->name, .limits = q->limits, .nlimits = q->nlimits,
                                 .mode = q->mode, .soft_percent = q->soft_percent,
                                 .pool = q->pool};
        sl_policy_t *compiled = NULL;
        assert_int_equal(sl_policy_new(&pc, &compiled, NULL, 0), SL_OK);
        sl_policy_free(compiled);
    }
    sld_config_free(cfg);
}

static void test_scalar_spellings(void **state) {
    (void)state;
    /* quoted or not, a number is a number; "off" and "" turn a front off */
    sld_config_t *cfg = parse_ok("listen: {http: \"off\"}\nthreads: \"4\"\n" ONE_POLICY);
    assert_string_equal(sld_http_listen(cfg), "");
    assert_int_equal(cfg->threads, 4);
    sld_config_free(cfg);
    cfg = parse_ok("listen: {http: off}\n" ONE_POLICY);
    assert_string_equal(sld_http_listen(cfg), "");
    sld_config_free(cfg);
    cfg = parse_ok("listen: {resp: off}\n" ONE_POLICY);
    assert_string_equal(sld_resp_listen(cfg), "");
    assert_string_equal(sld_http_listen(cfg), "127.0.0.1:8090");
    sld_config_free(cfg);
    cfg = parse_ok("listen:\n  http: \"\"\n  resp: 10.1.2.3:7000\n" ONE_POLICY);
    assert_string_equal(sld_http_listen(cfg), "");
    assert_string_equal(sld_resp_listen(cfg), "10.1.2.3:7000");
    sld_config_free(cfg);
    /* durations: a bare number is seconds */
    cfg = parse_ok("limits: {idle_timeout: 45}\n" ONE_POLICY);
    assert_int_equal(cfg->idle_timeout, SEC(45));
    assert_int_equal(cfg->write_timeout, SEC(45)); /* not given: as idle_timeout */
    sld_config_free(cfg);
    cfg = parse_ok("limits: {idle_timeout: 45, write_timeout: 5s}\n" ONE_POLICY);
    assert_int_equal(cfg->write_timeout, SEC(5));
    sld_config_free(cfg);
    cfg = parse_ok("limits: {write_timeout: 0}\n" ONE_POLICY);
    assert_int_equal(cfg->write_timeout, 0);
    assert_int_equal(cfg->idle_timeout, SEC(300));
    sld_config_free(cfg);
    cfg = parse_ok("limits: {idle_timeout: 0}\nstore: {max_memory: 1MiB}\n" ONE_POLICY);
    assert_int_equal(cfg->idle_timeout, 0);
    assert_int_equal(cfg->max_memory, 1 << 20);
    sld_config_free(cfg);
    /* booleans in the YAML 1.1 spellings */
    const char *yes[] = {"true", "True", "yes", "on"}, *no[] = {"false", "False", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml,
                 "policies:\n  - name: a\n    limits: [{algorithm: leaky_bucket, limit: 1, "
                 "period: 1s, shaper: %s, count_denied: %s}]\n", yes[i], no[i]);
        cfg = parse_ok(yaml);
        assert_true(cfg->policies[0].limits[0].shaper);
        assert_false(cfg->policies[0].limits[0].count_denied);
        sld_config_free(cfg);
    }
    /* an empty list is the same as none: the default key */
    cfg = parse_ok("policies:\n  - name: a\n    key: []\n" LIM);
    assert_int_equal(cfg->policies[0].nkey_attrs, 1);
    assert_string_equal(cfg->policies[0].key_attrs[0], "key");
    sld_config_free(cfg);
    /* no name: the embedded default */
    cfg = NULL;
    assert_int_equal(sld_config_parse(NULL, ONE_POLICY, strlen(ONE_POLICY), &cfg, NULL, 0), SL_OK);
    assert_string_equal(cfg->source, "(embedded default)");
    sld_config_free(cfg);
}

/* ---- errors: each class, with its line ------------------------------------ */

typedef struct bad_case {
    unsigned line;
    const char *needle;
    const char *yaml;
} bad_case_t;

static const bad_case_t bad_cases[] = {
    /* syntax and shape */
    {2, "YAML syntax error: mapping values are not allowed", "threads: 1\nlisten: a: b\n" ONE_POLICY},
    {3, "YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence that "
        "started on line 2)", "policies:\n  - name: [a\n"},
    {2, "tab", "policies:\n\t- name: a\n"},
    {4, "second YAML document", ONE_POLICY "---\n" ONE_POLICY},
    {3, "aliases (*n) are not supported", "policies:\n  - name: &n a\n    limits: *n\n"},
    {1, "top level must be a mapping", "- a\n- b\n"},
    {1, "top level must be a mapping", "just words\n"},
    {1, "mapping key must be a plain value", "? [a]\n: b\n" ONE_POLICY},
    {2, "NUL", "policies:\n  - name: \"a\\0b\"\n" LIM},
    {0, "empty", ""},
    {0, "empty", "# only a comment\n"},
    {0, "empty", "~\n"},
    /* schema: unknown, missing, duplicate keys, wrong shapes, too many */
    {5, "unknown key \"limt\" in policies[0].limits[0] (expected one of algorithm, limit, period",
     "policies:\n  - name: a\n    limits:\n      - algorithm: gcra\n        limt: 5\n"
     "        period: 1s\n"},
    {2, "unknown key \"thread\" at the top level (expected one of listen, threads",
     "listen: {}\nthread: 4\n" ONE_POLICY},
    {3, "unknown key \"htp\" in listen", "listen:\n  resp: 127.0.0.1:1\n  htp: off\n" ONE_POLICY},
    {6, "unknown key \"intervl\" in store.snapshot",
     "store:\n  type: memory\n  snapshot:\n    path: x.snap\n\n    intervl: 5s\n" ONE_POLICY},
    {4, "missing required key \"period\" in policies[0].limits[0]",
     "policies:\n  - name: a\n    limits:\n      - algorithm: gcra\n        limit: 5\n"},
    {4, "missing required key \"name\" in policies[1]",
     ONE_POLICY "  - limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"},
    {1, "missing required key \"policies\" at the top level", "threads: 2\n"},
    {4, "duplicate key \"path\" in store.snapshot",
     "store:\n  snapshot:\n    path: a\n    path: b\n" ONE_POLICY},
    {2, "store.snapshot: expected off, on or a mapping (path:, interval:), got \"sometimes\"",
     "store:\n  snapshot: sometimes\n" ONE_POLICY},
    {2, "store.snapshot: expected off, on or a mapping (path:, interval:), got a list",
     "store:\n  snapshot: [a]\n" ONE_POLICY},
    {3, "store.snapshot.path: expected a value, got a mapping",
     "store:\n  snapshot:\n    path: {a: b}\n" ONE_POLICY},
    {4, "duplicate key \"name\" in policies[0]",
     "policies:\n  - name: a\n" LIM "    name: b\n"},
    {2, "duplicate key \"threads\"", "threads: 1\nthreads: 2\n" ONE_POLICY},
    {3, "policies[0].limits: expected a list, got a single value",
     "policies:\n  - name: a\n    limits: 5\n"},
    {1, "threads: expected a single value, got a mapping", "threads: {a: 1}\n" ONE_POLICY},
    {1, "listen: expected a mapping", "listen: [a]\n" ONE_POLICY},
    {3, "policies[0].key[1]: expected a single value, got a list",
     "policies:\n  - name: a\n    key: [user, [ip]]\n" LIM},
    {4, "policies[0].key: too many entries (at most 8)",
     "policies:\n  - name: a\n    key: [user, ip, method, endpoint, key, header:A, header:B,\n"
     "      header:C, header:D]\n" LIM},
    {20, "policies[0].limits: too many entries (at most 16)",
     "policies:\n  - name: a\n    limits:\n"
     "      - {algorithm: gcra, limit: 1, period: 1s}\n"
     "      - {algorithm: gcra, limit: 2, period: 1s}\n"
     "      - {algorithm: gcra, limit: 3, period: 1s}\n"
     "      - {algorithm: gcra, limit: 4, period: 1s}\n"
     "      - {algorithm: gcra, limit: 5, period: 1s}\n"
     "      - {algorithm: gcra, limit: 6, period: 1s}\n"
     "      - {algorithm: gcra, limit: 7, period: 1s}\n"
     "      - {algorithm: gcra, limit: 8, period: 1s}\n"
     "      - {algorithm: gcra, limit: 9, period: 1s}\n"
     "      - {algorithm: gcra, limit: 10, period: 1s}\n"
     "      - {algorithm: gcra, limit: 11, period: 1s}\n"
     "      - {algorithm: gcra, limit: 12, period: 1s}\n"
     "      - {algorithm: gcra, limit: 13, period: 1s}\n"
     "      - {algorithm: gcra, limit: 14, period: 1s}\n"
     "      - {algorithm: gcra, limit: 15, period: 1s}\n"
     "      - {algorithm: gcra, limit: 16, period: 1s}\n"
     "      - {algorithm: gcra, limit: 17, period: 1s}\n"},
    /* values */
    {5, "policies[0].limits[0].algorithm: expected one of gcra, token_bucket, leaky_bucket, "
        "fixed_window, sliding_log, sliding_window, got \"gcar\"",
     "threads: 1\npolicies:\n  - name: a\n    limits:\n      - algorithm: gcar\n"
     "        limit: 1\n        period: 1s\n"},
    {6, "policies[0].limits[0].period: expected a duration like 500ms, 2s, 1m",
     "policies:\n  - name: a\n    limits:\n      - algorithm: gcra\n        limit: 1\n"
     "        period: 5 minutes\n"},
    {4, "(never negative)",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: -1s}\n"},
    {4, "policies[0].limits[0].limit: expected a whole number of at least 1, got \"1.5\"",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1.5, period: 1s}\n"},
    {4, "limit: 0 is out of range",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 0, period: 1s}\n"},
    {3, "policies[0].mode: expected one of hard, soft, shadow, elastic, got \"strict\"",
     "policies:\n  - name: a\n    mode: strict\n" LIM},
    {2, "policies[0].name: expected a name of 1 to 64 letters",
     "policies:\n  - name: \"per user\"\n" LIM},
    {2, "expected a name", "policies:\n  - name: \"\"\n" LIM},
    {3, "policies[0].key[0]: expected one of key, user, ip, endpoint, method, header:<Name>",
     "policies:\n  - name: a\n    key: [usr]\n" LIM},
    {3, "policies[0].key[1]: \"ip\" is already in the key",
     "policies:\n  - name: a\n    key: [ip, ip]\n" LIM},
    {3, "header:<Name>", "policies:\n  - name: a\n    key: [\"header:\"]\n" LIM},
    {3, "policies[0].key[0]: \"key\" (the key the client gives) cannot be combined",
     "policies:\n  - name: a\n    key: [key, ip]\n" LIM},
    {1, "threads: 257 is out of range: expected a whole number from 0 to 256",
     "threads: 257\n" ONE_POLICY},
    {1, "threads: expected a whole number from 0 to 256, got \"-1\"", "threads: -1\n" ONE_POLICY},
    {1, "out of range", "threads: 99999999999999999999999\n" ONE_POLICY},
    {2, "limits.max_connections: 0 is out of range",
     "limits:\n  max_connections: 0\n" ONE_POLICY},
    {2, "limits.max_request_bytes: 512 is out of range (1KiB to 512MiB)",
     "limits:\n  max_request_bytes: 512\n" ONE_POLICY},
    {3, "limits.max_request_bytes: expected a size like 4096, 64KiB",
     "limits:\n  max_key_bytes: 10\n  max_request_bytes: 1 MiB\n" ONE_POLICY},
    {2, "limits.max_key_bytes: 65537 is out of range",
     "limits:\n  max_key_bytes: 65537\n" ONE_POLICY},
    {2, "limits.idle_timeout: 400d is too long (at most 365 days)",
     "limits:\n  idle_timeout: 400d\n" ONE_POLICY},
    {2, "store.type: type redis needs store.url", "store:\n  type: redis\n" ONE_POLICY},
    {2, "store.type: expected memory or redis, got \"redis-cluster\"",
     "store:\n  type: redis-cluster\n" ONE_POLICY},
    {2, "store.type: expected memory or redis, got \"disk\"", "store:\n  type: disk\n" ONE_POLICY},
    {3, "store.url: a url applies to type: redis only",
     "store:\n  type: memory\n  url: redis://127.0.0.1:6379\n" ONE_POLICY},
    {3, "store.url: TLS (rediss://) is not supported",
     "store:\n  type: redis\n  url: rediss://127.0.0.1:6379\n" ONE_POLICY},
    {3, "store.url: expected redis://host:port", "store:\n  type: redis\n  url: http://x\n" ONE_POLICY},
    {5, "store.sync_interval: must be at least 1ms", "store:\n  type: redis\n  url: redis://h:1\n  sync: write_back\n  sync_interval: 10us\n" ONE_POLICY},
    {4, "store.sync: expected strict or write_back", "store:\n  type: redis\n  url: redis://h:1\n  sync: lazy\n" ONE_POLICY},
    {4, "store.timeout: must be at least 1ms", "store:\n  type: redis\n  url: redis://h:1\n  timeout: 10us\n" ONE_POLICY},
    {4, "store.clock: expected server (Redis TIME) or local", "store:\n  type: redis\n  url: redis://h:1\n  clock: mine\n" ONE_POLICY},
    {4, "store.on_store_failure: expected open, closed or local", "store:\n  type: redis\n  url: redis://h:1\n  on_store_failure: maybe\n" ONE_POLICY},
    {4, "store.nodes: ", "store:\n  type: redis\n  url: redis://h:1\n  nodes: 0\n" ONE_POLICY},
    {5, "store.breaker.cooldown: must be at least 1ms", "store:\n  type: redis\n  url: redis://h:1\n  breaker:\n    cooldown: 0s\n" ONE_POLICY},
    {4, "policies[0].on_store_failure: expected open, closed or local",
     "policies:\n  - name: a\n    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n    on_store_failure: half\n"},
    {2, "store.max_memory: must be 0 (unbounded) or at least 1MiB",
     "store:\n  max_memory: 1000KB\n" ONE_POLICY},
    {2, "store.shards: must be 0 (default) or a power of two, got 100",
     "store:\n  shards: 100\n" ONE_POLICY},
    {2, "store.shards: 131072 is out of range", "store:\n  shards: 131072\n" ONE_POLICY},
    {4, "store.snapshot.interval: expected a duration",
     "store:\n  snapshot:\n    path: a.snap\n    interval: often\n" ONE_POLICY},
    {3, "store.snapshot.path: expected a file path",
     "store:\n  snapshot:\n    path: \"\"\n" ONE_POLICY},
    {2, "listen.resp: \"localhost\" is not an IPv4 address (host names are not resolved)",
     "listen:\n  resp: localhost:6390\n" ONE_POLICY},
    {2, "listen.resp: an IPv6 address needs brackets",
     "listen:\n  resp: \"::1:6390\"\n" ONE_POLICY},
    {2, "listen.resp: expected an address like 127.0.0.1:6390",
     "listen:\n  resp: \"of\"\n" ONE_POLICY},
    {1, "listen: turns off every front (resp, http and grpc): nothing would answer",
     "listen:\n  resp: \"off\"\n  http: \"\"\n" ONE_POLICY},
    {3, "listen.http: port must be a number from 0 to 65535, got \"65536\"",
     "listen:\n  resp: 127.0.0.1:1\n  http: 127.0.0.1:65536\n" ONE_POLICY},
    {2, "listen.http: \"fe80::zz\" is not an IPv6 address",
     "listen:\n  http: \"[fe80::zz]:80\"\n" ONE_POLICY},
    {3, "trusted_proxies[1]: expected a CIDR like 10.0.0.0/8",
     "trusted_proxies:\n  - 10.0.0.0/8\n  - 192.168.1.1\n" ONE_POLICY},
    {1, "trusted_proxies[0]: prefix length must be a number from 0 to 32, got \"33\"",
     "trusted_proxies: [10.0.0.0/33]\n" ONE_POLICY},
    {1, "trusted_proxies[1]: \"300.1.1.1\" is not an IPv4 address",
     "trusted_proxies: [1.2.3.4/32, 300.1.1.1/32]\n" ONE_POLICY},
    {1, "trusted_proxies[0]: 10.1.2.3/8 has bits set after the first 8: did you mean 10.0.0.0/8?",
     "trusted_proxies: [10.1.2.3/8]\n" ONE_POLICY},
    {1, "did you mean 2001:db8::/32?", "trusted_proxies: [\"2001:db8::1/32\"]\n" ONE_POLICY},
    {1, "ipv6_prefix: 0 is out of range", "ipv6_prefix: 0\n" ONE_POLICY},
    {1, "ipv6_prefix: 129 is out of range", "ipv6_prefix: 129\n" ONE_POLICY},
    {1, "user_header: expected an HTTP header name", "user_header: \"X User\"\n" ONE_POLICY},
    {1, "admin_token: a token needs at least 16 characters (this one has 6)",
     "admin_token: secret\n" ONE_POLICY},
    {1, "admin_token: a token is printable ASCII without spaces",
     "admin_token: \"0123456789 abcdef\"\n" ONE_POLICY},
    {1, "admin_token: \"1BAD\" is not an environment variable name",
     "admin_token: env:1BAD\n" ONE_POLICY},
    /* mode rules */
    {3, "policies[0].mode: mode soft needs soft_percent",
     "policies:\n  - name: a\n    mode: soft\n" LIM},
    {3, "policies[0].soft_percent: soft_percent applies to mode: soft only",
     "policies:\n  - name: a\n    soft_percent: 10\n" LIM},
    {4, "policies[0].soft_percent: 1001 is out of range",
     "policies:\n  - name: a\n    mode: soft\n    soft_percent: 1001\n" LIM},
    {3, "policies[0].mode: mode elastic needs a pool",
     "policies:\n  - name: a\n    mode: elastic\n" LIM},
    {4, "policies[0].pool: a pool applies to mode: elastic only",
     "policies:\n  - name: a\n    mode: shadow\n    pool: {algorithm: gcra, limit: 5, period: 1s}\n"
     LIM},
    {4, "policies[0].pool.algorithm: expected one of",
     "policies:\n  - name: a\n    mode: elastic\n    pool: {algorithm: x, limit: 5, period: 1s}\n"
     LIM},
    /* limits: fields that do not apply, and the library's own reasons */
    {5, "policies[0].limits[0].burst: burst applies to gcra, token_bucket and leaky_bucket only",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: fixed_window, limit: 1, period: 1s,\n"
     "         burst: 0}\n"},
    {4, "policies[0].limits[0].precision: precision applies to sliding_window only",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 1s, "
     "precision: 2}\n"},
    {4, "policies[0].limits[0].shaper: shaper applies to leaky_bucket only",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 1s, "
     "shaper: false}\n"},
    {4, "policies[0].limits[0].shaper: expected true or false, got \"maybe\"",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: leaky_bucket, limit: 1, period: 1s, "
     "shaper: maybe}\n"},
    {4, "policies[0].limits[0].count_denied: expected true or false",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 1s, "
     "count_denied: 2}\n"},
    {7, "policies[0].limits[1].period: period must be a multiple of precision",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 1s}\n"
     "      - algorithm: sliding_window\n        limit: 10\n        period: 1000007us\n"
     "        precision: 10\n"},
    {4, "policies[0].limits[0].limit: sliding_log limit is too large",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: sliding_log, limit: 2000000, "
     "period: 1s}\n"},
    {4, "policies[0].limits[0].period: period must be longer than 0",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 0s}\n"},
    {4, "policies[0].limits[0].period: period is too long",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 1, period: 100000000d}\n"},
    {5, "policies[0].limits[1]: limits 1 and 2 are the same",
     "policies:\n  - name: a\n    limits:\n      - {algorithm: gcra, limit: 3, period: 1s}\n"
     "      - {algorithm: gcra, limit: 3, period: 1000ms}\n"},
    {4, "policies[0].limits: needs at least one limit", "policies:\n  - name: a\n    key: [ip]\n"
     "    limits: []\n"},
    {3, "policies[0].limits: needs at least one limit", "policies:\n  - name: a\n    limits:\n"},
    {1, "policies: at least one policy is needed", "policies: []\n"},
    {2, "policies: at least one policy is needed", "threads: 1\npolicies:\n"},
    /* names and tiers */
    {6, "policies[2].name: policy name \"a\" is already used (line 2)",
     ONE_POLICY "  - name: b\n" LIM "  - name: a\n" LIM},
    {7, "policies[0].tiers[2].name: tier name \"t\" is already used",
     "policies:\n  - name: a\n" LIM "    tiers:\n"
     "      - {name: t, keys: [x], limits: [{algorithm: gcra, limit: 1, period: 1s}]}\n"
     "      - {name: u, keys: [y], limits: [{algorithm: gcra, limit: 2, period: 1s}]}\n"
     "      - name: t\n"
     "        limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"},
    {9, "policies[0].tiers[1].keys[1]: key \"bob\" is already in tier gold: a key belongs to one "
        "tier only",
     "policies:\n  - name: a\n" LIM "    tiers:\n"
     "      - name: gold\n        keys: [alice, bob]\n"
     "        limits: [{algorithm: gcra, limit: 100, period: 1s}]\n"
     "      - name: silver\n        keys: [carol, bob]\n"
     "        limits: [{algorithm: gcra, limit: 50, period: 1s}]\n"},
    {5, "policies[0].tiers[0].keys[2]: key \"alice\" is listed twice in tier gold",
     "policies:\n  - name: a\n" LIM "    tiers:\n"
     "      - {name: gold, keys: [alice, bob, alice], limits: [{algorithm: gcra, limit: 1, "
     "period: 1s}]}\n"},
    {5, "policies[0].tiers[0].limits[0].burst: burst applies",
     "policies:\n  - name: a\n" LIM "    tiers:\n"
     "      - {name: t, keys: [x], limits: [{algorithm: sliding_log, limit: 1, period: 1s, "
     "burst: 1}]}\n"},
    {6, "policies[0].tiers[0].limits: needs at least one limit",
     "policies:\n  - name: a\n" LIM "    tiers:\n      - name: t\n        limits: []\n"},
    {6, "policies[0].tiers[0].keys[0]: a key must be 1 to 1024 bytes",
     "policies:\n  - name: a\n" LIM "    tiers:\n      - name: t\n        keys: [\"\"]\n"
     "        limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"},
    {5, "missing required key \"limits\" in policies[0].tiers[0]",
     "policies:\n  - name: a\n" LIM "    tiers:\n      - name: t\n        keys: [x]\n"},
};

static void test_errors(void **state) {
    (void)state;
    size_t failed = 0, n = sizeof bad_cases / sizeof bad_cases[0];
    for (size_t i = 0; i < n; i++)
        failed += !refused(bad_cases[i].yaml, bad_cases[i].line, bad_cases[i].needle);
    if (failed)
        fail_msg("%zu of %zu cases failed", failed, n);
}

static void test_long_names(void **state) {
    (void)state;
    char name64[65], yaml[1024];
    memset(name64, 'n', 64);
    name64[64] = '\0';
    snprintf(yaml, sizeof yaml, "policies:\n  - name: %s\n" LIM, name64);
    sld_config_free(parse_ok(yaml));
    snprintf(yaml, sizeof yaml, "policies:\n  - name: %sx\n" LIM, name64);
    parse_err(yaml, 2, "expected a name of 1 to 64");
    /* a tier's counters are named "<policy>/<tier>", at most 128 bytes */
    snprintf(yaml, sizeof yaml,
             "policies:\n  - name: %s\n" LIM "    tiers:\n      - name: %s\n"
             "        limits: [{algorithm: gcra, limit: 1, period: 1s}]\n", name64, name64);
    parse_err(yaml, 5, "policy and tier names together must be at most 127 characters");
}

/* The line of an error is that of its own node, wherever it is. */
static void test_error_lines_follow_the_node(void **state) {
    (void)state;
    const char *body =
        "policies:\n"
        "  - name: a\n"
        "    limits:\n"
        "      - {algorithm: gcra, limit: 1, period: 1s}\n"
        "      - algorithm: gcra\n"
        "        limit: 2\n"
        "        period: 1s\n"
        "  - name: b\n"
        "    limits:\n"
        "      - algorithm: gcra\n"
        "        limit: 2\n"
        "        period: 1s\n"
        "        burst: %s\n";
    char yaml[1024];
    snprintf(yaml, sizeof yaml, body, "-1");
    parse_err(yaml, 13, "policies[1].limits[0].burst: expected a whole number");
    /* the same file with comment lines in front: every line moves by three */
    char moved[1200];
    snprintf(moved, sizeof moved, "# one\n\n# three\n%s", yaml);
    parse_err(moved, 16, "policies[1].limits[0].burst");
}

/* ---- durations and sizes --------------------------------------------------- */

static void test_durations(void **state) {
    (void)state;
    static const struct {
        const char *text;
        sl_usec_t us;
    } good[] = {
        {"0", 0},
        {"1", SEC(1)},
        {"250ms", MS(250)},
        {"2s", SEC(2)},
        {"1.5m", SEC(90)},
        {"1h", MIN(60)},
        {"7d", SEC(7 * 86400)},
        {"100us", 100},
        {"1.5s", MS(1500)},
        {"0.000001s", 1},
        {"1.0000000000000000000000s", SEC(1)},
        {"0.5ms", 500},
        {"0.25", MS(250)},
        {"007s", SEC(7)},
        {"9223372036854775807us", INT64_MAX},
        {"106751991d", INT64_C(106751991) * 86400 * 1000000},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        sl_usec_t v = -1;
        int rc = sld_parse_duration(good[i].text, &v);
        if (rc != SL_OK || v != good[i].us)
            fail_msg("\"%s\": rc %d, %lld us, want %lld", good[i].text, rc, (long long)v,
                     (long long)good[i].us);
    }
    static const struct {
        const char *text;
        int rc;
    } bad[] = {
        {"", SL_EINVAL},
        {"s", SL_EINVAL},
        {"-1s", SL_EINVAL},
        {"+1s", SL_EINVAL},
        {" 1s", SL_EINVAL},
        {"1s ", SL_EINVAL},
        {"1 s", SL_EINVAL},
        {"1.s", SL_EINVAL},
        {".5s", SL_EINVAL},
        {"1.5us", SL_EINVAL},       /* not a whole microsecond */
        {"0.0000001s", SL_EINVAL},
        {"1x", SL_EINVAL},
        {"1S", SL_EINVAL},
        {"1M", SL_EINVAL},
        {"1ms5", SL_EINVAL},
        {"1m30s", SL_EINVAL},
        {"1e3", SL_EINVAL},
        {"0x10", SL_EINVAL},
        {"abc", SL_EINVAL},
        {"9223372036854775808us", SL_ERANGE},
        {"106751992d", SL_ERANGE},
        {"99999999999999999999999999s", SL_ERANGE},
        {"18446744073709551616", SL_ERANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_usec_t v = 42;
        int rc = sld_parse_duration(bad[i].text, &v);
        if (rc != bad[i].rc || v != 42)
            fail_msg("\"%s\": rc %d, want %d", bad[i].text, rc, bad[i].rc);
    }
    sl_usec_t v = 42;
    assert_int_equal(sld_parse_duration(NULL, &v), SL_EINVAL);
    assert_int_equal(v, 42);
}

static void test_sizes(void **state) {
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {
        {"0", 0},
        {"512", 512},
        {"512B", 512},
        {"64KiB", 65536},
        {"1MiB", 1 << 20},
        {"2GiB", UINT64_C(2) << 30},
        {"1TiB", UINT64_C(1) << 40},
        {"1KB", 1000},
        {"1kB", 1000},
        {"1GB", 1000000000},
        {"3TB", UINT64_C(3000000000000)},
        {"1.5KiB", 1536},
        {"0.5MB", 500000},
        {"18446744073709551615", UINT64_MAX},
        {"16777215TiB", UINT64_C(16777215) << 40},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 1;
        int rc = sld_parse_size(good[i].text, &v);
        if (rc != SL_OK || v != good[i].bytes)
            fail_msg("\"%s\": rc %d, %llu, want %llu", good[i].text, rc, (unsigned long long)v,
                     (unsigned long long)good[i].bytes);
    }
    static const struct {
        const char *text;
        int rc;
    } bad[] = {
        {"", SL_EINVAL},
        {"-1", SL_EINVAL},
        {"-1KiB", SL_EINVAL},
        {"1.5B", SL_EINVAL},     /* half a byte */
        {"0.1KiB", SL_EINVAL},   /* 102.4 bytes */
        {"1 KiB", SL_EINVAL},
        {"1kib", SL_EINVAL},
        {"1K", SL_EINVAL},
        {"1Mb", SL_EINVAL},
        {"KiB", SL_EINVAL},
        {"1e6", SL_EINVAL},
        {"lots", SL_EINVAL},
        {"18446744073709551616", SL_ERANGE},
        {"16777216TiB", SL_ERANGE},
        {"99999999999999999999999GB", SL_ERANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 42;
        int rc = sld_parse_size(bad[i].text, &v);
        if (rc != bad[i].rc || v != 42)
            fail_msg("\"%s\": rc %d, want %d", bad[i].text, rc, bad[i].rc);
    }
    assert_int_equal(sld_parse_size(NULL, NULL), SL_EINVAL);
}

/* ---- admin token from the environment --------------------------------------- */

static void test_admin_token_env(void **state) {
    (void)state;
    const char *yaml = "admin_token: env:SLUICE_TEST_TOKEN\n" ONE_POLICY;
    assert_int_equal(setenv("SLUICE_TEST_TOKEN", "a-long-enough-secret-token", 1), 0);
    sld_config_t *cfg = parse_ok(yaml);
    assert_string_equal(sld_http_admin_token(cfg), "a-long-enough-secret-token");
    sld_config_free(cfg);

    assert_int_equal(setenv("SLUICE_TEST_TOKEN", "", 1), 0);
    parse_err(yaml, 1, "admin_token: environment variable SLUICE_TEST_TOKEN is empty");
    assert_int_equal(setenv("SLUICE_TEST_TOKEN", "short", 1), 0);
    parse_err(yaml, 1, "a token needs at least 16 characters");
    assert_int_equal(unsetenv("SLUICE_TEST_TOKEN"), 0);
    parse_err(yaml, 1, "admin_token: environment variable SLUICE_TEST_TOKEN is not set");

    /* the message never shows the token */
    char err[SLD_MAX_ERROR];
    const char *lit = "admin_token: \"hunter2 hunter2 hunter2\"\n" ONE_POLICY;
    cfg = NULL;
    assert_int_equal(sld_config_parse("t", lit, strlen(lit), &cfg, err, sizeof err), SL_EINVAL);
    assert_null(strstr(err, "hunter2"));
}

/* ---- files ----------------------------------------------------------------- */

static void test_load_file(void **state) {
    (void)state;
    char dir[] = "/tmp/sluice-config-XXXXXX", path[128], err[SLD_MAX_ERROR];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/sluice.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(every_key, f);
    fclose(f);

    sld_config_t *cfg = NULL;
    assert_int_equal(sld_config_load(path, &cfg, err, sizeof err), SL_OK);
    assert_string_equal(cfg->source, path);
    assert_int_equal(cfg->npolicies, 3);
    sld_config_free(cfg);

    /* a bad file names itself and its line */
    f = fopen(path, "w");
    fputs(ONE_POLICY "threads: lots\n", f);
    fclose(f);
    cfg = NULL;
    assert_int_equal(sld_config_load(path, &cfg, err, sizeof err), SL_EINVAL);
    assert_null(cfg);
    char want[256];
    snprintf(want, sizeof want, "%s:4: threads: expected a whole number", path);
    assert_true(strncmp(err, want, strlen(want)) == 0);

    /* unreadable: SL_EIO, "PATH: cannot read: <strerror>" */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(sld_config_load(path, &cfg, err, sizeof err), SL_EIO);
    assert_null(cfg);
    snprintf(want, sizeof want, "%s: cannot read: %s", path, strerror(ENOENT));
    assert_string_equal(err, want);
    assert_int_equal(sld_config_load(dir, &cfg, err, sizeof err), SL_EIO);
    snprintf(want, sizeof want, "%s: cannot read: %s", dir, strerror(EISDIR));
    assert_string_equal(err, want);
    assert_null(cfg);
    assert_int_equal(rmdir(dir), 0);
}

static void test_error_buffer(void **state) {
    (void)state;
    const char *yaml = "threads: x\n" ONE_POLICY;
    sld_config_t *cfg = NULL;
    /* no buffer at all, or a tiny one: still refused, never overrun */
    assert_int_equal(sld_config_parse("t", yaml, strlen(yaml), &cfg, NULL, 0), SL_EINVAL);
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, small, sizeof small),
                     SL_EINVAL);
    assert_string_equal(small, "test.ya");
    assert_null(cfg);
    assert_int_equal(sld_config_parse("t", NULL, 0, NULL, small, sizeof small), SL_EINVAL);
    sld_config_free(NULL);

    /* at most 16 MiB: refused before parsing */
    size_t big = (16u << 20) + 1;
    char *text = malloc(big), err[SLD_MAX_ERROR];
    assert_non_null(text);
    memset(text, '#', big);
    assert_int_equal(sld_config_parse("big.yaml", text, big, &cfg, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "big.yaml: the file is larger than 16 MiB");
    assert_null(cfg);
    free(text);
}

/* Every prefix of a full file (cut anywhere, even inside a UTF-8 character
 * or a quoted string) is either a valid file or refused with a message, and
 * nothing leaks (ASan). */
static void test_truncated_prefixes(void **state) {
    (void)state;
    size_t len = strlen(every_key);
    char *copy = malloc(len);
    assert_non_null(copy);
    for (size_t n = 0; n <= len; n++) {
        memcpy(copy, every_key, n); /* exactly n bytes, no terminator to lean on */
        char err[SLD_MAX_ERROR] = "";
        sld_config_t *cfg = NULL;
        int rc = sld_config_parse("cut.yaml", copy, n, &cfg, err, sizeof err);
        if (rc == SL_OK) {
            assert_non_null(cfg);
            sld_config_free(cfg);
        } else {
            assert_int_equal(rc, SL_EINVAL);
            assert_null(cfg);
            if (strncmp(err, "cut.yaml:", 9) != 0)
                fail_msg("prefix %zu: message \"%s\"", n, err);
        }
    }
    free(copy);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_loads),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_scalar_spellings),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_error_lines_follow_the_node),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_admin_token_env),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_error_buffer),
        cmocka_unit_test(test_truncated_prefixes),
    };
    /* the fronts' keys (listen:, admin_token, requirepass), as sluiced registers them */
    if (sld_daemon_config_register() != SL_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
