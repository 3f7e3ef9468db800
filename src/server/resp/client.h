/* client.h -- one RESP client as the command handlers see it: its daemon,
 * the configuration of this batch of commands, where replies go, and what
 * the connection keeps between batches (its name, whether it authenticated).
 *
 * Its own header so that the handlers' modules (commands.c, auth.c,
 * keyspace.c, ...) share it without including each other.
 *
 * Not here: the connection itself (net/server.c fills this in per read).
 */
#ifndef SL_SERVER_RESP_CLIENT_H
#define SL_SERVER_RESP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/daemon/daemon.h"
#include "server/net/reply_queue.h"
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
    bool authed;              /* AUTH passed; kept by the connection (requirepass) */
    sld_reply_queue_t *replies; /* the connection's: for replies that come later */
} sld_client_t;

#endif
