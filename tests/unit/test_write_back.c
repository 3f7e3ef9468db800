/* test_write_back.c -- write-back mode's sync with Redis
 * (src/server/engine/write_back.c), against a real redis-server
 * (redis_rig.h) with daemons built as sluiced's main() builds them: a
 * round is merged and written with its compare-and-set and the merged
 * state comes back into the memory store; a daemon that loses the race
 * merges onto the winner's state; a sync whose answer was lost is not
 * merged twice; a reset deletes the shared state. Real time: syncs run
 * every 10 ms on the test's loop. A Redis that answers is never given up
 * on (timeout 10 s, LIVE): on a loaded machine a reply, or this loop,
 * can be 100 ms late, and a sync given up on is a failure and then a
 * conflict with its own write, which would make the exact counts below
 * depend on the machine's speed. Only the test that stops Redis uses a
 * short timeout (STOPPED). The journal itself is test_charge_journal.c;
 * the bound, test_write_back_bound.c. */
#include <signal.h>

#include "rig.h"
#include "redis_rig.h"

#include <uv.h>

#include "server/daemon/runtime.h"
#include "server/engine/policies.h"
#include "server/engine/remote.h"
#include "server/daemon/wiring.h"
#include "server/engine/write_back.h"
#include "server/observe/metrics.h"

typedef struct node {
    sld_daemon_t d;
    sld_write_back_t *w;
    const sl_policy_t *p;
} node_t;

static uv_loop_t loop;
static redis_proc_t redis;

static sl_usec_t node_clock(void *ctx) { return sld_now(ctx); }

#define LIVE 10000   /* ms: store.timeout where Redis always answers */
#define STOPPED 100  /* ms: where the test stops Redis to lose an answer */

static void node_start(node_t *n, uint32_t nodes, int timeout_ms) {
    memset(n, 0, sizeof *n);
    char yaml[1024], err[SLD_MAX_ERROR] = "";
    snprintf(yaml, sizeof yaml,
             "store:\n  type: redis\n  url: redis://127.0.0.1:%d\n  sync: write_back\n"
             "  sync_interval: 10ms\n  nodes: %u\n  timeout: %dms\n"
             "policies:\n  - name: p\n    limits:\n      - {algorithm: fixed_window, limit: 100, period: 1h}\n",
             redis.port, nodes, timeout_ms);
    sld_config_t *cfg = NULL;
    if (sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err) != SL_OK)
        fail_msg("configuration refused: %s", err);
    assert_int_equal(sld_metrics_new(1, &n->d.metrics), SL_OK);
    sld_runtime_t *rt = NULL;
    if (sld_runtime_build(&n->d, cfg, 1, &rt, err, sizeof err) != SL_OK)
        fail_msg("runtime refused: %s", err);
    atomic_store(&n->d.runtime, rt);
    n->d.threads = 1;
    sl_memory_options_t mo = {.shards = 4};
    assert_int_equal(sl_store_memory_new(&mo, &n->d.store), SL_OK);
    sl_limiter_options_t lo = {.clock = node_clock, .clock_ctx = &n->d};
    assert_int_equal(sl_limiter_new(n->d.store, &lo, &n->d.limiter), SL_OK);
    if (sld_remote_new(rt->cfg, 1, &n->d.remote, err, sizeof err) != SL_OK)
        fail_msg("store refused: %s", err);
    sld_runtime_hooks_t hooks = sld_daemon_runtime_hooks(&n->d);
    assert_int_equal(sld_write_back_start(&hooks, n->d.store, n->d.remote, &loop, &n->w), SL_OK);
    n->p = sld_policies_find(rt->policies, "p", 1, "k", 1, NULL, NULL);
    assert_non_null(n->p);
}

static void node_stop(node_t *n) {
    sld_write_back_stop(n->w);
}

