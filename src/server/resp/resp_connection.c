/* resp_connection.c -- RESP connections on the worker loops (see
 * resp_connection.h).
 *
 * Bounds: a command may not exceed max_request_bytes (it is refused and the
 * connection closed), a client that does not read its replies is not read
 * from either once 64 KiB of them wait (backpressure), and is closed (reset,
 * so the kernel frees its buffers at once) when it has not taken a byte of
 * its replies for write_timeout (tcp_stall.h); an idle connection is closed
 * after idle_timeout, and connections over max_connections (admission.h)
 * get an error and are closed.
 *
 * Stopping: the listener closes, commands already read are answered, then
 * each connection closes with a lingering close (linger.h) once it owes
 * nothing; when the grace period is over the rest are closed at once.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "server/engine/engine.h"
#include "server/net/accept_spread.h"
#include "server/net/admission.h"
#include "server/net/linger.h"
#include "server/net/reply_queue.h"
#include "server/net/tcp_stall.h"
#include "server/resp/commands.h"
#include "server/resp/resp_connection.h"

#define OUT_HIGH (64u * 1024)   /* stop reading a client with this much unsent: a read's worth */
#define READ_CHUNK (64u * 1024)
#define MAX_ARGS 64
#define QUIET_MS 1000           /* a connection quiet this long keeps no buffers */
#define MAX_DEFERRED 4096       /* stop reading a client with this many answers owed */

typedef struct worker worker_t;
typedef struct conn conn_t;

struct conn {
    uv_tcp_t tcp;          /* first: a handle pointer is a conn pointer */
    worker_t *w;
    struct conn *prev, *next;
    sld_buf_t in;          /* received, not yet run */
    size_t need;           /* the pending command needs this many bytes */
    sld_buf_t out;         /* replies not yet written */
    sld_buf_t sending;     /* the write in progress */
    uv_write_t wreq;
    uint64_t id;
    uint64_t last_active;  /* loop time, ms */
    sld_tcp_stall_t stall; /* whether the client still takes its replies */
    char name[64];
    uint8_t proto;         /* HELLO's, kept between reads */
    sld_tx_t *tx;          /* MULTI's queue, kept between reads; freed unrun at the end */
    sld_resp_last_set_t last_set; /* the last CL.THROTTLE parameter set (commands.h) */
    bool authed;           /* AUTH passed (requirepass) */
    bool admitted;         /* counted as connected (admission.h) until closed */
    bool writing;
    bool paused;           /* reading stopped by backpressure */
    bool closing;          /* close once everything owed is written */
    bool closed;
    bool handle_closed;    /* uv_close done: freed once nothing is deferred */
    sld_reply_queue_t replies; /* replies owed, in order, some coming later */
};

/* The RESP front on one worker loop. */
struct worker {
    sld_resp_front_t *f;
    uv_loop_t *loop;
    sld_acceptor_t acceptor;  /* the listener, and connections handed over (net/accept_spread.h) */
    uint32_t index;           /* the worker's: its counters, metrics, engine batches */
    sld_counters_t *counters; /* the worker's */
    conn_t *conns;
    sld_linger_t linger;      /* connections closed while stopping, until their clients close */
    bool stopping;
};

/* ---- connections ---------------------------------------------------------------- */

static void conn_free(conn_t *c) {
    sld_tx_free(c->tx);
    sld_buf_free(&c->in);
    sld_buf_free(&c->out);
    sld_buf_free(&c->sending);
    free(c);
}

static void on_close(uv_handle_t *h) {
    conn_t *c = (conn_t *)h;
    c->handle_closed = true;
    if (c->replies.n == 0) /* else the last completion frees it */
        conn_free(c);
}

