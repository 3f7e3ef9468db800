/* test_redis_sync_cas.c -- write-back mode's compare-and-sets
 * (src/store/redis/sync_cas.c, sync.lua) against a real redis-server: a
 * new key written, a stale version answered with the value Redis holds,
 * the right version written over, an empty state deleting the key, an
 * error reply refusing every key of the call, and a call with no answer
 * reported lost. Every wait is bounded.
 */
#include <signal.h>
#include <uv.h>
#undef MIN /* sys/param.h's; rig.h has its own */
#include "rig.h"
#include "redis_rig.h"
#include "store/redis/sync_cas.h"

#define V(s) ((const unsigned char *)(s)) /* a version: 8 bytes */

typedef struct ans {
    int calls;
    sl__redis_cas_answer_t answer;
    sl__redis_status_t status;
    char data[256];
    size_t len;
    bool has_data;
} ans_t;

typedef struct fx {
    uv_loop_t loop;
    uv_timer_t tick;
    sl__redis_client_t *c;
    redis_proc_t redis;
    ans_t ans[SL__REDIS_CAS_MAX];
    int closed;
} fx_t;

static void tick_cb(uv_timer_t *t) { (void)t; }
static void on_closed(void *arg) { ((fx_t *)arg)->closed++; }

static void on_answer(void *arg, size_t i, sl__redis_cas_answer_t answer, sl__redis_status_t status,
                      const void *data, size_t len) {
    ans_t *a = &((fx_t *)arg)->ans[i];
    a->calls++;
    a->answer = answer;
    a->status = status;
    a->has_data = data != NULL;
    a->len = len;
    if (data)
        memcpy(a->data, data, len < sizeof a->data ? len : sizeof a->data);
}

/* Runs the loop until ans[0..n) all came, or ms pass. */
static bool wait_answers(fx_t *f, size_t n, int ms) {
    uint64_t end = uv_hrtime() / 1000000 + (uint64_t)ms;
    uv_timer_start(&f->tick, tick_cb, 5, 5);
    bool all = false;
    while (!all && uv_hrtime() / 1000000 < end) {
        uv_run(&f->loop, UV_RUN_ONCE);
        all = true;
        for (size_t i = 0; i < n; i++)
            all = all && f->ans[i].calls > 0;
    }
    uv_timer_stop(&f->tick);
    for (size_t i = 0; i < n; i++)
        assert_true(f->ans[i].calls <= 1); /* once per key */
    return all;
}

static int setup(void **state) {
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    if (redis_rig_start(&f->redis, NULL) != 0)
        fail_msg("no redis-server");
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->tick);
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f->redis.port);
    sl__redis_url_t u;
    assert_int_equal(sl__redis_url_parse(url, strlen(url), &u, err, sizeof err), 0);
    sl__redis_client_options_t o = {.timeout_ms = 100};
    assert_int_equal(sl__redis_client_new(&f->loop, &u, &o, &f->c), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx_t *f = *state;
    sl__redis_client_close(f->c, on_closed, f);
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(f->closed, 1);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    redis_rig_stop(&f->redis);
    free(f);
    return 0;
}

static int send_cas(fx_t *f, const sl__redis_cas_t *cas, size_t n) {
    memset(f->ans, 0, sizeof f->ans);
    return sl__redis_cas_send(f->c, cas, n, on_answer, f);
}

static sl__redis_cas_t cas_of(const char *key, const unsigned char *expected,
                              const unsigned char *version, const char *value) {
    return (sl__redis_cas_t){.key = key, .key_len = strlen(key), .expected = expected,
                             .version = version, .value = (const unsigned char *)value,
                             .value_len = strlen(value), .ttl_ms = "60000"};
}

static redisReply *get(fx_t *f, const char *key) {
    redisReply *r = redis_rig_command(f->redis.port, "GET %s", key);
    assert_non_null(r);
    return r;
}

