/* gateway.c -- the gateway front on the worker loops (see gateway.h).
 *
 * Each worker has an h2o configuration of its own: one handler on "/"
 * (on_req: match, decide, then forward or refuse), after it one libh2o
 * reverse proxy per route, which on_req calls directly once the request
 * may go, and a filter that rewrites libh2o's own 502 for an upstream
 * failure into a clear 502 or 504. Per worker, not shared, because the
 * proxies' keep-alive socket pools run a timer on the loop of the first
 * context that uses them and must be disposed while that loop still runs.
 *
 * A decision that the store answers later (Redis) continues in its
 * callback; the request's state is then kept apart from the request (which
 * the client may close meanwhile) until the answer comes.
 *
 * Connections are the HTTP layer every listener shares (http_server.h),
 * and so are the limits: a body up to max_request_bytes (libh2o 2.2 reads
 * a request body whole before the handler runs; responses are streamed),
 * requests and keep-alive idle up to idle_timeout, a client that takes no
 * byte of its response for write_timeout reset, connections counted with
 * the other fronts' against max_connections, the same stop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <h2o.h>

#include "server/base/log.h"
#include "server/config/section.h"
#include "server/engine/engine.h"
#include "server/gateway/gateway.h"
#include "server/gateway/gateway_concurrency.h"
#include "server/gateway/gateway_forward.h"
#include "server/gateway/gateway_route.h"
#include "server/http/http_ratelimit.h"
#include "server/http/http_request.h"
#include "server/http/http_server.h"
#include "server/observe/extra_metrics.h"
#include "server/state/held_place.h"

#define KEEPALIVE_MS 2000 /* an idle upstream connection stays in the pool this long */
#define RETRY_MS 10       /* waiters look for a slot freed on another worker this often */
#define PROBE_MS 100      /* an HTTP/1 waiter's connection is looked at for its end this often */
#define DELAY_ATTEMPTS 32 /* excess: delay, several policies: peeks asked again at most this often */

struct sld_gateway {
    sld_daemon_t *d;
    sld_config_part_t *part;   /* the gateway: section, held */
    const sld_gw_config_t *g;
    sld_gw_conc_t *conc;       /* in-flight counts and counters, shared by the workers */
    sld_metrics_extra_t metrics; /* its series in /metrics */
};

typedef struct gw_worker gw_worker_t;

typedef struct gw_handler {
    h2o_handler_t super;
    gw_worker_t *w;
} gw_handler_t;

struct gw_worker {
    sld_http_server_t server;  /* first: the shared hooks take the worker as its server */
    h2o_globalconf_t config;
    sld_gateway_t *gw;
    uint32_t index;
    h2o_handler_t **proxies;   /* one per route, in the routes' order */
    sld_http_reply_t reply;    /* reused from request to request */
    bool has_config;           /* config exists (disposed with the worker) */
    uv_timer_t wait_timer;     /* serves the waiters for a concurrency slot */
    bool timer_open, closing;
    uint64_t timer_due;        /* loop time the timer is set for, while it is */
    struct gw_call *first, *last; /* the waiters, in arrival order (all routes) */
};

/* ---- one request ------------------------------------------------------------------------------ */

/* A request on its way through the route's policies. Not in the request's
 * pool: a decision still pending when the client goes must find it. */
typedef struct gw_call {
    h2o_req_t *req;            /* NULL once the request is gone */
    gw_worker_t *w;
    size_t route;              /* index in the section's routes */
    size_t step;               /* peeks 0..n-1 (when n > 1), then charges */
    bool confirming;           /* the peek of this step denied: deciding it for real */
    uint32_t charged;          /* bit i: policy i was charged while confirming */
    sl_usec_t common;          /* excess: delay: the latest place of its policies so far */
    sld_held_place_t *held[SLD_GW_MAX_POLICIES]; /* delay: places to give back if it leaves */
    unsigned attempts;         /* delay, several policies: peeks asked again after a lost place */
    bool pending;              /* a decision is on its way */
    size_t key_len[SLD_GW_MAX_POLICIES];
    char *keys;                /* n keys of up to key_cap bytes, in this block */
    size_t key_cap;
    bool waiting;              /* in the worker's waiters */
    bool delayed;              /* waiting: for its moment (excess: delay), not for a slot */
    bool place;                /* holds a place of the route's queue */
    struct gw_call *prev, *next;
    uint64_t deadline;         /* waiting: loop time (ms) past which it is refused (delayed: forwarded) */
    uint64_t probe_at;         /* waiting: loop time of the next look at the client's socket */
    char ip[INET6_ADDRSTRLEN]; /* per: key on a route without policies: the client's address */
    sld_gw_fields_t fields;    /* of the charging decisions, for the forwarded request and its response */
} gw_call_t;

