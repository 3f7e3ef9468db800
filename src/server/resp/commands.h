/* commands.h -- the RESP commands of sluiced: one table, thin handlers.
 *
 * A handler reads its arguments, asks the library, and writes one reply into
 * the client's output buffer. Client mistakes are error replies, never
 * failures of the connection. The connection layer (server.c) owns parsing,
 * buffers and sockets.
 */
#ifndef SL_SERVER_COMMANDS_H
#define SL_SERVER_COMMANDS_H

#include "server/engine/engine.h"
#include "server/resp/client.h"

/* Runs one command (argc >= 1) and appends its reply to c->out; inside
 * MULTI, checks it and queues it instead (see docs/protocol.md). */
void sld_command(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* Pipelined decisions of one read, held until they can be decided together
 * (sld_engine_decide_batch). On the connection's stack, for one read. */
#define SLD_RESP_BATCH_MAX 64

/* The last CL.THROTTLE/GCRA parameter set a connection used and what it
 * maps to, kept between its reads: clients repeat one set command after
 * command, and a repeat then costs two compares instead of the set
 * table's lookup (the table's policies live as long as the daemon).
 * Zeroed: none yet. */
typedef struct sld_resp_last_set {
    int64_t max_burst, interval_ns;
    const sl_policy_t *p;     /* NULL: none yet */
    const sl_policy_t *local; /* sld_origin_t.local */
    bool defers;              /* sld_engine_defers(p) */
} sld_resp_last_set_t;

typedef struct sld_resp_batch {
    size_t n;
    sld_request_t reqs[SLD_RESP_BATCH_MAX]; /* keys point into the read's input */
    uint8_t kinds[SLD_RESP_BATCH_MAX];      /* the reply each gets */
    int8_t password;                 /* a password is asked in this read's runtime; -1: not looked up yet */
    sld_resp_last_set_t *last_set;   /* the connection's */
} sld_resp_batch_t;

/* An empty batch, for one read of a connection that keeps last_set. */
static inline void sld_resp_batch_init(sld_resp_batch_t *b, sld_resp_last_set_t *last_set) {
    b->n = 0;
    b->password = -1;
    b->last_set = last_set;
}

/* sld_command(), except that SL.CHECK, SL.PEEK, CL.THROTTLE and GCRA with
 * valid arguments, outside MULTI, on a store that answers now, are held in
 * b; any other command first decides what b holds and writes its replies,
 * so every reply keeps its place. The input the commands point into must
 * stay put until sld_command_flush(). */
void sld_command_batched(sld_client_t *c, sld_resp_batch_t *b, const sld_arg_t *argv, size_t argc);

/* Decides what b holds, writes the replies in order, empties b. */
void sld_command_flush(sld_client_t *c, sld_resp_batch_t *b);

/* Handlers that live in files of their own, as redis's do: INFO and
 * SL.STATS (info.c). */
void sld_cmd_info(sld_client_t *c, const sld_arg_t *argv, size_t argc);
void sld_cmd_sl_stats(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