/* After every node's sld_write_back_stop and the loop has closed them. */
static void node_free(node_t *n) {
    sld_write_back_free(n->w);
    sld_remote_free(n->d.remote);
    sld_runtime_shutdown(&n->d);
    sld_metrics_free(n->d.metrics);
    sl_limiter_free(n->d.limiter);
    sl_store_free(n->d.store);
}

static void stop_all(node_t *nodes, size_t n) {
    for (size_t i = 0; i < n; i++)
        node_stop(&nodes[i]);
    uv_run(&loop, UV_RUN_DEFAULT); /* until every handle is closed */
    for (size_t i = 0; i < n; i++)
        node_free(&nodes[i]);
}

static void charge(node_t *n, const char *key, int times) {
    for (int i = 0; i < times; i++) {
        sl_decision_t d;
        assert_int_equal(sl_check(n->d.limiter, n->p, key, strlen(key), 1, &d), SL_OK);
        assert_true(d.allowed);
    }
}

static sld_write_back_stats_t stats(node_t *n) {
    sld_write_back_stats_t s;
    sld_write_back_stats(n->w, &s);
    return s;
}

/* Runs the loop until every node has synced all it charged (and at least
 * `syncs` keys in all), or ms pass; whether it happened. */
static bool wait_synced(node_t *nodes, size_t n, uint64_t syncs, int ms) {
    for (int waited = 0; waited < ms; waited++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        uint64_t total = 0;
        bool clean = true;
        for (size_t i = 0; i < n; i++) {
            sld_write_back_stats_t s = stats(&nodes[i]);
            total += s.syncs;
            clean = clean && s.unsynced == 0;
        }
        if (clean && total >= syncs)
            return true;
        redis_rig_sleep_ms(1);
    }
    return false;
}

static void run_for(int ms) {
    for (int waited = 0; waited < ms; waited++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        redis_rig_sleep_ms(1);
    }
}

/* Redis's copy of (p, key): the fixed_window count (after the 8-byte
 * version, the format byte, the limit's id and expire_at), -1 = no key. */
static long long shared_count(node_t *n, const char *key) {
    char name[256];
    size_t len = sld_write_back_key(n->p, key, strlen(key), name, sizeof name);
    redisReply *r = redis_rig_command(redis.port, "GET %b", name, len);
    assert_non_null(r);
    long long count = -1;
    if (r->type == REDIS_REPLY_STRING && r->len >= 8 + 1 + 24) {
        uint64_t word = 0;
        for (int i = 7; i >= 0; i--)
            word = word << 8 | (unsigned char)r->str[8 + 1 + 16 + i];
        count = (long long)word;
    }
    freeReplyObject(r);
    return count;
}

/* What the node's memory store would still admit on key. */
static uint64_t remaining(node_t *n, const char *key) {
    sl_decision_t d;
    assert_int_equal(sl_peek(n->d.limiter, n->p, key, strlen(key), 1, &d), SL_OK);
    return d.remaining;
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    if (redis_rig_start(&redis, NULL) != 0)
        fail_msg("no redis-server");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    redis_rig_stop(&redis);
    assert_int_equal(uv_loop_close(&loop), 0);
    return 0;
}

/* One daemon's round: its charges are written to Redis; a second daemon's
 * first sync of the key loses the compare-and-set (it assumed a new key),
 * merges onto what came back, writes both, and imports the merged state. */
static void a_round_is_written_then_merged(void **state) {
    (void)state;
    node_t n[2];
    node_start(&n[0], 2, LIVE);
    node_start(&n[1], 2, LIVE);
    charge(&n[0], "k", 5);
    assert_true(wait_synced(n, 2, 1, 2000));
    assert_int_equal(shared_count(&n[0], "k"), 5);
    assert_int_equal(stats(&n[0]).conflicts, 0);
    assert_int_equal(stats(&n[0]).failures, 0);
    assert_true(stats(&n[0]).last_sync > 0);

    charge(&n[1], "k", 1);
    assert_true(wait_synced(n, 2, 2, 2000));
    assert_int_equal(shared_count(&n[1], "k"), 6);
    assert_int_equal(stats(&n[1]).conflicts, 1);
    assert_int_equal(remaining(&n[1], "k"), 100 - 6); /* the merged state, imported */
    assert_int_equal(stats(&n[0]).dropped + stats(&n[1]).dropped, 0);
    stop_all(n, 2);
}

