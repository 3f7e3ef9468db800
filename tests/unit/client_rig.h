/* client_rig.h -- a libuv loop that runs one Redis client, for the tests of
 * src/store/redis/ (client, resolve, discovery, auth): the fixture, running
 * the loop until a condition holds (with a deadline), and closing it all so
 * that every handle is shown to be gone. Header-only; include after rig.h. */
#ifndef SL_TEST_CLIENT_RIG_H
#define SL_TEST_CLIENT_RIG_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "store/redis/client.h"

typedef struct fx {
    uv_loop_t loop;
    uv_timer_t tick;  /* keeps the loop turning while a condition is awaited */
    sl__redis_client_t *c;
    int closed;
} fx_t;

static inline uint64_t now_ms(void) { return uv_hrtime() / 1000000; }

static inline void tick_cb(uv_timer_t *t) { (void)t; }

static inline void fx_init(fx_t *f) {
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    uv_timer_init(&f->loop, &f->tick);
}

static inline void on_closed(void *arg) { ((fx_t *)arg)->closed++; }

static inline bool is_closed(void *arg) { return ((fx_t *)arg)->closed > 0; }

/* Runs the loop until cond(arg) or ms pass; returns cond's last value. */
static inline bool run_until(fx_t *f, bool (*cond)(void *), void *arg, int ms) {
    uint64_t end = now_ms() + (uint64_t)ms;
    uv_timer_start(&f->tick, tick_cb, 5, 5);
    bool ok;
    while (!(ok = cond(arg)) && now_ms() < end)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_timer_stop(&f->tick);
    return ok;
}

/* One command's answer, as a test reads it: rig_on_reply is the command's
 * callback (arg: the rig_reply_t), rig_got the condition to run until. */
typedef struct rig_reply {
    int calls;
    sl__redis_status_t st;
    int type; /* the reply's type, 0 without a reply */
    char str[128];
} rig_reply_t;

static inline void rig_on_reply(void *arg, sl__redis_status_t st, const struct redisReply *r) {
    rig_reply_t *x = arg;
    x->calls++;
    x->st = st;
    x->type = r ? r->type : 0;
    if (r && r->str)
        snprintf(x->str, sizeof x->str, "%.*s", (int)r->len, r->str);
}

static inline bool rig_got(void *arg) { return ((rig_reply_t *)arg)->calls > 0; }

/* Closes the client (if any) and the loop; every handle must be gone. */
static inline void fx_done(fx_t *f) {
    if (f->c) {
        sl__redis_client_close(f->c, on_closed, f);
        assert_true(run_until(f, is_closed, f, 3000));
        assert_int_equal(f->closed, 1);
        f->c = NULL;
    }
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

#endif
