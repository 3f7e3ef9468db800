/* accept_spread.h -- each accepted connection served by the least-loaded
 * worker of its front.
 *
 * Every worker listens on a front's address with a socket of its own
 * (SO_REUSEPORT, listener.h), and the kernel picks the socket by a hash of
 * the client's address and port: 64 connections may come as 22 to one
 * worker and 42 to the other, and the busier worker then sets the tail
 * latency. A front's spread keeps each worker's live connections (one
 * atomic count per worker); the worker whose socket accepts a connection
 * serves it unless another worker of the front has at least two fewer,
 * else it hands the socket to the worker with fewest (one above the
 * fewest is even enough, and spares short-lived connections a hand-over
 * every other time): into that worker's inbox (a mutex and
 * a small array) and a wake-up of its loop (uv_async_send), where the
 * front's on-connection hook takes it (uv_tcp_open) as it takes one from
 * its own listener. A connection is counted once, for the worker that
 * serves it, from the moment it is given to that worker until the front
 * releases it (sld_acceptor_release, when its handle closes).
 *
 * Stopping: a worker's acceptor closes its listener and its inbox; sockets
 * still in the inbox are closed there (never served, never leaked), and a
 * worker about to hand one over to a closed inbox serves it itself.
 *
 * Not here: max_connections (admission.h: the serving worker admits, as
 * before), opening the sockets (listener.h), the connections (the fronts').
 */
#ifndef SL_SERVER_ACCEPT_SPREAD_H
#define SL_SERVER_ACCEPT_SPREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "server/base/buf.h"

/* One front's workers: their counts and inboxes (accept_spread.c). */
typedef struct sld_spread sld_spread_t;

/* A spread for `workers` workers of the front `name` ("http"; kept, not
 * copied). SL_OK or SL_ENOMEM. */
int sld_spread_new(uint32_t workers, const char *name, sld_spread_t **out);

/* Once no worker serves the front any more (their loops are closed). */
void sld_spread_free(sld_spread_t *sp);

/* The port the front listens on, for the metrics' labels. */
void sld_spread_set_port(sld_spread_t *sp, int port);

/* Live connections of worker i (handed over but not yet taken included). */
int64_t sld_spread_count(const sld_spread_t *sp, uint32_t i);

/* Appends sluice_worker_connections{front,port,worker} for each of the n
 * spreads (Prometheus text, HELP and TYPE once). */
void sld_spread_write_metrics(sld_spread_t *const *spreads, size_t n, sld_buf_t *out);

/* A connection for a front's worker to take: waiting on its listener, or a
 * socket another worker handed over. */
typedef struct sld_incoming sld_incoming_t;

/* The front's on-connection hook, on its worker's loop: it either takes
 * the connection (sld_incoming_take) or returns without it (stopping, out
 * of memory), and then the connection is closed. */
typedef void (*sld_incoming_cb)(void *data, sld_incoming_t *in);

/* One front's listener on one worker: the front's worker state holds it. */
typedef struct sld_acceptor {
    uv_tcp_t listener;
    uv_async_t inbox;         /* sockets handed over are waiting */
    uv_loop_t *loop;
    sld_spread_t *spread;
    uint32_t index;           /* the worker's */
    void *data;               /* for on_incoming */
    sld_incoming_cb on_incoming;
    bool listening;           /* the listener handle exists (and must be closed) */
    bool inbox_open;          /* the async handle exists (and must be closed) */
} sld_acceptor_t;

/* Serves the listening socket fd (taken over: closed on failure) on `loop`
 * as worker `index` of the front's spread (NULL: no spreading, every
 * connection is served where it was accepted): each connection this worker
 * is to serve calls on_incoming(data, in) on this loop. a is zeroed memory;
 * on failure it is still closed like one that served. 0 or a libuv error. */
int sld_acceptor_serve(sld_acceptor_t *a, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index,
                       void *data, sld_incoming_cb on_incoming);

/* Stops accepting: closes the listener and the inbox (the sockets waiting
 * in it are closed). Idempotent. */
void sld_acceptor_close(sld_acceptor_t *a);

/* Initialises tcp (not yet initialised; it must be the front's connection
 * handle) on the acceptor's loop with the connection. 0: taken, counted
 * for this worker until sld_acceptor_release(). A libuv error: the
 * connection is gone, and tcp is initialised all the same (close it);
 * UV_EINVAL for a connection taken already (tcp untouched). */
int sld_incoming_take(sld_incoming_t *in, uv_tcp_t *tcp);

/* The acceptor the connection came through. */
sld_acceptor_t *sld_incoming_acceptor(const sld_incoming_t *in);

/* A connection taken through a has closed (or was refused). */
void sld_acceptor_release(sld_acceptor_t *a);

#endif
