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
    sld_reply_queue_t *replies; /* the connection's: for replies that come later */
    uint8_t proto;            /* HELLO's: 3 for RESP3, else RESP2; the connection keeps it */
    sld_tx_t *tx;             /* MULTI's queue, NULL outside a transaction; the connection
                               * keeps it and frees it unrun (sld_tx_free) when it closes */
} sld_client_t;

/* Runs one command (argc >= 1) and appends its reply to c->out; inside
 * MULTI, checks it and queues it instead (see docs/protocol.md). */
void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* Handlers that live in files of their own, as redis's do: INFO and
 * SL.STATS (info.c). */
void sld_cmd_info(sld_client_t *c, const sld_arg_t *argv, size_t argc);
void sld_cmd_sl_stats(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* The connection's protocol for replies: SLD_PROTO_3 or SLD_PROTO_2. */
static inline int sld_proto(const sld_client_t *c) {
    return c->proto == SLD_PROTO_3 ? SLD_PROTO_3 : SLD_PROTO_2;
}

/* HELLO ... AUTH user pass (auth.c): 0 when the credentials are accepted;
 * otherwise the refusal has been written to c->out as an error reply. */
int sld_auth_check(sld_client_t *c, const sld_arg_t *user, const sld_arg_t *pass);

#endif