typedef struct gw_link {
    gw_call_t *call;
} gw_link_t;

static const sld_gw_route_t *route_of(const gw_call_t *call) {
    return &call->w->gw->g->routes[call->route];
}

static void unwait(gw_call_t *call) {
    gw_worker_t *w = call->w;
    *(call->prev ? &call->prev->next : &w->first) = call->next;
    *(call->next ? &call->next->prev : &w->last) = call->prev;
    call->prev = call->next = NULL;
    call->waiting = false;
}

static void drop_place(gw_call_t *call) {
    if (call->place)
        sld_gw_conc_leave(call->w->gw->conc, call->route);
    call->place = false;
}

/* Its policies' places: given back (it leaves or is refused), or let go (it runs). */
static void end_places(gw_call_t *call, bool give_back) {
    for (size_t i = 0; i < SLD_GW_MAX_POLICIES; i++) {
        if (give_back)
            sld_held_place_give_back(call->w->gw->d, call->w->index, call->held[i]);
        else
            sld_held_place_free(call->held[i]);
        call->held[i] = NULL;
    }
}

static void on_request_gone(void *arg) {
    gw_call_t *call = ((gw_link_t *)arg)->call;
    call->req = NULL;
    end_places(call, true); /* still held only when it never ran */
    if (call->waiting)
        unwait(call);
    drop_place(call); /* a client gone while waiting gives its place back */
    if (!call->pending)
        free(call);
}

