/* test_redis_client.c -- the asynchronous Redis client (src/store/redis/
 * client.c) against real redis-server processes on loopback ports: a
 * standalone server (commands, 10k pipelined, AUTH with requirepass and an
 * ACL user, SELECT, deadlines against DEBUG SLEEP, connect timeout, a killed
 * and restarted server with the breaker, NOSCRIPT, close), a 3-master
 * Cluster with replicas (routing over all slots, ASK and MOVED during a slot
 * migration, a killed master failed over) and Sentinel (discovery, a
 * failover followed). Every wait is bounded.
 */
#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */

#include "rig.h"
#include "redis_rig.h"
#include "client_rig.h"
#include "store/redis/client.h"
#include "store/redis/cluster.h"

typedef struct res {
    int calls;
    sl__redis_status_t st;
    int type;            /* reply type, 0 without a reply */
    long long integer;
    char str[256];
    uint64_t sent_ms, done_ms;
} res_t;

static void on_reply(void *arg, sl__redis_status_t st, const struct redisReply *r) {
    res_t *x = arg;
    x->calls++;
    x->st = st;
    x->done_ms = now_ms();
    x->type = r ? r->type : 0;
    if (r && r->type == REDIS_REPLY_INTEGER)
        x->integer = r->integer;
    if (r && r->str)
        snprintf(x->str, sizeof x->str, "%.*s", (int)r->len, r->str);
    if (r && r->type == REDIS_REPLY_NIL)
        snprintf(x->str, sizeof x->str, "(nil)");
}

/* Sends a command given as space-separated words. */
static int send_words(fx_t *f, const char *key, const char *script, res_t *x, const char *words) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", words);
    const char *argv[16];
    int argc = 0;
    for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 16; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    memset(x, 0, sizeof *x);
    x->sent_ms = now_ms();
    return sl__redis_client_send(f->c, key, key ? strlen(key) : 0, argc, argv, NULL, script,
                                 script ? strlen(script) : 0, on_reply, x);
}

static bool got(void *arg) { return ((res_t *)arg)->calls > 0; }

/* Sends and waits for the reply (up to 3 s); asserts one callback. */
static res_t call(fx_t *f, const char *key, const char *words) {
    res_t x;
    int rc = send_words(f, key, NULL, &x, words);
    if (rc != 0) {
        x.calls = -1;
        x.st = (sl__redis_status_t)rc;
        return x;
    }
    assert_true(run_until(f, got, &x, 3000));
    assert_int_equal(x.calls, 1);
    return x;
}

static void expect_ok(fx_t *f, const char *key, const char *words, const char *want) {
    res_t x = call(f, key, words);
    if (x.st != SL__REDIS_OK)
        fail_msg("'%s': status %d (%s)", words, x.st, sl__redis_client_last_error(f->c));
    if (want && strcmp(x.str, want) != 0)
        fail_msg("'%s': got '%s', want '%s'", words, x.str, want);
}

static void client_new(fx_t *f, const char *url, const sl__redis_client_options_t *o) {
    sl__redis_url_t u;
    char err[256];
    if (sl__redis_url_parse(url, strlen(url), &u, err, sizeof err) != 0)
        fail_msg("%s: %s", url, err);
    assert_int_equal(sl__redis_client_new(&f->loop, &u, o, &f->c), 0);
}

static void skip_without_redis(void) {
    if (system("command -v redis-server > /dev/null 2>&1") != 0) {
        fprintf(stderr, "redis-server not installed\n");
        skip();
    }
}

/* ---- standalone ---------------------------------------------------------------- */

static void standalone_commands(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);
    client_new(&f, url, NULL);
    /* sent before the connection is up: waits for it */
    expect_ok(&f, "k", "SET k v", "OK");
    expect_ok(&f, "k", "GET k", "v");
    expect_ok(&f, "nope", "GET nope", "(nil)");
    res_t x = call(&f, NULL, "NOSUCHCOMMAND");
    assert_int_equal(x.st, SL__REDIS_OK); /* an error reply is a reply */
    assert_int_equal(x.type, REDIS_REPLY_ERROR);
    /* binary-safe arguments */
    const char *argv[3] = {"SET", "bin", "a\0b"};
    size_t lens[3] = {3, 3, 3};
    res_t y = {0};
    assert_int_equal(sl__redis_client_send(f.c, "bin", 3, 3, argv, lens, NULL, 0, on_reply, &y), 0);
    assert_true(run_until(&f, got, &y, 2000));
    x = call(&f, "bin", "STRLEN bin");
    assert_int_equal(x.integer, 3);
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_true(st.up);
    assert_false(st.breaker_open);
    assert_int_equal(st.sent, 6);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.in_flight, 0);
    fx_done(&f);
    redis_rig_stop(&srv);
}

