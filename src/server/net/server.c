/* server.c -- worker loops, listeners and RESP connections (see server.h).
 *
 * A connection owns an input buffer (bytes received, not yet run), an output
 * buffer (replies not yet handed to the kernel) and a buffer being written.
 * Reads run every complete command at once; replies go out in one write.
 * Bounds: a command may not exceed max_request_bytes (it is refused and the
 * connection closed), a client that does not read its replies is not read
 * from either once 64 KiB of them wait (backpressure), and is closed (reset,
 * so the kernel frees its buffers at once) when it has not taken a byte of
 * its replies for write_timeout (tcp_stall.h); an idle connection is closed after idle_timeout, and
 * connections over max_connections get an error.
 *
 * Not here: what commands do (commands.c), configuration, signals (sluiced.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "server/resp/commands.h"
#include "server/http/http.h"
#include "server/net/linger.h"
#include "server/net/reply_queue.h"
#include "server/base/log.h"
#include "server/engine/engine.h"
#include "server/net/server.h"
#include "server/net/tcp_stall.h"

#define OUT_HIGH (64u * 1024)   /* stop reading a client with this much unsent: a read's worth */
#define READ_CHUNK (64u * 1024)
#define MAX_ARGS 64
#define TICK_MS 1000
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
    bool authed;           /* AUTH passed (requirepass) */
    bool writing;
    bool paused;           /* reading stopped by backpressure */
    bool closing;          /* close once everything owed is written */
    bool closed;
    bool handle_closed;    /* uv_close done: freed once nothing is deferred */
    sld_reply_queue_t replies; /* replies owed, in order, some coming later */
};

struct worker {
    sld_server_t *s;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_tcp_t listener;
    int fd;
    uv_async_t wake;
    uv_timer_t tick;
    uv_prepare_t prepare;
    _Atomic uint64_t seen_generation;
    conn_t *conns;
    sld_linger_t linger;      /* connections closed while stopping, until their clients close */
    sld_http_worker_t *http;  /* NULL when the HTTP front is off */
    sld_counters_t *counters;
    bool stopping;
    bool store_detaching;    /* the engine lets go of this worker (its Redis client closes) */
    bool store_detached;     /* ... and has */
    uint64_t stop_deadline;  /* loop time, ms; force-close after it */
};

