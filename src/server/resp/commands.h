/* commands.h -- the RESP commands of sluiced: one table, thin handlers.
 *
 * A handler reads its arguments, asks the library, and writes one reply into
 * the client's output buffer. Client mistakes are error replies, never
 * failures of the connection. The connection layer (resp_connection.c)
 * owns parsing, buffers and sockets.
 */
#ifndef SL_SERVER_COMMANDS_H
#define SL_SERVER_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/state/daemon.h"
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
    sld_reply_queue_t *replies; /* the connection's: for replies that come later */
} sld_client_t;

/* Runs one command (argc >= 1) and appends its reply to c->out. */
void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
