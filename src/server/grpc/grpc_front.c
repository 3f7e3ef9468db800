/* grpc_front.c -- the gRPC front on the gRPC C core (see grpc_front.h).
 *
 * A call (gcall_t) goes through three stages, each ended by a completion
 * on the queue with the call as its tag: REQUESTED (the C core matched a
 * new call to our request), RECEIVING (its request message is in), and
 * FINISHING (the status went out and the client is done): then it is
 * freed. Between RECEIVING and FINISHING a ShouldRateLimit belongs to a
 * worker. Every call is answered exactly once through finish(), from the
 * queue's thread or a worker's (grpc_call_start_batch is thread-safe).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "server/base/log.h"
#include "server/grpc/grpc_config.h"
#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_front.h"
#include "server/grpc/grpc_messages.h"
#include "server/grpc/grpc_stats.h"
#include "server/grpc/grpc_tls.h"
#include "server/net/admission.h"
#include "server/observe/extra_metrics.h"

/* requests for new calls kept outstanding with the C core */
#define REQUESTS_OUTSTANDING 32
/* how often calls still receiving are checked against idle_timeout */
#define SWEEP_MS 100

enum stage { REQUESTED, RECEIVING, FINISHING };
enum method { M_OTHER, M_RLS, M_HEALTH };

typedef struct gcall gcall_t;
typedef struct gworker gworker_t;
typedef struct gconn gconn_t;

/* An admitted connection the C core serves: a dup of its socket, watched
 * for the hang-up the C core causes when it lets the connection go. */
struct gconn {
    int fd;
    gconn_t *prev, *next;
};

struct gcall {
    sld_grpc_t *g;
    enum stage stage;
    enum method method;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array metadata;
    grpc_byte_buffer *recv;
    grpc_byte_buffer *send;
    grpc_slice status_details;
    int cancelled;
    gcall_t *next;             /* in a worker's queue */
    gcall_t *rprev, *rnext;    /* among the calls receiving (the queue's thread's) */
    int64_t since_ms;          /* receiving since (monotonic) */
    bool timed_out;
};

struct gworker {
    sld_grpc_t *g;
    uint32_t index;
    int fd;                    /* the listening socket */
    uv_poll_t poll;
    bool polling;
    uv_async_t async;
    bool async_open;
    pthread_mutex_t lock;      /* the queue and closed, shared with the queue's thread */
    gcall_t *head, *tail;
    bool closed;               /* the loop is gone: the queue's thread answers itself */
    bool forced;
    int watch_fd;              /* epoll of the conns' dups, for hang-ups only */
    uv_poll_t watch;
    bool watching;
    gconn_t *conns;
};

struct sld_grpc {
    sld_daemon_t *d;
    grpc_server *server;
    grpc_completion_queue *cq;
    grpc_server_credentials *creds;     /* cleartext: the connections the workers hand over */
    grpc_server_credentials *tls_creds; /* grpc.tls: the C core's own listener's, or NULL */
    int tls_port;                       /* that listener's port */
    pthread_t thread;
    bool thread_started;
    gworker_t **workers;       /* threads of them, filled as workers start */
    uint32_t threads;
    _Atomic uint32_t nworkers;
    _Atomic uint32_t next_worker;
    uint32_t slot;             /* metrics slot of Envoy ratelimit's limits' decisions */
    sld_grpc_stats_t *stats;   /* their per-rule stats, in /metrics */
    sld_metrics_extra_t metrics;
    atomic_bool shutdown_asked;
    atomic_bool shutdown_done;
    atomic_bool cancelled;
    int shutdown_tag;          /* its address is the tag of the shutdown */
    _Atomic int64_t idle_timeout; /* limits.idle_timeout (usec, 0 never), as the workers last read it */
    gcall_t *receiving;        /* calls whose request is not in yet (the queue's thread's) */
};

/* ---- calls ---------------------------------------------------------------------------------- */

static void call_free(gcall_t *c) {
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->metadata);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    grpc_slice_unref(c->status_details);
    free(c);
}

/* Sends the status (and body, when status is OK) and waits for the client
 * to be done; the completion frees the call. */
