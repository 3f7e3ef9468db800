/* test_config_edit.c -- editing a configuration for the admin API
 * (sld_config_parse_policy in src/server/config/policy_json.c, sld_config_edit
 * in src/server/config/config_edit.c). */
#include "rig.h"
#include "server/config/config.h"

static const char base[] =
    "policies:\n"
    "  - name: a\n"
    "    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"
    "  - name: b\n"
    "    key: [user]\n"
    "    limits: [{algorithm: fixed_window, limit: 2, period: 1m}]\n"
    "    tiers:\n"
    "      - {name: gold, keys: [alice, bob], limits: [{algorithm: fixed_window, limit: 9, period: 1m}]}\n";

static sld_config_t *load_base(void) {
    sld_config_t *cfg = NULL;
    char err[SLD_MAX_ERROR];
    if (sld_config_parse("base", base, sizeof base - 1, &cfg, err, sizeof err) != SL_OK)
        fail_msg("%s", err);
    return cfg;
}

static void parse_policy_from_json(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR];
    sld_policy_t *p = NULL;
    const char ok[] = " {\"mode\": \"soft\", \"soft_percent\": 20, \"key\": [\"ip\"],"
                      " \"limits\": [{\"algorithm\": \"sliding_window\", \"limit\": 100, \"period\": \"1m\", \"precision\": 6}]}";
    assert_int_equal(sld_config_parse_policy("per_ip", ok, sizeof ok - 1, 1024, &p, err, sizeof err), SL_OK);
    assert_string_equal(p->name, "per_ip");
    assert_int_equal(p->mode, SL_MODE_SOFT);
    assert_int_equal(p->limits[0].precision, 6);
    assert_int_equal(p->limits[0].period, 60 * SL_USEC_PER_SEC);
    assert_string_equal(p->key_attrs[0], "ip");
    sld_config_policy_free(p);

    const char *bad[] = {"", "[]", "\"x\"", "{}", "{\"limits\": []}",
                         "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 0, \"period\": \"1s\"}]}",
                         "{\"limits\": [{\"algorithm\": \"nope\", \"limit\": 1, \"period\": \"1s\"}]}",
                         "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}], \"bogus\": 1}",
                         "{\"name\": \"other\", \"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}]}",
                         "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = NULL;
        err[0] = '\0';
        int rc = sld_config_parse_policy("x", bad[i], strlen(bad[i]), 1024, &p, err, sizeof err);
        if (rc == SL_OK)
            fail_msg("accepted: %s", bad[i]);
        assert_null(p);
        assert_true(strlen(err) > 0);
    }
    const char good[] = "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}]}";
    assert_int_equal(sld_config_parse_policy("bad\"name", good, sizeof good - 1, 1024, &p, err, sizeof err), SL_EINVAL);
    assert_int_equal(sld_config_parse_policy("", good, sizeof good - 1, 1024, &p, err, sizeof err), SL_EINVAL);
}

/* The body may name itself (the same name), errors are told about the body,
 * and tier keys obey the running max_key_bytes. */
static void parse_policy_body_and_errors(void **state) {
    (void)state;
    char err[SLD_MAX_ERROR];
    sld_policy_t *p = NULL;
    const char named[] = "{\"name\": \"x\", \"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}]}";
    assert_int_equal(sld_config_parse_policy("x", named, sizeof named - 1, 1024, &p, err, sizeof err), SL_OK);
    assert_string_equal(p->name, "x");
    sld_config_policy_free(p);
    p = NULL;
    assert_int_equal(sld_config_parse_policy("y", named, sizeof named - 1, 1024, &p, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "request body:1: name: \"x\" is not the name in the path, \"y\""));

    const char line3[] = "\n{\n  \"limits\": [{\"algorithm\": \"gcra\", \"limit\": 0, \"period\": \"1s\"}]}";
    assert_int_equal(sld_config_parse_policy("x", line3, sizeof line3 - 1, 1024, &p, err, sizeof err), SL_EINVAL);
    if (strncmp(err, "request body:3: limits[0].limit:", 32) != 0)
        fail_msg("got: %s", err);
    assert_null(strstr(err, "policies["));

    char body[4096];
    char key[2001];
    memset(key, 'k', 2000);
    key[2000] = '\0';
    snprintf(body, sizeof body, "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 1, \"period\": \"1s\"}], "
             "\"tiers\": [{\"name\": \"t\", \"keys\": [\"%s\"], \"limits\": [{\"algorithm\": \"gcra\", "
             "\"limit\": 2, \"period\": \"1s\"}]}]}", key);
    assert_int_equal(sld_config_parse_policy("x", body, strlen(body), 4096, &p, err, sizeof err), SL_OK);
    sld_config_policy_free(p);
    p = NULL;
    assert_int_equal(sld_config_parse_policy("x", body, strlen(body), 1999, &p, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "tiers[0].keys[0]: a key must be 1 to 1999 bytes"));
    assert_null(p);
}

static void edit_replaces_adds_removes(void **state) {
    (void)state;
    sld_config_t *cfg = load_base();
    char err[SLD_MAX_ERROR];
    sld_policy_t *p = NULL;
    const char json[] = "{\"limits\": [{\"algorithm\": \"token_bucket\", \"limit\": 5, \"period\": \"1s\"}]}";
    assert_int_equal(sld_config_parse_policy("a", json, sizeof json - 1, 1024, &p, err, sizeof err), SL_OK);

    sld_config_t *replaced = sld_config_edit(cfg, p, NULL);
    assert_non_null(replaced);
    assert_int_equal(replaced->npolicies, 2);
    assert_string_equal(replaced->policies[0].name, "a");
    assert_int_equal(replaced->policies[0].limits[0].algorithm, SL_TOKEN_BUCKET);
    assert_int_equal(replaced->policies[1].ntiers, 1); /* b copied whole */
    assert_string_equal(replaced->policies[1].tiers[0].keys[1], "bob");

    sld_config_policy_free(p);
    const char json2[] = "{\"limits\": [{\"algorithm\": \"gcra\", \"limit\": 3, \"period\": \"1s\"}]}";
    assert_int_equal(sld_config_parse_policy("c", json2, sizeof json2 - 1, 1024, &p, err, sizeof err), SL_OK);
    sld_config_t *added = sld_config_edit(replaced, p, "b");
    assert_non_null(added);
    assert_int_equal(added->npolicies, 2);
    assert_string_equal(added->policies[0].name, "a");
    assert_string_equal(added->policies[1].name, "c");

    /* every copy stands on its own */
    sld_config_free(cfg);
    sld_config_free(replaced);
    sld_config_policy_free(p);
    assert_int_equal(added->policies[1].limits[0].limit, 3);
    sld_config_free(added);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_policy_from_json),
        cmocka_unit_test(parse_policy_body_and_errors),
        cmocka_unit_test(edit_replaces_adds_removes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