typedef struct many {
    int n, done, in_order;
    long long last;
} many_t;

static void on_incr(void *arg, sl__redis_status_t st, const struct redisReply *r) {
    many_t *m = arg;
    m->done++;
    if (st == SL__REDIS_OK && r->type == REDIS_REPLY_INTEGER && r->integer == m->last + 1)
        m->in_order++;
    if (r)
        m->last = r->integer;
}

static bool many_done(void *arg) {
    many_t *m = arg;
    return m->done == m->n;
}

static void pipeline_10k(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);
    sl__redis_client_options_t o = {.timeout_ms = 5000};
    client_new(&f, url, &o);
    expect_ok(&f, NULL, "PING", "PONG");
    many_t m = {.n = 10000};
    const char *argv[2] = {"INCR", "counter"};
    uint64_t t0 = now_ms();
    for (int i = 0; i < m.n; i++)
        assert_int_equal(sl__redis_client_send(f.c, "counter", 7, 2, argv, NULL, NULL, 0, on_incr, &m), 0);
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_int_equal(st.in_flight, 10000);
    assert_true(run_until(&f, many_done, &m, 10000));
    assert_int_equal(m.in_order, m.n); /* every reply, in order, once */
    fprintf(stderr, "10000 pipelined INCR in %llu ms\n", (unsigned long long)(now_ms() - t0));
    expect_ok(&f, "counter", "GET counter", "10000");
    fx_done(&f);
    redis_rig_stop(&srv);
}

static void auth_and_select(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    /* set after the start: the rig checks the server with a plain PING */
    redisReply *r = redis_rig_command(srv.port, "CONFIG SET requirepass s3cret");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char url[128];

    /* requirepass: AUTH <password>, and SELECT 5 */
    fx_t f;
    fx_init(&f);
    snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d/5", srv.port);
    client_new(&f, url, NULL);
    expect_ok(&f, "where", "SET where db5", "OK");
    fx_done(&f);
    struct timeval tv = {1, 0}; /* redis_rig_connect's PING needs no AUTH */
    redisContext *sync = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
    assert_true(sync && !sync->err);
    r = redisCommand(sync, "AUTH s3cret");
    freeReplyObject(r);
    r = redisCommand(sync, "SELECT 5");
    freeReplyObject(r);
    r = redisCommand(sync, "GET where");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "db5");
    freeReplyObject(r);
    /* an ACL user with a password that needs percent-encoding */
    r = redisCommand(sync, "ACL SETUSER alice on >p@ss:w ~* &* +@all");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(sync, "SELECT 0");
    freeReplyObject(r);
    r = redisCommand(sync, "GET where");
    assert_int_equal(r->type, REDIS_REPLY_NIL); /* it went to db 5 only */
    freeReplyObject(r);
    redisFree(sync);

    fx_init(&f);
    snprintf(url, sizeof url, "redis://alice:p%%40ss%%3Aw@127.0.0.1:%d", srv.port);
    client_new(&f, url, NULL);
    expect_ok(&f, NULL, "ACL WHOAMI", "alice");
    fx_done(&f);

    /* a wrong password: commands fail, the error says why */
    fx_init(&f);
    snprintf(url, sizeof url, "redis://alice:wrong@127.0.0.1:%d", srv.port);
    sl__redis_client_options_t o = {.timeout_ms = 300};
    client_new(&f, url, &o);
    res_t x = call(&f, NULL, "PING");
    assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    if (strstr(sl__redis_client_last_error(f.c), "WRONGPASS") == NULL)
        fail_msg("last error: %s", sl__redis_client_last_error(f.c));
    fx_done(&f);
    redis_rig_stop(&srv);
}

