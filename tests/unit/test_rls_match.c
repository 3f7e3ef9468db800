/* test_rls_match.c -- Envoy ratelimit's descriptor matching (src/server/rls/
 * rls_match.c) on the examples of the reference's README and tests: one
 * table of (config, descriptor) -> the limit that applies (its stat name
 * and requests_per_unit) or none; nested descriptors, value before key,
 * wildcards (trailing, middle, several), unlimited, shadow mode, the depth
 * rule; then replaces across a request, the counter keys (per value, shared
 * threshold, escaping), stat names (detailed_metric, value_to_metric),
 * request-supplied limits, and a reload keeping policy names. */
#include "rig.h"
#include "server/rls/rls.h"

/* Examples 1-7 of the reference's README and its basic/wildcard test files
 * in one directory's worth of domains (one buffer each). */
static const char *const files[] = {
    "domain: mongo_cps\n"
    "descriptors:\n"
    "  - key: database\n"
    "    value: users\n"
    "    rate_limit: {unit: second, requests_per_unit: 500}\n"
    "  - key: database\n"
    "    value: default\n"
    "    rate_limit: {unit: second, requests_per_unit: 500}\n",

    "domain: messaging\n"
    "descriptors:\n"
    "  - key: message_type\n"
    "    value: marketing\n"
    "    descriptors:\n"
    "      - key: to_number\n"
    "        rate_limit: {unit: day, requests_per_unit: 5}\n"
    "  - key: to_number\n"
    "    rate_limit: {unit: day, requests_per_unit: 100}\n",

    "domain: edge_proxy_per_ip\n"
    "descriptors:\n"
    "  - key: remote_address\n"
    "    rate_limit: {unit: second, requests_per_unit: 10}\n"
    "  - key: remote_address\n"
    "    value: 50.0.0.5\n"
    "    rate_limit: {unit: second, requests_per_unit: 0}\n",

    "domain: example4\n"
    "descriptors:\n"
    "  - key: key\n"
    "    value: value\n"
    "    rate_limit: {requests_per_unit: 300, unit: second}\n"
    "  - key: other\n"
    "    value: value\n"
    "    descriptors:\n"
    "      - key: subkey\n"
    "        rate_limit: {requests_per_unit: 301, unit: second}\n",

    "domain: internal\n"
    "descriptors:\n"
    "  - key: ldap\n"
    "    rate_limit: {unlimited: true}\n"
    "  - key: azure\n"
    "    rate_limit: {unit: minute, requests_per_unit: 100}\n",

    "domain: example6\n"
    "descriptors:\n"
    "  - key: service\n"
    "    descriptors:\n"
    "      - key: user\n"
    "        value: user-a\n"
    "        rate_limit: {requests_per_unit: 10, unit: second}\n"
    "        shadow_mode: true\n"
    "      - key: user\n"
    "        value: user-b\n"
    "        rate_limit: {requests_per_unit: 20, unit: second}\n",

    "domain: example7\n"
    "descriptors:\n"
    "  - key: key_1\n"
    "    value: value_1\n"
    "    descriptors:\n"
    "      - key: user\n"
    "        value: bkthomps\n"
    "        rate_limit:\n"
    "          name: specific_limit\n"
    "          requests_per_unit: 5\n"
    "          unit: second\n"
    "  - key: key_2\n"
    "    value: value_2\n"
    "    descriptors:\n"
    "      - key: user\n"
    "        value: bkthomps\n"
    "        rate_limit:\n"
    "          replaces:\n"
    "            - name: specific_limit\n"
    "          requests_per_unit: 10\n"
    "          unit: second\n",

    "domain: test-domain\n"
    "descriptors:\n"
    "  - key: key1\n"
    "    value: value1\n"
    "    descriptors:\n"
    "      - key: subkey1\n"
    "        rate_limit: {unit: second, requests_per_unit: 5}\n"
    "      - key: subkey1\n"
    "        value: subvalue1\n"
    "        rate_limit: {unit: second, requests_per_unit: 10}\n"
    "  - key: key2\n"
    "    rate_limit: {unit: minute, requests_per_unit: 20}\n"
    "  - key: key2\n"
    "    value: value2\n"
    "    rate_limit: {unit: minute, requests_per_unit: 30}\n"
    "  - key: key2\n"
    "    value: value3\n"
    "  - key: key5\n"
    "    value: value5\n"
    "    rate_limit: {unit: day, requests_per_unit: 15}\n"
    "    descriptors:\n"
    "      - key: subkey5\n"
    "        value: subvalue5\n"
    "        rate_limit: {unit: day, requests_per_unit: 25}\n"
    "  - key: wild\n"
    "    value: foo*\n"
    "    rate_limit: {unit: minute, requests_per_unit: 21}\n"
    "  - key: midWild\n"
    "    value: bar*b\n"
    "    rate_limit: {unit: minute, requests_per_unit: 22}\n"
    "  - key: multiWild\n"
    "    value: foo*bar*baz\n"
    "    rate_limit: {unit: minute, requests_per_unit: 23}\n"
    "  - key: path\n"
    "    value: /api/*/action\n"
    "    rate_limit: {unit: minute, requests_per_unit: 24}\n"
    "  - key: path\n"
    "    value: /api/v1/action\n"
    "    rate_limit: {unit: minute, requests_per_unit: 25}\n"
    "  - key: nestedWild\n"
    "    value: val1\n"
    "    descriptors:\n"
    "      - key: wild\n"
    "        value: goo*\n"
    "        rate_limit: {unit: minute, requests_per_unit: 26}\n"
    "  - key: order\n"
    "    value: a*\n"
    "    rate_limit: {unit: hour, requests_per_unit: 1}\n"
    "  - key: order\n"
    "    value: ab*\n"
    "    rate_limit: {unit: hour, requests_per_unit: 2}\n"
    "  - key: order\n"
    "    rate_limit: {unit: hour, requests_per_unit: 3}\n"
    "  - key: q_r\n"
    "    rate_limit: {unit: hour, requests_per_unit: 4}\n",
};

