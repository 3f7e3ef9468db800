/* grpc_server.c -- the gRPC front on the worker loops (see grpc_server.h).
 *
 * A connection (gconn_t) is a libuv TCP handle under a libh2o socket (TLS
 * or not), and once the handshake is done an HTTP/2 session. Whatever
 * changes a session's output (bytes read, an answer, the sweep) puts the
 * connection on its worker's dirty list; a check handle, after the loop's
 * I/O, writes each dirty connection's output in one write (libh2o takes
 * one write at a time: what comes meanwhile waits for its end).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>

#include "server/base/log.h"
#include "server/gateway/gateway_tls.h"
#include "server/grpc/grpc_config.h"
#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/grpc_server.h"
#include "server/grpc/grpc_stats.h"
#include "server/net/accept_spread.h"
#include "server/net/admission.h"
#include "server/net/linger.h"
#include "server/net/tcp_stall.h"
#include "server/observe/extra_metrics.h"

/* how often deadlines are looked at */
#define SWEEP_MS 100

typedef struct gworker gworker_t;
typedef struct gconn gconn_t;

struct gconn {
    uv_tcp_t tcp; /* first: libh2o's close callback hands us the handle */
    gworker_t *w;
    h2o_socket_t *sock;
    sld_grpc_h2_t *h2;   /* NULL until the TLS handshake is done */
    gconn_t *prev, *next;
    gconn_t *dirty_next;
    bool dirty;
    bool writing;        /* a write is under way: `out` is libh2o's until it ends */
    bool closing;
    sld_buf_t pending, out;
    uint64_t since;      /* accepted at (loop ms) */
    sld_tcp_stall_t stall; /* whether the client still takes its answers */
    bool aborted;        /* reset for a stalled write: counted once */
    int linger_fd;       /* while stopping: a dup kept to close without a reset; else -1 */
};

struct gworker {
    sld_grpc_server_t *g;
    uint32_t index;
    uv_loop_t *loop;
    sld_acceptor_t acceptor; /* the listener, and connections handed over (net/accept_spread.h) */
    uv_timer_t timer;
    bool timer_open;
    uv_check_t check;
    bool check_open;
    gconn_t *conns;
    gconn_t *dirty;
    bool stopping;
    sld_linger_t linger; /* stopped connections closing without a reset */
};

struct sld_grpc_server {
    sld_daemon_t *d;
    uint32_t threads;
    uint32_t max_message;
    uint32_t slot;             /* metrics slot of Envoy ratelimit's limits' decisions */
    sld_grpc_stats_t *stats;   /* their per-rule stats, in /metrics */
    sld_metrics_extra_t metrics;
    SSL_CTX *tls;              /* grpc.tls, or NULL */
    const char *tls_cert;
    atomic_bool stopping;      /* health says NOT_SERVING */
};

/* What a client past max_connections is told, as HTTP/2 (RFC 9113): a
 * GOAWAY that accepted no stream (last stream 0, ENHANCE_YOUR_CALM) with
 * the reason as its debug data; a gRPC client fails its calls with
 * UNAVAILABLE. Over TLS the connection is closed without a word. */
#define REFUSAL_REASON "max connections reached"
static const uint8_t refusal[] = {
    0, 0, 8 + sizeof REFUSAL_REASON - 1, 0x7, 0, 0, 0, 0, 0,   /* GOAWAY on stream 0 */
    0, 0, 0, 0,                                                /* last stream id */
    0, 0, 0, 0xb,                                              /* ENHANCE_YOUR_CALM */
    'm', 'a', 'x', ' ', 'c', 'o', 'n', 'n', 'e', 'c', 't', 'i', 'o', 'n', 's', ' ',
    'r', 'e', 'a', 'c', 'h', 'e', 'd'};
_Static_assert(sizeof refusal == 9 + 8 + sizeof REFUSAL_REASON - 1, "the refusal's debug data is the reason");

/* ---- calls ---------------------------------------------------------------------------------- */

static void on_answer(void *arg, int status, const char *message, const uint8_t *body, size_t len) {
    sld_grpc_h2_answer(arg, status, message, body, len);
}

