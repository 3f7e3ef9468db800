/* reply_queue.c -- replies owed to one connection, in order (see
 * reply_queue.h). */
#include <stdlib.h>

#include "server/net/reply_queue.h"

struct sld_reply {
    struct sld_reply *next;
    struct sld_reply *prev;  /* the tail before it: what undefer restores */
    sld_reply_queue_t *q;
    sld_buf_t reply;         /* written by the completion */
    sld_buf_t after;         /* replies of later commands, up to the next late one */
    bool ready;
    void (*cancel)(void *arg); /* told when the connection goes first */
    void *cancel_arg;
};

void sld_reply_queue_init(sld_reply_queue_t *q, sld_buf_t *out, void (*ready)(void *ctx), void *ctx) {
    *q = (sld_reply_queue_t){.out = out, .ready = ready, .ctx = ctx};
}

sld_buf_t *sld_reply_queue_tail(sld_reply_queue_t *q) { return q->tail ? &q->tail->after : q->out; }

size_t sld_reply_queue_owed(const sld_reply_queue_t *q) {
    return q->owed_bytes + (q->tail ? q->tail->after.len : 0);
}

sld_reply_t *sld_reply_defer(sld_reply_queue_t *q) {
    sld_reply_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->q = q;
    r->prev = q->tail;
    if (q->tail) {
        q->owed_bytes += q->tail->after.len; /* no longer written to */
        q->tail->next = r;
    } else {
        q->head = r;
    }
    q->tail = r;
    q->n++;
    return r;
}

void sld_reply_undefer(sld_reply_queue_t *q, sld_reply_t *r) {
    sld_reply_t *prev = r->prev; /* r is the tail and nothing was written after it */
    if (prev) {
        prev->next = NULL;
        q->owed_bytes -= prev->after.len; /* the tail again */
    } else {
        q->head = NULL;
    }
    q->tail = prev;
    q->n--;
    sld_buf_free(&r->after);
    free(r);
}

sld_buf_t *sld_reply_buf(sld_reply_t *r) { return &r->reply; }

void sld_reply_on_close(sld_reply_t *r, void (*cancel)(void *arg), void *arg) {
    r->cancel = cancel;
    r->cancel_arg = arg;
}

bool sld_reply_queue_holds(const sld_reply_queue_t *q) {
    for (const sld_reply_t *r = q->head; r; r = r->next)
        if (r->cancel)
            return true;
    return false;
}

void sld_reply_queue_close(sld_reply_queue_t *q) {
    q->closed = true;
    for (sld_reply_t *r = q->head; r; r = r->next) {
        void (*cancel)(void *) = r->cancel;
        r->cancel = NULL;
        if (cancel)
            cancel(r->cancel_arg);
    }
}

void sld_reply_done(sld_reply_t *r) {
    sld_reply_queue_t *q = r->q;
    r->ready = true;
    while (q->head && q->head->ready) {
        sld_reply_t *head = q->head;
        if (!q->closed && head->reply.len)
            sld_buf_append(q->out, head->reply.data, head->reply.len);
        if (!q->closed && head->after.len)
            sld_buf_append(q->out, head->after.data, head->after.len);
        if (head->reply.failed || head->after.failed)
            q->out->failed = true; /* replies were lost: the connection closes */
        if (head->next)
            q->owed_bytes -= head->after.len;
        q->head = head->next;
        if (q->head == NULL)
            q->tail = NULL;
        q->n--;
        sld_buf_free(&head->reply);
        sld_buf_free(&head->after);
        free(head);
    }
    q->ready(q->ctx);
}
