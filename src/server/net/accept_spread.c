/* accept_spread.c -- connections spread over a front's workers by their
 * live connections (see accept_spread.h).
 *
 * Why not only the kernel's SO_REUSEPORT spread: it hashes the client's
 * address and port, so it balances only on average and never looks at how
 * many connections a worker already has; and a connection waiting in a
 * worker's socket when that socket closes (a stop) is reset. Why not one
 * socket polled by every loop: whichever loop wakes first accepts, so the
 * busiest-but-awake worker tends to take more (measured: 35/65 for wrk's
 * 64 connections). Here the kernel's spread stays the first guess, and a
 * connection is moved only when its worker has more than another.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/net/accept_spread.h"
#include "server/net/listener.h"
#include "sluice.h"

/* Sockets handed over and not yet taken, per worker: a burst of accepts
 * within one loop pass of the receiving worker. Past it, the accepting
 * worker serves the connection itself. */
#define INBOX_CAP 256

typedef struct slot {
    _Alignas(64) _Atomic int64_t live; /* connections this worker serves or is handed */
    atomic_bool open;                  /* takes hand-overs (its acceptor serves) */
    uv_mutex_t lock;                   /* guards wake, n, fds */
    uv_async_t *wake;                  /* the worker's inbox handle, while open */
    uint32_t n;
    int fds[INBOX_CAP];
} slot_t;

struct sld_spread {
    uint32_t workers;
    int port;
    const char *name;
    slot_t *slots;
};

struct sld_incoming {
    sld_acceptor_t *a;
    uv_stream_t *listener; /* the connection waits there (NULL: taken, or a socket) */
    int fd;                /* a socket handed over (-1: none, or taken) */
    bool taken;
};

int sld_spread_new(uint32_t workers, const char *name, sld_spread_t **out) {
    sld_spread_t *sp = calloc(1, sizeof *sp);
    slot_t *slots = workers ? aligned_alloc(_Alignof(slot_t), workers * sizeof *slots) : NULL;
    if (sp == NULL || slots == NULL) {
        free(sp);
        free(slots);
        return SL_ENOMEM;
    }
    memset(slots, 0, workers * sizeof *slots);
    for (uint32_t i = 0; i < workers; i++) {
        atomic_init(&slots[i].live, 0);
        atomic_init(&slots[i].open, false);
        uv_mutex_init(&slots[i].lock);
    }
    *sp = (sld_spread_t){.workers = workers, .name = name, .slots = slots};
    *out = sp;
    return SL_OK;
}

void sld_spread_free(sld_spread_t *sp) {
    if (sp == NULL)
        return;
    for (uint32_t i = 0; i < sp->workers; i++) {
        for (uint32_t k = 0; k < sp->slots[i].n; k++) /* an acceptor that never served */
            close(sp->slots[i].fds[k]);
        uv_mutex_destroy(&sp->slots[i].lock);
    }
    free(sp->slots);
    free(sp);
}

void sld_spread_set_port(sld_spread_t *sp, int port) { sp->port = port; }

int64_t sld_spread_count(const sld_spread_t *sp, uint32_t i) {
    return i < sp->workers ? atomic_load(&sp->slots[i].live) : 0;
}

void sld_spread_write_metrics(sld_spread_t *const *spreads, size_t n, sld_buf_t *out) {
    sld_buf_append_str(out, "# HELP sluice_worker_connections Live client connections each worker thread "
                            "serves, per front (a new connection goes to the worker with fewest).\n"
                            "# TYPE sluice_worker_connections gauge\n");
    for (size_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < spreads[k]->workers; i++)
            sld_buf_printf(out, "sluice_worker_connections{front=\"%s\",port=\"%d\",worker=\"%u\"} %lld\n",
                           spreads[k]->name, spreads[k]->port, i,
                           (long long)atomic_load(&spreads[k]->slots[i].live));
}

/* ---- choosing and handing over -------------------------------------------------------------- */

/* The worker with fewest connections when it has at least two fewer than
 * self, else self; counted for it now, so that the next accept anywhere
 * sees it. Keeping a connection one above the fewest still leaves the
 * workers within one of their mean, and spares short-lived connections,
 * whose counts hover around 0 and 1, a hand-over (a dup, a wake-up of
 * another thread) every other time. */
static uint32_t pick(sld_spread_t *sp, uint32_t self) {
    uint32_t who = self;
    int64_t best = atomic_load(&sp->slots[self].live) - 1;
    for (uint32_t i = 0; i < sp->workers; i++) {
        if (i == self || !atomic_load(&sp->slots[i].open))
            continue;
        int64_t c = atomic_load(&sp->slots[i].live);
        if (c < best) {
            best = c;
            who = i;
        }
    }
    atomic_fetch_add(&sp->slots[who].live, 1);
    return who;
}

static void uncount(sld_acceptor_t *a, uint32_t who) {
    if (a->spread != NULL)
        atomic_fetch_sub(&a->spread->slots[who].live, 1);
}

/* Into worker who's inbox; false when it does not take hand-overs (it is
 * stopping) or its inbox is full. The wake-up is sent under the lock, so
 * never to a handle that sld_acceptor_close() has closed. */
static bool hand_over(sld_spread_t *sp, uint32_t who, int fd) {
    slot_t *s = &sp->slots[who];
    uv_mutex_lock(&s->lock);
    bool ok = s->wake != NULL && s->n < INBOX_CAP;
    if (ok) {
        s->fds[s->n++] = fd;
        uv_async_send(s->wake);
    }
    uv_mutex_unlock(&s->lock);
    return ok;
}