typedef struct set {
    sld_rls_config_t *c[sizeof files / sizeof files[0]];
} set_t;

static set_t *load_all(void) {
    set_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char err[256] = "";
        int rc = sld_rls_load_buffer("t.yaml", files[i], strlen(files[i]), &s->c[i], err,
                                     sizeof err);
        if (rc != SL_OK)
            fail_msg("file %zu refused: %s", i, err);
    }
    return s;
}

static void free_all(set_t *s) {
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        sld_rls_free(s->c[i]);
    free(s);
}

/* Domains are in different configurations here; the match asks each. */
static const sld_rls_limit_t *match(set_t *s, const char *domain, const sld_rls_entry_t *e,
                                    size_t n, sld_rls_match_t *m) {
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (sld_rls_has_domain(s->c[i], domain, strlen(domain)))
            return sld_rls_lookup(s->c[i], domain, strlen(domain), e, n, m);
    return sld_rls_lookup(s->c[0], domain, strlen(domain), e, n, m);
}

#define MAXE 4
typedef struct row {
    const char *domain;
    const char *kv[MAXE * 2];   /* key, value, ... (NULL ends) */
    const char *stat;           /* expected stat_name, NULL: no limit */
    uint32_t rpu;
    bool unlimited, shadow;
} row_t;

