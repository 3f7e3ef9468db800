/* commands.h -- the RESP commands of sluiced: one table, thin handlers.
 *
 * A handler reads its arguments, asks the library, and writes one reply into
 * the client's output buffer. Client mistakes are error replies, never
 * failures of the connection. The connection layer (server.c) owns parsing,
 * buffers and sockets.
 */
#ifndef SL_SERVER_COMMANDS_H
#define SL_SERVER_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/daemon/daemon.h"
#include "server/resp/resp.h"

typedef struct sld_client {
    sld_daemon_t *d;
    const sld_runtime_t *rt;  /* the configuration for this batch of commands */
    sld_buf_t *out;
    sld_counters_t *counters; /* the worker's */
    uint32_t worker;          /* its index, for per-worker metrics */
    uint64_t id;
    char name[64];            /* CLIENT SETNAME */
    bool quit;                /* close once the replies are sent */
    void *conn;               /* the connection (server.c's) */
} sld_client_t;

/* A reply owed, to be written later (a decision in Redis). Replies to the
 * commands after it wait behind it, so a pipeline's replies stay in order. */
typedef struct sld_deferred sld_deferred_t;

/* Reserves the place of the current command's reply (NULL: no memory). */
sld_deferred_t *sld_client_defer(sld_client_t *c);
/* Takes back the place just reserved (the reply could be written at once). */
void sld_client_undefer(sld_client_t *c, sld_deferred_t *r);
/* Where the reply goes, then: */
sld_buf_t *sld_deferred_out(sld_deferred_t *r);
/* The reply is written: it and whatever waited behind it go out. Call on
 * the connection's loop; the connection may have closed meanwhile (the
 * reply is then dropped). */
void sld_deferred_done(sld_deferred_t *r);

/* Runs one command (argc >= 1) and appends its reply to c->out. */
void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