static void free_handle(uv_handle_t *h) { free(h); }

/* The connection waiting on the listener, as a socket of its own: libuv
 * accepts only into a handle of this loop, so the handle's socket is
 * duplicated and the handle closed. -1 if it could not be had. */
static int accept_socket(uv_loop_t *loop, uv_stream_t *listener) {
    uv_tcp_t *t = malloc(sizeof *t);
    if (t == NULL)
        return -1;
    uv_tcp_init(loop, t);
    uv_os_fd_t fd;
    int out = -1;
    if (uv_accept(listener, (uv_stream_t *)t) == 0 && uv_fileno((uv_handle_t *)t, &fd) == 0)
        out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    uv_close((uv_handle_t *)t, free_handle);
    return out;
}

/* Gives the front a connection counted for this worker; one it did not
 * take is closed and uncounted. */
static void serve(sld_acceptor_t *a, sld_incoming_t in) {
    a->on_incoming(a->data, &in);
    if (in.taken)
        return;
    uncount(a, a->index);
    if (in.fd >= 0)
        close(in.fd);
    else if (in.listener != NULL) {
        /* not accepted, libuv would stop watching the listener */
        int fd = accept_socket(a->loop, in.listener);
        if (fd >= 0)
            close(fd);
    }
}

static void on_connection(uv_stream_t *listener, int status) {
    sld_acceptor_t *a = listener->data;
    if (status != 0)
        return;
    uint32_t who = a->spread != NULL ? pick(a->spread, a->index) : a->index;
    if (who == a->index) {
        serve(a, (sld_incoming_t){a, listener, -1, false});
        return;
    }
    int fd = accept_socket(a->loop, listener);
    if (fd >= 0 && hand_over(a->spread, who, fd))
        return;
    /* served here: the hand-over was refused, or the socket could not be
     * had (out of memory: the connection still waits on the listener,
     * which libuv watches again only once it is accepted) */
    uncount(a, who);
    atomic_fetch_add(&a->spread->slots[a->index].live, 1);
    serve(a, (sld_incoming_t){a, fd >= 0 ? NULL : listener, fd, false});
}

/* The sockets waiting in a worker's inbox, taken out of it; closing: the
 * worker also stops taking hand-overs, under the same lock, so nothing is
 * put in (or woken for) after it. */
static uint32_t take_inbox(slot_t *s, int fds[INBOX_CAP], bool closing) {
    uv_mutex_lock(&s->lock);
    if (closing) {
        s->wake = NULL;
        atomic_store(&s->open, false);
    }
    uint32_t n = s->n;
    memcpy(fds, s->fds, n * sizeof *fds);
    s->n = 0;
    uv_mutex_unlock(&s->lock);
    return n;
}

static void on_inbox(uv_async_t *h) {
    sld_acceptor_t *a = h->data;
    slot_t *s = &a->spread->slots[a->index];
    int fds[INBOX_CAP];
    uint32_t n = take_inbox(s, fds, false);
    for (uint32_t i = 0; i < n; i++)
        serve(a, (sld_incoming_t){a, NULL, fds[i], false});
}

/* ---- a worker's acceptor --------------------------------------------------------------------- */

int sld_acceptor_serve(sld_acceptor_t *a, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index,
                       void *data, sld_incoming_cb on_incoming) {
    a->loop = loop;
    a->spread = spread != NULL && index < spread->workers ? spread : NULL;
    a->index = index;
    a->data = data;
    a->on_incoming = on_incoming;
    if (a->spread != NULL && a->spread->workers > 1) {
        int rc = uv_async_init(loop, &a->inbox, on_inbox);
        if (rc != 0) {
            close(fd);
            return rc;
        }
        a->inbox.data = a;
        a->inbox_open = true;
        slot_t *s = &a->spread->slots[index];
        uv_mutex_lock(&s->lock);
        s->wake = &a->inbox;
        atomic_store(&s->open, true);
        uv_mutex_unlock(&s->lock);
    }
    return sld_listener_serve(loop, &a->listener, fd, a, on_connection, &a->listening);
}

void sld_acceptor_close(sld_acceptor_t *a) {
    sld_listener_close(&a->listener, a->listening);
    if (!a->inbox_open)
        return;
    a->inbox_open = false;
    slot_t *s = &a->spread->slots[a->index];
    int fds[INBOX_CAP];
    uint32_t n = take_inbox(s, fds, true);
    for (uint32_t i = 0; i < n; i++) { /* handed over, never served: closed here */
        close(fds[i]);
        uncount(a, a->index);
    }
    uv_close((uv_handle_t *)&a->inbox, NULL);
}

int sld_incoming_take(sld_incoming_t *in, uv_tcp_t *tcp) {
    if (in->taken)
        return UV_EINVAL;
    int rc = uv_tcp_init(in->a->loop, tcp);
    if (in->fd >= 0) {
        if (rc == 0)
            rc = uv_tcp_open(tcp, in->fd);
        if (rc != 0)
            close(in->fd);
        in->fd = -1;
    } else if (in->listener != NULL) {
        if (rc == 0)
            rc = uv_accept(in->listener, (uv_stream_t *)tcp);
        in->listener = NULL;
    } else {
        rc = UV_EINVAL;
    }
    in->taken = rc == 0;
    return rc;
}

sld_acceptor_t *sld_incoming_acceptor(const sld_incoming_t *in) { return in->a; }

void sld_acceptor_release(sld_acceptor_t *a) { uncount(a, a->index); }