static const row_t table[] = {
    /* Example 1: key and value */
    {"mongo_cps", {"database", "users"}, "mongo_cps.database_users", 500, false, false},
    {"mongo_cps", {"database", "default"}, "mongo_cps.database_default", 500, false, false},
    {"mongo_cps", {"database", "other"}, NULL, 0, false, false},
    {"mongo_cps", {"databasex", "users"}, NULL, 0, false, false},
    /* Example 2: nested, key-only at the second level; the same key at the top */
    {"messaging", {"message_type", "marketing", "to_number", "2061111111"},
     "messaging.message_type_marketing.to_number", 5, false, false},
    {"messaging", {"to_number", "2061111111"}, "messaging.to_number", 100, false, false},
    {"messaging", {"message_type", "marketing"}, NULL, 0, false, false},
    {"messaging", {"message_type", "other", "to_number", "1"}, NULL, 0, false, false},
    /* Example 3: the value beats the key; 0 per second is a block list */
    {"edge_proxy_per_ip", {"remote_address", "50.0.0.1"}, "edge_proxy_per_ip.remote_address", 10,
     false, false},
    {"edge_proxy_per_ip", {"remote_address", "50.0.0.5"},
     "edge_proxy_per_ip.remote_address_50.0.0.5", 0, false, false},
    /* Example 4: only a rule at the request's depth applies */
    {"example4", {"key", "value", "subkey", "subvalue"}, NULL, 0, false, false},
    {"example4", {"key", "value"}, "example4.key_value", 300, false, false},
    {"example4", {"other", "value", "subkey", "subvalue"}, "example4.other_value.subkey", 301,
     false, false},
    {"example4", {"other", "value"}, NULL, 0, false, false},
    {"example4", {"other", "value", "subkey", "x", "deeper", "y"}, NULL, 0, false, false},
    /* Example 5: unlimited */
    {"internal", {"ldap", "anything"}, "internal.ldap", 0, true, false},
    {"internal", {"azure", "x"}, "internal.azure", 100, false, false},
    /* Example 6: shadow mode */
    {"example6", {"service", "auth-service", "user", "user-a"}, "example6.service.user_user-a", 10,
     false, true},
    {"example6", {"service", "auth-service", "user", "user-b"}, "example6.service.user_user-b", 20,
     false, false},
    {"example6", {"service", "auth-service", "user", "user-c"}, NULL, 0, false, false},
    /* the reference's basic_config */
    {"test-domain", {"key1", "value1", "subkey1", "something"}, "test-domain.key1_value1.subkey1",
     5, false, false},
    {"test-domain", {"key1", "value1", "subkey1", "subvalue1"},
     "test-domain.key1_value1.subkey1_subvalue1", 10, false, false},
    {"test-domain", {"key2", "something"}, "test-domain.key2", 20, false, false},
    {"test-domain", {"key2", "value2"}, "test-domain.key2_value2", 30, false, false},
    {"test-domain", {"key2", "value3"}, NULL, 0, false, false}, /* listed without a limit */
    {"test-domain", {"key5", "value5"}, "test-domain.key5_value5", 15, false, false},
    {"test-domain", {"key5", "value5", "subkey5", "subvalue5"},
     "test-domain.key5_value5.subkey5_subvalue5", 25, false, false},
    {"test-domain", {"key5", "value5", "subkey5", "other"}, NULL, 0, false, false},
    /* wildcards */
    {"test-domain", {"wild", "foo1"}, "test-domain.wild_foo*", 21, false, false},
    {"test-domain", {"wild", "foo"}, "test-domain.wild_foo*", 21, false, false},
    {"test-domain", {"wild", "fo"}, NULL, 0, false, false},
    {"test-domain", {"midWild", "barAb"}, "test-domain.midWild_bar*b", 22, false, false},
    {"test-domain", {"midWild", "barb"}, "test-domain.midWild_bar*b", 22, false, false},
    {"test-domain", {"midWild", "bab"}, NULL, 0, false, false},
    {"test-domain", {"midWild", "barbc"}, NULL, 0, false, false},
    {"test-domain", {"multiWild", "foo1bar2baz"}, "test-domain.multiWild_foo*bar*baz", 23, false,
     false},
    {"test-domain", {"multiWild", "foobarbaz"}, "test-domain.multiWild_foo*bar*baz", 23, false,
     false},
    {"test-domain", {"multiWild", "foobazbar"}, NULL, 0, false, false},
    {"test-domain", {"multiWild", "foobarbazbaz"}, "test-domain.multiWild_foo*bar*baz", 23, false,
     false},
    {"test-domain", {"path", "/api/123/action"}, "test-domain.path_/api/*/action", 24, false,
     false},
    {"test-domain", {"path", "/api/123/other"}, NULL, 0, false, false},
    {"test-domain", {"path", "/api/v1/action"}, "test-domain.path_/api/v1/action", 25, false,
     false}, /* the exact value before any wildcard */
    {"test-domain", {"nestedWild", "val1", "wild", "goo1"}, "test-domain.nestedWild_val1.wild_goo*",
     26, false, false},
    {"test-domain", {"nestedWild", "val1", "wild", "foo1"}, NULL, 0, false, false},
    /* wildcards in file order, then the key alone */
    {"test-domain", {"order", "abc"}, "test-domain.order_a*", 1, false, false},
    {"test-domain", {"order", "xyz"}, "test-domain.order", 3, false, false},
    /* an empty value matches the key alone */
    {"test-domain", {"order", ""}, "test-domain.order", 3, false, false},
    /* the reference's lookup string key + "_" + value meets a key-only rule */
    {"test-domain", {"q", "r"}, "test-domain.q_r", 4, false, false},
    {"test-domain", {"q_r", "anything"}, "test-domain.q_r", 4, false, false},
    /* unknown domain */
    {"nowhere", {"database", "users"}, NULL, 0, false, false},
};

