/* reply_queue.h -- replies owed to one connection, in order, some of which
 * come later (a decision in Redis).
 *
 * A front reserves the place of a reply that will come later
 * (sld_reply_defer); the replies of the commands after it are written
 * behind it (sld_reply_queue_tail) and wait. When the late reply is written
 * (sld_reply_done), it and whatever waited behind it, up to the next reply
 * still owed, move to the connection's output, and the queue calls the
 * `ready` callback it was given: the connection layer writes them out. The
 * front never names the connection, the connection never names the front.
 *
 * Not here: sockets, parsing, what the replies say.
 */
#ifndef SL_SERVER_REPLY_QUEUE_H
#define SL_SERVER_REPLY_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"

typedef struct sld_reply sld_reply_t;

typedef struct sld_reply_queue {
    sld_buf_t *out;            /* the connection's output: where ready replies go */
    void (*ready)(void *ctx);  /* replies moved to out (or a late one came to a closed queue) */
    void *ctx;
    bool closed;               /* the connection is gone: late replies are dropped */
    sld_reply_t *head, *tail;  /* replies owed, in order */
    uint32_t n;
    size_t owed_bytes;         /* replies written behind late ones, but the tail's */
} sld_reply_queue_t;

/* An empty queue that moves ready replies to `out` and then calls ready(ctx). */
void sld_reply_queue_init(sld_reply_queue_t *q, sld_buf_t *out, void (*ready)(void *ctx), void *ctx);

/* Where the next reply written at once goes: behind the last late one, or out. */
sld_buf_t *sld_reply_queue_tail(sld_reply_queue_t *q);

/* Bytes of replies waiting behind late ones (not counting q->out). */
size_t sld_reply_queue_owed(const sld_reply_queue_t *q);

/* Reserves the place of a reply that comes later (NULL: no memory). */
sld_reply_t *sld_reply_defer(sld_reply_queue_t *q);
/* Takes back the place just reserved (nothing was written behind it). */
void sld_reply_undefer(sld_reply_queue_t *q, sld_reply_t *r);
/* Where the late reply is written. */
sld_buf_t *sld_reply_buf(sld_reply_t *r);
/* Asks to be told, by cancel(arg), if the connection goes before the late
 * reply r is written (a reply held on a timer stops waiting). cancel must
 * not touch the queue at once: it still ends with sld_reply_done(r), later. */
void sld_reply_on_close(sld_reply_t *r, void (*cancel)(void *arg), void *arg);
/* Whether a late reply asked to be told of the close (one held on a
 * timer): a client that stops sending while it waits is gone, not
 * half-closed. */
bool sld_reply_queue_holds(const sld_reply_queue_t *q);
/* The connection is gone: late replies will be dropped, and those that
 * asked (sld_reply_on_close) are told. */
void sld_reply_queue_close(sld_reply_queue_t *q);
/* The late reply is written: what is ready moves out (dropped when the
 * queue is closed) and ready(ctx) is called, once; the callback may free
 * the queue. */
void sld_reply_done(sld_reply_t *r);

#endif