static bool all_got(void *arg) {
    res_t *x = arg;
    for (int i = 0; i < 20; i++)
        if (x[i].calls == 0)
            return false;
    return true;
}

static void deadlines(void **state) {
    (void)state;
    skip_without_redis();
    const char *extra[] = {"--enable-debug-command", "yes", NULL};
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, extra), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);
    sl__redis_client_options_t o = {.timeout_ms = 100, .breaker_failures = 1000};
    client_new(&f, url, &o);
    expect_ok(&f, NULL, "PING", "PONG");

    /* The server sleeps 1 s. The sleep times out at its deadline; the
     * connection, silent for a whole timeout while owing replies, is then
     * dropped as hung: the commands written behind it end at once (DOWN,
     * or TIMEOUT if their own deadline came first), each exactly once, and
     * sends while it reconnects are refused at once. */
    res_t sleep_res, x[20];
    int sent[20];
    memset(x, 0, sizeof x);
    assert_int_equal(send_words(&f, NULL, NULL, &sleep_res, "DEBUG SLEEP 1"), 0);
    for (int i = 0; i < 20; i++) {
        sent[i] = send_words(&f, NULL, NULL, &x[i], "PING");
        assert_true(sent[i] == 0 || sent[i] == SL__REDIS_DOWN);
        if (sent[i] != 0)
            x[i].calls = 1; /* not sent: no callback to wait for */
        /* spread them over 200 ms */
        uv_run(&f.loop, UV_RUN_NOWAIT);
        redis_rig_sleep_ms(10);
        uv_update_time(&f.loop);
    }
    assert_true(run_until(&f, all_got, x, 2000));
    assert_int_equal(sleep_res.calls, 1);
    assert_int_equal(sleep_res.st, SL__REDIS_TIMEOUT);
    int refused = 0;
    for (int i = 0; i < 20; i++) {
        if (sent[i] != 0) {
            refused++;
            continue;
        }
        assert_true(x[i].st == SL__REDIS_TIMEOUT || x[i].st == SL__REDIS_DOWN);
        uint64_t took = x[i].done_ms - x[i].sent_ms;
        if (took > 100 + 80)
            fail_msg("command %d ended after %llu ms, want at most the 100 ms timeout", i,
                     (unsigned long long)took);
    }
    assert_true(refused > 0); /* the hung connection was dropped */
    /* dropped as hung; or, when a reconnection came since, its handshake
     * (PING, AUTH) got no answer from the sleeping server either */
    const char *why = sl__redis_client_last_error(f.c);
    if (strstr(why, "no reply within the timeout") == NULL && strstr(why, "connect timeout") == NULL)
        fail_msg("last error: %s", why);
    /* after the sleep: a fresh command is answered (on a new connection),
     * the late replies of the old one reach nobody */
    redis_rig_sleep_ms(900);
    res_t after;
    for (int tries = 0;; tries++) { /* the reconnection may be under way */
        after = call(&f, NULL, "ECHO fresh");
        if (after.st == SL__REDIS_OK || tries == 40)
            break;
        for (int k = 0; k < 4; k++) { /* let the loop reconnect */
            redis_rig_sleep_ms(5);
            uv_update_time(&f.loop);
            uv_run(&f.loop, UV_RUN_NOWAIT);
        }
    }
    assert_int_equal(after.st, SL__REDIS_OK);
    assert_string_equal(after.str, "fresh");
    assert_int_equal(sleep_res.calls, 1);
    for (int i = 0; i < 20; i++)
        assert_int_equal(x[i].calls, 1);
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_true(st.timeouts >= 1);
    assert_int_equal(st.in_flight, 0);
    fx_done(&f);
    redis_rig_stop(&srv);
}

/* A listening socket nobody accepts from: connect() succeeds (the kernel
 * queues it), AUTH is never answered. */
static void connect_timeout(void **state) {
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://:pw@127.0.0.1:%d", ntohs(a.sin_port));
    sl__redis_client_options_t o = {.timeout_ms = 300, .connect_timeout_ms = 100};
    client_new(&f, url, &o);
    res_t x = call(&f, NULL, "PING");
    assert_int_equal(x.st, SL__REDIS_DOWN); /* the connect timeout, before the deadline */
    assert_true(x.done_ms - x.sent_ms >= 95 && x.done_ms - x.sent_ms < 200);
    assert_non_null(strstr(sl__redis_client_last_error(f.c), "connect timeout"));
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_false(st.up);
    fx_done(&f);
    close(fd);
}

