/* test_redis_discovery.c -- the Redis client's Cluster discovery
 * (src/store/redis/discovery.c) against scripted servers (redis_fake.h) on
 * the test's loop, where the order of replies is the test's to choose:
 * a slot-map refresh sent before a MOVED and answered after it does not
 * undo the MOVED; nodes that left the map are closed and dropped from the
 * table once nothing is in flight on them. Every wait is bounded.
 */
#include <signal.h>
#include <strings.h>

#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */

#include "rig.h"
#include "redis_fake.h"
#include <hiredis/hiredis.h>
#include "client_rig.h"
#include "store/redis/client.h"
#include "store/redis/cluster.h"

#define NODES 3

typedef struct range {
    int first, last, node; /* node: index into fakes */
} range_t;

/* The cluster's truth, shared by every fake node. */
static struct {
    fake_redis_t fake[NODES];
    range_t ranges[NODES];
    int n_ranges;
    bool hold_slots;           /* hold the next CLUSTER SLOTS reply */
    fake_conn_t *held_slots;   /* ... on this connection */
    char *held_slots_reply;    /* ... made when it was asked (stale later) */
    int slots_asked;
    int slots_answered;
    bool hold_gets[NODES];     /* hold GET replies on this node */
    fake_conn_t *held_get;
    int gets[NODES];
    bool self_moved;           /* answer the next GET trigger with a MOVED to itself */
} cl;

static int node_of(const fake_redis_t *f) { return (int)(f - cl.fake); }

static int owner(int slot) {
    for (int i = 0; i < cl.n_ranges; i++)
        if (cl.ranges[i].first <= slot && slot <= cl.ranges[i].last)
            return cl.ranges[i].node;
    return -1;
}

static char *slots_reply(void) {
    char buf[1024];
    int at = snprintf(buf, sizeof buf, "*%d\r\n", cl.n_ranges);
    for (int i = 0; i < cl.n_ranges; i++)
        at += snprintf(buf + at, sizeof buf - (size_t)at,
                       "*3\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$4\r\nn%03d\r\n",
                       cl.ranges[i].first, cl.ranges[i].last, cl.fake[cl.ranges[i].node].port,
                       cl.ranges[i].node);
    return fake_fmt("%s", buf);
}

static char *handler(fake_redis_t *f, fake_conn_t *c, int argc, char **argv) {
    int me = node_of(f);
    if (argc >= 1 && strcasecmp(argv[0], "PING") == 0)
        return fake_fmt("+PONG\r\n");
    if (argc == 2 && strcasecmp(argv[0], "CLUSTER") == 0 && strcasecmp(argv[1], "SLOTS") == 0) {
        cl.slots_asked++;
        if (cl.hold_slots) {
            cl.hold_slots = false;
            cl.held_slots = c;
            cl.held_slots_reply = slots_reply(); /* the map as it is now */
            return NULL;
        }
        cl.slots_answered++;
        return slots_reply();
    }
    if (argc == 2 && strcasecmp(argv[0], "GET") == 0) {
        int slot = sl__redis_key_slot(argv[1], strlen(argv[1]));
        if (strcmp(argv[1], "trigger") == 0 && cl.self_moved) {
            cl.self_moved = false;
            return fake_fmt("-MOVED %d 127.0.0.1:%d\r\n", slot, f->port);
        }
        int o = owner(slot);
        if (o != me)
            return fake_fmt("-MOVED %d 127.0.0.1:%d\r\n", slot, cl.fake[o].port);
        if (strcmp(argv[1], "trigger") == 0)
            return fake_fmt("$1\r\nv\r\n");
        cl.gets[me]++;
        if (cl.hold_gets[me]) {
            cl.held_get = c;
            return NULL;
        }
        return fake_fmt("$1\r\nv\r\n");
    }
    return fake_fmt("-ERR unknown command\r\n");
}

/* ---- the loop and the client ------------------------------------------------------------- */

static bool never(void *arg) { (void)arg; return false; }
static void run_for(fx_t *f, int ms) { run_until(f, never, NULL, ms); }

