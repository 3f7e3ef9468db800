/* test_rules.c -- the policies kept in Redis as the engine applies them
 * (src/server/engine/rules.c), with a real redis-server behind and a fake
 * runtime in front (the hooks of runtime_hooks.h): rules read at start are
 * overlaid on the file's policies and applied once, a removal ("") takes a
 * file policy out, a rule that does not parse or that the runtime refuses
 * is skipped and counted while the others apply, a change published on the
 * channel is applied, a freshly loaded file is overlaid with the rules
 * last read, and without Redis nothing is applied and the daemon is not
 * kept waiting. Every wait is bounded.
 */
#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */
#include "rig.h"
#include "redis_rig.h"
#include "client_rig.h"
#include "server/engine/rules.h"
#include "store/redis/rules_feed.h"

/* The configuration in force, as the daemon's runtime would hold it. */
typedef struct fake_rt {
    sld_config_t *cfg;
    int applied, checked;
    char why[128];
} fake_rt_t;

static const struct sld_runtime *fake_current(void *ctx) { return ctx; }

static const sld_config_t *fake_config(const struct sld_runtime *rt) {
    return ((const fake_rt_t *)(const void *)rt)->cfg;
}

/* The runtime refuses a policy named "refused", as it would one Redis
 * cannot evaluate. */
static int fake_check(void *ctx, sld_config_t *cfg, char *err, size_t err_len) {
    fake_rt_t *f = ctx;
    f->checked++;
    int rc = SL_OK;
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, "refused") == 0) {
            snprintf(err, err_len, "policy refused cannot be evaluated in Redis");
            rc = SL_ERANGE;
        }
    sld_config_free(cfg);
    return rc;
}

static int fake_apply(void *ctx, sld_config_t *cfg, const char *why, char *err, size_t err_len) {
    (void)err, (void)err_len;
    fake_rt_t *f = ctx;
    sld_config_free(f->cfg);
    f->cfg = cfg;
    f->applied++;
    snprintf(f->why, sizeof f->why, "%s", why);
    return SL_OK;
}

static sl_usec_t fake_now(void *ctx) {
    (void)ctx;
    return SEC(1000);
}

typedef struct fixture {
    fx_t fx;
    fake_rt_t rt;
    sld_remote_t *remote;
    sld_rules_t *rules;
} fixture_t;

static sld_config_t *file_config(int port) {
    char yaml[1024], err[SLD_MAX_ERROR] = "";
    snprintf(yaml, sizeof yaml,
             "store:\n  type: redis\n  url: redis://127.0.0.1:%d\n  timeout: 200ms\n"
             "policies:\n"
             "  - name: filed\n    limits:\n      - {algorithm: fixed_window, limit: 10, period: 1m}\n"
             "  - name: dropped\n    limits:\n      - {algorithm: fixed_window, limit: 5, period: 1m}\n",
             port);
    sld_config_t *cfg = NULL;
    if (sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err) != SL_OK)
        fail_msg("configuration refused: %s", err);
    return cfg;
}

static void start(fixture_t *f, int port) {
    memset(f, 0, sizeof *f);
    fx_init(&f->fx);
    f->rt.cfg = file_config(port);
    char err[SLD_MAX_ERROR] = "";
    if (sld_remote_new(f->rt.cfg, 1, &f->remote, err, sizeof err) != SL_OK)
        fail_msg("store refused: %s", err);
    sld_runtime_hooks_t hooks = {.ctx = &f->rt, .current = fake_current, .config = fake_config,
                                 .check = fake_check, .apply = fake_apply, .now = fake_now};
    assert_int_equal(sld_rules_start(&hooks, f->remote, &f->fx.loop, &f->rules), SL_OK);
}

static void stop(fixture_t *f) {
    sld_rules_stop(f->rules);
    uv_run(&f->fx.loop, UV_RUN_NOWAIT);
    fx_done(&f->fx);
    sld_rules_free(f->rules);
    sld_remote_free(f->remote);
    sld_config_free(f->rt.cfg);
}

static bool read_once(void *arg) { return sld_rules_read_once(arg); }

static bool applied_once(void *arg) { return ((fake_rt_t *)arg)->applied >= 1; }

static bool applied_twice(void *arg) { return ((fake_rt_t *)arg)->applied >= 2; }

static bool never(void *arg) {
    (void)arg;
    return false;
}

static bool has(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, name) == 0)
            return true;
    return false;
}

