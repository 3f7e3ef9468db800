/* test_redis_resolve.c -- host names to address lists (src/store/redis/
 * resolve.c) and the client walking them (client.c): with a test resolver
 * giving a name a dead ::1 first and 127.0.0.1 second (Debian's
 * `localhost`), the client reaches a redis-server bound to 127.0.0.1; when
 * every address fails, one error names the host and each address with its
 * reason; a name is looked up again at each connection round. Nothing here
 * assumes what `localhost` resolves to.
 */
#include <signal.h>

#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */

#include "rig.h"
#include "redis_rig.h"
#include "client_rig.h"
#include "store/redis/client.h"
#include "store/redis/resolve.h"

/* ---- the test resolver ---------------------------------------------------------------------- */

static int hook_calls;
static const char *moving_to = "127.0.0.2"; /* moving.test's one address, for now */

static int test_hook(const char *host, sl__resolved_t *out) {
    hook_calls++;
    out->n = 0;
    if (strcmp(host, "dual.test") == 0) {
        snprintf(out->addr[out->n++], SL__RESOLVE_ADDR_LEN, "::1");
        snprintf(out->addr[out->n++], SL__RESOLVE_ADDR_LEN, "127.0.0.1");
        return 0;
    }
    if (strcmp(host, "moving.test") == 0) {
        snprintf(out->addr[out->n++], SL__RESOLVE_ADDR_LEN, "%s", moving_to);
        return 0;
    }
    if (strcmp(host, "nx.test") == 0)
        return -1;
    return 1; /* the system's answer */
}

/* ---- pure and blocking -------------------------------------------------------------------- */