static void send_text(gw_worker_t *w, h2o_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void send_text(gw_worker_t *w, h2o_req_t *req, int status, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    sld_http_reply_t *r = &w->reply;
    sld_http_reply_reset(r);
    sld_http_text_reply(r, status, text);
    sld_http_send_reply(req, r);
}

/* ---- concurrency limits ----------------------------------------------------------------------- */

/* A slot held by a forwarded request, in its pool: given back when the
 * request ends, however it ends (response sent, client gone, upstream
 * failed or timed out), since the pool goes with the request. */
typedef struct gw_slot {
    gw_worker_t *w;
    size_t route, key_len;
    char key[];
} gw_slot_t;

static void on_wait_timer(uv_timer_t *timer);

/* Serves the waiters in ms (0: at the next turn of the loop, not from
 * inside the end of another request). */
static void kick(gw_worker_t *w, uint64_t ms) {
    if (!w->timer_open || w->closing || !w->first)
        return;
    uint64_t due = uv_now(w->wait_timer.loop) + ms;
    if (uv_is_active((uv_handle_t *)&w->wait_timer) && w->timer_due <= due)
        return; /* sooner already */
    w->timer_due = due;
    uv_timer_start(&w->wait_timer, on_wait_timer, ms, 0);
}

/* Puts call at the end of its worker's waiters, holding its queue place,
 * until `deadline`. */
static void wait_in_line(gw_call_t *call, bool delayed, uint64_t deadline) {
    gw_worker_t *w = call->w;
    uint64_t now = uv_now(w->wait_timer.loop);
    call->waiting = true;
    call->delayed = delayed;
    call->deadline = deadline;
    call->probe_at = now + PROBE_MS;
    call->prev = w->last;
    *(w->last ? &w->last->next : &w->first) = call;
    w->last = call;
    uint64_t ms = delayed ? (deadline > now ? deadline - now : 0) : RETRY_MS;
    kick(w, ms < PROBE_MS ? ms : PROBE_MS); /* its socket is looked at too */
}

static void on_slot_end(void *arg) {
    gw_slot_t *slot = arg;
    sld_gw_conc_give(slot->w->gw->conc, slot->route, slot->key, slot->key_len);
    kick(slot->w, 0);
}

static void slot_key(const gw_call_t *call, const char **key, size_t *len) {
    if (route_of(call)->npolicies) {
        *key = call->keys;
        *len = call->key_len[0];
    } else {
        *key = call->ip;
        *len = strlen(call->ip);
    }
}

/* Takes a slot for the request, held until it ends; false when none is free. */
static bool take_slot(gw_call_t *call) {
    const char *key;
    size_t len;
    slot_key(call, &key, &len);
    sld_gw_conc_t *conc = call->w->gw->conc;
    if (!sld_gw_conc_take(conc, call->route, key, len))
        return false;
    gw_slot_t *slot = h2o_mem_alloc_shared(&call->req->pool, sizeof *slot + len, on_slot_end);
    *slot = (gw_slot_t){.w = call->w, .route = call->route, .key_len = len};
    memcpy(slot->key, key, len);
    return true;
}

static void proxy(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld_gw_count(call->w->gw->conc, call->route, SLD_GW_FORWARDED);
    sld_gw_forward(call->req, call->w->proxies[call->route], &call->fields, route->npolicies, &route->headers,
                   call->w->gw->conc, call->route);
}

static void refuse_busy(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld_gw_count(call->w->gw->conc, call->route, SLD_GW_BUSY);
    send_text(call->w, call->req, (int)route->concurrency.status,
              "route %s: %u requests in flight %s (its concurrency limit), no slot freed %s\n", route->name,
              route->concurrency.limit, route->concurrency.per_key ? "for this key" : "on the route",
              route->concurrency.max_wait ? "within max_wait" : "(no max_wait)");
}

static void forward(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    end_places(call, false); /* its moment came */
    drop_place(call);
    if (route->concurrency.limit == 0 || take_slot(call)) {
        proxy(call);
        return;
    }
    gw_worker_t *w = call->w;
    if (route->concurrency.max_wait == 0 || w->closing || !w->timer_open) {
        refuse_busy(call);
        return;
    }
    if (!sld_gw_conc_enter(w->gw->conc, call->route)) {
        sld_gw_count(w->gw->conc, call->route, SLD_GW_BUSY);
        send_text(w, call->req, (int)route->concurrency.status,
                  "route %s: %u requests wait for a slot already (its queue), no place left\n", route->name,
                  route->queue);
        return;
    }
    call->place = true;
    wait_in_line(call, false, uv_now(w->wait_timer.loop) + (uint64_t)(route->concurrency.max_wait / 1000));
}

/* Whether an HTTP/1 waiter's client has closed its connection: libh2o
 * reads no more from an HTTP/1 connection while a request is served, and
 * so would learn it only when it writes. A peek without taking a byte; a
 * pipelined request after this one leaves it alive. HTTP/2 keeps reading:
 * a stream or connection that ends disposes the request itself. */
static bool client_gone(h2o_req_t *req) {
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return false;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    int fd = sock ? h2o_socket_get_fd(sock) : -1;
    if (fd < 0)
        return false;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The waiters in arrival order: the delayed whose moment came are
 * forwarded; a slot for those that can have one, a refusal for those past
 * max_wait; the timer set again for the next moment, the next look at a
 * socket, and in RETRY_MS while some wait for a slot (freed by another
 * worker). */
static void on_wait_timer(uv_timer_t *timer) {
    gw_worker_t *w = timer->data;
    uint64_t now = uv_now(timer->loop), next_due = UINT64_MAX;
    for (gw_call_t *call = w->first, *next; call; call = next) {
        next = call->next;
        if (call->delayed && now >= call->deadline) {
            unwait(call);
            forward(call); /* may wait again, for a slot */
            continue;
        }
        if (!call->delayed && take_slot(call)) {
            unwait(call);
            drop_place(call);
            proxy(call);
            continue;
        }
        if (!call->delayed && now >= call->deadline) {
            unwait(call);
            drop_place(call);
            refuse_busy(call);
            continue;
        }
        if (now >= call->probe_at) {
            call->probe_at = now + PROBE_MS;
            if (client_gone(call->req)) {
                end_places(call, true); /* the next request gets them */
                unwait(call); /* its place now; the answer, written to nobody, ends the request */
                drop_place(call);
                send_text(w, call->req, 503, "the client went away while waiting\n");
                continue;
            }
        }
        uint64_t due = call->delayed ? call->deadline : now + RETRY_MS;
        due = due < call->probe_at ? due : call->probe_at;
        next_due = due < next_due ? due : next_due;
    }
    if (next_due != UINT64_MAX)
        kick(w, next_due > now ? next_due - now : 0);
}

/* excess: delay: the request was admitted for `delay` from now. */
static void hold(gw_call_t *call, sl_usec_t delay) {
    gw_worker_t *w = call->w;
    sld_gw_count(w->gw->conc, call->route, SLD_GW_DELAYED);
    sld_gw_count_delay(w->gw->conc, call->route, delay);
    wait_in_line(call, true, uv_now(w->wait_timer.loop) + (uint64_t)((delay + 999) / 1000));
}

static void refuse(gw_call_t *call, const sld_runtime_t *rt, size_t index, const sl_policy_t *p,
                   const sl_decision_t *dec, const sl_limit_report_t *lr) {
    const sld_gw_route_t *route = route_of(call);
    end_places(call, true); /* a charge of several policies denied: the others' back */
    drop_place(call);
    sld_gw_count(call->w->gw->conc, call->route, SLD_GW_REJECTED);
    sld_http_reply_t *r = &call->w->reply;
    sld_http_reply_reset(r);
    const sld_policy_t *pc = sld_policies_config(rt->policies, index);
    sld_http_rate_headers(r, pc->name, p, pc->mode == SL_MODE_SOFT ? pc->soft_percent : 0, dec, lr);
    sld_http_text_reply(r, (int)route->status, route->body);
    sld_http_send_reply(call->req, r);
}

/* Whether step `step` only asks (a peek): the first n steps of a route
 * with several policies, unless a peek denied and the step is decided for
 * real. */
static bool peeking(const gw_call_t *call, size_t n) { return n > 1 && call->step < n && !call->confirming; }

/* A decision of the current step came: true to go on. A peek that denies
 * is decided again for real, so the denial is counted (and charged, for a
 * count_denied limit) as any other; should it pass by then, it is charged
 * now and skipped in the charges. */
static bool decided(gw_call_t *call, int rc, const sld_runtime_t *rt, size_t index, const sl_policy_t *p,
                    const sl_decision_t *dec, const sl_limit_report_t *lr) {
    const sld_gw_route_t *route = route_of(call);
    size_t n = route->npolicies;
    if (rc != SL_OK) {
        send_text(call->w, call->req, 503, "the rate limiter cannot decide: %s\n", sl_strerror(rc));
        return false;
    }
    if (!peeking(call, n) && (dec->allowed || route->excess == SLD_GW_SHADOW)) { /* what the fields say */
        const sld_policy_t *pc = sld_policies_config(rt->policies, index);
        sld_gw_fields_note(&call->fields, call->step % n, call->req, &call->w->reply, pc->name, p,
                           pc->mode == SL_MODE_SOFT ? pc->soft_percent : 0, dec, lr);
    }
    if (dec->allowed) {
        if (call->confirming)
            call->charged |= UINT32_C(1) << (call->step % n);
        call->confirming = false;
        call->step++;
        if (route->excess == SLD_GW_DELAY && dec->delay > call->common)
            call->common = dec->delay; /* held once every policy has its place */
        return true;
    }
    if (peeking(call, n)) {
        call->confirming = true;
        return true;
    }
    if (route->excess == SLD_GW_DELAY && n > 1 && call->step >= n && call->attempts < DELAY_ATTEMPTS) {
        /* a concurrent request took the place between the peeks and this charge
         * (with Redis, requests' steps interleave): give back, ask again */
        end_places(call, true);
        call->attempts++;
        call->step = 0;
        call->common = 0;
        call->charged = 0;
        call->confirming = false;
        return true;
    }
    if (route->excess == SLD_GW_SHADOW) {
        sld_debug("gateway: route %s: over policy %s, forwarded (shadow)", route->name,
                  route->policies[call->step % n]);
        forward(call);
        return false;
    }
    refuse(call, rt, index, p, dec, lr);
    return false;
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr);

/* Decides the steps left, as long as the store answers at once; forwards
 * once every policy passed. */
static void advance(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld_daemon_t *d = call->w->gw->d;
    size_t n = route->npolicies;
    size_t total = n > 1 ? 2 * n : n;
    while (call->step < total) {
        size_t i = call->step % n;
        if (call->step >= n && (call->charged & (UINT32_C(1) << i))) {
            call->step++; /* charged while confirming its peek */
            continue;
        }
        /* the runtime in force now: a reload between two steps is seen */
        const sld_runtime_t *rt = sld_runtime(d);
        const char *name = route->policies[i];
        const char *key = call->keys + i * call->key_cap;
        size_t index = 0;
        const sl_policy_t *p =
            sld_policies_find(rt->policies, name, strlen(name), key, call->key_len[i], NULL, &index);
        if (p == NULL) {
            send_text(call->w, call->req, 503, "route %s: policy %s is not configured\n", route->name, name);
            return;
        }
        sld_request_t r = {.origin = {.rt = rt, .index = index, .slot = sld_policies_slot(rt->policies, index)},
                           .p = p, .key = key, .key_len = call->key_len[i], .cost = 1,
                           .flags = peeking(call, n) ? SL_DECIDE_PEEK : 0};
        if (route->excess == SLD_GW_DELAY) {
            /* several policies, all or nothing: the peeks find each one's place within
             * max_delay, then each is charged at the latest of them (store/reserve.h) */
            bool charging = n > 1 && call->step >= n;
            r.flags |= SLD_DECIDE_WAIT;
            r.max_wait = charging ? (call->common < SL_MAX_WAIT ? call->common : SL_MAX_WAIT) : route->max_delay;
            /* a shaper's place may lie past the wait (its queue): no floor beyond it */
            r.not_before = call->common < r.max_wait ? call->common : r.max_wait;
        }
        sl_decision_t dec;
        sl_limit_report_t lr[SL_MAX_LIMITS];
        sl__held_t held = {0};
        r.held = &held; /* filled by a store that answers now and can give places back */
        int rc = sld_engine_decide(d->engine, call->w->index, &r, &dec, lr, on_decided, call);
        if (rc == SLD_PENDING) {
            call->pending = true;
            return;
        }
        if (rc == SL_OK && dec.allowed && !(r.flags & SL_DECIDE_PEEK) && call->held[i] == NULL)
            call->held[i] = sld_held_place_new(&r, &held);
        if (!decided(call, rc, rt, index, p, &dec, lr))
            return;
    }
    if (route->excess == SLD_GW_DELAY && call->common > 0) {
        hold(call, call->common); /* forwarded at its moment */
        return;
    }
    forward(call);
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    gw_call_t *call = arg;
    call->pending = false;
    if (call->req == NULL) { /* the client went away meanwhile */
        free(call);
        return;
    }
    const sld_gw_route_t *route = route_of(call);
    const sld_runtime_t *rt = sld_runtime(call->w->gw->d);
    size_t i = call->step % route->npolicies, index = 0;
    const char *name = route->policies[i];
    const sl_policy_t *p = sld_policies_find(rt->policies, name, strlen(name), call->keys + i * call->key_cap,
                                             call->key_len[i], NULL, &index);
    if (p == NULL) {
        send_text(call->w, call->req, 503, "route %s: policy %s is not configured\n", route->name, name);
        return;
    }
    if (decided(call, rc, rt, index, p, dec, lr))
        advance(call);
}

/* ---- keys --------------------------------------------------------------------------------------- */

/* Builds the key of every policy of the route into call; false when the
 * request was answered instead (a key that cannot be built). */
static bool build_keys(gw_call_t *call, const sld_runtime_t *rt, h2o_req_t *req) {
    const sld_gw_route_t *route = route_of(call);
    const sld_config_t *cfg = rt->cfg;
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof peer);
    req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    sld_http_headers_t headers = {.find = sld_http_request_header, .ctx = req};
    sld_forwarded_t fw;
    sld_http_forwarded(&fw, &headers, (const struct sockaddr *)&peer, cfg->user_header);
    fw.uri = (sld_span_t){req->path_normalized.base, req->path_normalized.len};
    fw.method = (sld_span_t){req->method.base, req->method.len};
    fw.route = (sld_span_t){route->name, strlen(route->name)};
    for (size_t i = 0; i < route->npolicies; i++) {
        size_t index = 0;
        const char *name = route->policies[i];
        const sld_policy_t *pc = sld_policies_find(rt->policies, name, strlen(name), "", 0, NULL, &index)
                                     ? sld_policies_config(rt->policies, index)
                                     : NULL;
        if (pc == NULL) {
            send_text(call->w, req, 503, "route %s: policy %s is not configured\n", route->name, name);
            return false;
        }
        if (sld_http_user_missing(pc, &fw)) {
            send_text(call->w, req, 401, "no %s header: policy %s keys on the user\n", cfg->user_header,
                      pc->name);
            return false;
        }
        const char *why = NULL;
        size_t n = sld_forward_key(&fw, rt->trusted, cfg->ipv6_prefix, pc->key_attrs, pc->nkey_attrs,
                                   call->keys + i * call->key_cap, call->key_cap, &why);
        if (n == 0) {
            send_text(call->w, req, 400, "cannot build the key of policy %s: %s\n", pc->name,
                      why ? why : "unknown");
            return false;
        }
        call->key_len[i] = n;
    }
    return true;
}

/* The connection's peer, as text (trusted proxies are not looked at). */
static void peer_address(h2o_req_t *req, char out[INET6_ADDRSTRLEN]) {
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof peer);
    out[0] = '\0';
    req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    if (peer.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, out, INET6_ADDRSTRLEN);
    else if (peer.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, out, INET6_ADDRSTRLEN);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
    gw_worker_t *w = ((gw_handler_t *)self)->w;
    const sld_gw_config_t *g = w->gw->g;
    sld_span_t method = {req->method.base, req->method.len};
    sld_span_t authority = {req->authority.base, req->authority.len};
    sld_span_t path = {req->path_normalized.base, req->path_normalized.len};
    const sld_gw_route_t *route = sld_gw_route_find(g, method, authority, path);
    if (route == NULL) {
        send_text(w, req, 404, "no route of the gateway matches %.*s %.*s\n", (int)(method.len > 16 ? 16 : method.len),
                  method.ptr, (int)(path.len > 200 ? 200 : path.len), path.ptr);
        return 0;
    }
    const sld_runtime_t *rt = sld_runtime(w->gw->d);
    size_t cap = (size_t)rt->cfg->max_key_bytes + 1;
    size_t n = route->npolicies;
    gw_call_t *call = malloc(sizeof *call + (n ? n : 1) * cap);
    if (call == NULL) {
        send_text(w, req, 503, "out of memory\n");
        return 0;
    }
    *call = (gw_call_t){.req = req, .w = w, .route = (size_t)(route - g->routes), .keys = (char *)(call + 1),
                        .key_cap = cap};
    gw_link_t *link = h2o_mem_alloc_shared(&req->pool, sizeof *link, on_request_gone);
    link->call = call; /* from now on the request's end frees call (or its answer does) */
    if (!build_keys(call, rt, req))
        return 0;
    if (route->concurrency.per_key && n == 0)
        peer_address(req, call->ip);
    if (route->excess == SLD_GW_DELAY) {
        if (!w->timer_open || w->closing) {
            send_text(w, req, 503, "the gateway is stopping\n");
            return 0;
        }
        if (!sld_gw_conc_enter(w->gw->conc, call->route)) { /* refused as reject would, uncharged */
            sld_gw_count(w->gw->conc, call->route, SLD_GW_REJECTED);
            send_text(w, req, (int)route->status, "%s", route->body);
            return 0;
        }
        call->place = true;
    }
    advance(call);
    return 0;
}