static void matching_table(void **state) {
    (void)state;
    set_t *s = load_all();
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        const row_t *r = &table[t];
        sld_rls_entry_t e[MAXE];
        size_t n = 0;
        while (n < MAXE && r->kv[2 * n]) {
            e[n] = (sld_rls_entry_t){r->kv[2 * n], strlen(r->kv[2 * n]), r->kv[2 * n + 1],
                                     strlen(r->kv[2 * n + 1])};
            n++;
        }
        const sld_rls_limit_t *l = match(s, r->domain, e, n, NULL);
        if (r->stat == NULL) {
            if (l != NULL)
                fail_msg("row %zu (%s %s=%s): expected no limit, got %s", t, r->domain, r->kv[0],
                         r->kv[1], l->stat_name);
            continue;
        }
        if (l == NULL)
            fail_msg("row %zu (%s %s=%s): expected %s, got no limit", t, r->domain, r->kv[0],
                     r->kv[1], r->stat);
        assert_string_equal(l->stat_name, r->stat);
        assert_int_equal(l->requests_per_unit, r->rpu);
        assert_int_equal(l->unlimited, r->unlimited);
        assert_int_equal(l->shadow_mode, r->shadow);
        /* a policy exactly when something is counted */
        assert_int_equal(l->policy != NULL, !r->unlimited && r->rpu > 0);
        if (l->policy) {
            char name[200];
            snprintf(name, sizeof name, "rls:%s", r->stat);
            assert_string_equal(sl_policy_name(l->policy), name);
            assert_int_equal(sl_policy_mode(l->policy), r->shadow ? SL_MODE_SHADOW : SL_MODE_HARD);
            assert_int_equal(sl_policy_limit(l->policy, 0)->algorithm, SL_FIXED_WINDOW);
            assert_int_equal(sl_policy_limit(l->policy, 0)->limit, r->rpu);
        }
    }
    free_all(s);
}

static sld_rls_entry_t kv(const char *k, const char *v) {
    return (sld_rls_entry_t){k, strlen(k), v, strlen(v)};
}

/* Example 7: the two descriptors of one request. */
static void replaces_across_a_request(void **state) {
    (void)state;
    set_t *s = load_all();
    sld_rls_entry_t a[] = {kv("key_1", "value_1"), kv("user", "bkthomps")};
    sld_rls_entry_t b[] = {kv("key_2", "value_2"), kv("user", "bkthomps")};
    const sld_rls_limit_t *la = match(s, "example7", a, 2, NULL);
    const sld_rls_limit_t *lb = match(s, "example7", b, 2, NULL);
    assert_non_null(la);
    assert_non_null(lb);
    assert_string_equal(la->name, "specific_limit");
    assert_int_equal(lb->n_replaces, 1);
    assert_string_equal(lb->replaces[0], "specific_limit");

    const sld_rls_limit_t *both[] = {la, NULL, lb};
    sld_rls_apply_replaces(both, 3);
    assert_null(both[0]);
    assert_ptr_equal(both[2], lb);

    const sld_rls_limit_t *alone[] = {la};
    sld_rls_apply_replaces(alone, 1);
    assert_ptr_equal(alone[0], la);
    const sld_rls_limit_t *only_b[] = {lb, lb};
    sld_rls_apply_replaces(only_b, 2);
    assert_ptr_equal(only_b[0], lb);
    assert_ptr_equal(only_b[1], lb);
    free_all(s);
}

