/* test_redis_calls.c -- the calls whose replies src/store/redis/ reads for
 * the daemon, against a real redis-server: a batch evaluation answered one
 * decision per request, in order (evaluate_call.c), an error reply and no
 * answer made unusable with a reason; the plain commands' answers
 * (command.c: integer, GET, HGETALL); and the rules kept in Redis
 * (rules_feed.c): shared by one client, followed by a feed through the
 * version and the channel. Every wait is bounded.
 */
#include <signal.h>
#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */
#include "rig.h"
#include "redis_rig.h"
#include "client_rig.h"
#include "store/redis/command.h"
#include "store/redis/evaluate_call.h"
#include "store/redis/rules_feed.h"

typedef struct answer {
    int calls;
    sl__redis_status_t status;
    int rc;
    sl_decision_t d;
    char why[SL__REDIS_EVAL_WHY_LEN];
} answer_t;

typedef struct calls {
    answer_t a[SL__REDIS_MAX_BATCH];
    size_t order[SL__REDIS_MAX_BATCH]; /* i of each callback, in call order */
    size_t n, want;
} calls_t;

static void on_eval(void *arg, size_t i, sl__redis_status_t status, int rc, const sl_decision_t *d,
                    const sl_limit_report_t *limits, const char *why) {
    (void)limits;
    calls_t *c = arg;
    answer_t *a = &c->a[i];
    a->calls++;
    a->status = status;
    a->rc = rc;
    if (d)
        a->d = *d;
    snprintf(a->why, sizeof a->why, "%s", why ? why : "");
    c->order[c->n++] = i;
}

static bool all_answered(void *arg) {
    calls_t *c = arg;
    return c->n >= c->want;
}

static void client_on(fx_t *f, int port, uint32_t timeout_ms) {
    fx_init(f);
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    static sl__redis_url_t u; /* the client keeps a pointer to it */
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = timeout_ms};
    assert_int_equal(sl__redis_client_new(&f->loop, &u, &o, &f->c), 0);
}

static sl_policy_t *policy(const char *name, uint64_t limit) {
    sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = limit, .period = SEC(60)};
    sl_policy_config_t cfg = {.name = name, .limits = &l, .nlimits = 1};
    sl_policy_t *p = NULL;
    char why[256];
    assert_int_equal(sl_policy_new(&cfg, &p, why, sizeof why), SL_OK);
    return p;
}

/* Three requests, two on one key: one call, three decisions in order, the
 * second on the key seeing the first's charge. */
static void a_batch_is_answered_in_order(void **state) {
    (void)state;
    fx_t f;
    client_on(&f, redis_rig_group.port, 1000);
    sl_policy_t *p = policy("calls_batch", 2);
    sl__redis_eval_req_t reqs[3] = {{.p = p, .key = "a", .key_len = 1, .cost = 2},
                                    {.p = p, .key = "b", .key_len = 1, .cost = 1},
                                    {.p = p, .key = "a", .key_len = 1, .cost = 1}};
    calls_t c = {.want = 3};
    assert_int_equal(sl__redis_evaluate_send(f.c, reqs, 3, SEC(1000), on_eval, &c), 0);
    assert_true(run_until(&f, all_answered, &c, 3000));
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(c.order[i], i);
        assert_int_equal(c.a[i].calls, 1);
        assert_int_equal(c.a[i].status, SL__REDIS_OK);
        assert_int_equal(c.a[i].rc, SL_OK);
    }
    assert_true(c.a[0].d.allowed);
    assert_int_equal(c.a[0].d.remaining, 0);
    assert_true(c.a[1].d.allowed);
    assert_false(c.a[2].d.allowed);

    /* one request alone goes the single way */
    calls_t one = {.want = 1};
    assert_int_equal(sl__redis_evaluate_send(f.c, &reqs[1], 1, SEC(1000), on_eval, &one), 0);
    assert_true(run_until(&f, all_answered, &one, 3000));
    assert_int_equal(one.a[0].rc, SL_OK);
    assert_true(one.a[0].d.allowed);
    assert_int_equal(one.a[0].d.remaining, 0);

    /* nothing to send: refused, no callback */
    assert_int_equal(sl__redis_evaluate_send(f.c, reqs, 0, SEC(1000), on_eval, &one), -1);
    sl_policy_free(p);
    fx_done(&f);
}