static void conn_close(conn_t *c) {
    if (c->closed)
        return;
    c->closed = true;
    sld_reply_queue_close(&c->replies); /* replies held on timers stop waiting */
    if (c->prev)
        c->prev->next = c->next;
    else
        c->w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    sld_conn_closed(c->w->f->d, &c->w->acceptor, c->admitted);
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void on_write(uv_write_t *req, int status);

/* Closes a connection that has written everything it owes. While stopping,
 * a client may still be sending: closing on its unread bytes would reset
 * the connection (and lose replies still in flight), so the socket lingers
 * (linger.h) through a dup while the loop closes its own descriptor. */
static void conn_finish(conn_t *c) {
    uv_os_fd_t fd;
    if (c->w->stopping && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
        sld_linger_add(&c->w->linger, fcntl(fd, F_DUPFD_CLOEXEC, 0));
    conn_close(c);
}

/* Closes with a reset: what the kernel still holds for a client that does
 * not read is dropped now, not kept while the close waits on it. */
static void conn_abort(conn_t *c) {
    uv_os_fd_t fd;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    if (!c->closed && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    conn_close(c);
}

/* Whether replies have waited `timeout` (µs, 0 = never) without the client
 * taking a byte of them (tcp_stall.h): a slow reader is not taken for one
 * that stopped. */
static bool write_stalled(conn_t *c, uint64_t now, sl_usec_t timeout) {
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0)
        return false;
    return sld_tcp_stalled(&c->stall, fd, uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp), now,
                           timeout);
}

/* Writes what the socket takes now (uv_try_write): 0, or < 0 when the
 * connection failed and was closed. A uv_write that completes at once still
 * has its callback run on the next loop turn, and libuv then re-arms the
 * descriptor for POLLOUT it never waited on: one epoll_ctl a write, one a
 * command at pipeline 1 (bench/README.md). While paused, the write's
 * callback is what resumes reading, so it keeps going through uv_write. */
static int write_now(conn_t *c) {
    if (c->paused)
        return 0;
    uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == UV_EAGAIN)
        return 0;
    if (n < 0) {
        conn_close(c);
        return n;
    }
    if ((size_t)n == c->out.len)
        sld_buf_reset(&c->out);
    else
        sld_buf_consume(&c->out, (size_t)n);
    return 0;
}