/* ---- upstream failures ------------------------------------------------------------------------- */

typedef struct error_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
    bool sent;
} error_ostream_t;

static void error_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n,
                          h2o_send_state_t state) {
    error_ostream_t *o = (error_ostream_t *)self;
    (void)bufs;
    (void)n;
    if (!o->sent) {
        o->sent = true;
        h2o_ostream_send_next(&o->super, req, &o->body, 1, state);
    } else {
        h2o_ostream_send_next(&o->super, req, NULL, 0, state);
    }
}

typedef struct gw_filter {
    h2o_filter_t super;
    gw_worker_t *w;
} gw_filter_t;

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot) {
    const h2o_iovec_t *why = req->res.status == 502 ? sld_gw_proxy_error(req) : NULL;
    if (why != NULL) {
        bool timeout = memmem(why->base, why->len, "timeout", 7) != NULL;
        gw_worker_t *w = ((gw_filter_t *)self)->w;
        const sld_gw_route_t *route = sld_gw_route_find(
            w->gw->g, (sld_span_t){req->method.base, req->method.len},
            (sld_span_t){req->authority.base, req->authority.len},
            (sld_span_t){req->path_normalized.base, req->path_normalized.len});
        if (route != NULL) /* the route that forwarded it: routes do not change */
            sld_gw_count(w->gw->conc, (size_t)(route - w->gw->g->routes),
                         timeout ? SLD_GW_TIMED_OUT : SLD_GW_BAD_GATEWAY);
        char *body = h2o_mem_alloc_pool(&req->pool, 256);
        int len = snprintf(body, 256,
                           timeout ? "gateway timeout: the upstream did not answer in time (%.*s)\n"
                                   : "bad gateway: the upstream cannot be reached (%.*s)\n",
                           (int)(why->len > 100 ? 100 : why->len), why->base);
        req->res.status = timeout ? 504 : 502;
        req->res.reason = timeout ? "Gateway Timeout" : "Bad Gateway";
        req->res.content_length = (size_t)len;
        error_ostream_t *o = (error_ostream_t *)h2o_add_ostream(req, sizeof *o, slot);
        o->super.do_send = error_do_send;
        o->body = h2o_iovec_init(body, (size_t)len);
        o->sent = false;
        slot = &o->super.next;
    }
    h2o_setup_next_ostream(req, slot);
}

