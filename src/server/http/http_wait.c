/* http_wait.c -- decisions that wait over HTTP (see http_wait.h): a
 * reservation (in Redis: a pending answer until it comes back), then the
 * answer held on a uv timer of the worker's loop in a pending answer
 * (http_reply.h), which the wire layer sends when it is delivered. An
 * HTTP/1 client is looked at every SLD_PEER_PROBE_MS while held (the wire
 * reads nothing from it then), so that one gone gives its place back as
 * an HTTP/2 one does when its stream ends. */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "server/http/http_check.h" /* sld_check_parse_wait */
#include "server/base/decimal.h"
#include "server/http/http_wait.h"
#include "server/net/peer_gone.h" /* SLD_PEER_PROBE_MS */
#include "server/state/held_place.h"

typedef struct held {
    uv_timer_t timer;
    sld_http_pending_t *pd; /* holds this struct: freed when delivered */
    bool closing;           /* the timer's handle is being closed */
    uint32_t worker;
    struct held *prev, *next; /* the worker's held answers */
    uv_loop_t *loop;          /* where the timer runs (NULL: nowhere to wait) */
    sld_http_decision_t f;    /* a reservation in Redis: the route's, for its answer */
    sld_held_place_t *place;  /* given back if the client goes first (NULL: cannot be) */
    struct sld_daemon *daemon;
    uint64_t due;             /* the loop's ms when the answer goes */
    bool (*gone)(void *ctx);  /* the client left (NULL: the wire says so itself) */
    void *gone_ctx;
} held_t;

/* The answers each worker holds (threads are at most 256), so that a
 * stopping worker lets them go: a client still there would otherwise hold
 * the stop until their time. Each list is only touched from its worker's
 * thread. */
#define MAX_WORKERS 256
static held_t *held_by_worker[MAX_WORKERS];

/* Delivered (and freed) only once the timer's handle is closed. */
static void on_closed(uv_handle_t *h) {
    held_t *held = h->data;
    if (held->prev)
        held->prev->next = held->next;
    else if (held->worker < MAX_WORKERS && held_by_worker[held->worker] == held)
        held_by_worker[held->worker] = held->next;
    if (held->next)
        held->next->prev = held->prev;
    sld_held_place_free(held->place);
    sld_http_pending_deliver(held->pd);
}

static void close_timer(held_t *held) {
    if (held->closing)
        return;
    held->closing = true;
    uv_timer_stop(&held->timer);
    uv_close((uv_handle_t *)&held->timer, on_closed);
}

static void on_fire(uv_timer_t *t);

/* The timer set for the answer's moment, or sooner to look at the client. */
static void arm(held_t *held) {
    uint64_t now = uv_now(held->loop), ms = held->due > now ? held->due - now : 0;
    if (held->gone && ms > SLD_PEER_PROBE_MS)
        ms = SLD_PEER_PROBE_MS;
    uv_timer_start(&held->timer, on_fire, ms, 0);
}

/* An HTTP/1 client gone before its moment: its place goes to the next
 * request, and the answer, written to nobody, ends the request now. */
static void client_left(held_t *held) {
    sld_http_reply_t *r = sld_http_pending_reply(held->pd);
    sld_http_reply_reset(r);
    sld_http_error(r, 503, "client_gone", NULL, "the client went away while waiting");
    sld_held_place_give_back(held->daemon, held->worker, held->place);
    held->place = NULL;
    close_timer(held);
}

static void on_fire(uv_timer_t *t) {
    held_t *held = t->data;
    if (uv_now(held->loop) >= held->due)
        close_timer(held);
    else if (held->gone(held->gone_ctx))
        client_left(held);
    else
        arm(held);
}

/* The client went away: its place goes to the next request (what can be
 * given back exactly), the answer is delivered to nobody, now. */
static void on_cancel(void *arg) {
    held_t *held = arg;
    if (!held->closing) { /* before its moment */
        sld_held_place_give_back(held->daemon, held->worker, held->place);
        held->place = NULL;
    }
    close_timer(held);
}

/* Holds the pending answer (its reply written) on a timer of `delay`. */
static void hold(held_t *held, sl_usec_t delay) {
    if (held->worker < MAX_WORKERS) {
        held->next = held_by_worker[held->worker];
        if (held->next)
            held->next->prev = held;
        held_by_worker[held->worker] = held;
    }
    uv_timer_init(held->loop, &held->timer);
    held->timer.data = held;
    uv_update_time(held->loop); /* from the decision, not from the start of the loop's turn */
    held->due = uv_now(held->loop) + (uint64_t)sld_ms_up(delay);
    arm(held);
    sld_http_pending_on_cancel(held->pd, on_cancel, held);
}

static void wait_error(sld_http_reply_t *reply, int rc) {
    sld_http_error(reply, 400, "bad_request", "wait", "wait: %s",
                   rc == SL_ENOWAIT ? sl_strerror(rc)
                                    : "waiting needs the memory store or Redis strict (write-back "
                                      "policies cannot hold places)");
}