static void answer_health(sld_grpc_server_t *g, sld_grpc_call_t *call, const uint8_t *msg, size_t len) {
    char *service = NULL;
    if (sld_grpc_health_decode(msg, len, &service) != SL_OK) {
        sld_grpc_h2_answer(call, SLD_GRPC_INVALID_ARGUMENT, "the request is not a HealthCheckRequest", NULL, 0);
        return;
    }
    bool known = service[0] == '\0' || strcmp(service, "envoy.service.ratelimit.v3.RateLimitService") == 0;
    free(service);
    if (!known) {
        sld_grpc_h2_answer(call, SLD_GRPC_NOT_FOUND, "unknown service", NULL, 0);
        return;
    }
    uint8_t *body = NULL;
    size_t blen = 0;
    /* 1 SERVING, 2 NOT_SERVING (stopping) */
    if (sld_grpc_health_encode(atomic_load(&g->stopping) ? 2 : 1, &body, &blen) != SL_OK) {
        sld_grpc_h2_answer(call, SLD_GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    sld_grpc_h2_answer(call, SLD_GRPC_OK, NULL, body, blen);
    free(body);
}

static void on_request(void *ctx, sld_grpc_call_t *call, int method, const uint8_t *msg, size_t len) {
    gconn_t *c = ctx;
    sld_grpc_server_t *g = c->w->g;
    if (method == SLD_GRPC_M_HEALTH) {
        answer_health(g, call, msg, len);
        return;
    }
    sld_grpc_rls_request_t req;
    char err[160];
    int rc = sld_grpc_rls_decode(msg, len, &req, err, sizeof err);
    if (rc != SL_OK) {
        sld_grpc_h2_answer(call, rc == SL_EINVAL ? SLD_GRPC_INVALID_ARGUMENT : SLD_GRPC_RESOURCE_EXHAUSTED, err,
                           NULL, 0);
        return;
    }
    sld_grpc_decide(g->d, c->w->index, g->slot, g->stats, &req, on_answer, call);
}

/* ---- connections ---------------------------------------------------------------------------- */

static void mark_dirty(gconn_t *c) {
    if (c->dirty || c->closing)
        return;
    c->dirty = true;
    c->dirty_next = c->w->dirty;
    c->w->dirty = c;
}

static void on_output(void *ctx) { mark_dirty(ctx); }

static const sld_grpc_h2_hooks_t hooks = {on_request, on_output};

static void on_conn_closed(uv_handle_t *handle) {
    gconn_t *c = (gconn_t *)handle;
    gworker_t *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    for (gconn_t **p = &w->dirty; *p; p = &(*p)->dirty_next)
        if (*p == c) {
            *p = c->dirty_next;
            break;
        }
    sld_buf_free(&c->pending);
    sld_buf_free(&c->out);
    sld_linger_add(&w->linger, c->linger_fd); /* -1: nothing */
    sld_conn_closed(w->g->d, &w->acceptor, true);
    free(c);
}

static void close_conn(gconn_t *c) {
    if (c->closing)
        return;
    c->closing = true;
    /* calls being decided are freed by their answers */
    sld_grpc_h2_free(c->h2);
    c->h2 = NULL;
    h2o_socket_close(c->sock);
}

static void flush(gconn_t *c);

static void on_written(h2o_socket_t *sock, const char *err) {
    gconn_t *c = sock->data;
    c->writing = false;
    sld_buf_reset(&c->out);
    if (err != NULL) {
        close_conn(c);
        return;
    }
    flush(c);
}

/* Writes what the session has to send, in one write; closes a session
 * that is over once its last bytes are out. */
static void flush(gconn_t *c) {
    if (c->closing || c->writing || c->h2 == NULL)
        return;
    bool ok = sld_grpc_h2_output(c->h2, &c->pending, (int64_t)uv_now(c->w->loop));
    if (!ok && c->pending.failed) {
        close_conn(c);
        return;
    }
    if (c->pending.len == 0) {
        if (sld_grpc_h2_done(c->h2))
            close_conn(c);
        return;
    }
    sld_buf_t t = c->out;
    c->out = c->pending;
    c->pending = t;
    c->writing = true;
    h2o_iovec_t v = h2o_iovec_init(c->out.data, c->out.len);
    h2o_socket_write(c->sock, &v, 1, on_written);
}

static void on_read(h2o_socket_t *sock, const char *err) {
    gconn_t *c = sock->data;
    if (err != NULL) {
        close_conn(c);
        return;
    }
    sld_grpc_h2_feed(c->h2, (const uint8_t *)sock->input->bytes, sock->input->size, (int64_t)uv_now(c->w->loop));
    h2o_buffer_consume(&sock->input, sock->input->size);
    /* broken or not, what the session has to say goes out first */
    mark_dirty(c);
}

static void start_session(gconn_t *c) {
    c->h2 = sld_grpc_h2_new(&hooks, c, c->w->g->max_message, (int64_t)uv_now(c->w->loop));
    if (c->h2 == NULL) {
        close_conn(c);
        return;
    }
    if (c->w->stopping)
        sld_grpc_h2_shutdown(c->h2);
    h2o_socket_read_start(c->sock, on_read);
    if (c->sock->input->size > 0) /* read with the handshake's last bytes */
        on_read(c->sock, NULL);
    mark_dirty(c);
}

static void on_handshake(h2o_socket_t *sock, const char *err) {
    gconn_t *c = sock->data;
    if (err != NULL) {
        close_conn(c);
        return;
    }
    start_session(c);
}

static void on_accept(void *data, sld_incoming_t *in) {
    gworker_t *w = data;
    if (w->stopping)
        return;
    gconn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->w = w;
    c->linger_fd = -1;
    bool tls = w->g->tls != NULL;
    if (!sld_conn_accept(w->g->d, in, &c->tcp, tls ? "" : (const char *)refusal, tls ? 0 : sizeof refusal))
        return;
    uv_tcp_nodelay(&c->tcp, 1);
    c->since = c->stall.since = uv_now(w->loop);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    c->sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, on_conn_closed);
    c->sock->data = c;
    if (tls)
        h2o_socket_ssl_handshake(c->sock, w->g->tls, NULL, on_handshake);
    else
        start_session(c);
}

/* ---- a worker's loop ------------------------------------------------------------------------ */

static void on_check(uv_check_t *check) {
    gworker_t *w = check->data;
    while (w->dirty) {
        gconn_t *c = w->dirty;
        w->dirty = c->dirty_next;
        c->dirty = false;
        flush(c);
    }
}

static void on_timer(uv_timer_t *timer) {
    gworker_t *w = timer->data;
    uint64_t now = uv_now(w->loop);
    sl_usec_t idle = sld_runtime(w->g->d)->cfg->idle_timeout;
    int64_t idle_ms = idle > 0 ? (int64_t)(idle / 1000 > 0 ? idle / 1000 : 1) : 0;
    for (gconn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->closing)
            continue;
        if (c->h2 == NULL) { /* in its TLS handshake */
            if (idle_ms > 0 && now - c->since >= (uint64_t)idle_ms)
                close_conn(c);
            continue;
        }
        sld_grpc_h2_sweep(c->h2, (int64_t)now, idle_ms);
        mark_dirty(c);
    }
}