static void finish(gcall_t *c, int status, const char *message, const uint8_t *body, size_t len) {
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (body != NULL) {
        grpc_slice s = grpc_slice_from_copied_buffer((const char *)body, len);
        c->send = grpc_raw_byte_buffer_create(&s, 1);
        grpc_slice_unref(s);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->send;
    }
    c->status_details = grpc_slice_from_copied_string(message ? message : "");
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)status;
    ops[n++].data.send_status_from_server.status_details = message ? &c->status_details : NULL;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->stage = FINISHING;
    if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK)
        call_free(c); /* the C core refused the batch: nothing will complete */
}

static void request_call(sld_grpc_t *g) {
    gcall_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->g = g;
    c->stage = REQUESTED;
    c->status_details = grpc_empty_slice();
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->metadata);
    if (grpc_server_request_call(g->server, &c->call, &c->details, &c->metadata, g->cq, g->cq, c) != GRPC_CALL_OK)
        call_free(c);
}

/* The request message as one run of bytes (a slice to unref). */
static grpc_slice message_bytes(gcall_t *c) {
    grpc_byte_buffer_reader r;
    grpc_slice s = grpc_empty_slice();
    if (grpc_byte_buffer_reader_init(&r, c->recv)) {
        s = grpc_byte_buffer_reader_readall(&r);
        grpc_byte_buffer_reader_destroy(&r);
    }
    return s;
}

static void answer_health(gcall_t *c) {
    grpc_slice s = message_bytes(c);
    char *service = NULL;
    int rc = sld_grpc_health_decode(GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), &service);
    grpc_slice_unref(s);
    if (rc != SL_OK) {
        finish(c, GRPC_STATUS_INVALID_ARGUMENT, "the request is not a HealthCheckRequest", NULL, 0);
        return;
    }
    bool known = service[0] == '\0' || strcmp(service, "envoy.service.ratelimit.v3.RateLimitService") == 0;
    free(service);
    if (!known) {
        finish(c, GRPC_STATUS_NOT_FOUND, "unknown service", NULL, 0);
        return;
    }
    uint8_t *body = NULL;
    size_t len = 0;
    /* 1 SERVING, 2 NOT_SERVING (stopping) */
    if (sld_grpc_health_encode(atomic_load(&c->g->shutdown_asked) ? 2 : 1, &body, &len) != SL_OK) {
        finish(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    finish(c, GRPC_STATUS_OK, NULL, body, len);
    free(body);
}

/* A ShouldRateLimit goes to a worker, round robin. */
static void hand_off(gcall_t *c) {
    sld_grpc_t *g = c->g;
    uint32_t n = atomic_load(&g->nworkers);
    if (n == 0) {
        finish(c, GRPC_STATUS_UNAVAILABLE, "sluiced is not serving", NULL, 0);
        return;
    }
    gworker_t *w = g->workers[atomic_fetch_add(&g->next_worker, 1) % n];
    pthread_mutex_lock(&w->lock);
    if (w->closed) {
        pthread_mutex_unlock(&w->lock);
        finish(c, GRPC_STATUS_UNAVAILABLE, "sluiced is stopping", NULL, 0);
        return;
    }
    c->next = NULL;
    if (w->tail)
        w->tail->next = c;
    else
        w->head = c;
    w->tail = c;
    /* under the lock: the worker closes the handle only after it set closed */
    uv_async_send(&w->async);
    pthread_mutex_unlock(&w->lock);
}

/* ---- calls whose request does not come -------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void receiving_add(gcall_t *c) {
    sld_grpc_t *g = c->g;
    c->since_ms = now_ms();
    c->rprev = NULL;
    c->rnext = g->receiving;
    if (g->receiving)
        g->receiving->rprev = c;
    g->receiving = c;
}

static void receiving_remove(gcall_t *c) {
    if (c->rprev)
        c->rprev->rnext = c->rnext;
    else
        c->g->receiving = c->rnext;
    if (c->rnext)
        c->rnext->rprev = c->rprev;
    c->rprev = c->rnext = NULL;
}

/* The C core holds a call whose client never completes its request message
 * (nor ends its stream) until the client's own deadline, which may be none:
 * past limits.idle_timeout such a call is cancelled with DEADLINE_EXCEEDED.
 * Its stream ends; the connection and its other calls go on. */
static void expire_receiving(sld_grpc_t *g) {
    int64_t idle_ms = atomic_load(&g->idle_timeout) / 1000;
    if (idle_ms <= 0)
        return;
    int64_t now = now_ms();
    for (gcall_t *c = g->receiving; c; c = c->rnext)
        if (!c->timed_out && now - c->since_ms >= idle_ms) {
            c->timed_out = true;
            grpc_call_cancel_with_status(c->call, GRPC_STATUS_DEADLINE_EXCEEDED,
                                         "no complete request within limits.idle_timeout", NULL);
        }
}

static void on_complete(gcall_t *c, bool success) {
    sld_grpc_t *g = c->g;
    switch (c->stage) {
    case REQUESTED:
        if (!success) { /* the server is shutting down */
            call_free(c);
            return;
        }
        if (!atomic_load(&g->shutdown_asked))
            request_call(g);
        c->method = grpc_slice_str_cmp(c->details.method, SLD_GRPC_RLS_METHOD) == 0      ? M_RLS
                    : grpc_slice_str_cmp(c->details.method, SLD_GRPC_HEALTH_METHOD) == 0 ? M_HEALTH
                                                                                          : M_OTHER;
        if (c->method == M_OTHER) {
            finish(c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL, 0);
            return;
        }
        grpc_op op;
        memset(&op, 0, sizeof op);
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &c->recv;
        c->stage = RECEIVING;
        if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK)
            finish(c, GRPC_STATUS_INTERNAL, "cannot receive the request", NULL, 0);
        else
            receiving_add(c);
        return;
    case RECEIVING:
        receiving_remove(c);
        if (!success || c->recv == NULL) {
            /* a message over the bound (the C core has cancelled the call
             * with RESOURCE_EXHAUSTED), or none before the end of the stream */
            finish(c, GRPC_STATUS_INVALID_ARGUMENT, "no request message", NULL, 0);
            return;
        }
        if (c->method == M_HEALTH)
            answer_health(c);
        else
            hand_off(c);
        return;
    case FINISHING:
        call_free(c);
        return;
    }
}

