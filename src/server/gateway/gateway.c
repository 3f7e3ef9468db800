/* gateway.c -- the gateway front on the worker loops (see gateway.h): one
 * request, from its route to its decisions (gateway_private.h says which
 * file does the rest).
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
#include "server/engine/engine.h"
#include "server/gateway/gateway.h"
#include "server/gateway/gateway_access_log.h"
#include "server/gateway/gateway_private.h"
#include "server/gateway/gateway_route.h"
#include "server/http/http_ratelimit.h"
#include "server/http/http_request.h"

#define DELAY_ATTEMPTS 32 /* excess: delay, several policies: peeks asked again at most this often */

/* A call's block (over a kilobyte with its keys): the worker keeps up to
 * SPARE_CALLS freed ones for its next requests, which a malloc and a free
 * of that size cost about 550 instructions (bench/README.md). As many as
 * the requests one turn of the loop starts: their calls are freed together
 * at the next. */
#if defined(__SANITIZE_ADDRESS__)
#define SPARE_CALLS 0 /* every call freed, so that ASan sees any use after its end */
#else
#define SPARE_CALLS 64
#endif

static gw_call_t *call_alloc(gw_worker_t *w, size_t bytes, size_t *capacity) {
    gw_call_t *call = w->spare_calls;
    if (call != NULL) {
        w->spare_calls = call->next;
        w->nspare_calls--;
        if (call->bytes >= bytes) {
            *capacity = call->bytes;
            return call;
        }
        free(call); /* a reload made keys longer */
    }
    *capacity = bytes;
    return malloc(bytes);
}

/* Lets go of the call's pin of its routes' generation too. */
static void call_free(gw_call_t *call) {
    gw_worker_t *w = call->w;
    if (call->gen)
        sld__gw_gen_unpin(call->gen);
    if (w->nspare_calls == SPARE_CALLS) {
        free(call);
        return;
    }
    call->next = w->spare_calls;
    w->spare_calls = call;
    w->nspare_calls++;
}

static void on_request_gone(void *arg) {
    gw_call_t *call = ((gw_link_t *)arg)->call;
    call->req = NULL;
    sld__gw_end_places(call, true); /* still held only when it never ran */
    if (call->waiting)
        sld__gw_unwait(call);
    sld__gw_drop_place(call); /* a client gone while waiting gives its place back */
    if (!call->pending)
        call_free(call);
}