/* ---- set-up ------------------------------------------------------------------------------------- */

int sld_gateway_new(sld_daemon_t *d, sld_gateway_t **out) {
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    sld_config_part_t *part = sld_config_section_hold(cfg, sld_gateway_section.name);
    if (part == NULL)
        return SL_ENOENT;
    sld_gateway_t *gw = calloc(1, sizeof *gw);
    if (gw == NULL) {
        sld_config_part_release(part);
        return SL_ENOMEM;
    }
    gw->d = d;
    gw->part = part;
    gw->g = sld_config_part_value(part);
    if (sld_gw_conc_new(gw->g, &gw->conc) != SL_OK) {
        sld_gateway_free(gw);
        return SL_ENOMEM;
    }
    gw->metrics = (sld_metrics_extra_t){.write = sld_gw_conc_write_metrics, .ctx = gw->conc};
    sld_metrics_extra_set(&gw->metrics);
    *out = gw;
    return SL_OK;
}

void sld_gateway_free(sld_gateway_t *gw) {
    if (gw == NULL)
        return;
    if (gw->conc != NULL)
        sld_metrics_extra_set(NULL);
    sld_gw_conc_free(gw->conc);
    sld_config_part_release(gw->part);
    free(gw);
}

const char *sld_gateway_listen(const sld_gateway_t *gw) { return gw->g->listen; }

