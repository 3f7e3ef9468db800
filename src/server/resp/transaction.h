/* transaction.h -- the queue of one MULTI ... EXEC block.
 *
 * MULTI starts a queue; each command after it is checked by the command
 * layer and, if well-formed, copied here (the connection's input buffer does
 * not outlive the read); EXEC hands the commands back in order, DISCARD or a
 * closed connection frees them unrun, so nothing queued is ever charged
 * unless EXEC runs it. A queue is bounded in commands and in bytes; a
 * command past a bound, or any error while queueing, marks the queue failed,
 * and a failed queue keeps nothing more (EXEC only answers EXECABORT).
 *
 * Not here: what the commands mean, the replies (commands.c), sockets.
 */
#ifndef SL_SERVER_TRANSACTION_H
#define SL_SERVER_TRANSACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/resp/resp.h"

#define SLD_TX_MAX_COMMANDS 1024 /* commands in one transaction */
#define SLD_TX_MAX_ARGS 64       /* arguments of one command: the parser's bound */

typedef struct sld_tx {
    sld_buf_t cmds;  /* per command: u32 argc, then per argument u32 length and its bytes */
    uint32_t n;      /* commands queued */
    size_t arg_bytes; /* bytes of arguments queued, what max_bytes bounds */
    bool failed;     /* an error while queueing: EXEC must abort */
} sld_tx_t;

typedef enum sld_tx_rc {
    SLD_TX_QUEUED = 0,
    SLD_TX_TOO_MANY,  /* SLD_TX_MAX_COMMANDS already queued */
    SLD_TX_TOO_BIG,   /* max_bytes of arguments, or more than SLD_TX_MAX_ARGS arguments */
    SLD_TX_NO_MEMORY,
    SLD_TX_FAILED,    /* the queue had already failed: nothing kept */
} sld_tx_rc_t;

/* A new empty queue (NULL: no memory). */
sld_tx_t *sld_tx_new(void);
/* Frees the queue and every command in it, unrun; NULL is ignored. */
void sld_tx_free(sld_tx_t *tx);

/* Copies argv[0..argc) to the end of the queue. max_bytes bounds the
 * arguments of the whole queue. On any rc but SLD_TX_QUEUED the queue is
 * failed (and its commands freed, as they can only be discarded now). */
sld_tx_rc_t sld_tx_add(sld_tx_t *tx, const sld_arg_t *argv, size_t argc, size_t max_bytes);

/* Marks the queue failed: EXEC will abort. Its commands are freed. */
void sld_tx_fail(sld_tx_t *tx);

/* The command at *pos (start with 0): fills argv (SLD_TX_MAX_ARGS entries,
 * pointing into the queue, valid until it is freed) and *argc, moves *pos
 * on and returns true; false after the last. */
bool sld_tx_next(const sld_tx_t *tx, size_t *pos, sld_arg_t *argv, size_t *argc);

#endif