static void rules_command(const char *fmt, const char *a, const char *b) {
    redisReply *r = redis_rig_command(redis_rig_group.port, fmt, a, b);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

static void clear_rules(void) {
    rules_command("DEL %s %s", SL__REDIS_RULES_KEY, SL__REDIS_RULES_VERSION_KEY);
}

#define TB "{\"limits\": [{\"algorithm\": \"token_bucket\", \"limit\": 3, \"period\": \"1m\"}]}"

static void rules_at_start_are_applied_over_the_file(void **state) {
    (void)state;
    clear_rules();
    rules_command("HSET " SL__REDIS_RULES_KEY " %s %s", "extra", TB);
    rules_command("HSET " SL__REDIS_RULES_KEY " %s %s", "dropped", "");
    rules_command("HSET " SL__REDIS_RULES_KEY " %s %s", "broken", "{\"limits\": [{\"algorithm\": \"nope\"}]}");
    rules_command("HSET " SL__REDIS_RULES_KEY " %s %s", "refused", TB);
    rules_command("INCR %s%s", SL__REDIS_RULES_VERSION_KEY, "");
    fixture_t f;
    start(&f, redis_rig_group.port);
    assert_true(run_until(&f.fx, applied_once, &f.rt, 3000));
    assert_true(sld_rules_read_once(f.rules));
    assert_int_equal(f.rt.applied, 1);
    assert_true(has(f.rt.cfg, "filed"));
    assert_true(has(f.rt.cfg, "extra"));
    assert_false(has(f.rt.cfg, "dropped"));
    assert_false(has(f.rt.cfg, "broken"));
    assert_false(has(f.rt.cfg, "refused"));
    assert_non_null(strstr(f.rt.why, "rules from Redis (2, version 1)"));
    sld_rules_stats_t st;
    sld_rules_stats(f.rules, &st);
    assert_int_equal(st.applied, 1);
    assert_int_equal(st.invalid, 2);
    assert_int_equal(st.version, 1);
    assert_int_equal(st.errors, 0);

    /* a file loaded again (a reload) comes back with the rules on top */
    sld_config_t *merged = sld_rules_overlay(f.rules, file_config(redis_rig_group.port));
    assert_non_null(merged);
    assert_true(has(merged, "extra"));
    assert_true(has(merged, "filed"));
    assert_false(has(merged, "dropped"));
    sld_config_free(merged);
    stop(&f);
}

/* A change published on the channel is applied without waiting for the
 * version poll; the removal of a rule brings the file's policy back. */
static void a_published_change_is_applied(void **state) {
    (void)state;
    clear_rules();
    rules_command("HSET " SL__REDIS_RULES_KEY " %s %s", "dropped", "");
    fixture_t f;
    start(&f, redis_rig_group.port);
    assert_true(run_until(&f.fx, applied_once, &f.rt, 3000));
    assert_false(has(f.rt.cfg, "dropped"));
    /* the subscriber connects on its own: publish until it has heard */
    rules_command("HDEL " SL__REDIS_RULES_KEY " %s%s", "dropped", "");
    for (int i = 0; i < 50 && f.rt.applied < 2; i++) {
        rules_command("PUBLISH %s %s", SL__REDIS_RULES_CHANNEL, "dropped");
        run_until(&f.fx, applied_twice, &f.rt, 100);
    }
    assert_int_equal(f.rt.applied, 2);
    assert_true(has(f.rt.cfg, "dropped"));
    assert_non_null(strstr(f.rt.why, "version -1")); /* read for the message */
    /* published again, nothing changed: nothing applied */
    rules_command("PUBLISH %s %s", SL__REDIS_RULES_CHANNEL, "dropped");
    run_until(&f.fx, never, NULL, 200); /* time for the message and a read */
    assert_int_equal(f.rt.applied, 2);
    stop(&f);
}

/* Nothing listens: the daemon is not kept waiting, the failure is counted,
 * the file's policies stay. */
static void without_redis_the_file_stays(void **state) {
    (void)state;
    fixture_t f;
    start(&f, redis_rig_free_port());
    assert_true(run_until(&f.fx, read_once, f.rules, 3000));
    assert_int_equal(f.rt.applied, 0);
    assert_true(has(f.rt.cfg, "dropped"));
    sld_config_t *same = file_config(redis_rig_group.port);
    sld_config_t *overlaid = sld_rules_overlay(f.rules, same);
    assert_ptr_equal(overlaid, same); /* nothing read: nothing to overlay */
    sld_config_free(overlaid);
    stop(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_at_start_are_applied_over_the_file),
        cmocka_unit_test(a_published_change_is_applied),
        cmocka_unit_test(without_redis_the_file_stays),
    };
    return cmocka_run_group_tests(tests, redis_rig_group_start, redis_rig_group_stop);
}