static int configure(gw_worker_t *w, char *err, size_t err_len) {
    const sld_gw_config_t *g = w->gw->g;
    const sld_config_t *cfg = sld_runtime(w->gw->d)->cfg;
    if ((w->proxies = calloc(g->nroutes ? g->nroutes : 1, sizeof *w->proxies)) == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    sld_http_server_config(&w->config, cfg);
    w->has_config = true;
    w->config.proxy.io_timeout = (uint64_t)(g->timeout / 1000);
    w->config.proxy.emit_x_forwarded_headers = 1;
    h2o_hostconf_t *host = h2o_config_register_host(&w->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    path->error_log.emit_request_errors = 0; /* answered with a clear body instead */
    gw_handler_t *handler = (gw_handler_t *)h2o_create_handler(path, sizeof *handler);
    handler->super.on_req = on_req;
    handler->w = w;
    for (size_t i = 0; i < g->nroutes; i++) {
        const sld_gw_route_t *route = &g->routes[i];
        h2o_url_t url;
        if (h2o_url_parse(route->upstream, strlen(route->upstream), &url) != 0) {
            snprintf(err, err_len, "gateway: route %s: bad upstream %s", route->name, route->upstream);
            return SL_EINVAL;
        }
        h2o_proxy_config_vars_t vars = {.io_timeout = (uint64_t)(route->timeout / 1000),
                                        .keepalive_timeout = KEEPALIVE_MS};
        h2o_proxy_register_reverse_proxy(path, &url, &vars);
        w->proxies[i] = path->handlers.entries[path->handlers.size - 1];
    }
    gw_filter_t *filter = (gw_filter_t *)h2o_create_filter(path, sizeof *filter);
    filter->super.on_setup_ostream = on_setup_ostream;
    filter->w = w;
    return SL_OK;
}

#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
/* libh2o 2.2's proxy handler copies its upstream URL and frees the host and
 * path of the copy but not its authority (lib/handler/proxy.c,
 * on_handler_dispose): freed here, through the handler's leading fields as
 * that file declares them. */
struct rp_handler_head {
    h2o_handler_t super;
    h2o_url_t upstream;
};

static void free_upstream_authority(h2o_handler_t *proxy) {
    struct rp_handler_head *rp = (struct rp_handler_head *)proxy;
    free(rp->upstream.authority.base);
    rp->upstream.authority = h2o_iovec_init(NULL, 0);
}
#else
static void free_upstream_authority(h2o_handler_t *proxy) { (void)proxy; }
#endif

/* ---- the front's hooks (net/front.h) ------------------------------------------------------------ */

static int worker_start(void *ctx, uv_loop_t *loop, int fd, uint32_t index, void **out, char *err,
                        size_t err_len) {
    sld_gateway_t *gw = ctx;
    gw_worker_t *w = sld_front_worker_new(sizeof *w, fd, err, err_len);
    if (w == NULL)
        return SL_ENOMEM;
    w->gw = gw;
    w->index = index;
    *out = w; /* on failure the caller stops and disposes it like any other */
    uv_timer_init(loop, &w->wait_timer);
    w->wait_timer.data = w;
    w->timer_open = true;
    int rc = configure(w, err, err_len);
    if (rc != SL_OK) {
        close(fd);
        return rc;
    }
    return sld_http_server_start(&w->server, gw->d, loop, &w->config, fd, "the gateway", err, err_len);
}

static void worker_dispose(void *arg) {
    gw_worker_t *w = arg;
    if (w->server.disposed)
        return;
    w->closing = true; /* the requests that end now wake no waiter */
    sld_http_server_dispose(&w->server);
    if (w->timer_open)
        uv_close((uv_handle_t *)&w->wait_timer, NULL);
    w->timer_open = false;
    if (w->has_config) {
        for (size_t i = 0; i < w->gw->g->nroutes; i++)
            if (w->proxies[i])
                free_upstream_authority(w->proxies[i]);
        h2o_config_dispose(&w->config); /* the socket pools' timers, on this loop */
    }
    sld_http_reply_free(&w->reply);
}

static void worker_free(void *arg) {
    gw_worker_t *w = arg;
    free(w->proxies);
    free(w);
}

const sld_front_ops_t sld_gateway_front_ops = {
    .name = "gateway",
    .start = worker_start,
    SLD_HTTP_SERVER_HOOKS,
    .dispose = worker_dispose,
    .free = worker_free,
};
