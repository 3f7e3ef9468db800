/* acquire.c -- decisions that wait (see acquire.h): a reservation (in
 * Redis: the reply's place kept until it comes back), then the reply held
 * on a uv timer of the worker's loop. No thread, no polling: one timer per
 * waiter, stopped when its connection goes. */
#include <stdlib.h>

#include <uv.h>

#include "server/base/decimal.h"
#include "server/resp/acquire.h"
#include "server/state/held_place.h"

typedef struct waiter {
    uv_timer_t timer;  /* first: the handle is the waiter */
    sld_reply_t *slot; /* its place among the connection's replies */
    sld_acquire_write_fn write;
    int kind;
    sl_decision_t d;   /* the decision, replied when the timer fires */
    uv_loop_t *loop;   /* the worker's (NULL: nowhere to wait) */
    sld_held_place_t *place; /* given back if the client goes first (NULL: cannot be) */
    sld_daemon_t *daemon;
    uint32_t worker;
} waiter_t;

static void on_fired_closed(uv_handle_t *h) { free(h); }

static void on_fire(uv_timer_t *t) {
    waiter_t *w = (waiter_t *)t;
    sld_held_place_free(w->place); /* its moment came */
    w->place = NULL;
    sld_reply_on_close(w->slot, NULL, NULL);
    w->write(sld_reply_buf(w->slot), w->kind, SL_OK, &w->d);
    sld_reply_done(w->slot); /* may free the connection: w->slot is gone after */
    uv_close((uv_handle_t *)&w->timer, on_fired_closed);
}

/* The place is given up once the timer's handle is closed: the queue (and
 * the connection holding it) lives until every late reply is done. */
static void on_cancel_closed(uv_handle_t *h) {
    waiter_t *w = (waiter_t *)h;
    sld_reply_done(w->slot); /* dropped: the queue is closed */
    free(w);
}

static void on_cancel(void *arg) {
    waiter_t *w = arg;
    sld_held_place_give_back(w->daemon, w->worker, w->place); /* the next request gets it */
    w->place = NULL;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, on_cancel_closed);
}

/* Holds w's reply (its decision in w->d) on a timer until its delay. */
static void hold(waiter_t *w) {
    uv_timer_init(w->loop, &w->timer);
    uv_update_time(w->loop); /* from the decision, not from the start of the loop's turn */
    uv_timer_start(&w->timer, on_fire, (uint64_t)sld_ms_up(w->d.delay), 0);
    sld_reply_on_close(w->slot, on_cancel, w);
}

static const char *const NO_WAIT =
    "ERR waiting needs the memory store or Redis strict (write-back policies cannot hold places)";

/* The reservation came back from Redis: replied in its place now, or held. */
static void on_reserved(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    (void)limits;
    waiter_t *w = arg;
    if (rc == SL_OK && d->allowed && d->delay > 0 && w->loop) {
        w->d = *d;
        hold(w); /* w->place: what Redis said the place held */
        return;
    }
    sld_held_place_free(w->place);
    if (rc == SL_ENOTSUP)
        sld_reply_error(sld_reply_buf(w->slot), NO_WAIT);
    else
        w->write(sld_reply_buf(w->slot), w->kind, rc, d);
    sld_reply_done(w->slot);
    free(w);
}

#define MAX_TIMEOUT_MS (SL_MAX_WAIT / 1000)

const char *sld_acquire_options(const sld_arg_t *argv, size_t argc, size_t from, int64_t *cost,
                                sl_usec_t *wait) {
    bool timeout = false;
    for (size_t i = from; i < argc; i += 2) {
        int64_t v;
        bool is_timeout = sld_arg_is(&argv[i], "TIMEOUT");
        if (!is_timeout && !(cost && sld_arg_is(&argv[i], "COST")))
            return cost ? "ERR syntax error: expected [COST n] TIMEOUT ms"
                        : "ERR syntax error: expected TIMEOUT ms after the arguments of CL.THROTTLE";
        if (i + 1 >= argc)
            return is_timeout ? "ERR TIMEOUT needs a value in milliseconds" : "ERR COST needs a value";
        if (!is_timeout) {
            if (sld_arg_int(&argv[i + 1], &v) != SL_OK || v < 0)
                return "ERR cost must be an integer >= 0";
            *cost = v;
            continue;
        }
        if (sld_arg_int(&argv[i + 1], &v) != SL_OK || v < 0 || v > MAX_TIMEOUT_MS)
            return "ERR TIMEOUT must be an integer number of milliseconds, 0 to 3600000";
        *wait = v * 1000;
        timeout = true;
    }
    return timeout ? NULL : "ERR TIMEOUT ms is required (0: do not wait)";
}


void sld_acquire(sld_client_t *c, sld_request_t *r, sl_usec_t wait, int kind,
                 sld_acquire_write_fn write) {
    r->flags |= SLD_DECIDE_WAIT;
    r->max_wait = wait;
    sl__held_t held = {0};
    r->held = &held; /* filled by a store that answers now and can give places back */
    sl_decision_t d = {0};
    waiter_t *later = NULL;
    if (sld_engine_defers(c->d->engine, r->p)) { /* Redis answers later: its place is kept */
        later = calloc(1, sizeof *later);
        sld_reply_t *slot = later ? sld_reply_defer(c->replies) : NULL;
        if (slot == NULL) {
            free(later);
            sld_reply_error(c->out, "ERR out of memory");
            return;
        }
        *later = (waiter_t){.slot = slot, .write = write, .kind = kind, .loop = c->loop,
                            .place = sld_held_place_pending(r), .daemon = c->d, .worker = c->worker};
        /* the answer fills the place's held: it outlives this call */
        r->held = later->place ? sld_held_place_held(later->place) : NULL;
        c->out = sld_reply_queue_tail(c->replies); /* later replies wait behind it */
    }
    int rc = sld_engine_decide(c->d->engine, c->worker, r, &d, NULL, later ? on_reserved : NULL, later);
    if (rc == SLD_PENDING)
        return;
    if (later) { /* answered now after all (the breaker is open: the fallback's) */
        sld_reply_undefer(c->replies, later->slot);
        c->out = sld_reply_queue_tail(c->replies);
        if (later->place) /* what it held, for the place made below */
            held = *sld_held_place_held(later->place);
        sld_held_place_free(later->place);
        r->held = &held;
        free(later);
    }
    if (rc == SL_ENOTSUP) {
        sld_reply_error(c->out, NO_WAIT);
        return;
    }
    if (rc != SL_OK || !d.allowed || d.delay == 0 || c->loop == NULL) {
        write(c->out, kind, rc, &d);
        return;
    }
    waiter_t *w = calloc(1, sizeof *w);
    sld_reply_t *slot = w ? sld_reply_defer(c->replies) : NULL;
    if (slot == NULL) { /* admitted and charged: say so now rather than lose it */
        free(w);
        write(c->out, kind, rc, &d);
        return;
    }
    *w = (waiter_t){.slot = slot, .write = write, .kind = kind, .d = d, .loop = c->loop,
                    .place = sld_held_place_new(r, &held), .daemon = c->d, .worker = c->worker};
    hold(w);
    c->out = sld_reply_queue_tail(c->replies); /* later replies wait behind it */
}