/* Redis refuses the call (the user may not run scripts): every request of
 * it is unusable, with the reason and Redis's error text. */
static void an_error_reply_is_unusable_with_its_text(void **state) {
    (void)state;
    fx_t f;
    client_on(&f, redis_rig_group.port, 1000);
    sl_policy_t *p = policy("calls_error", 5);
    sl__redis_eval_req_t req = {.p = p, .key = "x", .key_len = 1, .cost = 1};
    calls_t probe = {.want = 1}; /* connected, and the script loaded */
    assert_int_equal(sl__redis_evaluate_send(f.c, &req, 1, SEC(1000), on_eval, &probe), 0);
    assert_true(run_until(&f, all_answered, &probe, 3000));
    assert_int_equal(probe.a[0].rc, SL_OK);
    freeReplyObject(redis_rig_command(redis_rig_group.port, "ACL SETUSER default -evalsha -eval"));
    sl__redis_eval_req_t reqs[2] = {req, req};
    calls_t c = {.want = 2};
    assert_int_equal(sl__redis_evaluate_send(f.c, reqs, 2, SEC(1000), on_eval, &c), 0);
    bool answered = run_until(&f, all_answered, &c, 3000);
    freeReplyObject(redis_rig_command(redis_rig_group.port, "ACL SETUSER default +@all"));
    assert_true(answered);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(c.a[i].calls, 1);
        assert_int_equal(c.a[i].status, SL__REDIS_OK);
        assert_int_equal(c.a[i].rc, SL_EIO);
        if (strstr(c.a[i].why, "NOPERM") == NULL)
            fail_msg("why: %s", c.a[i].why);
    }
    sl_policy_free(p);
    fx_done(&f);
}

/* Nothing listens: each request comes back unusable with the status, and
 * no reason (there is no reply to blame). */
static void no_answer_is_unusable(void **state) {
    (void)state;
    fx_t f;
    client_on(&f, redis_rig_free_port(), 100);
    sl_policy_t *p = policy("calls_down", 5);
    sl__redis_eval_req_t reqs[2] = {{.p = p, .key = "a", .key_len = 1, .cost = 1},
                                    {.p = p, .key = "b", .key_len = 1, .cost = 1}};
    calls_t c = {.want = 2};
    int st = sl__redis_evaluate_send(f.c, reqs, 2, SEC(1000), on_eval, &c);
    if (st == 0) {
        assert_true(run_until(&f, all_answered, &c, 3000));
        for (size_t i = 0; i < 2; i++) {
            assert_int_equal(c.a[i].calls, 1);
            assert_int_not_equal(c.a[i].status, SL__REDIS_OK);
            assert_int_equal(c.a[i].rc, SL_EIO);
            assert_string_equal(c.a[i].why, "");
        }
    } else {
        assert_true(st > 0); /* refused at once: known down */
        assert_int_equal(c.n, 0);
    }
    sl_policy_free(p);
    fx_done(&f);
}

/* ---- plain commands --------------------------------------------------------------------------- */

typedef struct plain {
    int calls;
    bool ok;
    long long value;
    char str[64];
    bool has_str;
    size_t nfields;
    char fields[8][2][32];
} plain_t;

static bool plain_done(void *arg) { return ((plain_t *)arg)->calls > 0; }

static void on_int(void *arg, sl__redis_status_t status, bool ok, long long value) {
    (void)status;
    plain_t *p = arg;
    p->calls++;
    p->ok = ok;
    p->value = value;
}

static void on_string(void *arg, sl__redis_status_t status, bool ok, const char *str, size_t len) {
    (void)status;
    plain_t *p = arg;
    p->calls++;
    p->ok = ok;
    p->has_str = str != NULL;
    if (str)
        snprintf(p->str, sizeof p->str, "%.*s", (int)len, str);
}

static void on_hash(void *arg, sl__redis_status_t status, bool ok, const sl__redis_field_t *fields,
                    size_t n) {
    (void)status;
    plain_t *p = arg;
    p->calls++;
    p->ok = ok;
    p->nfields = n;
    for (size_t i = 0; i < n && i < 8; i++) {
        snprintf(p->fields[i][0], 32, "%.*s", (int)fields[i].name_len, fields[i].name);
        snprintf(p->fields[i][1], 32, "%.*s", (int)fields[i].value_len, fields[i].value);
    }
}