static bool healthy(void *arg) {
    sl__redis_client_stats_t st;
    sl__redis_client_stats(arg, &st);
    return st.up && !st.breaker_open;
}

static void kill_and_restart(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);
    sl__redis_client_options_t o = {.timeout_ms = 200, .breaker_failures = 3,
                                    .breaker_cooldown_ms = 300};
    client_new(&f, url, &o);
    expect_ok(&f, NULL, "SET a 1", "OK");

    /* in flight when the server dies: DOWN */
    redis_rig_kill(&srv);
    res_t x = call(&f, NULL, "PING");
    assert_int_equal(x.st, SL__REDIS_DOWN);
    /* more failures open the breaker: sends fail at once, no callback */
    int opened = 0;
    for (int i = 0; i < 20 && !opened; i++) {
        x = call(&f, NULL, "PING");
        if (x.calls == -1 && x.st == SL__REDIS_BREAKER_OPEN)
            opened = 1;
        else
            assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    }
    assert_true(opened);
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_true(st.breaker_open);
    assert_false(st.up);
    assert_true(st.failed >= 3);

    /* back on the same port: with no traffic at all, the breaker's own
     * probe (a PING after the cooldown) finds it and closes the breaker,
     * within 2 s */
    assert_int_equal(redis_rig_spawn(&srv, NULL, NULL), 0);
    uint64_t t0 = now_ms();
    bool ok = run_until(&f, healthy, f.c, 2000);
    fprintf(stderr, "recovered %llu ms after the restart\n", (unsigned long long)(now_ms() - t0));
    assert_true(ok);
    sl__redis_client_stats(f.c, &st);
    assert_true(st.reconnects >= 1);
    expect_ok(&f, NULL, "PING", "PONG");
    fx_done(&f);
    redis_rig_stop(&srv);
}

static void noscript(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    fx_t f;
    fx_init(&f);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);
    client_new(&f, url, NULL);
    const char *script = "return redis.call('INCR', KEYS[1])";
    res_t x;
    /* the SHA1 of the exact body, computed by the server */
    redisReply *r = redis_rig_command(srv.port, "SCRIPT LOAD %s", script);
    assert_non_null(r);
    char sha[64];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    r = redis_rig_command(srv.port, "SCRIPT FLUSH");
    freeReplyObject(r);
    char words[128];
    snprintf(words, sizeof words, "EVALSHA %s 1 n", sha);
    /* without the body: NOSCRIPT is the reply */
    x = call(&f, "n", words);
    assert_int_equal(x.type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(x.str, "NOSCRIPT"));
    /* with it: loaded and resent, once */
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(send_words(&f, "n", script, &x, words), 0);
        assert_true(run_until(&f, got, &x, 2000));
        assert_int_equal(x.st, SL__REDIS_OK);
        assert_int_equal(x.type, REDIS_REPLY_INTEGER);
        assert_int_equal(x.integer, i);
        if (i == 2) {
            r = redis_rig_command(srv.port, "SCRIPT FLUSH");
            freeReplyObject(r);
        }
    }
    fx_done(&f);
    redis_rig_stop(&srv);
}

typedef struct closer {
    fx_t *f;
    int calls;
} closer_t;

static void close_in_callback(void *arg, sl__redis_status_t st, const struct redisReply *r) {
    closer_t *k = arg;
    (void)st, (void)r;
    if (k->calls++ == 0)
        sl__redis_client_close(k->f->c, on_closed, k->f);
}

