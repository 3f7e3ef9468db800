/* gateway_private.h -- what the gateway's files share (see gateway.h):
 * the gateway, its state on each worker loop, and a request on its way
 * through a route. Not for any other room.
 *
 * gateway.c: one request (match, keys, decisions, refusals);
 * gateway_wait.c: waiting for a moment (excess: delay) or a concurrency
 * slot, and handing the request to its upstream;
 * gateway_worker.c: the set-up, the upstream failure filter and the front's
 * hooks; gateway_generation.c: the routes in force, shared by the workers,
 * and a reload's new ones; gateway_proxies.c: a generation of routes on one
 * worker, with its libh2o proxies.
 */
#ifndef SL_SERVER_GATEWAY_PRIVATE_H
#define SL_SERVER_GATEWAY_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
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

/* A gateway: section's routes in force (gateway_generation.c), shared by
 * the workers: the section held and each route's lane. The gateway holds
 * the current one; each worker's generation holds its own. */
typedef struct gw_shared {
    sld_config_part_t *part;   /* the section, held */
    const sld_gw_config_t *g;
    sld_gw_lane_t **lanes;     /* route i's, held */
    _Atomic uint32_t holds;
} gw_shared_t;

struct sld_gateway {
    sld_daemon_t *d;
    sld_config_part_t *part;   /* the section of the start, held: the listeners' (their TLS contexts) */
    const sld_gw_config_t *g;  /* its value */
    sld_gw_conc_t *conc;       /* in-flight counts and counters, shared by the workers */
    sld_metrics_extra_t metrics; /* its series in /metrics */
    struct gw_listener *listeners; /* one per gateway.listen entry: each a front of its own */
    pthread_mutex_t lock;      /* current's swap and the holds taken of it, the metrics written */
    _Atomic(gw_shared_t *) current; /* the routes requests arriving now take */
    uint64_t followed;         /* the runtime generation last compared with current (under lock) */
    atomic_bool access_log_on; /* current's section logs (its file is the start's) */
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

/* A generation of routes on one worker (gateway_proxies.c): a shared
 * one's, with their proxies made for this worker's loop. A request pins the
 * generation it was admitted by until it ends; a generation the worker has
 * left is disposed of, on its loop, once nothing pins it. */
typedef struct gw_gen {
    gw_shared_t *shared;       /* held */
    const sld_gw_config_t *g;  /* shared->g */
    h2o_pathconf_t path;       /* only the list of its proxies' handlers: in no host */
    void **client_ctx;         /* per proxy: its libh2o client context on this worker, or NULL */
    gw_upstreams_t *upstreams; /* per route, into path.handlers */
    uint64_t pins;             /* requests and slots using it, +1 while it is the worker's */
    bool disposed;             /* its proxies are gone (the worker stops) */
    struct gw_gen *next;       /* the worker's older ones */
} gw_gen_t;

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
    gw_gen_t *gen;             /* the routes new requests take */
    gw_gen_t *older;           /* generations left, until nothing pins them */
    uint64_t seen_generation;  /* of the runtime, when the worker last looked */
    const gw_shared_t *failed; /* could not be built here: tried again at the tick, not per request */
    size_t nslots;             /* handler contexts the h2o context has room for */
    void **graveyard;          /* memory of libh2o timers closed: freed at the next tick, once closed */
    size_t ngraveyard, graveyard_cap;
    sld_http_reply_t reply;    /* reused from request to request */
    bool has_config;           /* config exists (disposed with the worker) */
    uv_timer_t wait_timer;     /* serves the waiters for a concurrency slot */
    bool timer_open, closing;
    uint64_t timer_due;        /* loop time the timer is set for, while it is */
    struct gw_call *first, *last; /* the waiters, in arrival order (all routes) */
    struct gw_call *spare_calls;  /* calls freed, for the next requests (through next; gateway.c) */
    size_t nspare_calls;
};

/* ---- one request ------------------------------------------------------------------------------ */

/* A request on its way through the route's policies. Not in the request's
 * pool: a decision still pending when the client goes must find it. */
typedef struct gw_call {
    h2o_req_t *req;            /* NULL once the request is gone */
    gw_worker_t *w;
    gw_gen_t *gen;             /* the routes it was admitted by, pinned */
    size_t route;              /* index in gen's routes */
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
    size_t bytes;              /* of this block */
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

static inline const sld_gw_route_t *route_of(const gw_call_t *call) { return &call->gen->g->routes[call->route]; }

static inline sld_gw_lane_t *lane_of(const gw_call_t *call) { return call->gen->shared->lanes[call->route]; }

/* gateway_generation.c */
/* The routes of the start in force (gw->part): SL_ENOMEM. */
int sld__gw_shared_start(sld_gateway_t *gw);
/* Lets go of the routes in force (the gateway ends). */
void sld__gw_shared_stop(sld_gateway_t *gw);
/* The routes in force, held once more. */
gw_shared_t *sld__gw_shared_hold(sld_gateway_t *gw);
/* Lets go of one hold; the last frees it. */
void sld__gw_shared_release(sld_gateway_t *gw, gw_shared_t *s);
/* Makes the routes of rt's configuration those in force, if they changed
 * (any thread, rt valid meanwhile): said in the log. */
void sld__gw_follow(sld_gateway_t *gw, const sld_runtime_t *rt);
/* The routes in force's series (sld_metrics_extra_t's write; ctx: the gateway). */
void sld__gw_write_metrics(void *ctx, sld_buf_t *out);

/* gateway_proxies.c */
/* The generation new requests on w take, after w followed a reload. */
gw_gen_t *sld__gw_gen(gw_worker_t *w);
/* w's first generation (after its h2o context exists): SL_ENOMEM, SL_EINVAL. */
int sld__gw_gen_start(gw_worker_t *w, char *err, size_t err_len);
/* Lets go of a pin of gen (taken with gen->pins++). */
static inline void sld__gw_gen_unpin(gw_gen_t *gen) { gen->pins--; }
/* Every tick: follows a reload, disposes of the generations left that
 * nothing pins any more. */
void sld__gw_gens_tick(gw_worker_t *w);
/* The loop stops: every generation's proxies go (requests are over). */
void sld__gw_gens_dispose(gw_worker_t *w);
/* Once the loop is closed: the generations themselves. */
void sld__gw_gens_free(gw_worker_t *w);

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