static plain_t send_int(fx_t *f, int argc, const char *const *argv) {
    size_t len[4];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    plain_t p = {0};
    assert_int_equal(sl__redis_send_int(f->c, argv[1], len[1], argc, argv, len, on_int, &p), 0);
    assert_true(run_until(f, plain_done, &p, 3000));
    return p;
}

static void plain_commands_are_read(void **state) {
    (void)state;
    fx_t f;
    client_on(&f, redis_rig_group.port, 1000);
    plain_t p = send_int(&f, 2, (const char *const[]){"INCR", "calls:n"});
    assert_true(p.ok);
    assert_int_equal(p.value, 1);
    p = send_int(&f, 2, (const char *const[]){"GET", "calls:n"}); /* a string, not an integer */
    assert_false(p.ok);

    plain_t g = {0};
    assert_int_equal(sl__redis_send_get(f.c, "calls:n", 7, on_string, &g), 0);
    assert_true(run_until(&f, plain_done, &g, 3000));
    assert_true(g.ok && g.has_str);
    assert_string_equal(g.str, "1");
    plain_t none = {0};
    assert_int_equal(sl__redis_send_get(f.c, "calls:none", 10, on_string, &none), 0);
    assert_true(run_until(&f, plain_done, &none, 3000));
    assert_true(none.ok);
    assert_false(none.has_str);

    p = send_int(&f, 4, (const char *const[]){"HSET", "calls:h", "one", "1"});
    assert_true(p.ok);
    p = send_int(&f, 4, (const char *const[]){"HSET", "calls:h", "two", ""});
    assert_true(p.ok);
    plain_t h = {0};
    assert_int_equal(sl__redis_send_hgetall(f.c, "calls:h", 7, 8, on_hash, &h), 0);
    assert_true(run_until(&f, plain_done, &h, 3000));
    assert_true(h.ok);
    assert_int_equal(h.nfields, 2);
    bool one = false, two = false;
    for (size_t i = 0; i < 2; i++) {
        one = one || (strcmp(h.fields[i][0], "one") == 0 && strcmp(h.fields[i][1], "1") == 0);
        two = two || (strcmp(h.fields[i][0], "two") == 0 && strcmp(h.fields[i][1], "") == 0);
    }
    assert_true(one && two);
    /* more fields than allowed, or not a hash: not ok */
    plain_t big = {0};
    assert_int_equal(sl__redis_send_hgetall(f.c, "calls:h", 7, 1, on_hash, &big), 0);
    assert_true(run_until(&f, plain_done, &big, 3000));
    assert_false(big.ok);
    plain_t wrong = {0};
    assert_int_equal(sl__redis_send_hgetall(f.c, "calls:n", 7, 8, on_hash, &wrong), 0);
    assert_true(run_until(&f, plain_done, &wrong, 3000));
    assert_false(wrong.ok);
    fx_done(&f);
}

/* ---- the rules kept in Redis ------------------------------------------------------------------ */

typedef struct follower {
    int reads, failures, published;
    long long version;
    size_t n;
    char names[8][32], values[8][64];
} follower_t;

static void on_rules(void *arg, const sl__redis_field_t *rules, size_t n, long long version) {
    follower_t *f = arg;
    f->reads++;
    f->version = version;
    f->n = n;
    for (size_t i = 0; i < n && i < 8; i++) {
        snprintf(f->names[i], 32, "%.*s", (int)rules[i].name_len, rules[i].name);
        snprintf(f->values[i], 64, "%.*s", (int)rules[i].value_len, rules[i].value);
    }
}

static void on_failed(void *arg) { ((follower_t *)arg)->failures++; }

static void on_published(void *arg, const char *name, size_t len) {
    (void)name, (void)len;
    ((follower_t *)arg)->published++;
}

typedef struct wait_reads {
    follower_t *f;
    int reads;
} wait_reads_t;

static bool reads_reached(void *arg) {
    wait_reads_t *w = arg;
    return w->f->reads >= w->reads;
}

static void on_shared(void *arg, bool ok) { *(int *)arg = ok ? 1 : -1; }

static bool shared_done(void *arg) { return *(int *)arg != 0; }

/* One client shares two rules; a feed reads them at start, then follows a
 * change published on the channel (its poll is too slow to be the one). */
