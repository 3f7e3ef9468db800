/* transaction_group.h -- EXEC's commands run as one group (engine.h): the
 * states the block will touch are named to the engine first, which holds
 * them for this worker (memory: their shards' locks; Redis: one script
 * call), the commands run in order, and the group ends. No other worker's
 * or daemon's decision on those keys comes between two commands of the
 * block.
 *
 * Which (policy, key) a command touches is read from its arguments as its
 * handler will read them: CL.THROTTLE and GCRA under their parameter set,
 * SL.CHECK, SL.PEEK and SL.RESET under their policy (tier included). DEL,
 * UNLINK, EXISTS, TTL and PTTL touch a key under every parameter set,
 * some of which another worker may create meanwhile, and INFO, DBSIZE
 * and SL.STATS read every shard: a block with one of them holds the whole
 * store.
 *
 * Not here: the queue (transaction.c), the handlers and replies
 * (commands.c), how a store holds a group (engine/decide.c, store/).
 */
#ifndef SL_SERVER_TRANSACTION_GROUP_H
#define SL_SERVER_TRANSACTION_GROUP_H

#include "server/resp/client.h"
#include "server/resp/transaction.h"

/* Runs one queued command: its handler (found and checked when queued). */
typedef void (*sld_tx_run_fn)(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* Runs tx's commands in order through run, as one group on c's worker. */
void sld_tx_exec(sld_client_t *c, const sld_tx_t *tx, sld_tx_run_fn run);

#endif
