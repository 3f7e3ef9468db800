/* test_config_snapshot.c -- store.snapshot (src/server/config/config_snapshot.c):
 * its shapes in the file, and where the state goes once the command line
 * and the environment are taken into account. */
#include <unistd.h>

#include "rig.h"
#include "server/config/config.h"
#include "server/config/config_snapshot.h"
#include "server/config/state_location.h"
#include "server/daemon/front_config.h"

#define ONE_POLICY "policies:\n  - name: a\n    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static sld_config_t *parse(const char *yaml) {
    sld_config_t *cfg = NULL;
    char err[SLD_MAX_ERROR] = "";
    if (sld_config_parse("t.yaml", yaml, strlen(yaml), &cfg, err, sizeof err) != SL_OK)
        fail_msg("refused: %s\n%s", err, yaml);
    return cfg;
}

/* cfg resolved with --snapshot `override` (or none): its path, or NULL. */
static const char *resolve(sld_config_t *cfg, const char *override) {
    char err[SLD_MAX_ERROR] = "";
    if (sld_snapshot_resolve(cfg, override, err, sizeof err) != SL_OK)
        fail_msg("resolve: %s", err);
    return cfg->snapshot_path;
}

static char cwd[4096];

static const char *in_cwd(const char *name) {
    static char p[8192];
    snprintf(p, sizeof p, "%s/%s", cwd, name);
    return p;
}

static void shapes(void **state) {
    (void)state;
    static const struct {
        const char *store;
        sld_snapshot_mode_t mode;
        const char *path;
        sl_usec_t interval;
    } cases[] = {
        {"", SLD_SNAPSHOT_DEFAULT, NULL, SEC(60)},
        {"store:\n  snapshot:\n", SLD_SNAPSHOT_DEFAULT, NULL, SEC(60)},
        {"store:\n  snapshot: ~\n", SLD_SNAPSHOT_DEFAULT, NULL, SEC(60)},
        {"store:\n  snapshot: off\n", SLD_SNAPSHOT_OFF, NULL, SEC(60)},
        {"store:\n  snapshot: Off\n", SLD_SNAPSHOT_OFF, NULL, SEC(60)},
        {"store:\n  snapshot: false\n", SLD_SNAPSHOT_OFF, NULL, SEC(60)},
        {"store:\n  snapshot: \"off\"\n", SLD_SNAPSHOT_OFF, NULL, SEC(60)},
        {"store:\n  snapshot: on\n", SLD_SNAPSHOT_ON, NULL, SEC(60)},
        {"store:\n  snapshot: {interval: 200ms}\n", SLD_SNAPSHOT_ON, NULL, MS(200)},
        {"store:\n  max_memory: 0\n  snapshot:\n    path: /x/s.snap\n  shards: 4\n", SLD_SNAPSHOT_ON,
         "/x/s.snap", SEC(60)},
        {"store:\n  snapshot: {path: a.snap, interval: 0}\n", SLD_SNAPSHOT_ON, "a.snap", 0},
        /* a key named snapshot elsewhere is not this one */
        {"listen: {resp: \"127.0.0.1:0\"}\n", SLD_SNAPSHOT_DEFAULT, NULL, SEC(60)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml, "%s%s", cases[i].store, ONE_POLICY);
        sld_config_t *cfg = parse(yaml);
        if (cfg->snapshot_mode != cases[i].mode)
            fail_msg("case %zu: mode %d, expected %d", i, cfg->snapshot_mode, cases[i].mode);
        if (cases[i].path)
            assert_string_equal(cfg->snapshot_path, cases[i].path);
        else
            assert_null(cfg->snapshot_path);
        assert_int_equal(cfg->snapshot_interval, cases[i].interval);
        sld_config_free(cfg);
    }
    /* the key after `snapshot` at the top level is still read: */
    sld_config_t *cfg = parse("store:\n  snapshot: off\nthreads: 3\n" ONE_POLICY);
    assert_int_equal(cfg->threads, 3);
    sld_config_free(cfg);
}

/* With no setting: sluice.snap in $STATE_DIRECTORY (the first of its
 * paths), else in the working directory; off with a Redis store. */
static void default_location(void **state) {
    (void)state;
    unsetenv("STATE_DIRECTORY");
    sld_config_t *cfg = parse(ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), in_cwd("sluice.snap"));
    assert_string_equal(cfg->snapshot_origin, "the working directory");
    sld_config_free(cfg);

    setenv("STATE_DIRECTORY", "/var/lib/sluice:/var/lib/other", 1);
    cfg = parse(ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), "/var/lib/sluice/sluice.snap");
    assert_string_equal(cfg->snapshot_origin, "$STATE_DIRECTORY");
    sld_config_free(cfg);
    setenv("STATE_DIRECTORY", "/var/lib/sluice/", 1);
    cfg = parse(ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), "/var/lib/sluice/sluice.snap");
    sld_config_free(cfg);
    setenv("STATE_DIRECTORY", "", 1); /* set but empty: as if unset */
    cfg = parse(ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), in_cwd("sluice.snap"));
    sld_config_free(cfg);
    unsetenv("STATE_DIRECTORY");

    /* a Redis store keeps the state: no snapshot unless asked for */
    const char *redis = "store:\n  type: redis\n  url: redis://127.0.0.1:6379\n" ONE_POLICY;
    cfg = parse(redis);
    assert_null(resolve(cfg, NULL));
    assert_string_equal(cfg->snapshot_origin, "the Redis store");
    sld_config_free(cfg);
    cfg = parse("store:\n  type: redis\n  url: redis://127.0.0.1:6379\n  snapshot: on\n" ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), in_cwd("sluice.snap"));
    sld_config_free(cfg);
}

static void explicit_and_overrides(void **state) {
    (void)state;
    sld_config_t *cfg = parse("store:\n  snapshot: {path: state/x.snap}\n" ONE_POLICY);
    assert_string_equal(resolve(cfg, NULL), in_cwd("state/x.snap")); /* made absolute */
    assert_string_equal(cfg->snapshot_origin, "store.snapshot.path");
    sld_config_free(cfg);

    cfg = parse("store:\n  snapshot: off\n" ONE_POLICY);
    assert_null(resolve(cfg, NULL));
    assert_string_equal(cfg->snapshot_origin, "store.snapshot: off");
    sld_config_free(cfg);

    /* --snapshot wins over the file, both ways */
    cfg = parse("store:\n  snapshot: off\n" ONE_POLICY);
    assert_string_equal(resolve(cfg, "/tmp/y.snap"), "/tmp/y.snap");
    assert_string_equal(cfg->snapshot_origin, "--snapshot");
    sld_config_free(cfg);
    cfg = parse("store:\n  snapshot: {path: /tmp/z.snap}\n" ONE_POLICY);
    assert_null(resolve(cfg, "off"));
    assert_string_equal(cfg->snapshot_origin, "--snapshot off");
    sld_config_free(cfg);
}

int main(void) {
    if (getcwd(cwd, sizeof cwd) == NULL)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes),
        cmocka_unit_test(default_location),
        cmocka_unit_test(explicit_and_overrides),
    };
    /* the fronts' keys (listen:, admin_token, requirepass), as sluiced registers them */
    if (sld_daemon_config_register() != SL_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