static void rules_are_shared_and_followed(void **state) {
    (void)state;
    freeReplyObject(redis_rig_command(redis_rig_group.port, "DEL %s %s", SL__REDIS_RULES_KEY,
                                      SL__REDIS_RULES_VERSION_KEY));
    fx_t f;
    client_on(&f, redis_rig_group.port, 1000);
    int done = 0;
    assert_int_equal(sl__redis_rules_share(f.c, "alpha", "{\"x\":1}", 7, on_shared, &done), 0);
    assert_true(run_until(&f, shared_done, &done, 3000));
    assert_int_equal(done, 1);
    redisReply *r = redis_rig_command(redis_rig_group.port, "HGET %s alpha", SL__REDIS_RULES_KEY);
    assert_string_equal(r->str, "{\"x\":1}");
    freeReplyObject(r);
    r = redis_rig_command(redis_rig_group.port, "GET %s", SL__REDIS_RULES_VERSION_KEY);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);

    follower_t fo = {0};
    sl__redis_rules_hooks_t hooks = {.arg = &fo, .rules = on_rules, .failed = on_failed,
                                     .published = on_published};
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", redis_rig_group.port);
    sl__redis_url_t u;
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 1000};
    sl__redis_rules_feed_t *feed = NULL;
    assert_int_equal(sl__redis_rules_feed_new(&f.loop, &u, &o, 60000, &hooks, &feed), 0);
    wait_reads_t w = {&fo, 1};
    assert_true(run_until(&f, reads_reached, &w, 3000));
    assert_true(sl__redis_rules_feed_read_once(feed));
    assert_int_equal(fo.n, 1);
    assert_string_equal(fo.names[0], "alpha");
    assert_string_equal(fo.values[0], "{\"x\":1}");
    assert_int_equal(fo.version, 1);

    /* a removal ("") shared: the subscriber hears it, the hash is read again.
     * The subscriber connects on its own: share until it has heard one. */
    wait_reads_t w2 = {&fo, 2};
    for (int tries = 0; tries < 50 && fo.reads < 2; tries++) {
        done = 0;
        assert_int_equal(sl__redis_rules_share(f.c, "beta", NULL, 0, on_shared, &done), 0);
        assert_true(run_until(&f, shared_done, &done, 3000));
        assert_int_equal(done, 1);
        run_until(&f, reads_reached, &w2, 100);
    }
    assert_true(fo.reads >= 2);
    assert_true(fo.published >= 1);
    assert_int_equal(fo.n, 2);
    assert_int_equal(fo.version, -1); /* read because of the message, not the counter */
    assert_int_equal(fo.failures, 0);

    sl__redis_rules_feed_stop(feed);
    uv_run(&f.loop, UV_RUN_NOWAIT);
    fx_done(&f);
    sl__redis_rules_feed_free(feed);
}

static bool feed_read_once(void *arg) { return sl__redis_rules_feed_read_once(arg); }

/* Nothing listens: the feed counts the failed read and says it has read
 * once (the daemon must not wait for it). */
static void a_feed_without_redis_fails_and_is_read_once(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f);
    follower_t fo = {0};
    sl__redis_rules_hooks_t hooks = {.arg = &fo, .rules = on_rules, .failed = on_failed};
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", redis_rig_free_port());
    sl__redis_url_t u;
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 100};
    sl__redis_rules_feed_t *feed = NULL;
    assert_int_equal(sl__redis_rules_feed_new(&f.loop, &u, &o, 20, &hooks, &feed), 0);
    assert_true(run_until(&f, feed_read_once, feed, 3000));
    assert_int_equal(fo.reads, 0);
    sl__redis_rules_feed_stop(feed);
    uv_run(&f.loop, UV_RUN_NOWAIT);
    fx_done(&f);
    sl__redis_rules_feed_free(feed);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_batch_is_answered_in_order),
        cmocka_unit_test(an_error_reply_is_unusable_with_its_text),
        cmocka_unit_test(no_answer_is_unusable),
        cmocka_unit_test(plain_commands_are_read),
        cmocka_unit_test(rules_are_shared_and_followed),
        cmocka_unit_test(a_feed_without_redis_fails_and_is_read_once),
    };
    return cmocka_run_group_tests(tests, redis_rig_group_start, redis_rig_group_stop);
}
