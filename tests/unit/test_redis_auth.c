/* test_redis_auth.c -- a Redis that wants a password the client does not
 * give (NOAUTH) is a store that is down, not one that answers with errors
 * (src/store/redis/client.c): commands fail as DOWN or TIMEOUT, the client
 * is not up, its last error says NOAUTH; once the server stops asking for
 * a password, the client is up again on its own. Against a real
 * redis-server on a loopback port.
 */
#include <signal.h>

#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */

#include "rig.h"
#include "redis_rig.h"
#include "client_rig.h"
#include "store/redis/client.h"

static rig_reply_t ping(fx_t *f) {
    rig_reply_t x = {0};
    const char *argv[1] = {"PING"};
    int rc = sl__redis_client_send(f->c, NULL, 0, 1, argv, NULL, NULL, 0, rig_on_reply, &x);
    if (rc != 0) {
        x.st = (sl__redis_status_t)rc;
        return x;
    }
    assert_true(run_until(f, rig_got, &x, 3000));
    return x;
}

static bool up(void *arg) {
    sl__redis_client_stats_t st;
    sl__redis_client_stats(((fx_t *)arg)->c, &st);
    return st.up;
}

static void noauth_is_down(void **state) {
    (void)state;
    if (system("command -v redis-server > /dev/null 2>&1") != 0)
        skip();
    redis_proc_t srv;
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    redisReply *r = redis_rig_command(srv.port, "CONFIG SET requirepass s3cret");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);

    fx_t f;
    memset(&f, 0, sizeof f);
    assert_int_equal(uv_loop_init(&f.loop), 0);
    uv_timer_init(&f.loop, &f.tick);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv.port); /* no password */
    sl__redis_url_t u;
    char err[128];
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 300, .breaker_failures = 1000};
    assert_int_equal(sl__redis_client_new(&f.loop, &u, &o, &f.c), 0);

    /* not an answer: a failure, with the reason */
    rig_reply_t x = ping(&f);
    if (x.st == SL__REDIS_OK)
        fail_msg("PING answered (%s) by a server that wants a password", x.str);
    assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    assert_non_null(strstr(sl__redis_client_last_error(f.c), "NOAUTH"));
    assert_false(up(&f));

    /* the server stops asking: up again without a restart */
    struct timeval tv = {1, 0};
    redisContext *sync = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
    assert_true(sync && !sync->err);
    r = redisCommand(sync, "AUTH s3cret");
    freeReplyObject(r);
    r = redisCommand(sync, "CONFIG SET requirepass %s", "");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(sync);
    assert_true(run_until(&f, up, &f, 3000));
    x = ping(&f);
    assert_int_equal(x.st, SL__REDIS_OK);
    assert_string_equal(x.str, "PONG");

    sl__redis_client_close(f.c, on_closed, &f);
    assert_true(run_until(&f, is_closed, &f, 3000));
    uv_close((uv_handle_t *)&f.tick, NULL);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f.loop), 0);
    redis_rig_stop(&srv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(noauth_is_down),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