static void send_get(fx_t *f, const char *key, rig_reply_t *x) {
    const char *argv[2] = {"GET", key};
    memset(x, 0, sizeof *x);
    assert_int_equal(sl__redis_client_send(f->c, key, strlen(key), 2, argv, NULL, NULL, 0, rig_on_reply, x), 0);
}

static void get_ok(fx_t *f, const char *key) {
    rig_reply_t x;
    send_get(f, key, &x);
    assert_true(run_until(f, rig_got, &x, 3000));
    if (x.st != SL__REDIS_OK || strcmp(x.str, "v") != 0)
        fail_msg("GET %s: status %d '%s' (%s)", key, x.st, x.str, sl__redis_client_last_error(f->c));
}

static sl__redis_client_stats_t stats(fx_t *f) {
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f->c, &st);
    return st;
}

/* A key whose slot is in [first, last]. */
static const char *key_in(int first, int last, char *buf, size_t len) {
    for (int i = 0;; i++) {
        snprintf(buf, len, "k%d", i);
        int s = sl__redis_key_slot(buf, strlen(buf));
        if (first <= s && s <= last)
            return buf;
    }
}

static bool fakes_closed(void *arg) {
    (void)arg;
    for (int i = 0; i < NODES; i++)
        if (!fake_redis_closed(&cl.fake[i]))
            return false;
    return true;
}

static void setup(fx_t *f) {
    memset(&cl, 0, sizeof cl);
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->tick);
    for (int i = 0; i < NODES; i++)
        assert_int_equal(fake_redis_start(&cl.fake[i], &f->loop, handler, NULL), 0);
    char url[64];
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", cl.fake[0].port);
    sl__redis_url_t u;
    char err[128];
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 2000, .breaker_failures = 1000};
    assert_int_equal(sl__redis_client_new(&f->loop, &u, &o, &f->c), 0);
}

