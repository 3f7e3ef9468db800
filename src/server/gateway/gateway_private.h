/* gateway_private.h -- what the gateway's files share (see gateway.h):
 * the gateway, its state on each worker loop, and a request on its way
 * through a route. Not for any other room.
 *
 * gateway.c: one request (match, keys, decisions, refusals);
 * gateway_wait.c: waiting for a moment (excess: delay) or a concurrency
 * slot, and handing the request to its upstream;
 * gateway_worker.c: the set-up, the upstream failure filter and the front's
 * hooks.
 */
#ifndef SL_SERVER_GATEWAY_PRIVATE_H
#define SL_SERVER_GATEWAY_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <arpa/inet.h>

#include <h2o.h>

#include "server/gateway/gateway_concurrency.h"
#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_forward.h"
#include "server/http/http_server.h"
#include "server/observe/extra_metrics.h"
#include "server/state/daemon.h"
#include "server/state/held_place.h"

typedef struct sld_gateway sld_gateway_t; /* as gateway.h: the gateway's files include both */

struct sld_gateway {
    sld_daemon_t *d;
    sld_config_part_t *part;   /* the gateway: section, held */
    const sld_gw_config_t *g;
    sld_gw_conc_t *conc;       /* in-flight counts and counters, shared by the workers */
    sld_metrics_extra_t metrics; /* its series in /metrics */
    struct gw_listener *listeners; /* one per gateway.listen entry: each a front of its own */
};

/* A listener of the gateway, as the server's front for it (its ctx). */
typedef struct gw_listener {
    sld_gateway_t *gw;
    size_t index;              /* in the section's listens */
} gw_listener_t;

/* A route's upstreams on one worker: libh2o takes one URL per proxy
 * handler, so one handler each, taken in turn. */
typedef struct gw_upstreams {
    h2o_handler_t **proxies;   /* the route's upstreams', in the order written */
    size_t n;
    size_t next;               /* round robin: the next request's (this worker's own turn) */
} gw_upstreams_t;

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
    h2o_handler_t **proxies;   /* every route's upstreams', in order (one block) */
    gw_upstreams_t *upstreams; /* per route, into proxies */
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
    sld_held_place_t *coming;  /* its place, filled by the answer (a store that answers later) */
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

static inline const sld_gw_route_t *route_of(const gw_call_t *call) {
    return &call->w->gw->g->routes[call->route];
}

/* gateway.c */
int sld__gw_on_req(h2o_handler_t *self, h2o_req_t *req);
void sld__gw_send_text(gw_worker_t *w, h2o_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* gateway_wait.c */
/* Takes call out of its worker's waiters. */
void sld__gw_unwait(gw_call_t *call);
/* Gives back the route queue place call holds, if any. */
void sld__gw_drop_place(gw_call_t *call);
/* The policies passed: takes a concurrency slot (or waits for one, or is
 * refused) and hands the request to its upstream. */
void sld__gw_forward(gw_call_t *call);
/* excess: delay: the request was admitted for `delay` from now. */
void sld__gw_hold(gw_call_t *call, sl_usec_t delay);
/* Its policies' places: given back (it leaves or is refused), or let go (it runs). */
void sld__gw_end_places(gw_call_t *call, bool give_back);

#endif