/* Two limits that replace each other are both dropped: every drop is
 * decided before any is made, as in the reference. */
static void replaces_each_other(void **state) {
    (void)state;
    static const char yaml[] = "domain: d\n"
                               "descriptors:\n"
                               "  - key: a\n"
                               "    rate_limit: {name: A, unit: second, requests_per_unit: 1,"
                               " replaces: [{name: B}]}\n"
                               "  - key: b\n"
                               "    rate_limit: {name: B, unit: second, requests_per_unit: 1,"
                               " replaces: [{name: A}]}\n";
    sld_rls_config_t *c = NULL;
    char err[200];
    assert_int_equal(sld_rls_load_buffer("t.yaml", yaml, strlen(yaml), &c, err, sizeof err), SL_OK);
    sld_rls_entry_t ea = kv("a", "1"), eb = kv("b", "1");
    const sld_rls_limit_t *l[] = {sld_rls_match(c, "d", 1, &ea, 1), sld_rls_match(c, "d", 1, &eb, 1)};
    assert_non_null(l[0]);
    assert_non_null(l[1]);
    sld_rls_apply_replaces(l, 2);
    assert_null(l[0]);
    assert_null(l[1]);
    sld_rls_free(c);
}

static void counter_keys(void **state) {
    (void)state;
    char buf[128];
    sld_rls_entry_t e[] = {kv("message_type", "marketing"), kv("to_number", "2061111111")};
    size_t n = sld_rls_key(buf, sizeof buf, "messaging", 9, e, 2);
    assert_int_equal(n, strlen("messaging|message_type=marketing|to_number=2061111111"));
    assert_memory_equal(buf, "messaging|message_type=marketing|to_number=2061111111", n);
    /* '|', '=' and '\' escaped: ("a", "b|c=d") is not ("a", "b"), ("c", "d") */
    sld_rls_entry_t one[] = {kv("a", "b|c=d\\")};
    sld_rls_entry_t two[] = {kv("a", "b"), kv("c", "d\\")};
    char other[128];
    size_t n1 = sld_rls_key(buf, sizeof buf, "d", 1, one, 1);
    size_t n2 = sld_rls_key(other, sizeof other, "d", 1, two, 2);
    assert_memory_equal(buf, "d|a=b\\|c\\=d\\\\", n1);
    assert_false(n1 == n2 && memcmp(buf, other, n1) == 0);
    /* too small: 0, every prefix size */
    size_t full = sld_rls_key(buf, sizeof buf, "messaging", 9, e, 2);
    for (size_t size = 0; size < full; size++)
        assert_int_equal(sld_rls_key(buf, size, "messaging", 9, e, 2), 0);
    assert_int_equal(sld_rls_key(buf, full, "messaging", 9, e, 2), full);
}