/* Two daemons charge the same key between syncs: whoever loses the race
 * merges onto the other's write; nothing is lost, nothing counted twice. */
static void racing_daemons_merge(void **state) {
    (void)state;
    node_t n[2];
    node_start(&n[0], 2, LIVE);
    node_start(&n[1], 2, LIVE);
    for (int round = 0; round < 5; round++) {
        charge(&n[0], "race", 3);
        charge(&n[1], "race", 2);
        run_for(3);
    }
    assert_true(wait_synced(n, 2, 2, 2000));
    assert_int_equal(shared_count(&n[0], "race"), 25);
    assert_true(stats(&n[0]).conflicts + stats(&n[1]).conflicts >= 1);
    /* each one's next sync brings the other's charges home */
    charge(&n[0], "race", 1);
    charge(&n[1], "race", 1);
    assert_true(wait_synced(n, 2, 4, 2000));
    run_for(30);
    assert_int_equal(shared_count(&n[0], "race"), 27);
    assert_true(remaining(&n[0], "race") <= 100 - 26);
    assert_true(remaining(&n[1], "race") <= 100 - 26);
    stop_all(n, 2);
}

/* Redis stops answering with a sync in its socket: the answer is lost (a
 * failure, the charges kept), Redis runs the write when it wakes, and the
 * next sync finds its own lost write there and does not merge it again. */
static void a_lost_answer_is_not_merged_twice(void **state) {
    (void)state;
    node_t n[1];
    node_start(&n[0], 2, STOPPED);
    charge(&n[0], "lost", 5);
    assert_true(wait_synced(n, 1, 1, 2000));
    assert_int_equal(shared_count(&n[0], "lost"), 5);
    uint64_t failed = stats(&n[0]).failures; /* a loaded machine may have lost one already */
    assert_int_equal(kill(redis.pid, SIGSTOP), 0);
    charge(&n[0], "lost", 3);
    /* the sync is sent and times out (STOPPED); waited for, not timed */
    for (int waited = 0; waited < 10000 && stats(&n[0]).failures == failed; waited += 5)
        run_for(5);
    assert_int_equal(kill(redis.pid, SIGCONT), 0);
    assert_true(stats(&n[0]).failures > failed);
    assert_int_equal(stats(&n[0]).dropped, 0);
    assert_true(wait_synced(n, 1, 2, 3000));
    run_for(30);
    assert_int_equal(shared_count(&n[0], "lost"), 8);
    assert_int_equal(remaining(&n[0], "lost"), 100 - 8);
    stop_all(n, 1);
}

/* SL.RESET of a key: the journal forgets it and Redis's copy is deleted;
 * the key starts afresh. */
static void a_reset_deletes_the_shared_state(void **state) {
    (void)state;
    node_t n[1];
    node_start(&n[0], 2, LIVE);
    charge(&n[0], "r", 4);
    assert_true(wait_synced(n, 1, 1, 2000));
    assert_int_equal(shared_count(&n[0], "r"), 4);
    sld_write_back_forget(n[0].w, n[0].p, "r", 1);
    for (int waited = 0; waited < 2000 && shared_count(&n[0], "r") != -1; waited += 5)
        run_for(5);
    assert_int_equal(shared_count(&n[0], "r"), -1);
    charge(&n[0], "r", 2);
    uint64_t before = stats(&n[0]).syncs;
    assert_true(wait_synced(n, 1, before + 1, 2000));
    assert_int_equal(shared_count(&n[0], "r"), 2);
    stop_all(n, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_round_is_written_then_merged, setup, teardown),
        cmocka_unit_test_setup_teardown(racing_daemons_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(a_lost_answer_is_not_merged_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reset_deletes_the_shared_state, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
