/* test_policies.c -- the table of compiled policies and tiers
 * (src/server/engine/policies.c): lookups by name and by tier key, the index and
 * the metrics slot of each policy, what decides while the shared store
 * cannot (on_store_failure and one node's share), and the walk over every
 * compiled policy. */
#include "rig.h"
#include "server/config/config.h"
#include "server/observe/metrics.h"
#include "server/engine/policies.h"

static const char CONFIG[] =
    "store:\n"
    "  type: redis\n"
    "  url: redis://127.0.0.1:1\n"
    "  nodes: 4\n"
    "  on_store_failure: closed\n"
    "policies:\n"
    "  - name: per_user\n"
    "    limits:\n"
    "      - {algorithm: gcra, limit: 100, period: 1m, burst: 19}\n"
    "    tiers:\n"
    "      - name: premium\n"
    "        keys: [alice, acme]\n"
    "        limits:\n"
    "          - {algorithm: gcra, limit: 1000, period: 1m}\n"
    "      - name: trial\n"
    "        keys: [bob]\n"
    "        limits:\n"
    "          - {algorithm: fixed_window, limit: 8, period: 1m}\n"
    "  - name: per_ip\n"
    "    on_store_failure: local\n"
    "    limits:\n"
    "      - {algorithm: sliding_window, limit: 40, period: 1s}\n"
    "  - name: login\n"
    "    limits:\n"
    "      - {algorithm: token_bucket, limit: 5, period: 1m}\n";