static void written_conflicting_and_deleted(void **state) {
    fx_t *f = *state;
    /* two new keys of one slot, in one call */
    sl__redis_cas_t two[2] = {cas_of("{s}a", NULL, V("version1"), "state-a"),
                              cas_of("{s}b", NULL, V("version1"), "state-b")};
    assert_int_equal(send_cas(f, two, 2), 0);
    assert_true(wait_answers(f, 2, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_WRITTEN);
    assert_int_equal(f->ans[1].answer, SL__REDIS_CAS_WRITTEN);
    assert_int_equal(f->ans[0].status, SL__REDIS_OK);
    redisReply *r = get(f, "{s}a");
    assert_int_equal(r->len, 8 + 7);
    assert_memory_equal(r->str, "version1state-a", 15);
    freeReplyObject(r);
    r = redis_rig_command(f->redis.port, "PTTL {s}a");
    assert_true(r->integer > 0 && r->integer <= 60000);
    freeReplyObject(r);

    /* merged onto no key, but there is one: its whole value comes back */
    sl__redis_cas_t stale = cas_of("{s}a", NULL, V("version2"), "state-x");
    assert_int_equal(send_cas(f, &stale, 1), 0);
    assert_true(wait_answers(f, 1, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_CONFLICT);
    assert_int_equal(f->ans[0].len, 15);
    assert_memory_equal(f->ans[0].data, "version1state-a", 15);
    /* merged onto another version: the same */
    stale.expected = V("version9");
    assert_int_equal(send_cas(f, &stale, 1), 0);
    assert_true(wait_answers(f, 1, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_CONFLICT);

    /* the version Redis holds: written over; a missing key conflicts with "" */
    sl__redis_cas_t next[2] = {cas_of("{s}a", V("version1"), V("version2"), "state-a2"),
                               cas_of("{s}c", V("version1"), V("version2"), "state-c")};
    assert_int_equal(send_cas(f, next, 2), 0);
    assert_true(wait_answers(f, 2, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_WRITTEN);
    assert_int_equal(f->ans[1].answer, SL__REDIS_CAS_CONFLICT);
    assert_int_equal(f->ans[1].len, 0);
    r = get(f, "{s}a");
    assert_memory_equal(r->str, "version2state-a2", 16);
    freeReplyObject(r);

    /* an empty state: the key goes */
    sl__redis_cas_t gone = cas_of("{s}a", V("version2"), V("version3"), "");
    assert_int_equal(send_cas(f, &gone, 1), 0);
    assert_true(wait_answers(f, 1, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_WRITTEN);
    r = get(f, "{s}a");
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
}

/* A key that is not a string makes the script fail: every key of the call
 * is refused, with Redis's error text. */
static void an_error_refuses_the_call(void **state) {
    fx_t *f = *state;
    freeReplyObject(redis_rig_command(f->redis.port, "LPUSH {e}list x"));
    sl__redis_cas_t two[2] = {cas_of("{e}ok", NULL, V("version1"), "state"),
                              cas_of("{e}list", NULL, V("version1"), "state")};
    assert_int_equal(send_cas(f, two, 2), 0);
    assert_true(wait_answers(f, 2, 2000));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->ans[i].answer, SL__REDIS_CAS_REFUSED);
        assert_true(f->ans[i].has_data);
        assert_non_null(strstr(f->ans[i].data, "WRONGTYPE"));
    }
}

/* Redis stopped: no answer within the deadline, each key is lost (it may
 * have been written). */
static void no_answer_is_lost(void **state) {
    fx_t *f = *state;
    sl__redis_cas_t one = cas_of("{l}k", NULL, V("version1"), "state");
    assert_int_equal(send_cas(f, &one, 1), 0); /* connects first */
    assert_true(wait_answers(f, 1, 2000));
    assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
    sl__redis_cas_t two[2] = {cas_of("{l}k", V("version1"), V("version2"), "state2"),
                              cas_of("{l}j", NULL, V("version2"), "state2")};
    int rc = send_cas(f, two, 2);
    bool answered = rc == 0 && wait_answers(f, 2, 2000);
    assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
    assert_int_equal(rc, 0);
    assert_true(answered);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f->ans[i].answer, SL__REDIS_CAS_LOST);
        assert_int_equal(f->ans[i].status, SL__REDIS_TIMEOUT);
        assert_false(f->ans[i].has_data);
    }
}

static void bad_calls_are_refused(void **state) {
    fx_t *f = *state;
    assert_int_equal(sl__redis_cas_send(f->c, NULL, 0, on_answer, f), -1);
    sl__redis_cas_t many[SL__REDIS_CAS_MAX + 1];
    for (size_t i = 0; i < SL__REDIS_CAS_MAX + 1; i++)
        many[i] = cas_of("{m}k", NULL, V("version1"), "s");
    assert_int_equal(sl__redis_cas_send(f->c, many, SL__REDIS_CAS_MAX + 1, on_answer, f), -1);
    /* the most in one call */
    assert_int_equal(send_cas(f, many, SL__REDIS_CAS_MAX), 0);
    assert_true(wait_answers(f, SL__REDIS_CAS_MAX, 2000));
    assert_int_equal(f->ans[0].answer, SL__REDIS_CAS_WRITTEN);
    for (size_t i = 1; i < SL__REDIS_CAS_MAX; i++) /* the same key, written by the first */
        assert_int_equal(f->ans[i].answer, SL__REDIS_CAS_CONFLICT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(written_conflicting_and_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(an_error_refuses_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(no_answer_is_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_calls_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
