/* uv_adapter.c -- hiredis's event hooks on a libuv loop: the same as
 * hiredis's adapters/libuv.h, plus a count of the client's handles (so
 * that closing the client waits for its poll handles) and a read on poll
 * errors (so hiredis sees the socket error and gives up).
 *
 * Not here: what happens on the connection (connection.c).
 */
#include "store/redis/client.h"

#include <stdlib.h>

#include "store/redis/client_private.h"

typedef struct ev {
    redisAsyncContext *ac;
    sl__redis_client_t *c;
    uv_poll_t poll;
    int events;
} ev_t;

static void ev_poll_cb(uv_poll_t *h, int status, int events) {
    ev_t *e = h->data;
    if (status < 0)
        events = UV_READABLE | UV_WRITABLE;
    if (e->ac && (events & UV_READABLE))
        redisAsyncHandleRead(e->ac);
    if (e->ac && (events & UV_WRITABLE))
        redisAsyncHandleWrite(e->ac);
}

static void ev_update(ev_t *e) {
    if (e->events)
        uv_poll_start(&e->poll, e->events, ev_poll_cb);
    else
        uv_poll_stop(&e->poll);
}

static void ev_add_read(void *d) {
    ev_t *e = d;
    e->events |= UV_READABLE;
    ev_update(e);
}

static void ev_del_read(void *d) {
    ev_t *e = d;
    e->events &= ~UV_READABLE;
    ev_update(e);
}

static void ev_add_write(void *d) {
    ev_t *e = d;
    e->events |= UV_WRITABLE;
    ev_update(e);
}

static void ev_del_write(void *d) {
    ev_t *e = d;
    e->events &= ~UV_WRITABLE;
    ev_update(e);
}

static void ev_closed(uv_handle_t *h) {
    ev_t *e = h->data;
    sl__redis_client_t *c = e->c;
    free(e);
    sl__rc_handle_closed(c);
}

static void ev_cleanup(void *d) {
    ev_t *e = d;
    e->ac = NULL; /* hiredis frees the context right after */
    uv_close((uv_handle_t *)&e->poll, ev_closed);
}

int sl__rc_uv_attach(sl__redis_client_t *c, redisAsyncContext *ac) {
    ev_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return -1;
    if (uv_poll_init(c->loop, &e->poll, ac->c.fd) != 0) {
        free(e);
        return -1;
    }
    c->handles++;
    e->ac = ac;
    e->c = c;
    e->poll.data = e;
    ac->ev.data = e;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    return 0;
}
