/* test_auth.c -- the RESP front's password (src/server/resp/auth.c): which
 * commands pass the gate before AUTH, Redis's exact replies, both AUTH
 * forms, user names compared exactly, failures counted, and Redis 6+'s
 * answer without a password. The client is built by hand: no daemon runs. */
#include "rig.h"
#include "server/daemon/front_config.h"
#include "server/resp/auth.h"

#define PASS "correct-horse-battery-staple"

typedef struct fixture {
    sld_daemon_t d;
    sld_config_t *cfg;
    sld_runtime_t rt;
    sld_buf_t out;
    sld_client_t c;
} fixture_t;

static fixture_t *fixture(const char *requirepass) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    /* the password as the RESP front registers it (resp/resp_config.c) */
    char yaml[256], err[SLD_MAX_ERROR];
    snprintf(yaml, sizeof yaml, "%s%s%spolicies: [{name: a, limits: [{algorithm: gcra, limit: 1, period: 1s}]}]\n",
             requirepass ? "requirepass: " : "", requirepass ? requirepass : "", requirepass ? "\n" : "");
    assert_int_equal(sld_config_parse("test.yaml", yaml, strlen(yaml), &f->cfg, err, sizeof err), SL_OK);
    f->rt.cfg = f->cfg;
    f->c = (sld_client_t){.d = &f->d, .rt = &f->rt, .out = &f->out};
    return f;
}

static void done(fixture_t *f) {
    sld_config_free(f->cfg);
    sld_buf_free(&f->out);
    free(f);
}

/* Runs `words` (space-separated) through the gate and, when it passes and
 * is AUTH, the command; returns what was written (and clears it). */
static const char *run(fixture_t *f, const char *line) {
    static char copy[256], reply[512];
    sld_arg_t argv[8];
    size_t argc = 0;
    snprintf(copy, sizeof copy, "%s", line);
    for (char *w = strtok(copy, " "); w && argc < 8; w = strtok(NULL, " "))
        argv[argc++] = (sld_arg_t){.ptr = w, .len = strlen(w)};
    if (sld_auth_gate(&f->c, argv, argc)) {
        if (sld_arg_is(&argv[0], "AUTH"))
            sld_cmd_auth(&f->c, argv, argc);
        else
            sld_buf_append_lit(&f->out, "passed");
    }
    snprintf(reply, sizeof reply, "%.*s", (int)f->out.len, f->out.data ? f->out.data : "");
    sld_buf_reset(&f->out);
    return reply;
}

static void test_gate_before_auth(void **state) {
    (void)state;
    fixture_t *f = fixture(PASS);
    assert_string_equal(run(f, "SL.CHECK p k"), "-NOAUTH Authentication required.\r\n");
    assert_string_equal(run(f, "nosuchcommand"), "-NOAUTH Authentication required.\r\n");
    assert_string_equal(run(f, "ping"), "passed");
    assert_string_equal(run(f, "QUIT"), "passed");
    assert_string_equal(run(f, "HELLO 3 AUTH default x"), "passed"); /* HELLO checks it */
    assert_true(strncmp(run(f, "HELLO 3"), "-NOAUTH HELLO must be called", 28) == 0);
    assert_true(strncmp(run(f, "HELLO 3 AUTH default"), "-NOAUTH", 7) == 0); /* no password */
    assert_false(f->c.authed);
    assert_int_equal(atomic_load(&f->d.stats.auth_failures), 0);
    done(f);
}

static void test_auth_forms(void **state) {
    (void)state;
    fixture_t *f = fixture(PASS);
    assert_string_equal(run(f, "AUTH " PASS), "+OK\r\n");
    assert_true(f->c.authed);
    assert_string_equal(run(f, "SL.CHECK p k"), "passed");
    done(f);
    f = fixture(PASS);
    assert_string_equal(run(f, "AUTH default " PASS), "+OK\r\n");
    assert_string_equal(run(f, "INFO"), "passed");
    done(f);
}

static void test_wrong_passwords_and_users(void **state) {
    (void)state;
    fixture_t *f = fixture(PASS);
    const char *wrong = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    assert_string_equal(run(f, "AUTH nope"), wrong);
    assert_string_equal(run(f, "AUTH " PASS "x"), wrong);              /* longer */
    assert_string_equal(run(f, "AUTH correct-horse-battery-stapl"), wrong); /* shorter */
    assert_string_equal(run(f, "AUTH Default " PASS), wrong);          /* names are exact */
    assert_string_equal(run(f, "AUTH alice " PASS), wrong);
    assert_string_equal(run(f, "AUTH a b c"), "-ERR syntax error\r\n"); /* not counted */
    assert_false(f->c.authed);
    assert_int_equal(atomic_load(&f->d.stats.auth_failures), 5);
    assert_string_equal(run(f, "AUTH " PASS), "+OK\r\n"); /* may try again */
    done(f);
}

static void test_check_for_hello(void **state) {
    (void)state;
    fixture_t *f = fixture(PASS);
    sld_arg_t user = {.ptr = "default", .len = 7}, pass = {.ptr = PASS, .len = strlen(PASS)};
    sld_arg_t bad = {.ptr = "x", .len = 1};
    assert_int_equal(sld_auth_check(&f->c, &user, &bad), SL_EINVAL);
    assert_true(f->out.len > 0 && strncmp(f->out.data, "-WRONGPASS", 10) == 0);
    sld_buf_reset(&f->out);
    assert_int_equal(sld_auth_check(&f->c, &user, &pass), SL_OK);
    assert_int_equal(f->out.len, 0); /* nothing written: HELLO replies */
    assert_true(f->c.authed);
    done(f);
}

static void test_without_password(void **state) {
    (void)state;
    fixture_t *f = fixture(NULL);
    assert_string_equal(run(f, "SL.CHECK p k"), "passed");
    assert_string_equal(run(f, "AUTH default anything"), "+OK\r\n");
    assert_string_equal(run(f, "AUTH anything"), "+OK\r\n");
    assert_true(strncmp(run(f, "AUTH bob anything"), "-WRONGPASS", 10) == 0);
    done(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_before_auth),
        cmocka_unit_test(test_auth_forms),
        cmocka_unit_test(test_wrong_passwords_and_users),
        cmocka_unit_test(test_check_for_hello),
        cmocka_unit_test(test_without_password),
    };
    if (sld_daemon_config_register() != SL_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
