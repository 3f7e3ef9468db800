/* client.h -- one RESP client as the command handlers see it: its daemon,
 * the configuration of this batch of commands, where replies go, and what
 * the connection keeps between batches (its name, whether it authenticated, its protocol, MULTI's queue).
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
#include "server/state/daemon.h"
#include "server/net/reply_queue.h"
#include "server/resp/resp.h"
#include "server/resp/transaction.h"

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
    uint8_t proto;            /* HELLO's: 3 for RESP3, else RESP2; the connection keeps it */
    struct uv_loop_s *loop;   /* the worker's: replies held on a timer (acquire.c) */
    sld_tx_t *tx;             /* MULTI's queue, NULL outside a transaction; the connection
                               * keeps it and frees it unrun (sld_tx_free) when it closes */
} sld_client_t;

/* The connection's protocol for replies: SLD_PROTO_3 or SLD_PROTO_2. */
static inline int sld_proto(const sld_client_t *c) {
    return c->proto == SLD_PROTO_3 ? SLD_PROTO_3 : SLD_PROTO_2;
}

#endif