/* The reservation came back from Redis: answered now, or held. */
static void on_reserved(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    held_t *held = arg;
    sld_http_reply_t *reply = sld_http_pending_reply(held->pd);
    if (rc == SL_ENOWAIT || rc == SL_ENOTSUP)
        wait_error(reply, rc);
    else
        sld_http_finish(reply, &held->f, rc, dec, lr);
    if (rc == SL_OK && dec->allowed && dec->delay > 0 && held->loop) {
        hold(held, dec->delay); /* held->place: what Redis said the place held */
        return;
    }
    sld_held_place_free(held->place);
    held->place = NULL;
    sld_http_pending_deliver(held->pd);
}


void sld_http_decide_wait(const sld_http_call_t *c, const sld_http_decision_t *f, sld_span_t key,
                          uint64_t cost, int64_t wait) {
    if (wait <= 0) {
        sld_http_decide(c, f, key, cost);
        return;
    }
    sl_decision_t dec;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    sld_request_t req = {.origin = {.rt = f->rt, .index = f->index,
                                    .slot = sld_policies_slot(f->rt->policies, f->index)},
                         .p = f->p, .key = key.ptr, .key_len = key.len, .cost = cost,
                         .flags = SLD_DECIDE_WAIT, .max_wait = wait};
    sl__held_t place = {0};
    req.held = &place; /* filled by a store that answers now and can give places back */
    uv_loop_t *loop = sld_engine_loop(c->d->engine, c->worker);
    sld_http_pending_t *pd = NULL;
    if (c->later && sld_engine_defers(c->d->engine, f->p)) { /* Redis answers later */
        if ((pd = sld_http_pending_new(sizeof(held_t))) == NULL) {
            sld_http_error(c->reply, 503, "out_of_memory", NULL, "out of memory");
            return;
        }
        held_t *held = sld_http_pending_extra(pd);
        *held = (held_t){.pd = pd, .worker = c->worker, .loop = loop, .f = *f,
                         .place = sld_held_place_pending(&req), .daemon = c->d,
                         .gone = c->req->gone, .gone_ctx = c->req->header_ctx};
        /* the answer fills the place's held: it outlives this call */
        req.held = held->place ? sld_held_place_held(held->place) : NULL;
    }
    int rc = sld_engine_decide(c->d->engine, c->worker, &req, &dec, lr, pd ? on_reserved : NULL,
                               pd ? sld_http_pending_extra(pd) : NULL);
    if (rc == SLD_PENDING) {
        *c->later = pd;
        return;
    }
    if (pd) { /* answered now after all (the breaker is open: the fallback's) */
        held_t *was = sld_http_pending_extra(pd);
        if (was->place)
            place = *sld_held_place_held(was->place);
        sld_held_place_free(was->place);
        req.held = &place;
    }
    free(pd);
    pd = NULL;
    if (rc == SL_ENOWAIT || rc == SL_ENOTSUP) {
        wait_error(c->reply, rc);
        return;
    }
    if (rc == SL_OK && dec.allowed && dec.delay > 0 && c->later && loop)
        pd = sld_http_pending_new(sizeof(held_t));
    if (pd == NULL) { /* now: denied, admitted at once, or nowhere to wait (its delay says how long) */
        sld_http_finish(c->reply, f, rc, &dec, lr);
        return;
    }
    sld_http_finish(sld_http_pending_reply(pd), f, rc, &dec, lr);
    held_t *held = sld_http_pending_extra(pd);
    *held = (held_t){.pd = pd, .worker = c->worker, .loop = loop, .place = sld_held_place_new(&req, &place),
                     .daemon = c->d, .gone = c->req->gone, .gone_ctx = c->req->header_ctx};
    hold(held, dec.delay);
    *c->later = pd;
}

void sld_http_wait_release(uint32_t worker) {
    for (held_t *h = worker < MAX_WORKERS ? held_by_worker[worker] : NULL; h; h = h->next) {
        if (h->closing)
            continue;
        sld_http_reply_t *r = sld_http_pending_reply(h->pd);
        sld_http_reply_reset(r);
        sld_http_error(r, 503, "shutting_down", NULL, "sluiced is stopping: the wait is cut short");
        close_timer(h);
    }
}

bool sld_http_query_wait(const sld_http_call_t *c, int64_t *wait) {
    *wait = -1;
    sld_span_t q = c->req->query;
    for (size_t start = 0; q.ptr && start < q.len;) {
        const char *amp = memchr(q.ptr + start, '&', q.len - start);
        size_t end = amp ? (size_t)(amp - q.ptr) : q.len;
        const char *pair = q.ptr + start;
        size_t n = end - start;
        if (n >= 5 && memcmp(pair, "wait=", 5) == 0) {
            sl_usec_t us;
            if (!sld_check_parse_wait(pair + 5, n - 5, &us)) {
                sld_http_error(c->reply, 400, "bad_request", "wait", "wait: " SLD_CHECK_WAIT_RANGE);
                return false;
            }
            *wait = us;
        }
        start = end + 1;
    }
    return true;
}
