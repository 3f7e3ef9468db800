/* front.h -- what a front (RESP, HTTP, next the gateway and gRPC) gives the
 * network layer: a table of hooks per worker loop, as h2o's protocol
 * handlers or hiredis's adapter hooks.
 *
 * The server (server.c) opens one listening socket per front per worker
 * (SO_REUSEPORT on one port) and one spread per front (each connection
 * served by the worker with fewest, accept_spread.h), runs the loops,
 * and reaches a front only through these hooks; a front owns its connections, parsing and replies
 * and never names the server. Whoever wires the daemon (sluiced.c) builds
 * the table of each front that is on and hands them to sld_server_start().
 *
 * Every hook runs on the worker's loop thread but start, which runs on the
 * thread calling sld_server_start() before the loop runs.
 *
 * Not here: the listening sockets (listener.h), counting connections
 * (admission.h), anything a front parses or answers.
 */
#ifndef SL_SERVER_FRONT_H
#define SL_SERVER_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "server/net/accept_spread.h"

typedef struct sld_front_ops {
    const char *name; /* "resp", "http": for error messages */
    /* Serves the listening socket fd on `loop` as worker `index` (taking fd
     * over) through an acceptor of `spread`, the front's spread over the
     * workers (accept_spread.h); *worker gets the front's state for that
     * loop. On failure *worker may still be set: it is stopped, disposed
     * and freed like any other. */
    int (*start)(void *ctx, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index, void **worker,
                 char *err, size_t err_len);
    /* Stops accepting; what was received is answered, then connections close. */
    void (*begin_stop)(void *worker);
    /* Every second (every 50 ms while stopping), at loop time `now` (ms):
     * closes idle connections and those whose client does not read, moves
     * lingering closes on. */
    void (*tick)(void *worker, uint64_t now);
    /* The stop's grace period is over: closes every connection left at once. */
    void (*force_close)(void *worker);
    /* Whether no connection is left (lingering closes included). */
    bool (*idle)(void *worker);
    /* The loop has stopped running: lets go of what needs the loop (the
     * listener, libraries' contexts); the loop then runs the closes through. */
    void (*dispose)(void *worker);
    /* Frees the worker's state, once its loop is closed. */
    void (*free)(void *worker);
} sld_front_ops_t;

/* For a start hook: a front's zeroed worker state of `size` bytes; NULL
 * when out of memory, with fd closed (start takes it over) and the reason
 * in err. */
void *sld_front_worker_new(size_t size, int fd, char *err, size_t err_len);

/* One front to serve, as sld_server_start() takes it. */
typedef struct sld_front {
    const sld_front_ops_t *ops;
    void *ctx;          /* the front's shared part, given to start */
    const char *listen; /* "host:port" or "[v6]:port"; port 0 = any free one; NULL: no
                           socket (start gets fd -1; the front listens otherwise) */
    int *port;          /* set to the port actually listened on (may be NULL) */
} sld_front_t;

#endif