struct sld_server {
    sld_daemon_t *d;
    sld_http_t *http;
    worker_t *workers;
    uint32_t nworkers;
    _Atomic uint64_t next_id;
    atomic_bool stop;
    uint64_t grace_ms;
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
    c->replies.closed = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    atomic_fetch_sub(&c->w->s->d->stats.connected, 1);
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

static void flush(conn_t *c) {
    if (c->writing || c->closed)
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
    atomic_fetch_add(&c->w->s->d->stats.protocol_errors, 1);
    c->closing = true;
    stop_reading(c);
}

/* Runs every complete command in the input buffer. */
static void process(conn_t *c) {
    sld_daemon_t *d = c->w->s->d;
    const sld_runtime_t *rt = sld_runtime(d);
    size_t max_request = rt->cfg->max_request_bytes;
    sld_resp_limits_t lim = {.max_args = MAX_ARGS, .max_bulk = max_request,
                             .max_inline = max_request < 65536 ? max_request : 65536};
    sld_client_t client = {.d = d, .rt = rt, .out = sld_reply_queue_tail(&c->replies),
                           .counters = c->w->counters, .replies = &c->replies,
                           .worker = (uint32_t)(c->w->counters - d->counters), .id = c->id,
                           .proto = c->proto, .tx = c->tx};
    memcpy(client.name, c->name, sizeof c->name);
    client.authed = c->authed;
    sld_arg_t argv[MAX_ARGS];
    size_t off = 0;
    sld_engine_batch_begin(d->engine, client.worker);
    while (!c->closing && !c->paused && c->in.len - off >= c->need) {
        size_t argc, need;
        const char *why;
        ssize_t used = sld_resp_parse(c->in.data + off, c->in.len - off, &lim, argv, &argc, &need, &why);
        if (used == SLD_RESP_ERROR) {
            protocol_error(c, why);
            break;
        }
        if (used == SLD_RESP_NEED_MORE) {
            c->need = need;
            if (need > max_request || c->in.len - off >= max_request)
                protocol_error(c, "Protocol error: request larger than max_request_bytes");
            break;
        }
        c->need = 0;
        if ((size_t)used > max_request) {
            protocol_error(c, "Protocol error: request larger than max_request_bytes");
            break;
        }
        if (argc > 0) {
            sld_command(&client, argv, argc);
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
        if (nread == UV_EOF)
            flush(c); /* a half-close still gets what it is owed; flush closes after */
        else if (!c->writing)
            conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    c->in.len += (size_t)nread;
    c->last_active = uv_now(&c->w->loop);
    process(c);
}

static void on_connection(uv_stream_t *listener, int status) {
    worker_t *w = listener->data;
    sld_daemon_t *d = w->s->d;
    if (status < 0 || w->stopping)
        return;
    conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->w = w;
    sld_reply_queue_init(&c->replies, &c->out, on_replies_ready, c);
    uv_tcp_init(&w->loop, &c->tcp);
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    atomic_fetch_add(&d->stats.connections_received, 1);
    c->id = atomic_fetch_add(&w->s->next_id, 1) + 1;
    c->last_active = uv_now(&w->loop);
    c->stall.since = c->last_active;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    int64_t now_connected = atomic_fetch_add(&d->stats.connected, 1) + 1;
    if (now_connected > (int64_t)sld_runtime(d)->cfg->max_connections) {
        atomic_fetch_add(&d->stats.connections_rejected, 1);
        sld_reply_error(&c->out, "ERR max number of clients reached");
        c->closing = true;
        flush(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- worker loop ------------------------------------------------------------------------ */

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void on_store_detached(void *arg) {
    worker_t *w = arg;
    w->store_detached = true;
}

/* Every second: close idle connections and those whose client does not
 * read; when stopping, force the stragglers. */
static void on_tick(uv_timer_t *t) {
    worker_t *w = t->data;
    uint64_t now = uv_now(&w->loop);
    const sld_config_t *cfg = sld_runtime(w->s->d)->cfg;
    sl_usec_t idle = cfg->idle_timeout;
    bool force = w->stopping && now >= w->stop_deadline;
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (!force && write_stalled(c, now, cfg->write_timeout)) {
            atomic_fetch_add(&w->s->d->stats.idle_closed, 1);
            conn_abort(c);
        } else if (force || (idle > 0 && !c->writing && !w->stopping && c->replies.n == 0 && (now - c->last_active) * 1000 >= (uint64_t)idle)) {
            if (!force)
                atomic_fetch_add(&w->s->d->stats.idle_closed, 1);
            conn_close(c);
        } else if (now - c->last_active >= TICK_MS && !c->writing) {
            /* A quiet connection keeps no buffers: a thousand idle clients
             * would otherwise hold 64 KiB each. */
            if (c->in.len == 0)
                sld_buf_free(&c->in);
            if (c->out.len == 0)
                sld_buf_free(&c->out);
            sld_buf_free(&c->sending);
        }
    }
    if (force) {
        sld_http_worker_force_close(w->http);
        sld_linger_close_all(&w->linger);
    } else {
        sld_linger_poll(&w->linger);
        atomic_fetch_add(&w->s->d->stats.idle_closed,
                         sld_http_worker_tick(w->http, now, cfg->write_timeout));
    }
    sld_daemon_t *d = w->s->d;
    uint32_t index = (uint32_t)(w - w->s->workers);
    if (w->stopping && w->conns == NULL && sld_linger_empty(&w->linger) && sld_http_worker_idle(w->http)) {
        /* Decisions still waiting on Redis held their connections open
         * until now; what is left of the client can go. */
        if (!w->store_detaching) {
            w->store_detaching = true;
            sld_engine_detach(d->engine, index, on_store_detached, w);
        }
        if (w->store_detached)
            uv_stop(&w->loop); /* h2o's own handles would keep it running: worker_run ends it */
    }
}

static void begin_stop(worker_t *w) {
    if (w->stopping)
        return;
    w->stopping = true;
    w->stop_deadline = uv_now(&w->loop) + w->s->grace_ms;
    close_handle((uv_handle_t *)&w->listener);
    sld_http_worker_begin_stop(w->http);
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        stop_reading(c);
        if (c->closing)
            flush(c); /* closes it now if nothing is owed */
        else
            process(c); /* commands already read are answered, then it closes */
    }
    uv_timer_start(&w->tick, on_tick, 0, 50);
}

static void on_wake(uv_async_t *a) {
    worker_t *w = a->data;
    if (atomic_load(&w->s->stop))
        begin_stop(w);
}

static void on_prepare(uv_prepare_t *p) {
    worker_t *w = p->data;
    atomic_store(&w->seen_generation, sld_runtime(w->s->d)->generation);
}

/* Runs the loop until the worker has stopped (on_tick), then closes what is left. */
static void worker_run(void *arg) {
    worker_t *w = arg;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    sld_linger_close_all(&w->linger);
    sld_http_worker_dispose(w->http);
    close_handle((uv_handle_t *)&w->tick);
    close_handle((uv_handle_t *)&w->prepare);
    close_handle((uv_handle_t *)&w->wake);
    close_handle((uv_handle_t *)&w->listener);
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

/* ---- listening -------------------------------------------------------------------------- */

/* "host:port" or "[v6]:port" into host and port strings. */
static int split_address(const char *addr, char *host, size_t hlen, char *port, size_t plen) {
    const char *colon;
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (end == NULL || end[1] != ':')
            return -1;
        colon = end + 1;
        snprintf(host, hlen, "%.*s", (int)(end - addr - 1), addr + 1);
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL)
            return -1;
        snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
    }
    snprintf(port, plen, "%s", colon + 1);
    return port[0] ? 0 : -1;
}

static int open_listener(const char *addr, int port_override, int *port_out, char *err, size_t err_len) {
    char host[256], port[32];
    if (split_address(addr, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, err_len, "bad listen address '%s' (expected host:port or [v6]:port)", addr);
        return -1;
    }
    if (port_override >= 0)
        snprintf(port, sizeof port, "%d", port_override);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (gai != 0) {
        snprintf(err, err_len, "cannot resolve '%s': %s", addr, gai_strerror(gai));
        return -1;
    }
    int one = 1;
    if (port_override < 0 && strcmp(port, "0") != 0) {
        /* SO_REUSEPORT would let a second daemon of the same user share the
         * port and split the traffic (and the limits) with us. A plain bind
         * first fails if anyone listens there; SO_REUSEADDR keeps it from
         * failing on a restart's TIME_WAIT leftovers. */
        int probe = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int busy = probe < 0 || setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
                   bind(probe, ai->ai_addr, ai->ai_addrlen) != 0;
        int saved = errno;
        if (probe >= 0)
            close(probe);
        if (busy) {
            snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(saved));
            freeaddrinfo(ai);
            return -1;
        }
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 511) != 0) {
        snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static int worker_init(worker_t *w, sld_server_t *s, int fd, char *err, size_t err_len) {
    w->s = s;
    w->fd = fd;
    int rc = uv_loop_init(&w->loop);
    if (rc == 0)
        rc = uv_tcp_init(&w->loop, &w->listener);
    /* With the RESP front off the listener stays an unopened handle, so
     * stopping closes it like any other. */
    if (rc == 0 && fd >= 0)
        rc = uv_tcp_open(&w->listener, fd);
    w->listener.data = w;
    if (rc == 0 && fd >= 0)
        rc = uv_listen((uv_stream_t *)&w->listener, 511, on_connection);
    if (rc == 0)
        rc = uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    if (rc == 0)
        rc = uv_timer_init(&w->loop, &w->tick);
    w->tick.data = w;
    if (rc == 0)
        rc = uv_timer_start(&w->tick, on_tick, TICK_MS, TICK_MS);
    if (rc == 0)
        rc = uv_prepare_init(&w->loop, &w->prepare);
    w->prepare.data = w;
    if (rc == 0)
        rc = uv_prepare_start(&w->prepare, on_prepare);
    if (rc != 0)
        snprintf(err, err_len, "cannot start a worker: %s", uv_strerror(rc));
    return rc;
}

/* Stops and frees the workers [0, s->nworkers) and the server; on the
 * calling thread, for a start that failed half-way. */
static void abandon(sld_server_t *s) {
    atomic_store(&s->stop, true);
    for (uint32_t k = 0; k < s->nworkers; k++) {
        begin_stop(&s->workers[k]);
        worker_run(&s->workers[k]);
        uv_loop_close(&s->workers[k].loop);
        sld_http_worker_free(s->workers[k].http);
    }
    sld_http_free(s->http);
    free(s->workers);
    free(s);
}

int sld_server_start(sld_daemon_t *d, const char *resp_listen, const char *http_listen, uint32_t threads,
                     sld_server_t **out, char *err, size_t err_len) {
    sld_server_t *s = calloc(1, sizeof *s);
    if (s == NULL || threads == 0) {
        free(s);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    s->d = d;
    s->workers = calloc(threads, sizeof *s->workers);
    d->counters = aligned_alloc(64, sizeof(sld_counters_t) * threads);
    bool resp = resp_listen != NULL && resp_listen[0] != '\0';
    bool http = http_listen != NULL && http_listen[0] != '\0';
    if (s->workers == NULL || d->counters == NULL || (http && sld_http_new(d, &s->http) != SL_OK)) {
        free(s->workers);
        free(d->counters);
        d->counters = NULL;
        free(s);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    memset(d->counters, 0, sizeof(sld_counters_t) * threads);
    d->ncounters = threads;
    for (uint32_t i = 0; i < threads; i++)
        s->workers[i].counters = &d->counters[i];
    int port = -1, http_port = -1, rc = SL_OK;
    for (uint32_t i = 0; i < threads && rc == SL_OK; i++) {
        /* The first bind picks the port (port 0: any free one); the others
         * share it through SO_REUSEPORT. */
        worker_t *w = &s->workers[i];
        int fd = resp ? open_listener(resp_listen, i == 0 ? -1 : port, &port, err, err_len) : -1;
        if (resp && fd < 0) {
            rc = SL_EIO;
            break;
        }
        if (worker_init(w, s, fd, err, err_len) != 0) {
            rc = SL_EIO; /* a half-made loop is left as it is: libuv could not start it */
            break;
        }
        s->nworkers = i + 1;
        atomic_store(&w->seen_generation, sld_runtime(d)->generation);
        if (sld_engine_attach(d->engine, i, &w->loop) != SL_OK) {
            snprintf(err, err_len, "cannot start the store's client (Redis)");
            rc = SL_EIO;
            break;
        }
        if (http) {
            int hfd = open_listener(http_listen, i == 0 ? -1 : http_port, &http_port, err, err_len);
            if (hfd < 0 || sld_http_worker_start(s->http, &w->loop, hfd, i, &w->http, err, err_len) != SL_OK)
                rc = SL_EIO;
        }
    }
    if (rc != SL_OK) {
        abandon(s);
        return rc;
    }
    d->resp_port = resp ? port : 0;
    d->http_port = http ? http_port : 0;
    for (uint32_t i = 0; i < threads; i++)
        uv_thread_create(&s->workers[i].thread, worker_run, &s->workers[i]);
    *out = s;
    return SL_OK;
}

void sld_server_wake(sld_server_t *s) {
    for (uint32_t i = 0; i < s->nworkers; i++)
        uv_async_send(&s->workers[i].wake);
}

bool sld_server_quiescent(sld_server_t *s, uint64_t generation) {
    for (uint32_t i = 0; i < s->nworkers; i++)
        if (atomic_load(&s->workers[i].seen_generation) < generation)
            return false;
    return true;
}

void sld_server_stop(sld_server_t *s, uint64_t grace_ms) {
    if (s == NULL)
        return;
    s->grace_ms = grace_ms;
    atomic_store(&s->stop, true);
    sld_server_wake(s);
    for (uint32_t i = 0; i < s->nworkers; i++) {
        uv_thread_join(&s->workers[i].thread);
        uv_loop_close(&s->workers[i].loop);
        sld_http_worker_free(s->workers[i].http);
    }
    sld_http_free(s->http);
    free(s->workers);
    free(s);
}