static void flush(conn_t *c) {
    if (c->writing || c->closed)
        return;
    if (c->out.len > 0 && !c->out.failed && write_now(c) < 0)
        return;
    if (c->out.len == 0) {
        if (c->closing && c->replies.head == NULL)
            conn_finish(c);
        return;
    }
    if (c->out.failed) { /* replies were lost to an allocation failure */
        conn_close(c);
        return;
    }
    sld_buf_t t = c->sending;
    c->sending = c->out;
    c->out = t;
    sld_buf_reset(&c->out);
    uv_buf_t b = uv_buf_init(c->sending.data, (unsigned)c->sending.len);
    c->writing = true;
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc != 0) {
        c->writing = false;
        conn_close(c);
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

static void stop_reading(conn_t *c) {
    if (!c->closed)
        uv_read_stop((uv_stream_t *)&c->tcp);
}

/* Replies waiting to be written, those held behind deferred ones included:
 * what backpressure bounds. */
static size_t owed(const conn_t *c) {
    return c->out.len + sld_reply_queue_owed(&c->replies);
}

/* Reply with a protocol error and close: the stream cannot be trusted. The
 * error goes after every reply still owed. */
static void protocol_error(conn_t *c, const char *why) {
    sld_reply_errorf(sld_reply_queue_tail(&c->replies), "ERR %s", why);
    atomic_fetch_add(&c->w->f->d->stats.protocol_errors, 1);
    c->closing = true;
    stop_reading(c);
}

/* Runs every complete command in the input buffer. */
static void process(conn_t *c) {
    sld_daemon_t *d = c->w->f->d;
    const sld_runtime_t *rt = sld_runtime(d);
    size_t max_request = rt->cfg->max_request_bytes;
    sld_resp_limits_t lim = {.max_args = MAX_ARGS, .max_bulk = max_request,
                             .max_inline = max_request < 65536 ? max_request : 65536};
    sld_client_t client = {.d = d, .rt = rt, .out = sld_reply_queue_tail(&c->replies),
                           .counters = c->w->counters, .replies = &c->replies,
                           .worker = c->w->index, .id = c->id, .proto = c->proto, .tx = c->tx,
                           .authed = c->authed, .loop = c->w->loop};
    memcpy(client.name, c->name, sizeof c->name);
    sld_arg_t argv[MAX_ARGS];
    size_t off = 0;
    /* pipelined decisions are held here and decided together, their keys
     * still in c->in: everything is flushed before the input is consumed
     * and before any other reply (commands.h) */
    sld_resp_batch_t batch;
    sld_resp_batch_init(&batch, &c->last_set);
    const char *fail = NULL;
    sld_engine_batch_begin(d->engine, client.worker);
    while (!c->closing && !c->paused && c->in.len - off >= c->need) {
        size_t argc, need;
        const char *why;
        ssize_t used = sld_resp_parse(c->in.data + off, c->in.len - off, &lim, argv, &argc, &need, &why);
        if (used == SLD_RESP_ERROR) {
            fail = why;
            break;
        }
        if (used == SLD_RESP_NEED_MORE) {
            c->need = need;
            if (need > max_request || c->in.len - off >= max_request)
                fail = "Protocol error: request larger than max_request_bytes";
            break;
        }
        c->need = 0;
        if ((size_t)used > max_request) {
            fail = "Protocol error: request larger than max_request_bytes";
            break;
        }
        if (argc > 0) {
            sld_command_batched(&client, &batch, argv, argc);
            if (client.quit) {
                c->closing = true;
                stop_reading(c);
            }
        }
        off += (size_t)used;
        if (owed(c) >= OUT_HIGH || c->replies.n >= MAX_DEFERRED) {
            /* the client is not reading, or Redis is behind: wait for them */
            c->paused = true;
            stop_reading(c);
        }
    }
    sld_command_flush(&client, &batch);
    if (fail)
        protocol_error(c, fail);
    sld_engine_batch_flush(d->engine, client.worker);
    memcpy(c->name, client.name, sizeof c->name);
    c->proto = client.proto;
    c->tx = client.tx;
    c->authed = client.authed;
    sld_buf_consume(&c->in, off);
    if (c->w->stopping && !c->paused)
        c->closing = true; /* what was read is answered (also after a pause); nothing more is */
    flush(c);
}

/* Reading again once the client has read and Redis has answered enough. */
static bool resume(conn_t *c) {
    if (!c->paused || c->closing || c->closed || owed(c) >= OUT_HIGH ||
        c->replies.n >= MAX_DEFERRED / 2)
        return false;
    c->paused = false;
    if (!c->w->stopping)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    process(c); /* commands that arrived while we waited */
    return true;
}

static void on_write(uv_write_t *req, int status) {
    conn_t *c = (conn_t *)req->handle;
    c->writing = false;
    sld_buf_reset(&c->sending);
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (!resume(c))
        flush(c);
}

/* ---- replies that come later ------------------------------------------------------------ */

/* The reply queue's callback: late replies have moved to c->out. */
static void on_replies_ready(void *arg) {
    conn_t *c = arg;
    if (c->handle_closed) {
        if (c->replies.n == 0)
            conn_free(c);
        return;
    }
    if (c->closed)
        return;
    if (!resume(c))
        flush(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    conn_t *c = (conn_t *)h;
    if (!sld_buf_reserve(&c->in, READ_CHUNK)) {
        *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
        return;
    }
    *buf = uv_buf_init(c->in.data + c->in.len, (unsigned)(c->in.cap - c->in.len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    conn_t *c = (conn_t *)s;
    if (nread < 0) { /* EOF, reset, or no memory for the buffer */
        c->closing = true;
        stop_reading(c);
        if (nread == UV_EOF && !sld_reply_queue_holds(&c->replies))
            flush(c); /* a half-close still gets what it is owed; flush closes after */
        else if (nread == UV_EOF) /* gone while it waits (SL.ACQUIRE), as from BLPOP */
            conn_close(c);
        else if (!c->writing)
            conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    c->in.len += (size_t)nread;
    c->last_active = uv_now(c->w->loop);
    process(c);
}

static void on_connection(void *data, sld_incoming_t *in) {
    worker_t *w = data;
    sld_daemon_t *d = w->f->d;
    if (w->stopping)
        return;
    conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->w = w;
    sld_reply_queue_init(&c->replies, &c->out, on_replies_ready, c);
    if (sld_incoming_take(in, &c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    c->id = atomic_fetch_add(&w->f->next_id, 1) + 1;
    c->last_active = uv_now(w->loop);
    c->stall.since = c->last_active;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    c->admitted = sld_conn_admit(d);
    if (!c->admitted) {
        sld_reply_error(&c->out, "ERR max number of clients reached");
        c->closing = true;
        flush(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- the front's hooks (net/front.h) ------------------------------------------------------ */

void sld_resp_front_init(sld_resp_front_t *f, sld_daemon_t *d) {
    f->d = d;
    atomic_init(&f->next_id, 0);
}

static int front_start(void *ctx, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index, void **out,
                       char *err, size_t err_len) {
    sld_resp_front_t *f = ctx;
    worker_t *w = sld_front_worker_new(sizeof *w, fd, err, err_len);
    if (w == NULL)
        return SL_ENOMEM;
    w->f = f;
    w->loop = loop;
    w->index = index;
    w->counters = &f->d->counters[index];
    *out = w; /* even on failure: the caller stops and disposes it like any other */
    int rc = sld_acceptor_serve(&w->acceptor, loop, fd, spread, index, w, on_connection);
    if (rc != 0) {
        snprintf(err, err_len, "cannot serve RESP: %s", uv_strerror(rc));
        return SL_EIO;
    }
    return SL_OK;
}

static void front_begin_stop(void *arg) {
    worker_t *w = arg;
    if (w->stopping)
        return;
    w->stopping = true;
    sld_acceptor_close(&w->acceptor);
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        stop_reading(c);
        if (c->closing)
            flush(c); /* closes it now if nothing is owed */
        else
            process(c); /* commands already read are answered, then it closes */
    }
}

/* Closes idle connections and those whose client does not read. */
static void front_tick(void *arg, uint64_t now) {
    worker_t *w = arg;
    sld_daemon_t *d = w->f->d;
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    sl_usec_t idle = cfg->idle_timeout;
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (write_stalled(c, now, cfg->write_timeout)) {
            atomic_fetch_add(&d->stats.idle_closed, 1);
            conn_abort(c);
        } else if (idle > 0 && !c->writing && !w->stopping && c->replies.n == 0 &&
                   (now - c->last_active) * 1000 >= (uint64_t)idle) {
            atomic_fetch_add(&d->stats.idle_closed, 1);
            conn_close(c);
        } else if (now - c->last_active >= QUIET_MS && !c->writing) {
            /* A quiet connection keeps no buffers: a thousand idle clients
             * would otherwise hold 64 KiB each. */
            if (c->in.len == 0)
                sld_buf_free(&c->in);
            if (c->out.len == 0)
                sld_buf_free(&c->out);
            sld_buf_free(&c->sending);
        }
    }
    sld_linger_poll(&w->linger);
}

static void front_force_close(void *arg) {
    worker_t *w = arg;
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        conn_close(c);
    }
    sld_linger_close_all(&w->linger);
}

static bool front_idle(void *arg) {
    worker_t *w = arg;
    return w->conns == NULL && sld_linger_empty(&w->linger);
}

static void front_dispose(void *arg) {
    worker_t *w = arg;
    sld_acceptor_close(&w->acceptor);
    sld_linger_close_all(&w->linger);
}

static void front_free(void *arg) { free(arg); }

const sld_front_ops_t sld_resp_front_ops = {
    .name = "resp",
    .start = front_start,
    .begin_stop = front_begin_stop,
    .tick = front_tick,
    .force_close = front_force_close,
    .idle = front_idle,
    .dispose = front_dispose,
    .free = front_free,
};