static int front_start(void *ctx, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index, void **state,
                       char *err, size_t err_len) {
    sld_grpc_server_t *g = ctx;
    gworker_t *w = sld_front_worker_new(sizeof *w, fd, err, err_len);
    *state = w;
    if (w == NULL)
        return SL_ENOMEM;
    w->g = g;
    w->index = index;
    w->loop = loop;
    if (g->tls && index == 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int port = 0;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
        sld_info("grpc: TLS on %s (port %d) with %s", sld_grpc_listen(sld_runtime(g->d)->cfg), port, g->tls_cert);
    }
    int rc = uv_timer_init(loop, &w->timer);
    w->timer_open = rc == 0;
    w->timer.data = w;
    if (rc == 0)
        rc = uv_timer_start(&w->timer, on_timer, SWEEP_MS, SWEEP_MS);
    if (rc == 0)
        rc = uv_check_init(loop, &w->check);
    w->check_open = rc == 0;
    w->check.data = w;
    if (rc == 0)
        rc = uv_check_start(&w->check, on_check);
    if (rc == 0)
        rc = sld_acceptor_serve(&w->acceptor, loop, fd, spread, index, w, on_accept);
    else
        close(fd);
    if (rc != 0) {
        snprintf(err, err_len, "grpc: cannot serve: %s", uv_strerror(rc));
        return SL_EIO;
    }
    return SL_OK;
}

static void front_begin_stop(void *state) {
    gworker_t *w = state;
    if (w->stopping)
        return;
    w->stopping = true;
    atomic_store(&w->g->stopping, true);
    sld_acceptor_close(&w->acceptor);
    for (gconn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->closing)
            continue;
        if (c->h2 == NULL) {
            close_conn(c);
            continue;
        }
        /* the session closes once its GOAWAY and last answers are out,
         * maybe with a client's next frames unread, which would make the
         * close a reset that can destroy those answers on their way: the
         * dup keeps the socket for a lingering close (linger.h) once
         * libh2o is done with it (on_conn_closed), as the HTTP fronts do */
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            c->linger_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        sld_grpc_h2_shutdown(c->h2);
        mark_dirty(c);
    }
}