static void shared_thresholds_and_stat_names(void **state) {
    (void)state;
    static const char yaml[] =
        "domain: d\n"
        "descriptors:\n"
        "  - key: files\n"
        "    value: files/*\n"
        "    share_threshold: true\n"
        "    rate_limit: {unit: hour, requests_per_unit: 10}\n"
        "  - key: own\n"
        "    value: own/*\n"
        "    rate_limit: {unit: hour, requests_per_unit: 10}\n"
        "  - key: key1\n"
        "    detailed_metric: true\n"
        "    rate_limit: {unit: minute, requests_per_unit: 10}\n"
        "  - key: key1\n"
        "    value: value1\n"
        "    rate_limit: {unit: minute, requests_per_unit: 20}\n"
        "  - key: route\n"
        "    value_to_metric: true\n"
        "    descriptors:\n"
        "      - key: http_method\n"
        "        value_to_metric: true\n"
        "        descriptors:\n"
        "          - key: subject_id\n"
        "            rate_limit: {unit: minute, requests_per_unit: 60}\n";
    sld_rls_config_t *c = NULL;
    char err[200];
    assert_int_equal(sld_rls_load_buffer("t.yaml", yaml, strlen(yaml), &c, err, sizeof err), SL_OK);
    char buf[128];
    sld_rls_match_t m;
    size_t n;

    sld_rls_entry_t f[] = {kv("files", "files/a.pdf")};
    assert_non_null(sld_rls_lookup(c, "d", 1, f, 1, &m));
    n = sld_rls_match_key(buf, sizeof buf, &m, "d", 1, f, 1);
    assert_memory_equal(buf, "d|files=files/*", n);
    n = sld_rls_key(buf, sizeof buf, "d", 1, f, 1);
    assert_memory_equal(buf, "d|files=files/a.pdf", n);

    sld_rls_entry_t o[] = {kv("own", "own/a.pdf")};
    assert_non_null(sld_rls_lookup(c, "d", 1, o, 1, &m));
    n = sld_rls_match_key(buf, sizeof buf, &m, "d", 1, o, 1);
    assert_memory_equal(buf, "d|own=own/a.pdf", n);
    n = sld_rls_stat(buf, sizeof buf, &m, "d", 1, o, 1);
    assert_memory_equal(buf, "d.own_own/*", n);

    /* Example 8: detailed_metric */
    sld_rls_entry_t k1[] = {kv("key1", "unspecified_value")};
    assert_non_null(sld_rls_lookup(c, "d", 1, k1, 1, &m));
    n = sld_rls_stat(buf, sizeof buf, &m, "d", 1, k1, 1);
    assert_memory_equal(buf, "d.key1_unspecified_value", n);
    assert_int_equal(n, strlen("d.key1_unspecified_value"));
    sld_rls_entry_t k2[] = {kv("key1", "value1")};
    assert_non_null(sld_rls_lookup(c, "d", 1, k2, 1, &m));
    n = sld_rls_stat(buf, sizeof buf, &m, "d", 1, k2, 1);
    assert_memory_equal(buf, "d.key1_value1", n);

    /* Example 10: value_to_metric */
    sld_rls_entry_t r[] = {kv("route", "api"), kv("http_method", "GET"), kv("subject_id", "123")};
    const sld_rls_limit_t *l = sld_rls_lookup(c, "d", 1, r, 3, &m);
    assert_non_null(l);
    assert_string_equal(l->stat_name, "d.route.http_method.subject_id");
    n = sld_rls_stat(buf, sizeof buf, &m, "d", 1, r, 3);
    assert_int_equal(n, strlen("d.route_api.http_method_GET.subject_id"));
    assert_memory_equal(buf, "d.route_api.http_method_GET.subject_id", n);
    sld_rls_free(c);
}

static void request_supplied_limits(void **state) {
    (void)state;
    set_t *s = load_all();
    sld_rls_config_t *c = s->c[0];
    const sl_policy_t *p = sld_rls_override_policy(c, 42, SLD_RLS_MINUTE);
    assert_non_null(p);
    assert_string_equal(sl_policy_name(p), "rls:override:42/minute");
    assert_int_equal(sl_policy_limit(p, 0)->limit, 42);
    assert_int_equal(sl_policy_limit(p, 0)->period, 60 * SL_USEC_PER_SEC);
    assert_ptr_equal(sld_rls_override_policy(c, 42, SLD_RLS_MINUTE), p);
    assert_ptr_not_equal(sld_rls_override_policy(c, 42, SLD_RLS_HOUR), p);
    assert_null(sld_rls_override_policy(c, 0, SLD_RLS_MINUTE));
    assert_null(sld_rls_override_policy(c, 1, (sld_rls_unit_t)0));
    assert_null(sld_rls_override_policy(c, 1, (sld_rls_unit_t)99));
    /* bounded: the pairs past the cap get NULL, the cached ones still answer */
    for (uint32_t i = 1; i <= SLD_RLS_MAX_OVERRIDES + 10; i++)
        (void)sld_rls_override_policy(c, i, SLD_RLS_SECOND);
    assert_null(sld_rls_override_policy(c, SLD_RLS_MAX_OVERRIDES + 5, SLD_RLS_SECOND));
    assert_ptr_equal(sld_rls_override_policy(c, 42, SLD_RLS_MINUTE), p);
    free_all(s);
}

