/* connection_commands.h -- what Redis clients send on their own when they
 * connect or configure themselves: SELECT, CLIENT, CLUSTER, TIME.
 *
 * sluice has one database (0) and is one node owning every slot, so clients
 * configured with database 0 or in cluster mode connect unchanged.
 *
 * Not here: AUTH (auth.c), HELLO and COMMAND (commands.c), INFO.
 */
#ifndef SL_SERVER_RESP_CONNECTION_COMMANDS_H
#define SL_SERVER_RESP_CONNECTION_COMMANDS_H

#include "server/resp/client.h"

/* SELECT 0 -> +OK; any other index is an error (no namespaces) */
void sld_cmd_select(sld_client_t *c, const sld_arg_t *argv, size_t argc);
/* CLIENT ID | INFO | LIST | SETNAME n | GETNAME | SETINFO attr v | NO-EVICT | NO-TOUCH | REPLY */
void sld_cmd_client(sld_client_t *c, const sld_arg_t *argv, size_t argc);
/* CLUSTER INFO | SLOTS | SHARDS | NODES | MYID: one node, every slot */
void sld_cmd_cluster(sld_client_t *c, const sld_arg_t *argv, size_t argc);
/* TIME -> [seconds, microseconds] of the wall clock */
void sld_cmd_time(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