static void numeric_and_lists(void **state) {
    (void)state;
    assert_true(sl__resolve_is_numeric("127.0.0.1"));
    assert_true(sl__resolve_is_numeric("::1"));
    assert_true(sl__resolve_is_numeric("fe80::1"));
    assert_false(sl__resolve_is_numeric("localhost"));
    assert_false(sl__resolve_is_numeric("[::1]")); /* brackets are the URL's, not the address's */
    assert_false(sl__resolve_is_numeric(""));
    sl__resolved_t r;
    char err[128], buf[128];
    assert_int_equal(sl__resolve_now("10.1.2.3", &r, err, sizeof err), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.addr[0], "10.1.2.3");
    sl__resolve_set_hook(test_hook);
    assert_int_equal(sl__resolve_now("dual.test", &r, err, sizeof err), 0);
    assert_string_equal(sl__resolve_format(&r, buf, sizeof buf), "::1, 127.0.0.1");
    assert_int_equal(sl__resolve_now("nx.test", &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot resolve nx.test"));
    /* the system resolver: localhost has at least one address, whichever */
    assert_int_equal(sl__resolve_now("localhost", &r, err, sizeof err), 0);
    assert_true(r.n >= 1);
    for (size_t i = 0; i < r.n; i++)
        assert_true(sl__resolve_is_numeric(r.addr[i]));
    assert_int_equal(sl__resolve_now("no-such-host.invalid", &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot resolve no-such-host.invalid"));
    /* a list too short for its text is cut, not overrun */
    assert_int_equal(sl__resolve_now("dual.test", &r, err, sizeof err), 0);
    char tiny[6];
    assert_string_equal(sl__resolve_format(&r, tiny, sizeof tiny), "::1, ");
    sl__resolve_set_hook(NULL);
}

/* ---- on a loop ------------------------------------------------------------------------------ */

typedef struct answer {
    int calls, rc;
    sl__resolved_t addrs;
    char err[200];
} answer_t;

static void on_answer(void *arg, int rc, const sl__resolved_t *addrs, const char *err) {
    answer_t *a = arg;
    a->calls++;
    a->rc = rc;
    if (addrs)
        a->addrs = *addrs;
    if (err)
        snprintf(a->err, sizeof a->err, "%s", err);
}

static void on_cancelled(void *arg) { ++*(int *)arg; }

static void asynchronous(void **state) {
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    sl__resolve_set_hook(test_hook);
    answer_t a = {0}, b = {0}, c = {0}, d = {0};
    assert_non_null(sl__resolve_start(&loop, "dual.test", on_answer, &a));
    assert_non_null(sl__resolve_start(&loop, "::1", on_answer, &b));
    assert_non_null(sl__resolve_start(&loop, "nx.test", on_answer, &c));
    assert_int_equal(a.calls + b.calls + c.calls, 0); /* never from inside the call */
    /* cancelled: no answer, and done when it is gone */
    int cancelled = 0;
    sl__resolve_req_t *q = sl__resolve_start(&loop, "dual.test", on_answer, &d);
    sl__resolve_cancel(q, on_cancelled, &cancelled);
    sl__resolve_set_hook(NULL);
    answer_t sys = {0};
    assert_non_null(sl__resolve_start(&loop, "localhost", on_answer, &sys));
    int sys_cancelled = 0;
    answer_t gone = {0};
    q = sl__resolve_start(&loop, "localhost", on_answer, &gone);
    sl__resolve_cancel(q, on_cancelled, &sys_cancelled);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.addrs.n, 2);
    assert_string_equal(a.addrs.addr[0], "::1");
    assert_int_equal(b.calls, 1);
    assert_string_equal(b.addrs.addr[0], "::1");
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.rc, -1);
    assert_non_null(strstr(c.err, "nx.test"));
    assert_int_equal(d.calls, 0);
    assert_int_equal(cancelled, 1);
    assert_int_equal(sys.calls, 1);
    assert_int_equal(sys.rc, 0);
    assert_int_equal(gone.calls, 0);
    assert_int_equal(sys_cancelled, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the client walking the list ------------------------------------------------------------ */

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

static void fx_start(fx_t *f, const char *host, int port) {
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->tick);
    char url[128];
    snprintf(url, sizeof url, "redis://%s:%d", host, port);
    sl__redis_url_t u;
    char err[128];
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 500, .breaker_failures = 1000};
    assert_int_equal(sl__redis_client_new(&f->loop, &u, &o, &f->c), 0);
}

static void skip_without_redis(void) {
    if (system("command -v redis-server > /dev/null 2>&1") != 0) {
        fprintf(stderr, "redis-server not installed\n");
        skip();
    }
}

static bool up(void *arg) {
    sl__redis_client_stats_t st;
    sl__redis_client_stats(((fx_t *)arg)->c, &st);
    return st.up;
}

static bool failed_round(void *arg) {
    return strstr(sl__redis_client_last_error(((fx_t *)arg)->c), "127.0.0.1 (") != NULL;
}

static void client_walks_every_address(void **state) {
    (void)state;
    skip_without_redis();
    redis_proc_t srv; /* bound to 127.0.0.1 only */
    assert_int_equal(redis_rig_start(&srv, NULL), 0);
    sl__resolve_set_hook(test_hook);

    /* ::1 first, where nothing listens: the next address is tried */
    fx_t f;
    fx_start(&f, "dual.test", srv.port);
    rig_reply_t x = ping(&f);
    if (x.st != SL__REDIS_OK || strcmp(x.str, "PONG") != 0)
        fail_msg("PING: %d '%s' (%s)", x.st, x.str, sl__redis_client_last_error(f.c));
    assert_true(up(&f));
    fx_done(&f);

    /* every address dead: one error with the host and each address */
    int dead = redis_rig_free_port();
    fx_start(&f, "dual.test", dead);
    x = ping(&f);
    assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    assert_true(run_until(&f, failed_round, &f, 2000));
    const char *why = sl__redis_client_last_error(f.c);
    char want[64];
    snprintf(want, sizeof want, "connect dual.test:%d: ::1 (", dead);
    if (strstr(why, want) == NULL || strstr(why, "; 127.0.0.1 (") == NULL)
        fail_msg("last error: %s", why);
    assert_false(up(&f));
    fx_done(&f);

    /* a name that does not resolve */
    fx_start(&f, "nx.test", srv.port);
    x = ping(&f);
    assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    assert_non_null(strstr(sl__redis_client_last_error(f.c), "cannot resolve nx.test"));
    fx_done(&f);

    /* looked up again at each round: the name moves to where the server is */
    moving_to = "127.0.0.2"; /* nothing listens there on this port */
    int calls_before = hook_calls;
    fx_start(&f, "moving.test", srv.port);
    x = ping(&f);
    assert_true(x.st == SL__REDIS_DOWN || x.st == SL__REDIS_TIMEOUT);
    moving_to = "127.0.0.1";
    assert_true(run_until(&f, up, &f, 3000));
    assert_true(hook_calls - calls_before >= 2);
    x = ping(&f);
    assert_int_equal(x.st, SL__REDIS_OK);
    fx_done(&f);

    sl__resolve_set_hook(NULL);
    redis_rig_stop(&srv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numeric_and_lists),
        cmocka_unit_test(asynchronous),
        cmocka_unit_test(client_walks_every_address),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