static void close_pending(void **state) {
    (void)state;
    skip_without_redis();
    const char *extra[] = {"--enable-debug-command", "yes", NULL};
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, extra), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port);

    /* commands waiting for the connection, and in flight, get CLOSING */
    fx_t f;
    fx_init(&f);
    client_new(&f, url, NULL);
    res_t x[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(send_words(&f, NULL, NULL, &x[i], "PING"), 0);
    expect_ok(&f, NULL, "PING", "PONG"); /* the five went first */
    for (int i = 0; i < 5; i++)
        assert_int_equal(x[i].st, SL__REDIS_OK);
    assert_int_equal(send_words(&f, NULL, NULL, &x[0], "DEBUG SLEEP 0.2"), 0);
    assert_int_equal(send_words(&f, NULL, NULL, &x[1], "PING"), 0);
    uv_run(&f.loop, UV_RUN_NOWAIT); /* written */
    sl__redis_client_close(f.c, on_closed, &f);
    assert_int_equal(x[0].calls, 1);
    assert_int_equal(x[0].st, SL__REDIS_CLOSING);
    assert_int_equal(x[1].st, SL__REDIS_CLOSING);
    assert_int_equal(send_words(&f, NULL, NULL, &x[2], "PING"), SL__REDIS_CLOSING);
    assert_true(run_until(&f, is_closed, &f, 2000));
    assert_int_equal(x[0].calls, 1);
    f.c = NULL;
    fx_done(&f);

    /* closing from inside a reply callback */
    fx_init(&f);
    client_new(&f, url, NULL);
    closer_t k = {.f = &f};
    const char *argv[1] = {"PING"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl__redis_client_send(f.c, NULL, 0, 1, argv, NULL, NULL, 0, close_in_callback, &k), 0);
    assert_true(run_until(&f, is_closed, &f, 2000));
    assert_int_equal(k.calls, 3);
    f.c = NULL;
    fx_done(&f);

    /* closing a client that never connected (nothing listens) */
    fx_init(&f);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", redis_rig_free_port());
    client_new(&f, url, NULL);
    res_t y = call(&f, NULL, "PING");
    assert_int_equal(y.st, SL__REDIS_DOWN);
    assert_non_null(strstr(sl__redis_client_last_error(f.c), "connect"));
    fx_done(&f);
    redis_rig_stop(&srv);
}

/* ---- Cluster --------------------------------------------------------------------- */

static redis_cluster_t cl;
static bool cl_up;

static int cluster_setup(void **state) {
    (void)state;
    if (system("command -v redis-server > /dev/null 2>&1") != 0)
        return 0;
    uint64_t t0 = now_ms();
    cl_up = redis_rig_cluster_start(&cl, 3, 1, 1000) == 0;
    fprintf(stderr, "cluster of 6 up in %llu ms\n", (unsigned long long)(now_ms() - t0));
    return 0;
}

static int cluster_teardown(void **state) {
    (void)state;
    redis_rig_cluster_stop(&cl);
    return 0;
}

/* The node (index in cl) that serves `slot` as master now. */
static int owner_of(int slot) {
    for (int i = 0; i < cl.n; i++) {
        if (cl.node[i].pid <= 0)
            continue;
        redisReply *r = redis_rig_command(cl.node[i].port, "CLUSTER SLOTS");
        int found = -1;
        for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
            redisReply *e = r->element[k];
            if (e->element[0]->integer <= slot && slot <= e->element[1]->integer) {
                int port = (int)e->element[2]->element[1]->integer;
                for (int j = 0; j < cl.n; j++)
                    if (cl.node[j].port == port)
                        found = j;
            }
        }
        if (r)
            freeReplyObject(r);
        if (found >= 0)
            return found;
    }
    return -1;
}

static void node_id(int i, char *out, size_t cap) {
    redisReply *r = redis_rig_command(cl.node[i].port, "CLUSTER MYID");
    assert_non_null(r);
    snprintf(out, cap, "%s", r->str);
    freeReplyObject(r);
}

