/* client_private.h -- the Redis client's insides, shared by its modules:
 * client.c (a command's life, deadlines, the breaker, the contract),
 * connection.c (a node's connection and the replies on it), uv_adapter.c
 * (hiredis's hooks on the loop), routing.c (which node a command goes to,
 * redirects), discovery.c (the Cluster slot
 * map, the node table, Sentinel by quorum). Nothing outside
 * src/store/redis/ includes this; the contract is client.h.
 */
#ifndef SL_STORE_REDIS_CLIENT_PRIVATE_H
#define SL_STORE_REDIS_CLIENT_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

/* client.h is the module's own header, included first by each .c file;
 * not included here, so the private part does not depend back on it. */
#ifndef SL_STORE_REDIS_CLIENT_H
#error "include store/redis/client.h before client_private.h"
#endif
#include "store/redis/cluster.h"
#include "store/redis/quorum.h"
#include "store/redis/resolve.h"

#define MAX_NODES 300          /* nodes one client may know (masters, seeds, sentinels) */
#define MAX_REDIRECTS 5        /* MOVED/ASK/READONLY resends of one command */
#define MAX_ABANDONED 100000   /* late replies a node may owe before it is dropped */
#define BACKOFF_MIN_MS 25      /* first reconnect delay, doubled up to BACKOFF_MAX_MS */
#define BACKOFF_MAX_MS 500
#define REFRESH_MIN_MS 100     /* between two CLUSTER SLOTS / sentinel queries */
#define SENTINEL_CHECK_MS 1000 /* how often the sentinels are asked who the master is */

typedef struct pend pend_t;
typedef struct node node_t;

typedef struct queue {
    pend_t *head, *tail;
} queue_t;

struct pend {
    sl__redis_client_t *c;
    pend_t *dprev, *dnext;  /* the client's deadline list, while not done */
    pend_t *qprev, *qnext;  /* the queue q, while waiting */
    queue_t *q;
    node_t *node;           /* where it was last written */
    node_t *target;         /* must go there (ASK, internal queries), or NULL */
    sl__redis_reply_fn fn;
    void *arg;
    uint64_t deadline;      /* uv_now() milliseconds */
    char *cmd;              /* RESP bytes, redisFormatCommandArgv() */
    size_t cmd_len;
    const char *script;     /* the body for NOSCRIPT, caller-owned */
    size_t script_len;
    int slot;               /* Cluster slot, or -1 for "any node" */
    uint8_t redirects;
    uint8_t hi_refs;        /* hiredis callbacks still owed to it */
    bool busy;              /* its callback is running: not freed under it */
    bool asking, script_loaded, done, internal, probe;
    bool asked;             /* last written after ASKING: a resend needs it too */
};

/* N_RESOLVING: its name is being looked up (off the loop); N_CONNECTING:
 * connecting to one of its addresses, or in the AUTH/SELECT handshake. */
typedef enum node_state { N_DOWN = 0, N_RESOLVING, N_CONNECTING, N_READY } node_state_t;

struct node {
    sl__redis_client_t *c;
    sl__redis_addr_t addr;
    bool sentinel;          /* a sentinel: AUTH with the sentinel credentials, no SELECT */
    bool wanted;            /* reconnect it when it drops */
    bool failed;            /* its last attempt failed: sends fail at once */
    bool ever_ready;
    node_state_t state;
    redisAsyncContext *ac;
    uv_timer_t timer;       /* connect timeout, then reconnect backoff */
    uint32_t backoff_ms;
    int handshake_left;     /* AUTH/SELECT/ROLE replies still expected */
    queue_t waitq;
    uint32_t in_flight;     /* written, reply owed (abandoned ones too) */
    uint64_t last_rx;       /* uv_now() of its last reply (or of connecting) */
    bool script_loading;    /* a SCRIPT LOAD is on its way on this connection */
    sl__resolved_t addrs;   /* addr.host's addresses, looked up at each connection round */
    size_t addr_at;         /* the one being tried */
    sl__resolve_req_t *resolving; /* the lookup under way, or NULL */
    char tried[400];        /* this round's failed addresses and why */
    char why[200];          /* its last error, for the sentinels' report */
};

