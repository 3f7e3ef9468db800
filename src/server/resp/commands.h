/* commands.h -- the RESP commands of sluiced: one table, thin handlers.
 *
 * A handler reads its arguments, asks the library, and writes one reply into
 * the client's output buffer. Client mistakes are error replies, never
 * failures of the connection. The connection layer (server.c) owns parsing,
 * buffers and sockets.
 */
#ifndef SL_SERVER_COMMANDS_H
#define SL_SERVER_COMMANDS_H

#include "server/resp/client.h"

/* Runs one command (argc >= 1) and appends its reply to c->out; inside
 * MULTI, checks it and queues it instead (see docs/protocol.md). */
void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* Handlers that live in files of their own, as redis's do: INFO and
 * SL.STATS (info.c). */
void sld_cmd_info(sld_client_t *c, const sld_arg_t *argv, size_t argc);
void sld_cmd_sl_stats(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