static void cluster_routing(void **state) {
    (void)state;
    if (!cl_up)
        skip();
    fx_t f;
    fx_init(&f);
    char url[128];
    /* the seed list starts with a dead address: the next seed is tried */
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d,127.0.0.1:%d", redis_rig_free_port(),
             cl.node[1].port);
    sl__redis_client_options_t o = {.timeout_ms = 1000};
    client_new(&f, url, &o);
    /* 2000 keys over all slots (and so all masters), pipelined */
    enum { N = 2000 };
    static res_t x[N];
    static char keys[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "key:%d", i);
        const char *argv[3] = {"SET", keys[i], keys[i]};
        memset(&x[i], 0, sizeof x[i]);
        assert_int_equal(sl__redis_client_send(f.c, keys[i], strlen(keys[i]), 3, argv, NULL, NULL, 0, on_reply, &x[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_true(run_until(&f, got, &x[i], 5000));
        if (x[i].st != SL__REDIS_OK || strcmp(x[i].str, "OK") != 0)
            fail_msg("SET %s: %d '%s' (%s)", keys[i], x[i].st, x[i].str,
                     sl__redis_client_last_error(f.c));
    }
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_true(st.up);
    assert_int_equal(st.redirects, 0); /* routed right the first time */
    /* each master holds some of them; the sum is all */
    long long total = 0;
    int masters = 0;
    for (int i = 0; i < cl.n; i++) {
        if (!redis_rig_is_master(cl.node[i].port))
            continue;
        redisReply *r = redis_rig_command(cl.node[i].port, "DBSIZE");
        assert_true(r->integer > 0);
        total += r->integer;
        masters++;
        freeReplyObject(r);
    }
    assert_int_equal(masters, 3);
    assert_int_equal(total, N);
    /* hash tags: one slot; key NULL: any node */
    expect_ok(&f, "{user1}.a", "SET {user1}.a 1", "OK");
    expect_ok(&f, "{user1}.b", "SET {user1}.b 2", "OK");
    expect_ok(&f, "{user1}.a", "MGET {user1}.a {user1}.b", NULL);
    expect_ok(&f, NULL, "PING", "PONG");
    expect_ok(&f, "key:7", "GET key:7", "key:7");
    fx_done(&f);
}

/* Moves one slot from its master to another with the cluster's own
 * commands; the client first gets ASK (slot migrating, key already moved),
 * then MOVED (slot moved) and follows both. */
static void cluster_ask_and_moved(void **state) {
    (void)state;
    if (!cl_up)
        skip();
    fx_t f;
    fx_init(&f);
    char url[128];
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", cl.node[0].port);
    sl__redis_client_options_t o = {.timeout_ms = 1000};
    client_new(&f, url, &o);
    const char *key = "moving{m}";
    int slot = sl__redis_key_slot(key, strlen(key));
    expect_ok(&f, key, "SET moving{m} before", "OK"); /* the map is loaded */
    int from = owner_of(slot), to = -1;
    for (int i = 0; i < cl.n && to < 0; i++)
        if (i != from && redis_rig_is_master(cl.node[i].port))
            to = i;
    assert_true(from >= 0 && to >= 0);
    char from_id[64], to_id[64];
    node_id(from, from_id, sizeof from_id);
    node_id(to, to_id, sizeof to_id);
    redisReply *r = redis_rig_command(cl.node[to].port, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redis_rig_command(cl.node[from].port, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redis_rig_command(cl.node[from].port, "MIGRATE 127.0.0.1 %d %s 0 5000", cl.node[to].port, key);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    /* the key is gone from `from`: ASK to `to` */
    expect_ok(&f, key, "GET moving{m}", "before");
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_int_equal(st.redirects, 1);
    /* a script `to` does not have: after ASK, NOSCRIPT, then the load and
     * the command again, which needs ASKING again (else MOVED back) */
    const char *script = "return redis.call('GET', KEYS[1])";
    r = redis_rig_command(cl.node[to].port, "SCRIPT LOAD %s", script);
    char words[128];
    snprintf(words, sizeof words, "EVALSHA %s 1 moving{m}", r->str);
    freeReplyObject(r);
    for (int i = 0; i < cl.n; i++) {
        r = redis_rig_command(cl.node[i].port, "SCRIPT FLUSH");
        freeReplyObject(r);
    }
    res_t x;
    assert_int_equal(send_words(&f, key, script, &x, words), 0);
    assert_true(run_until(&f, got, &x, 3000));
    assert_int_equal(x.st, SL__REDIS_OK);
    assert_string_equal(x.str, "before");
    sl__redis_client_stats(f.c, &st);
    assert_int_equal(st.redirects, 2); /* the ASK only: no MOVED back and forth */
    /* the slot moves for good */
    for (int i = 0; i < cl.n; i++) {
        if (!redis_rig_is_master(cl.node[i].port))
            continue;
        r = redis_rig_command(cl.node[i].port, "CLUSTER SETSLOT %d NODE %s", slot, to_id);
        freeReplyObject(r);
    }
    expect_ok(&f, key, "SET moving{m} after", "OK"); /* MOVED, then the map */
    sl__redis_client_stats(f.c, &st);
    assert_int_equal(st.redirects, 3);
    expect_ok(&f, key, "GET moving{m}", "after");
    sl__redis_client_stats(f.c, &st);
    assert_int_equal(st.redirects, 3); /* the map knows now */
    r = redis_rig_command(cl.node[to].port, "GET %s", key);
    assert_string_equal(r->str, "after");
    freeReplyObject(r);
    fx_done(&f);
}

static void cluster_failover(void **state) {
    (void)state;
    if (!cl_up)
        skip();
    fx_t f;
    fx_init(&f);
    char url[256];
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             cl.node[0].port, cl.node[1].port, cl.node[2].port);
    sl__redis_client_options_t o = {.timeout_ms = 2500, .breaker_failures = 1000};
    client_new(&f, url, &o);
    const char *key = "failing";
    expect_ok(&f, key, "SET failing 1", "OK");
    int victim = owner_of(sl__redis_key_slot(key, strlen(key)));
    assert_true(victim >= 0);
    /* a write a replica has seen (WAIT, on the same connection), then the
     * master dies */
    expect_ok(&f, key, "SET failing 2", "OK");
    res_t w = call(&f, key, "WAIT 1 2000");
    if (w.type != REDIS_REPLY_INTEGER || w.integer != 1)
        fail_msg("WAIT: type %d, %lld '%s'", w.type, w.integer, w.str);
    uint64_t t0 = now_ms();
    redis_rig_kill(&cl.node[victim]);
    bool ok = false;
    int down = 0;
    while (!ok && now_ms() - t0 < 15000) {
        res_t y;
        int rc = send_words(&f, key, NULL, &y, "INCR failing");
        if (rc == 0) {
            assert_true(run_until(&f, got, &y, 2000));
            ok = y.st == SL__REDIS_OK && y.type == REDIS_REPLY_INTEGER;
            down += !ok;
        }
        if (!ok) {
            uv_run(&f.loop, UV_RUN_NOWAIT);
            redis_rig_sleep_ms(50);
            uv_update_time(&f.loop);
            static uint64_t last;
            if (getenv("DEBUG_FAILOVER") && now_ms() - last > 1000) {
                last = now_ms();
                sl__redis_client_stats_t st;
                sl__redis_client_stats(f.c, &st);
                fprintf(stderr, "rc=%d up=%d last=%s owner=%d\n", rc, st.up,
                        sl__redis_client_last_error(f.c), owner_of(sl__redis_key_slot(key, strlen(key))));
            }
        }
    }
    fprintf(stderr, "writes resumed %llu ms after the master died (%d failed meanwhile)\n",
            (unsigned long long)(now_ms() - t0), down);
    assert_true(ok);
    assert_true(down > 0);
    expect_ok(&f, key, "GET failing", "3");
    fx_done(&f);
}

/* ---- Sentinel ---------------------------------------------------------------------- */

/* GET key in db 2 of the server on port, as a number (-1: none). A fresh
 * connection each time: a failover kills the clients of both servers. */
static long long get_db2(int port, const char *key) {
    redisContext *c = redis_rig_connect(port);
    if (c == NULL)
        return -1;
    redisReply *r = redisCommand(c, "SELECT 2");
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "GET %s", key);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return v;
}

static void sentinel_failover(void **state) {
    (void)state;
    skip_without_redis();
    redis_sentinel_set_t s;
    uint64_t t0 = now_ms();
    assert_int_equal(redis_rig_sentinel_start(&s, 1, 1000), 0);
    fprintf(stderr, "sentinel set up in %llu ms\n", (unsigned long long)(now_ms() - t0));
    fx_t f;
    fx_init(&f);
    char url[128];
    /* one sentinel: a majority of one (dead sentinels count against the
     * majority: test_redis_sentinel.c) */
    snprintf(url, sizeof url, "sentinel://127.0.0.1:%d/mymaster?db=2", s.sentinel[0].port);
    sl__redis_client_options_t o = {.timeout_ms = 500, .breaker_failures = 1000};
    client_new(&f, url, &o);
    expect_ok(&f, "x", "SET x 1", "OK");
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_true(st.up);
    redisReply *r = redis_rig_command(s.master.port, "SELECT 2");
    freeReplyObject(r);

    /* failover: the replica becomes the master, the client follows */
    t0 = now_ms();
    bool started = false;
    while (!started && now_ms() - t0 < 10000) {
        r = redis_rig_command(s.sentinel[0].port, "SENTINEL FAILOVER mymaster");
        started = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!started)
            redis_rig_sleep_ms(100);
    }
    assert_true(started);
    bool ok = false;
    int failed = 0;
    while (!ok && now_ms() - t0 < 20000) {
        /* done when an INCR sent after the replica became a master (so
         * replicates from nobody) is seen there */
        bool promoted = redis_rig_is_master(s.replica.port);
        res_t y;
        int rc = send_words(&f, "x", NULL, &y, "INCR x");
        if (rc == 0) {
            assert_true(run_until(&f, got, &y, 3000));
            if (y.st != SL__REDIS_OK || y.type != REDIS_REPLY_INTEGER) {
                failed++;
            } else if (promoted) {
                long long there = get_db2(s.replica.port, "x");
                ok = there == y.integer;
                if (getenv("DEBUG_FAILOVER"))
                    fprintf(stderr, "INCR %lld, new master has %lld (%s)\n", y.integer, there,
                            sl__redis_client_last_error(f.c));
            }
        }
        if (!ok) {
            uv_run(&f.loop, UV_RUN_NOWAIT);
            redis_rig_sleep_ms(50);
            uv_update_time(&f.loop);
        }
    }
    fprintf(stderr, "following the failover took %llu ms (%d commands failed)\n",
            (unsigned long long)(now_ms() - t0), failed);
    assert_true(ok);
    /* the writes now land on the old replica, in db 2 */
    expect_ok(&f, "x", "SET x 1000", "OK");
    assert_int_equal(get_db2(s.replica.port, "x"), 1000);
    fx_done(&f);
    redis_rig_sentinel_stop(&s);
}