static void *cq_thread(void *arg) {
    sld_grpc_t *g = arg;
    int64_t next_sweep = now_ms() + SWEEP_MS;
    for (;;) {
        gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(SWEEP_MS, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(g->cq, until, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (now_ms() >= next_sweep) {
            expire_receiving(g);
            next_sweep = now_ms() + SWEEP_MS;
        }
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &g->shutdown_tag)
            atomic_store(&g->shutdown_done, true);
        else
            on_complete(ev.tag, ev.success != 0);
    }
    return NULL;
}

/* ---- on a worker ---------------------------------------------------------------------------- */

static void on_answer(void *arg, int status, const char *message, const uint8_t *body, size_t len) {
    finish(arg, status, message, body, len);
}

static void decide(gworker_t *w, gcall_t *c) {
    grpc_slice s = message_bytes(c);
    sld_grpc_rls_request_t req;
    char err[160];
    int rc = sld_grpc_rls_decode(GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), &req, err, sizeof err);
    grpc_slice_unref(s);
    if (rc != SL_OK) {
        finish(c, rc == SL_EINVAL ? GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_RESOURCE_EXHAUSTED, err, NULL, 0);
        return;
    }
    sld_grpc_decide(w->g->d, w->index, w->g->slot, w->g->stats, &req, on_answer, c);
}

static gcall_t *take_queue(gworker_t *w, bool close) {
    pthread_mutex_lock(&w->lock);
    gcall_t *c = w->head;
    w->head = w->tail = NULL;
    w->closed = w->closed || close;
    pthread_mutex_unlock(&w->lock);
    return c;
}

static void on_async(uv_async_t *a) {
    gworker_t *w = a->data;
    for (gcall_t *c = take_queue(w, false), *next; c; c = next) {
        next = c->next;
        decide(w, c);
    }
}

/* ---- connections against max_connections --------------------------------------------------- */