/* The sweep timer keeps the deadlines; this resets every connection whose
 * client has not taken a byte of its answers for write_timeout -- a client
 * that does not read (as http_server.c does for HTTP). */
static void front_tick(void *state, uint64_t now) {
    gworker_t *w = state;
    sl_usec_t timeout = sld_runtime(w->g->d)->cfg->write_timeout;
    uint64_t reaped = 0;
    sld_linger_poll(&w->linger);
    for (gconn_t *c = w->conns; c; c = c->next) {
        uv_os_fd_t fd;
        if (c->closing || c->aborted || uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 ||
            !sld_tcp_stalled(&c->stall, fd, uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp), now,
                             timeout))
            continue;
        /* the write under way fails, and the connection closes with it;
         * SO_LINGER 0 makes that close a reset, dropping the unsent bytes */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        shutdown(fd, SHUT_RDWR);
        c->aborted = true;
        reaped++;
    }
    atomic_fetch_add(&w->g->d->stats.idle_closed, reaped);
}

static void front_force_close(void *state) {
    gworker_t *w = state;
    sld_linger_close_all(&w->linger);
    for (gconn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        /* a write under way ends with an error, and the connection with it */
        uv_os_fd_t fd;
        if (c->writing && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
        else
            close_conn(c);
    }
}

static bool front_idle(void *state) {
    const gworker_t *w = state;
    return w->conns == NULL && sld_linger_empty(&w->linger);
}

static void front_dispose(void *state) {
    gworker_t *w = state;
    sld_acceptor_close(&w->acceptor);
    for (gconn_t *c = w->conns; c; c = c->next) {
        if (c->linger_fd >= 0) /* nothing lingers once the loop is going */
            close(c->linger_fd);
        c->linger_fd = -1;
        close_conn(c);
    }
    sld_linger_close_all(&w->linger);
    if (w->timer_open)
        uv_close((uv_handle_t *)&w->timer, NULL);
    if (w->check_open)
        uv_close((uv_handle_t *)&w->check, NULL);
    w->timer_open = w->check_open = false;
}

static void front_free(void *state) { free(state); }

const sld_front_ops_t sld_grpc_server_ops = {"grpc", front_start, front_begin_stop, front_tick,
                                             front_force_close, front_idle, front_dispose, front_free};

/* ---- the shared part ------------------------------------------------------------------------ */

int sld_grpc_server_new(sld_daemon_t *d, uint32_t threads, uint32_t max_message, sld_grpc_server_t **out,
                        char *err, size_t err_len) {
    sld_grpc_server_t *g = calloc(1, sizeof *g);
    *out = NULL;
    if (g == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    g->d = d;
    g->threads = threads;
    g->max_message = max_message;
    const sld_runtime_t *rt = sld_runtime(d);
    const sld_grpc_settings_t *tls = rt ? sld_grpc_tls(rt->cfg) : NULL;
    if (tls) {
        sld_gw_tls_file_t which;
        char why[256];
        if (sld_gw_tls_server(tls->cert_path, tls->key_path, &g->tls, &which, why, sizeof why) != SL_OK) {
            snprintf(err, err_len, "grpc: cannot serve TLS on %s: grpc.tls.cert '%s' or grpc.tls.key '%s' refused: %s",
                     sld_grpc_listen(rt->cfg), tls->cert_path, tls->key_path, why);
            free(g);
            return SL_EIO;
        }
        g->tls_cert = tls->cert_path;
    }
    g->slot = d->metrics ? sld_metrics_slot(d->metrics, "rls") : 0;
    /* without them the front serves the same, uncounted */
    if ((g->stats = sld_grpc_stats_new(threads)) != NULL) {
        g->metrics = (sld_metrics_extra_t){.write = sld_grpc_stats_write, .ctx = g->stats};
        sld_metrics_extra_set_rls(&g->metrics);
    }
    *out = g;
    return SL_OK;
}

void sld_grpc_server_free(sld_grpc_server_t *g) {
    if (g == NULL)
        return;
    if (g->stats) { /* the workers, and so the scrapes, have stopped */
        sld_metrics_extra_set_rls(NULL);
        sld_grpc_stats_free(g->stats);
    }
    SSL_CTX_free(g->tls);
    free(g);
}