/* No sentinel answers: commands wait for discovery until their deadline. */
static void sentinel_unreachable(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f);
    char url[128];
    snprintf(url, sizeof url, "sentinel://127.0.0.1:%d,127.0.0.1:%d/mymaster",
             redis_rig_free_port(), redis_rig_free_port());
    sl__redis_client_options_t o = {.timeout_ms = 200};
    client_new(&f, url, &o);
    res_t x = call(&f, "k", "GET k");
    assert_int_equal(x.st, SL__REDIS_TIMEOUT);
    assert_true(x.done_ms - x.sent_ms >= 195 && x.done_ms - x.sent_ms < 300);
    assert_non_null(strstr(sl__redis_client_last_error(f.c), "SENTINEL"));
    sl__redis_client_stats_t st;
    sl__redis_client_stats(f.c, &st);
    assert_false(st.up);
    fx_done(&f);
}

int main(void) {
    const struct CMUnitTest standalone[] = {
        cmocka_unit_test(standalone_commands), cmocka_unit_test(pipeline_10k),
        cmocka_unit_test(auth_and_select),     cmocka_unit_test(deadlines),
        cmocka_unit_test(connect_timeout),     cmocka_unit_test(kill_and_restart),
        cmocka_unit_test(noscript),            cmocka_unit_test(close_pending),
    };
    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(cluster_routing),
        cmocka_unit_test(cluster_ask_and_moved),
        cmocka_unit_test(cluster_failover),
    };
    const struct CMUnitTest sentinel[] = {
        cmocka_unit_test(sentinel_unreachable),
        cmocka_unit_test(sentinel_failover),
    };
    signal(SIGPIPE, SIG_IGN);
    int failed = cmocka_run_group_tests_name("standalone", standalone, NULL, NULL);
    failed += cmocka_run_group_tests_name("cluster", cluster, cluster_setup, cluster_teardown);
    failed += cmocka_run_group_tests_name("sentinel", sentinel, NULL, NULL);
    return failed;
}