typedef struct fixture {
    sld_config_t *cfg;
    sld_metrics_t *metrics;
    sld_policies_t *table;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    char err[512] = "";
    if (f == NULL || sld_config_parse("test.yaml", CONFIG, sizeof CONFIG - 1, &f->cfg, err, sizeof err) != SL_OK) {
        fprintf(stderr, "config: %s\n", err);
        return -1;
    }
    if (sld_metrics_new(1, &f->metrics) != SL_OK ||
        sld_policies_build(f->cfg, f->metrics, &f->table, err, sizeof err) != SL_OK) {
        fprintf(stderr, "build: %s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    sld_policies_free(f->table);
    sld_metrics_free(f->metrics);
    sld_config_free(f->cfg);
    free(f);
    return 0;
}

static const sl_policy_t *find(fixture_t *f, const char *name, const char *key, const char **tier,
                               size_t *index) {
    return sld_policies_find(f->table, name, strlen(name), key, strlen(key), tier, index);
}

static void test_find_by_name_and_tier(void **state) {
    fixture_t *f = *state;
    const char *tier = "unset";
    size_t index = 99;
    const sl_policy_t *p = find(f, "per_user", "carol", &tier, &index);
    assert_non_null(p);
    assert_null(tier);
    assert_int_equal(index, 0);
    assert_ptr_equal(p, sld_policies_compiled(f->table, 0));
    assert_int_equal(sl_policy_limit(p, 0)->limit, 100);

    const sl_policy_t *premium = find(f, "per_user", "alice", &tier, &index);
    assert_string_equal(tier, "premium");
    assert_int_equal(index, 0);
    assert_string_equal(sl_policy_name(premium), "per_user/premium");
    assert_int_equal(sl_policy_limit(premium, 0)->limit, 1000);
    assert_ptr_equal(find(f, "per_user", "acme", NULL, NULL), premium);

    const sl_policy_t *trial = find(f, "per_user", "bob", &tier, NULL);
    assert_string_equal(tier, "trial");
    assert_int_equal(sl_policy_limit(trial, 0)->algorithm, SL_FIXED_WINDOW);

    /* a tier key belongs to its own policy only */
    assert_ptr_equal(find(f, "per_ip", "alice", &tier, &index), sld_policies_compiled(f->table, 1));
    assert_null(tier);
    assert_int_equal(index, 1);
}

static void test_unknown_names_and_prefixes(void **state) {
    fixture_t *f = *state;
    assert_null(find(f, "nope", "alice", NULL, NULL));
    assert_null(find(f, "per_use", "alice", NULL, NULL));   /* a prefix is not the name */
    assert_null(find(f, "per_user/premium", "x", NULL, NULL)); /* tiers are not policies by name */
    assert_null(sld_policies_find(f->table, "per_user", 0, "k", 1, NULL, NULL));
    /* a key that is a prefix of a tier key is not in the tier */
    const char *tier = "unset";
    assert_ptr_equal(find(f, "per_user", "alic", &tier, NULL), sld_policies_compiled(f->table, 0));
    assert_null(tier);
    /* names are compared by their bytes, not as C strings */
    assert_non_null(sld_policies_find(f->table, "loginXYZ", 5, "k", 1, NULL, NULL));
}

static void test_count_config_and_slots(void **state) {
    fixture_t *f = *state;
    assert_int_equal(sld_policies_count(f->table), 3);
    assert_string_equal(sld_policies_config(f->table, 2)->name, "login");
    /* each policy has its own metrics slot, the same one its name gets again */
    for (size_t i = 0; i < 3; i++) {
        uint32_t slot = sld_policies_slot(f->table, i);
        assert_int_equal(slot, sld_metrics_slot(f->metrics, sld_policies_config(f->table, i)->name));
        for (size_t k = 0; k < i; k++)
            assert_int_not_equal(slot, sld_policies_slot(f->table, k));
    }
}

static void test_fallback_modes_and_shares(void **state) {
    fixture_t *f = *state;
    sld_store_failure_t mode;
    const sl_policy_t *p = sld_policies_compiled(f->table, 0);
    /* per_user follows the store's setting: closed; its local form is a quarter of it */
    const sl_policy_t *local = sld_policies_fallback(f->table, 0, p, &mode);
    assert_int_equal(mode, SLD_FAIL_CLOSED);
    assert_ptr_not_equal(local, p);
    assert_int_equal(sl_policy_limit(local, 0)->limit, 25);
    assert_int_equal(sl_policy_limit(local, 0)->burst, 19 / 4);
    /* a tier has a share of its own */
    const sl_policy_t *premium = find(f, "per_user", "alice", NULL, NULL);
    const sl_policy_t *premium_local = sld_policies_fallback(f->table, 0, premium, &mode);
    assert_int_equal(sl_policy_limit(premium_local, 0)->limit, 250);
    /* per_ip overrides the store's setting */
    p = sld_policies_compiled(f->table, 1);
    local = sld_policies_fallback(f->table, 1, p, &mode);
    assert_int_equal(mode, SLD_FAIL_LOCAL);
    assert_int_equal(sl_policy_limit(local, 0)->limit, 10);
    /* a policy not in the table (CL.THROTTLE's): the store's setting, itself */
    assert_ptr_equal(sld_policies_fallback(f->table, SIZE_MAX, p, &mode), p);
    assert_int_equal(mode, SLD_FAIL_CLOSED);
}

typedef struct walk {
    const char *names[8];
    size_t n;
    size_t stop_after;
} walk_t;

static int visit(void *ctx, const sl_policy_t *p) {
    walk_t *w = ctx;
    w->names[w->n++] = sl_policy_name(p);
    return w->n == w->stop_after ? 42 : 0;
}

static void test_each_visits_policies_and_tiers_in_order(void **state) {
    fixture_t *f = *state;
    walk_t w = {.stop_after = 0};
    assert_int_equal(sld_policies_each(f->table, visit, &w), 0);
    assert_int_equal(w.n, 5);
    const char *want[] = {"per_user", "per_user/premium", "per_user/trial", "per_ip", "login"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(w.names[i], want[i]);
    walk_t stop = {.stop_after = 2};
    assert_int_equal(sld_policies_each(f->table, visit, &stop), 42);
    assert_int_equal(stop.n, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_find_by_name_and_tier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_names_and_prefixes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_count_config_and_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fallback_modes_and_shares, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_visits_policies_and_tiers_in_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