struct sl__redis_client {
    uv_loop_t *loop;
    sl__redis_url_t url;
    sl__redis_client_options_t o;
    node_t *nodes[MAX_NODES];
    size_t n_nodes;
    node_t *primary;                 /* standalone server, sentinel's master, or NULL */
    node_t **slots;                  /* Cluster: slot -> master, SL__REDIS_SLOTS entries */
    sl__redis_slot_map_t *map;       /* scratch for CLUSTER SLOTS */
    bool map_ready;
    queue_t waitq;                   /* waiting for discovery */
    pend_t *dhead, *dtail;           /* deadline order */
    uv_timer_t deadline_timer, disc_timer, breaker_timer;
    bool discovering;                /* a CLUSTER SLOTS / SENTINEL query in flight */
    node_t *disc_node;
    size_t disc_next;                /* next seed to ask */
    size_t disc_tried;               /* in this round */
    uint64_t moved_seq;              /* MOVED replies seen so far */
    uint64_t *slot_seq;              /* Cluster: moved_seq of the MOVED that set each slot */
    uint64_t disc_seq;               /* moved_seq when the CLUSTER SLOTS in flight was sent */
    sl__redis_sentinel_round_t round;/* Sentinel: the answers of the round under way */
    uint64_t last_disc;
    uint32_t failures;               /* consecutive */
    bool open, probing;
    uint64_t opened_at;
    sl__redis_client_stats_t st;
    char last_error[1024];
    bool closing;
    int handles;                     /* open uv handles */
    void (*done)(void *);
    void *done_arg;
};


/* ---- queues of waiting commands ---------------------------------------------------- */

static inline void sl__rc_q_push(queue_t *q, pend_t *p) {
    p->q = q;
    p->qnext = NULL;
    p->qprev = q->tail;
    if (q->tail)
        q->tail->qnext = p;
    else
        q->head = p;
    q->tail = p;
}

static inline void sl__rc_q_remove(pend_t *p) {
    queue_t *q = p->q;
    if (q == NULL)
        return;
    if (p->qprev)
        p->qprev->qnext = p->qnext;
    else
        q->head = p->qnext;
    if (p->qnext)
        p->qnext->qprev = p->qprev;
    else
        q->tail = p->qprev;
    p->q = NULL;
    p->qprev = p->qnext = NULL;
}

static inline pend_t *sl__rc_q_pop(queue_t *q) {
    pend_t *p = q->head;
    if (p)
        sl__rc_q_remove(p);
    return p;
}

/* client.c */
/* Completes p once (later calls do nothing): off the deadline list and its
 * queue, counted, the breaker told, its callback called. */
void sl__rc_complete(pend_t *p, sl__redis_status_t st, const redisReply *r);
/* Frees p if it is done and nothing refers to it any more. */
void sl__rc_pend_release(pend_t *p);
/* A handle of c's was closed: the last one, while closing, frees c. */
void sl__rc_handle_closed(sl__redis_client_t *c);
/* Sends an internal command to `to` (NULL: routed as usual); fn(arg, ...). */
void sl__rc_internal_send(sl__redis_client_t *c, node_t *to, sl__redis_reply_fn fn, void *arg,
                          int argc, const char **argv, bool probe);

/* connection.c */
void sl__rc_set_error(sl__redis_client_t *c, const char *what, node_t *n, const char *why);
node_t *sl__rc_node_get(sl__redis_client_t *c, const sl__redis_addr_t *a, bool sentinel);
void sl__rc_node_connect(node_t *n);
void sl__rc_node_drop(node_t *n, const char *why);
/* Writes p on n, or queues it until n is connected (connecting it). */
void sl__rc_node_send(node_t *n, pend_t *p);
/* Closes n's connection and frees it: only for a node nothing refers to
 * (no command in flight or waiting on it, not the primary or a slot's). */
void sl__rc_node_forget(node_t *n);
/* Whether a command in flight or waiting refers to n. */
bool sl__rc_node_busy(const node_t *n);
/* n's part of closing the client (the client is closing). */
void sl__rc_node_close(node_t *n);
void sl__rc_fail_queue(queue_t *q, sl__redis_status_t st);

/* uv_adapter.c */
/* Watches ac's socket on c's loop (hiredis's ev hooks); counted in
 * c->handles until hiredis cleans it up. 0, or -1 when out of memory. */
int sl__rc_uv_attach(sl__redis_client_t *c, redisAsyncContext *ac);

/* routing.c */
/* Sends p to the node its slot (or the client's kind) names, or queues it
 * on the client until discovery names one. */
void sl__rc_route(pend_t *p);
/* Routes again everything waiting on the client (discovery found a node). */
void sl__rc_route_waiting(sl__redis_client_t *c);
/* MOVED, ASK or READONLY in r (an error reply from n on ac): p sent on,
 * true; false when r is no redirect (or p ran out of them). */
bool sl__rc_redirect(pend_t *p, node_t *n, const redisAsyncContext *ac, const redisReply *r);

/* discovery.c */
void sl__rc_discover(sl__redis_client_t *c);
void sl__rc_discover_in(sl__redis_client_t *c, uint64_t ms);
void sl__rc_discover_later(sl__redis_client_t *c);
/* A MOVED said `slot` is served by `to` now. */
void sl__rc_moved(sl__redis_client_t *c, uint16_t slot, node_t *to);

#endif