static void units(void **state) {
    (void)state;
    assert_int_equal(sld_rls_unit_usec(SLD_RLS_SECOND), SL_USEC_PER_SEC);
    assert_int_equal(sld_rls_unit_usec(SLD_RLS_WEEK), 7 * 86400 * SL_USEC_PER_SEC);
    assert_int_equal(sld_rls_unit_usec(SLD_RLS_MONTH), 30 * 86400 * SL_USEC_PER_SEC);
    assert_int_equal(sld_rls_unit_usec(SLD_RLS_YEAR), 365 * 86400 * SL_USEC_PER_SEC);
    assert_int_equal(sld_rls_unit_usec((sld_rls_unit_t)0), 0);
    assert_string_equal(sld_rls_unit_name(SLD_RLS_HOUR), "hour");
    assert_null(sld_rls_unit_name((sld_rls_unit_t)8));
}

/* The same file loaded twice gives the same policy names (so a reload keeps
 * counters); a long path keeps a stable, bounded name. */
static void stable_policy_names(void **state) {
    (void)state;
    char yaml[2048];
    char longv[300];
    memset(longv, 'v', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    snprintf(yaml, sizeof yaml,
             "domain: d\ndescriptors:\n  - key: k\n    value: %s\n"
             "    rate_limit: {unit: second, requests_per_unit: 3}\n",
             longv);
    sld_rls_config_t *a = NULL, *b = NULL;
    char err[200];
    assert_int_equal(sld_rls_load_buffer("t.yaml", yaml, strlen(yaml), &a, err, sizeof err), SL_OK);
    assert_int_equal(sld_rls_load_buffer("t.yaml", yaml, strlen(yaml), &b, err, sizeof err), SL_OK);
    const sld_rls_limit_t *la = sld_rls_limit_at(a, 0), *lb = sld_rls_limit_at(b, 0);
    assert_non_null(la);
    assert_string_equal(sl_policy_name(la->policy), sl_policy_name(lb->policy));
    assert_true(strlen(sl_policy_name(la->policy)) <= SL_MAX_POLICY_NAME);
    assert_memory_equal(sl_policy_name(la->policy), "rls:d.k_vvv", 11);
    assert_null(sld_rls_limit_at(a, 1));
    sld_rls_free(a);
    sld_rls_free(b);
}

/* More entries than any file can nest, entries of every odd shape: no
 * match, no crash. */
static void odd_requests(void **state) {
    (void)state;
    set_t *s = load_all();
    sld_rls_entry_t e[SLD_RLS_MAX_DEPTH + 1];
    for (size_t i = 0; i < SLD_RLS_MAX_DEPTH + 1; i++)
        e[i] = kv("key1", "value1");
    assert_null(match(s, "test-domain", e, SLD_RLS_MAX_DEPTH + 1, NULL));
    assert_null(match(s, "test-domain", e, 0, NULL));
    sld_rls_entry_t empty = {"", 0, "", 0};
    assert_null(match(s, "test-domain", &empty, 1, NULL));
    assert_null(sld_rls_match(NULL, "d", 1, &empty, 1));
    /* bytes that are not text */
    sld_rls_entry_t bin = {"wild", 4, "foo\0\xff", 5};
    assert_non_null(match(s, "test-domain", &bin, 1, NULL));
    free_all(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matching_table),
        cmocka_unit_test(replaces_across_a_request),
        cmocka_unit_test(replaces_each_other),
        cmocka_unit_test(counter_keys),
        cmocka_unit_test(shared_thresholds_and_stat_names),
        cmocka_unit_test(request_supplied_limits),
        cmocka_unit_test(units),
        cmocka_unit_test(stable_policy_names),
        cmocka_unit_test(odd_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