static void teardown(fx_t *f) {
    sl__redis_client_close(f->c, on_closed, f);
    assert_true(run_until(f, is_closed, f, 3000));
    free(cl.held_slots_reply);
    for (int i = 0; i < NODES; i++)
        fake_redis_stop(&cl.fake[i]);
    assert_true(run_until(f, fakes_closed, NULL, 3000));
    for (int i = 0; i < NODES; i++)
        fake_redis_free(&cl.fake[i]);
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

static bool slots_asked(void *arg) { return cl.slots_asked >= *(int *)arg; }
static bool slots_answered(void *arg) { return cl.slots_answered >= *(int *)arg; }

/* Makes the client ask CLUSTER SLOTS again: a MOVED (node 0 to itself). */
static void trigger_refresh(fx_t *f) {
    cl.self_moved = true;
    get_ok(f, "trigger");
}

/* ---- the tests ----------------------------------------------------------------------------- */

static uint64_t want_redirects;

static bool redirected(void *arg) {
    fx_t *f = arg;
    return stats(f).redirects >= want_redirects;
}

/* CLUSTER SLOTS is sent to node 0, the slot of key k moves from node 1 to
 * node 0 (MOVED seen on node 1's connection), then the refresh's reply
 * arrives with the map from before the move: k must stay on node 0. */
static void refresh_does_not_undo_a_newer_moved(void **state) {
    (void)state;
    fx_t f;
    setup(&f);
    cl.ranges[0] = (range_t){0, 8191, 0};
    cl.ranges[1] = (range_t){8192, SL__REDIS_SLOTS - 1, 1};
    cl.n_ranges = 2;
    char k[16];
    key_in(8192, SL__REDIS_SLOTS - 1, k, sizeof k);
    get_ok(&f, k);
    assert_int_equal(cl.gets[1], 1);

    cl.hold_slots = true;
    int want = cl.slots_asked + 1;
    trigger_refresh(&f);
    assert_true(run_until(&f, slots_asked, &want, 2000));
    assert_non_null(cl.held_slots);
    assert_ptr_equal(cl.held_slots->f, &cl.fake[0]);
    /* past the refresh rate limit, so the MOVED below starts no refresh of
     * its own while this one is out */
    run_for(&f, 150);

    int slot = sl__redis_key_slot(k, strlen(k));
    cl.ranges[0] = (range_t){0, slot, 0};
    cl.ranges[1] = (range_t){slot + 1, SL__REDIS_SLOTS - 1, 1};
    uint64_t redirects = stats(&f).redirects;
    rig_reply_t x;
    want_redirects = redirects + 1;
    send_get(&f, k, &x); /* MOVED by node 1; resent to node 0, behind the refresh */
    assert_true(run_until(&f, redirected, &f, 2000));
    assert_int_equal(stats(&f).redirects, redirects + 1);

    /* the stale map arrives, then the GET's reply */
    cl.slots_answered++;
    fake_redis_release(cl.held_slots, cl.held_slots_reply);
    cl.held_slots_reply = NULL;
    assert_true(run_until(&f, rig_got, &x, 2000));
    assert_int_equal(x.st, SL__REDIS_OK);
    assert_int_equal(cl.gets[0], 1);
    run_for(&f, 50);

    get_ok(&f, k); /* straight to node 0: no MOVED back and forth */
    assert_int_equal(stats(&f).redirects, redirects + 1);
    assert_int_equal(cl.gets[0], 2);
    assert_int_equal(cl.gets[1], 1);
    teardown(&f);
}

static bool conns_closed(void *arg) { return cl.fake[*(int *)arg].open_conns == 0; }

/* Three masters; the third leaves the map while a command is in flight on
 * it. It stays until that command is answered, then the next refresh
 * closes its connection and drops it from the table. */
static void departed_nodes_are_dropped(void **state) {
    (void)state;
    fx_t f;
    setup(&f);
    cl.ranges[0] = (range_t){0, 5460, 0};
    cl.ranges[1] = (range_t){5461, 10922, 1};
    cl.ranges[2] = (range_t){10923, SL__REDIS_SLOTS - 1, 2};
    cl.n_ranges = 3;
    char k0[16], k1[16], k2[16];
    get_ok(&f, key_in(0, 5460, k0, sizeof k0));
    get_ok(&f, key_in(5461, 10922, k1, sizeof k1));
    get_ok(&f, key_in(10923, SL__REDIS_SLOTS - 1, k2, sizeof k2));
    assert_int_equal(cl.gets[0] + cl.gets[1] + cl.gets[2], 3);
    assert_int_equal(stats(&f).nodes, 3);
    assert_int_equal(stats(&f).redirects, 0);

    /* a command in flight on node 2, then node 2 leaves */
    cl.hold_gets[2] = true;
    rig_reply_t held;
    send_get(&f, k2, &held);
    for (int i = 0; i < 200 && cl.held_get == NULL; i++)
        run_for(&f, 5);
    assert_non_null(cl.held_get);
    cl.ranges[0] = (range_t){0, 8191, 0};
    cl.ranges[1] = (range_t){8192, SL__REDIS_SLOTS - 1, 1};
    cl.n_ranges = 2;
    int want = cl.slots_answered + 1;
    trigger_refresh(&f);
    assert_true(run_until(&f, slots_answered, &want, 2000));
    run_for(&f, 50);
    assert_int_equal(stats(&f).nodes, 3); /* in flight: kept */
    assert_int_equal(cl.fake[2].open_conns, 1);

    fake_redis_release(cl.held_get, fake_fmt("$1\r\nv\r\n"));
    assert_true(run_until(&f, rig_got, &held, 2000));
    assert_int_equal(held.st, SL__REDIS_OK);
    want = cl.slots_answered + 1;
    trigger_refresh(&f);
    assert_true(run_until(&f, slots_answered, &want, 2000));
    run_for(&f, 50);
    assert_int_equal(stats(&f).nodes, 2);
    int node2 = 2;
    assert_true(run_until(&f, conns_closed, &node2, 2000));

    /* its keys go to their new master */
    int before = cl.gets[1];
    get_ok(&f, k2);
    assert_int_equal(cl.gets[1], before + 1);
    assert_int_equal(stats(&f).nodes, 2);
    teardown(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refresh_does_not_undo_a_newer_moved),
        cmocka_unit_test(departed_nodes_are_dropped),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
