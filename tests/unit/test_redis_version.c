/* test_redis_version.c -- the Redis client refuses a server older than the
 * evaluation script needs (SET ... PXAT: Redis 6.2) at connection time,
 * naming its version, instead of failing every decision with a syntax
 * error from inside the script; a server that does not answer INFO is
 * taken on trust. Scripted servers (redis_fake.h) on the test's loop.
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

/* What the fake answers to INFO: a version, or NULL for an ACL refusal. */
static const char *version;

static char *handler(fake_redis_t *f, fake_conn_t *c, int argc, char **argv) {
    (void)f;
    (void)c;
    if (argc >= 1 && strcasecmp(argv[0], "PING") == 0)
        return fake_fmt("+PONG\r\n");
    if (argc >= 1 && strcasecmp(argv[0], "INFO") == 0) {
        if (version == NULL)
            return fake_fmt("-NOPERM this user has no permissions to run the 'info' command\r\n");
        char body[128];
        int n = snprintf(body, sizeof body, "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\n", version);
        return fake_fmt("$%d\r\n%s\r\n", n, body);
    }
    if (argc >= 2 && strcasecmp(argv[0], "GET") == 0)
        return fake_fmt("$1\r\nv\r\n");
    return fake_fmt("-ERR unknown command\r\n");
}

static bool fake_gone(void *arg) { return fake_redis_closed(arg); }

/* One GET against a fake answering INFO with v; its result, and the
 * client's last error in err. */
static rig_reply_t get_against(const char *v, char *err, size_t err_len) {
    fx_t f;
    fake_redis_t fake;
    memset(&fake, 0, sizeof fake);
    fx_init(&f);
    version = v;
    assert_int_equal(fake_redis_start(&fake, &f.loop, handler, NULL), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake.port);
    sl__redis_url_t u;
    char perr[128];
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, perr, sizeof perr), 0);
    sl__redis_client_options_t o = {.timeout_ms = 300, .breaker_failures = 1000};
    assert_int_equal(sl__redis_client_new(&f.loop, &u, &o, &f.c), 0);
    rig_reply_t x;
    memset(&x, 0, sizeof x);
    const char *argv[2] = {"GET", "k"};
    assert_int_equal(sl__redis_client_send(f.c, "k", 1, 2, argv, NULL, NULL, 0, rig_on_reply, &x), 0);
    assert_true(run_until(&f, rig_got, &x, 3000));
    const char *last = sl__redis_client_last_error(f.c);
    snprintf(err, err_len, "%s", last ? last : "");
    sl__redis_client_close(f.c, on_closed, &f);
    assert_true(run_until(&f, is_closed, &f, 3000));
    f.c = NULL;
    fake_redis_stop(&fake);
    assert_true(run_until(&f, fake_gone, &fake, 3000));
    fake_redis_free(&fake);
    fx_done(&f);
    return x;
}

static void a_server_older_than_6_2_is_refused_with_its_version(void **state) {
    (void)state;
    char err[512];
    rig_reply_t x = get_against("6.0.16", err, sizeof err);
    assert_int_not_equal(x.st, SL__REDIS_OK);
    if (strstr(err, "Redis 6.0 is too old: the Redis store needs 6.2 or later") == NULL)
        fail_msg("last error: '%s'", err);
}

static void a_6_2_server_is_used(void **state) {
    (void)state;
    char err[512];
    rig_reply_t x = get_against("6.2.0", err, sizeof err);
    assert_int_equal(x.st, SL__REDIS_OK);
    assert_string_equal(x.str, "v");
}

static void a_server_that_does_not_answer_info_is_trusted(void **state) {
    (void)state;
    char err[512];
    rig_reply_t x = get_against(NULL, err, sizeof err);
    assert_int_equal(x.st, SL__REDIS_OK);
    assert_string_equal(x.str, "v");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_server_older_than_6_2_is_refused_with_its_version),
        cmocka_unit_test(a_6_2_server_is_used),
        cmocka_unit_test(a_server_that_does_not_answer_info_is_trusted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