/* What a client past max_connections is told, as HTTP/2 (RFC 9113): the
 * server's preface (an empty SETTINGS) and a GOAWAY that accepted no stream
 * (last stream 0, ENHANCE_YOUR_CALM) with the reason as its debug data; a
 * gRPC client fails its calls with UNAVAILABLE. */
#define REFUSAL_REASON "max connections reached"
static const uint8_t refusal[] = {
    0, 0, 8 + sizeof REFUSAL_REASON - 1, 0x7, 0, 0, 0, 0, 0,   /* GOAWAY on stream 0 */
    0, 0, 0, 0,                                                /* last stream id */
    0, 0, 0, 0xb,                                              /* ENHANCE_YOUR_CALM */
    'm', 'a', 'x', ' ', 'c', 'o', 'n', 'n', 'e', 'c', 't', 'i', 'o', 'n', 's', ' ',
    'r', 'e', 'a', 'c', 'h', 'e', 'd'};
_Static_assert(sizeof refusal == 9 + 8 + sizeof REFUSAL_REASON - 1, "the refusal's debug data is the reason");

static void refuse(int fd) {
    /* as far as the socket takes it at once, as the other fronts' refusals */
    ssize_t n = send(fd, refusal, sizeof refusal, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
    close(fd);
}

static void unwatch_conn(gworker_t *w, gconn_t *k) {
    epoll_ctl(w->watch_fd, EPOLL_CTL_DEL, k->fd, NULL);
    close(k->fd);
    if (k->prev)
        k->prev->next = k->next;
    else
        w->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    free(k);
    sld_conn_release(w->g->d);
}

/* The C core says nothing when it closes a from-fd channel, but it shuts
 * the socket down both ways before closing its descriptor (or the peer
 * resets it): a dup of the socket, registered with no events asked,
 * reports exactly that hang-up (EPOLLHUP, EPOLLERR), and the connection's
 * place is released then. Without a dup (no descriptor, no memory) it is
 * released at once: served, but not counted. */
static void watch_conn(gworker_t *w, int fd) {
    gconn_t *k = w->watching ? malloc(sizeof *k) : NULL;
    int dup_fd = k ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    struct epoll_event ev = {.events = 0, .data.ptr = k};
    if (dup_fd < 0 || epoll_ctl(w->watch_fd, EPOLL_CTL_ADD, dup_fd, &ev) != 0) {
        if (dup_fd >= 0)
            close(dup_fd);
        free(k);
        sld_conn_release(w->g->d);
        return;
    }
    k->fd = dup_fd;
    k->prev = NULL;
    k->next = w->conns;
    if (w->conns)
        w->conns->prev = k;
    w->conns = k;
}

static void on_watch(uv_poll_t *p, int status, int events) {
    gworker_t *w = p->data;
    (void)status;
    (void)events;
    struct epoll_event evs[64];
    int n;
    do {
        n = epoll_wait(w->watch_fd, evs, 64, 0);
        for (int i = 0; i < n; i++)
            unwatch_conn(w, evs[i].data.ptr);
    } while (n == 64);
}

static void on_accept(uv_poll_t *p, int status, int events) {
    gworker_t *w = p->data;
    (void)events;
    if (status < 0)
        return;
    for (;;) {
        int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
                sld_warn("grpc: accept: %s", strerror(errno));
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        if (!sld_conn_admit(w->g->d)) {
            refuse(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        watch_conn(w, fd);
        grpc_server_add_channel_from_fd(w->g->server, fd, w->g->creds);
    }
}

static int front_start(void *ctx, uv_loop_t *loop, int fd, uint32_t index, void **state, char *err,
                       size_t err_len) {
    sld_grpc_t *g = ctx;
    gworker_t *w = calloc(1, sizeof *w);
    *state = w;
    if (w == NULL) {
        close(fd);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    w->g = g;
    w->index = index;
    w->fd = fd;
    pthread_mutex_init(&w->lock, NULL);
    atomic_store(&g->idle_timeout, (int64_t)sld_runtime(g->d)->cfg->idle_timeout);
    w->watch_fd = epoll_create1(EPOLL_CLOEXEC);
    if (w->watch_fd >= 0 && uv_poll_init(loop, &w->watch, w->watch_fd) == 0) {
        w->watch.data = w;
        w->watching = true;
        if (uv_poll_start(&w->watch, UV_READABLE, on_watch) != 0) {
            uv_close((uv_handle_t *)&w->watch, NULL);
            w->watching = false;
        }
    }
    int rc = uv_async_init(loop, &w->async, on_async);
    w->async.data = w;
    w->async_open = rc == 0;
    /* with TLS the C core accepts on its own listener: no socket here */
    if (rc == 0 && fd >= 0)
        rc = uv_poll_init(loop, &w->poll, fd);
    w->poll.data = w;
    w->polling = rc == 0 && fd >= 0;
    if (rc == 0 && fd >= 0)
        rc = uv_poll_start(&w->poll, UV_READABLE, on_accept);
    if (rc != 0) {
        snprintf(err, err_len, "grpc: cannot serve: %s", uv_strerror(rc));
        return SL_EIO;
    }
    if (index < g->threads) {
        g->workers[atomic_load(&g->nworkers)] = w;
        atomic_fetch_add(&g->nworkers, 1);
    }
    return SL_OK;
}

static void ask_shutdown(sld_grpc_t *g) {
    if (!atomic_exchange(&g->shutdown_asked, true))
        grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag);
}

static void front_begin_stop(void *state) {
    gworker_t *w = state;
    if (w->polling) {
        uv_poll_stop(&w->poll);
        uv_close((uv_handle_t *)&w->poll, NULL);
        w->polling = false;
        close(w->fd);
        w->fd = -1;
    }
    ask_shutdown(w->g);
}

/* The runtime is the workers' to read: they pass idle_timeout on to the
 * queue's thread. */
static void front_tick(void *state, uint64_t now) {
    gworker_t *w = state;
    (void)now;
    atomic_store(&w->g->idle_timeout, (int64_t)sld_runtime(w->g->d)->cfg->idle_timeout);
}

static void front_force_close(void *state) {
    gworker_t *w = state;
    w->forced = true;
    ask_shutdown(w->g);
    if (!atomic_exchange(&w->g->cancelled, true))
        grpc_server_cancel_all_calls(w->g->server);
}

/* Every call is answered once the C core's shutdown completes; after the
 * grace period, calls still waiting for the store are answered when the
 * engine lets go of this worker. */
static bool front_idle(void *state) {
    gworker_t *w = state;
    return atomic_load(&w->g->shutdown_done) || w->forced;
}

static void front_dispose(void *state) {
    gworker_t *w = state;
    if (w->polling) {
        uv_close((uv_handle_t *)&w->poll, NULL);
        w->polling = false;
    }
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    for (gcall_t *c = take_queue(w, true), *next; c; c = next) {
        next = c->next;
        finish(c, GRPC_STATUS_UNAVAILABLE, "sluiced is stopping", NULL, 0);
    }
    /* the C core keeps its own descriptors until it ends */
    while (w->conns)
        unwatch_conn(w, w->conns);
    if (w->watching) {
        uv_close((uv_handle_t *)&w->watch, NULL);
        w->watching = false;
    }
    if (w->async_open) {
        uv_close((uv_handle_t *)&w->async, NULL);
        w->async_open = false;
    }
}

static void front_free(void *state) {
    gworker_t *w = state;
    if (w->watch_fd >= 0)
        close(w->watch_fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

const sld_front_ops_t sld_grpc_front_ops = {"grpc", front_start, front_begin_stop, front_tick,
                                            front_force_close, front_idle, front_dispose, front_free};

/* ---- the shared part ------------------------------------------------------------------------ */

const char *sld_grpc_accept_address(const sld_grpc_t *g, int *port) {
    if (g->tls_creds == NULL)
        return sld_grpc_listen(sld_runtime(g->d)->cfg);
    *port = g->tls_port;
    return NULL;
}

/* Destroys the server once nothing runs on it (shut down, or never started),
 * joins or drains its queue and frees the front: the end of both
 * sld_grpc_free and a failed sld_grpc_new. */
static void destroy(sld_grpc_t *g) {
    grpc_server_destroy(g->server);
    grpc_completion_queue_shutdown(g->cq);
    if (g->thread_started)
        pthread_join(g->thread, NULL);
    else
        while (grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
            ;
    grpc_completion_queue_destroy(g->cq);
    grpc_server_credentials_release(g->creds);
    if (g->tls_creds)
        grpc_server_credentials_release(g->tls_creds);
    grpc_shutdown_blocking();
    sld_grpc_stats_free(g->stats);
    free(g->workers);
    free(g);
}

int sld_grpc_new(sld_daemon_t *d, uint32_t threads, uint32_t max_message, sld_grpc_t **out, char *err,
                 size_t err_len) {
    sld_grpc_t *g = calloc(1, sizeof *g);
    gworker_t **workers = calloc(threads ? threads : 1, sizeof *workers);
    *out = NULL;
    if (g == NULL || workers == NULL) {
        free(g);
        free(workers);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    grpc_init();
    g->d = d;
    g->workers = workers;
    g->threads = threads;
    g->slot = d->metrics ? sld_metrics_slot(d->metrics, "rls") : 0;
    /* without them the front serves the same, uncounted */
    if ((g->stats = sld_grpc_stats_new(threads)) != NULL) {
        g->metrics = (sld_metrics_extra_t){.write = sld_grpc_stats_write, .ctx = g->stats};
        sld_metrics_extra_set_rls(&g->metrics);
    }
    grpc_arg arg[4] = {{.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                        .value.integer = max_message > INT32_MAX ? INT32_MAX : (int)max_message}};
    grpc_channel_args args = {.num_args = 1, .args = arg};
    /* A connection with no call open for idle_timeout is let go (a GOAWAY,
     * then closed), as the other fronts close idle ones; as the C core reads
     * it once, a reload does not change it. */
    const sld_runtime_t *rt = sld_runtime(d);
    sl_usec_t idle = rt ? rt->cfg->idle_timeout : 0;
    if (idle > 0) {
        int64_t ms = idle / 1000;
        arg[args.num_args++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                                          .value.integer = ms > INT32_MAX ? INT32_MAX : ms < 1 ? 1 : (int)ms};
    }
    const sld_grpc_settings_t *tls = rt ? sld_grpc_tls(rt->cfg) : NULL;
    if (tls)
        sld_grpc_tls_args(&args, idle);
    g->server = grpc_server_create(&args, NULL);
    g->cq = grpc_completion_queue_create_for_next(NULL);
    g->creds = grpc_insecure_server_credentials_create();
    grpc_server_register_completion_queue(g->server, g->cq, NULL);
    if (tls && sld_grpc_tls_listen(g->server, tls, sld_grpc_listen(rt->cfg), &g->tls_creds, &g->tls_port, err,
                                   err_len) != SL_OK) {
        if (g->stats)
            sld_metrics_extra_set_rls(NULL);
        destroy(g);
        return SL_EIO;
    }
    grpc_server_start(g->server);
    for (int i = 0; i < REQUESTS_OUTSTANDING; i++)
        request_call(g);
    if (pthread_create(&g->thread, NULL, cq_thread, g) != 0) {
        snprintf(err, err_len, "grpc: cannot start its thread");
        sld_grpc_free(g);
        return SL_EIO;
    }
    g->thread_started = true;
    *out = g;
    return SL_OK;
}

void sld_grpc_free(sld_grpc_t *g) {
    if (g == NULL)
        return;
    if (g->stats) /* the workers, and so the scrapes, have stopped */
        sld_metrics_extra_set_rls(NULL);
    ask_shutdown(g);
    if (!atomic_exchange(&g->cancelled, true))
        grpc_server_cancel_all_calls(g->server);
    if (g->thread_started) {
        /* the shutdown completes on the queue's thread, once every call is done */
        while (!atomic_load(&g->shutdown_done)) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    } else {
        /* no thread to see it: drain the queue here */
        while (!atomic_load(&g->shutdown_done)) {
            grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
            if (ev.type == GRPC_OP_COMPLETE && ev.tag == &g->shutdown_tag)
                atomic_store(&g->shutdown_done, true);
            else if (ev.type == GRPC_OP_COMPLETE)
                on_complete(ev.tag, ev.success != 0);
        }
    }
    destroy(g);
}
