/* gateway_wait.c -- requests of the gateway that wait: for their moment
 * (excess: delay) or for a concurrency slot, in their worker's FIFO served
 * by one timer per worker loop; and the hand-off of a request to its
 * upstream (see gateway_private.h, gateway.h).
 *
 * Not here: deciding (gateway.c), the shared counts (gateway_concurrency.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <h2o.h>

#include "server/gateway/gateway_access_log.h"
#include "server/gateway/gateway_private.h"
#include "server/net/peer_gone.h"

#define RETRY_MS 10       /* waiters look for a slot freed on another worker this often */
#define PROBE_MS SLD_PEER_PROBE_MS /* an HTTP/1 waiter's connection is looked at for its end this often */

void sld__gw_unwait(gw_call_t *call) {
    gw_worker_t *w = call->w;
    *(call->prev ? &call->prev->next : &w->first) = call->next;
    *(call->next ? &call->next->prev : &w->last) = call->prev;
    call->prev = call->next = NULL;
    call->waiting = false;
}

void sld__gw_drop_place(gw_call_t *call) {
    if (call->place)
        sld_gw_conc_leave(lane_of(call));
    call->place = false;
}

/* ---- concurrency limits ----------------------------------------------------------------------- */

/* A slot held by a forwarded request, in its pool: given back when the
 * request ends, however it ends (response sent, client gone, upstream
 * failed or timed out), since the pool goes with the request; the way it
 * was counted (per key or per route, as the lane said then) with it. */
typedef struct gw_slot {
    gw_worker_t *w;
    gw_gen_t *gen;             /* pinned: its lane */
    sld_gw_lane_t *lane;
    bool per_key;
    size_t key_len;
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
    sld_gw_conc_give(slot->w->gw->conc, slot->lane, slot->per_key, slot->key, slot->key_len);
    sld__gw_gen_unpin(slot->gen);
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
    bool per_key;
    if (!sld_gw_conc_take(call->w->gw->conc, lane_of(call), key, len, &per_key))
        return false;
    gw_slot_t *slot = h2o_mem_alloc_shared(&call->req->pool, sizeof *slot + len, on_slot_end);
    *slot = (gw_slot_t){.w = call->w, .gen = call->gen, .lane = lane_of(call), .per_key = per_key, .key_len = len};
    memcpy(slot->key, key, len);
    call->gen->pins++;
    return true;
}

static void proxy(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld_gw_count(lane_of(call), SLD_GW_FORWARDED);
    sl_usec_t *upstream_us = sld_gw_access_forwarded(call->req);
    gw_upstreams_t *u = &call->gen->upstreams[call->route];
    h2o_handler_t *upstream = u->proxies[u->next];
    u->next = u->next + 1 < u->n ? u->next + 1 : 0; /* round robin, on this worker */
    sld_gw_forward(call->req, upstream, &call->fields, route->npolicies, &route->headers,
                   lane_of(call), upstream_us);
}

static void refuse_busy(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld_gw_count(lane_of(call), SLD_GW_BUSY);
    sld_gw_access_decision(call->req, SLD_GW_LOG_BUSY);
    sld__gw_send_text(call->w, call->req, (int)route->concurrency.status,
              "route %s: %u requests in flight %s (its concurrency limit), no slot freed %s\n", route->name,
              route->concurrency.limit, route->concurrency.per_key ? "for this key" : "on the route",
              route->concurrency.max_wait ? "within max_wait" : "(no max_wait)");
}

void sld__gw_end_places(gw_call_t *call, bool give_back) {
    for (size_t i = 0; i < SLD_GW_MAX_POLICIES; i++) {
        if (give_back)
            sld_held_place_give_back(call->w->gw->d, call->w->index, call->held[i]);
        else
            sld_held_place_free(call->held[i]);
        call->held[i] = NULL;
    }
}

void sld__gw_forward(gw_call_t *call) {
    const sld_gw_route_t *route = route_of(call);
    sld__gw_end_places(call, false); /* its moment came */
    sld__gw_drop_place(call);
    if (route->concurrency.limit == 0 || take_slot(call)) {
        proxy(call);
        return;
    }
    gw_worker_t *w = call->w;
    if (route->concurrency.max_wait == 0 || w->closing || !w->timer_open) {
        refuse_busy(call);
        return;
    }
    if (!sld_gw_conc_enter(lane_of(call))) {
        sld_gw_count(lane_of(call), SLD_GW_BUSY);
        sld_gw_access_decision(call->req, SLD_GW_LOG_BUSY);
        sld__gw_send_text(w, call->req, (int)route->concurrency.status,
                  "route %s: %u requests wait for a slot already (its queue), no place left\n", route->name,
                  route->queue);
        return;
    }
    call->place = true;
    wait_in_line(call, false, uv_now(w->wait_timer.loop) + (uint64_t)(route->concurrency.max_wait / 1000));
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
            sld__gw_unwait(call);
            sld__gw_forward(call); /* may wait again, for a slot */
            continue;
        }
        if (!call->delayed && take_slot(call)) {
            sld__gw_unwait(call);
            sld__gw_drop_place(call);
            proxy(call);
            continue;
        }
        if (!call->delayed && now >= call->deadline) {
            sld__gw_unwait(call);
            sld__gw_drop_place(call);
            refuse_busy(call);
            continue;
        }
        if (now >= call->probe_at) {
            call->probe_at = now + PROBE_MS;
            if (sld_peer_gone(call->req)) {
                sld__gw_end_places(call, true); /* the next request gets them */
                sld__gw_unwait(call); /* its place now; the answer, written to nobody, ends the request */
                sld__gw_drop_place(call);
                sld__gw_send_text(w, call->req, 503, "the client went away while waiting\n");
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

void sld__gw_hold(gw_call_t *call, sl_usec_t delay) {
    gw_worker_t *w = call->w;
    sld_gw_count(lane_of(call), SLD_GW_DELAYED);
    sld_gw_access_decision(call->req, SLD_GW_LOG_DELAYED);
    sld_gw_count_delay(lane_of(call), delay);
    /* The delay counts from the decision, not from the start of this turn
     * of the loop (uv_now), which may be well before it in a busy turn:
     * the request would leave early. */
    uv_update_time(w->wait_timer.loop);
    wait_in_line(call, true, uv_now(w->wait_timer.loop) + (uint64_t)((delay + 999) / 1000));
}