void sld__gw_send_text(gw_worker_t *w, h2o_req_t *req, int status, const char *fmt, ...) {
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

static void refuse(gw_call_t *call, const sld_runtime_t *rt, size_t index, const sl_policy_t *p,
                   const sl_decision_t *dec, const sl_limit_report_t *lr) {
    const sld_gw_route_t *route = route_of(call);
    sld__gw_end_places(call, true); /* a charge of several policies denied: the others' back */
    sld__gw_drop_place(call);
    sld_gw_count(lane_of(call), SLD_GW_REJECTED);
    sld_gw_access_decision(call->req, SLD_GW_LOG_REJECTED);
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
        sld__gw_send_text(call->w, call->req, 503, "the rate limiter cannot decide: %s\n", sl_strerror(rc));
        return false;
    }
    /* what the fields say, unless no one sees them (headers: off both ways): writing them
     * is about 1,400 instructions, 5 % of a forwarded request (bench/README.md) */
    if (!peeking(call, n) && (dec->allowed || route->excess == SLD_GW_SHADOW) &&
        (route->headers.client || route->headers.upstream)) {
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
        sld__gw_end_places(call, true);
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
        sld_gw_access_decision(call->req, SLD_GW_LOG_SHADOW);
        sld__gw_forward(call);
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
            sld__gw_send_text(call->w, call->req, 503, "route %s: policy %s is not configured\n", route->name, name);
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
        if ((r.flags & SLD_DECIDE_WAIT) && !(r.flags & SL_DECIDE_PEEK) && call->held[i] == NULL &&
            sld_engine_defers(d->engine, p) && (call->coming = sld_held_place_pending(&r)) != NULL)
            r.held = sld_held_place_held(call->coming); /* one that answers later: until then */
        int rc = sld_engine_decide(d->engine, call->w->index, &r, &dec, lr, on_decided, call);
        if (rc == SLD_PENDING) {
            call->pending = true;
            return;
        }
        if (call->coming) { /* answered now after all */
            held = *sld_held_place_held(call->coming);
            sld_held_place_free(call->coming);
            call->coming = NULL;
        }
        if (rc == SL_OK && dec.allowed && !(r.flags & SL_DECIDE_PEEK) && call->held[i] == NULL)
            call->held[i] = sld_held_place_new(&r, &held);
        if (!decided(call, rc, rt, index, p, &dec, lr))
            return;
    }
    if (route->excess == SLD_GW_DELAY && call->common > 0) {
        sld__gw_hold(call, call->common); /* forwarded at its moment */
        return;
    }
    sld__gw_forward(call);
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    gw_call_t *call = arg;
    call->pending = false;
    sld_held_place_t *coming = call->coming;
    call->coming = NULL;
    if (call->req == NULL) { /* the client went away meanwhile: so does its place */
        sld_held_place_give_back(call->w->gw->d, call->w->index, coming);
        call_free(call);
        return;
    }
    const sld_gw_route_t *route = route_of(call);
    const sld_runtime_t *rt = sld_runtime(call->w->gw->d);
    size_t i = call->step % route->npolicies, index = 0;
    if (rc == SL_OK && dec->allowed && call->held[i] == NULL)
        call->held[i] = coming; /* what Redis said the place held */
    else
        sld_held_place_free(coming);
    const char *name = route->policies[i];
    const sl_policy_t *p = sld_policies_find(rt->policies, name, strlen(name), call->keys + i * call->key_cap,
                                             call->key_len[i], NULL, &index);
    if (p == NULL) {
        sld__gw_send_text(call->w, call->req, 503, "route %s: policy %s is not configured\n", route->name, name);
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
            sld__gw_send_text(call->w, req, 503, "route %s: policy %s is not configured\n", route->name, name);
            return false;
        }
        if (sld_http_user_missing(pc, &fw)) {
            sld__gw_send_text(call->w, req, 401, "no %s header: policy %s keys on the user\n", cfg->user_header,
                      pc->name);
            return false;
        }
        const char *why = NULL;
        size_t n = sld_forward_key(&fw, rt->trusted, cfg->ipv6_prefix, pc->key_attrs, pc->nkey_attrs,
                                   call->keys + i * call->key_cap, call->key_cap, &why);
        if (n == 0) {
            sld__gw_send_text(call->w, req, 400, "cannot build the key of policy %s: %s\n", pc->name,
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

int sld__gw_on_req(h2o_handler_t *self, h2o_req_t *req) {
    gw_worker_t *w = ((gw_handler_t *)self)->w;
    gw_gen_t *gen = sld__gw_gen(w); /* the routes in force: a reload's apply from its first request on */
    const sld_gw_config_t *g = gen->g;
    sld_span_t method = {req->method.base, req->method.len};
    sld_span_t authority = {req->authority.base, req->authority.len};
    sld_span_t path = {req->path_normalized.base, req->path_normalized.len};
    const sld_gw_route_t *route = sld_gw_route_find(g, method, authority, path);
    sld_gw_access_begin(req, g, route);
    if (route == NULL) {
        sld__gw_send_text(w, req, 404, "no route of the gateway matches %.*s %.*s\n", (int)(method.len > 16 ? 16 : method.len),
                  method.ptr, (int)(path.len > 200 ? 200 : path.len), path.ptr);
        return 0;
    }
    const sld_runtime_t *rt = sld_runtime(w->gw->d);
    size_t cap = (size_t)rt->cfg->max_key_bytes + 1;
    size_t n = route->npolicies;
    size_t bytes;
    gw_call_t *call = call_alloc(w, sizeof *call + (n ? n : 1) * cap, &bytes);
    if (call == NULL) {
        sld__gw_send_text(w, req, 503, "out of memory\n");
        return 0;
    }
    *call = (gw_call_t){.req = req, .w = w, .gen = gen, .route = (size_t)(route - g->routes),
                        .keys = (char *)(call + 1), .key_cap = cap, .bytes = bytes};
    gen->pins++; /* until call is freed: the routes, upstreams and lane it was admitted by */
    gw_link_t *link = h2o_mem_alloc_shared(&req->pool, sizeof *link, on_request_gone);
    link->call = call; /* from now on the request's end frees call (or its answer does) */
    if (!build_keys(call, rt, req))
        return 0;
    if (route->concurrency.per_key && n == 0)
        peer_address(req, call->ip);
    if (route->excess == SLD_GW_DELAY) {
        if (!w->timer_open || w->closing) {
            sld__gw_send_text(w, req, 503, "the gateway is stopping\n");
            return 0;
        }
        if (!sld_gw_conc_enter(lane_of(call))) { /* refused as reject would, uncharged */
            sld_gw_count(lane_of(call), SLD_GW_REJECTED);
            sld_gw_access_decision(req, SLD_GW_LOG_REJECTED);
            sld__gw_send_text(w, req, (int)route->status, "%s", route->body);
            return 0;
        }
        call->place = true;
    }
    advance(call);
    return 0;
}
