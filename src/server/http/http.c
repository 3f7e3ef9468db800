/* http.c -- libh2o on the worker loops (see http.h).
 *
 * h2o parses and writes HTTP; one handler on "/" hands every request to
 * sld_http_handle() and puts its reply back. Connections are counted with
 * RESP's against max_connections (net/admission.h); over it, a connection
 * gets a bare 503 and is closed. Limits: a request target up to 8 KiB (414), a request line
 * and headers up to 64 KiB or max_request_bytes if less (431; past about
 * 400 KiB h2o itself closes the connection), a body up to
 * max_request_bytes (413); a request that takes longer than idle_timeout
 * (as it was at start) to arrive, or a keep-alive connection idle that
 * long, is closed. X-Forwarded-For lines are joined into one list, every
 * line of it: the head limit is the only bound, and a head past it is
 * refused (431), never read in part. Of several X-Real-IP lines the last
 * (the nearest proxy's) counts. A request whose framing is ambiguous
 * (http_framing.h) gets 400 and the connection is closed, so nothing after
 * it on the connection is read as a request.
 *
 * A client that does not read: h2o reads an HTTP/1 connection's next
 * request only once the reply to the last one is written, so at most one
 * reply waits per connection (HTTP/2: its streams' replies, up to
 * max_concurrent_streams); what h2o lacks is a bound in time, so a
 * connection whose client has not taken a byte of its replies for
 * write_timeout (tcp_stall.h) is reset (the front's tick).
 *
 * Stopping: no new connections, h2o stops keeping connections alive, and
 * connections waiting for a request close now (their timeouts run at 0; a
 * request already read is still answered, with "Connection: close"); a dup
 * of each socket
 * outlives h2o's close for a lingering close (linger.h), so a client still
 * sending sees its last reply and a clean end, not a reset.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>

#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/http/http_framing.h"
#include "server/http/http_wait.h"
#include "server/net/admission.h"
#include "server/net/linger.h"
#include "server/net/listener.h"
#include "server/base/log.h"
#include "server/net/tcp_stall.h"

#define FOREVER_MS (24u * 3600 * 1000)
#define MAX_URI_BYTES 8192   /* the request target, query included */
#define MAX_HEAD_BYTES 65536 /* request line and headers (or max_request_bytes if less) */

typedef struct sld_http_worker sld_http_worker_t; /* one per worker loop */

typedef struct http_conn {
    uv_tcp_t tcp;  /* first: h2o's close callback hands us the handle */
    sld_http_worker_t *w;
    struct http_conn *prev, *next;
    sld_tcp_stall_t stall; /* whether the client still takes its replies */
    bool aborted;          /* reset for a stalled write: counted once */
    int linger_fd;         /* while stopping: a dup kept to close without a reset; else -1 */
} http_conn_t;

struct sld_http {
    sld_daemon_t *d;
    h2o_globalconf_t config;
    h2o_hostconf_t *host;
};

typedef struct handler {
    h2o_handler_t super;
    sld_http_t *h;
} handler_t;

struct sld_http_worker {
    h2o_context_t ctx;  /* the handler finds its worker from req->conn->ctx */
    h2o_accept_ctx_t accept;
    sld_http_t *h;
    uint32_t index;
    uv_loop_t *loop;
    uv_tcp_t listener;
    http_conn_t *conns;
    sld_linger_t linger;     /* closed by h2o while stopping, until their clients close */
    sld_http_reply_t reply;  /* reused from request to request */
    bool listening;  /* the listener handle exists (and must be closed) */
    bool stopping;
    bool disposed;
};

/* ---- requests ---------------------------------------------------------------------------- */

typedef struct header_lookup {
    h2o_req_t *req;
} header_lookup_t;

static sld_span_t find_header(void *ctx, const char *name, size_t len) {
    h2o_req_t *req = ((header_lookup_t *)ctx)->req;
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0)
        return (sld_span_t){NULL, 0};
    h2o_iovec_t v = req->headers.entries[i].value;
    ssize_t next = h2o_find_header_by_str(&req->headers, name, len, i);
    if (next >= 0 && len == 9 && memcmp(name, "x-real-ip", 9) == 0) {
        /* One address per line: the last line is the nearest proxy's, the
         * first may be the client's own. */
        for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k))
            v = req->headers.entries[k].value;
        return (sld_span_t){v.base, v.len};
    }
    if (next < 0 || len != 15 || memcmp(name, "x-forwarded-for", 15) != 0)
        return (sld_span_t){v.base, v.len};
    /* Proxies may each add their own X-Forwarded-For line: one list, the
     * client's line first, so every line is read (the head limit bounds
     * them) -- any part left out would let the client choose the key. */
    size_t total = v.len;
    for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k))
        total += 2 + req->headers.entries[k].value.len;
    char *joined = h2o_mem_alloc_pool(&req->pool, total);
    memcpy(joined, v.base, v.len);
    size_t at = v.len;
    for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k)) {
        h2o_iovec_t more = req->headers.entries[k].value;
        memcpy(joined + at, ", ", 2);
        memcpy(joined + at + 2, more.base, more.len);
        at += 2 + more.len;
    }
    return (sld_span_t){joined, at};
}

/* The wire forms of sluiced's response headers: the lower-case names
 * HTTP/2 needs, h2o's token where it has one; nothing is looked up per
 * request. */
static const struct wire_header {
    const char *lower;
    size_t len;
    const h2o_token_t *token;
} wire[SLD_H_COUNT] = {
    [SLD_H_RATELIMIT_POLICY] = {"ratelimit-policy", 16, NULL},
    [SLD_H_RATELIMIT] = {"ratelimit", 9, NULL},
    [SLD_H_X_RATELIMIT_LIMIT] = {"x-ratelimit-limit", 17, NULL},
    [SLD_H_X_RATELIMIT_REMAINING] = {"x-ratelimit-remaining", 21, NULL},
    [SLD_H_X_RATELIMIT_RESET] = {"x-ratelimit-reset", 17, NULL},
    [SLD_H_RETRY_AFTER] = {"retry-after", 11, H2O_TOKEN_RETRY_AFTER},
    [SLD_H_ALLOW] = {"allow", 5, H2O_TOKEN_ALLOW},
    [SLD_H_WWW_AUTHENTICATE] = {"www-authenticate", 16, H2O_TOKEN_WWW_AUTHENTICATE},
};

static void add_header(h2o_req_t *req, const sld_http_header_t *h, const char *value) {
    h2o_iovec_t v = h2o_strdup(&req->pool, value, h->len);
    const struct wire_header *w = &wire[h->id];
    if (w->token)
        h2o_add_header(&req->pool, &req->res.headers, w->token, h->name, v.base, v.len);
    else
        h2o_add_header_by_str(&req->pool, &req->res.headers, w->lower, w->len, 0, h->name, v.base, v.len);
}

sld_span_t sld_http_request_header(void *req, const char *name, size_t len) {
    header_lookup_t lookup = {req};
    return find_header(&lookup, name, len);
}

static void respond(sld_daemon_t *d, uint32_t worker, h2o_req_t *req, const sld_http_reply_t *r) {
    if (d->metrics)
        sld_metrics_http(d->metrics, worker, r->status);
    sld_http_send_reply(req, r);
}

void sld_http_send_reply(h2o_req_t *req, const sld_http_reply_t *r) {
    req->res.status = r->status;
    req->res.reason = sld_http_reason(r->status);
    if (r->content_type)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, "Content-Type", r->content_type,
                       strlen(r->content_type));
    for (size_t i = 0; i < r->nheaders; i++)
        add_header(req, &r->headers[i], r->values.data + r->headers[i].off);
    req->res.content_length = r->body.len;
    h2o_send_inline(req, r->body.len ? r->body.data : "", r->body.len);
}

/* A request whose answer comes from the store later. */
typedef struct waiting {
    h2o_req_t *req;                /* NULL once the request is gone */
    sld_http_pending_t *pending;   /* NULL once answered */
    sld_daemon_t *d;
    uint32_t worker;
} waiting_t;

static void on_answer(void *arg, const sld_http_reply_t *reply) {
    waiting_t *wt = arg;
    wt->pending = NULL;
    if (wt->req)
        respond(wt->d, wt->worker, wt->req, reply);
}

static void on_waiting_disposed(void *arg) {
    waiting_t *wt = arg;
    wt->req = NULL;
    if (wt->pending) /* the answer will find nobody */
        sld_http_pending_wait(wt->pending, NULL, NULL);
}

/* Whether an HTTP/1 request's length could be read two ways (see
 * http_framing.h). h2o keeps neither Content-Length nor Transfer-Encoding
 * in req->headers, so the head is read again where h2o parsed it: at the
 * start of the connection's input, which h2o consumes only once the
 * response is sent (a chunked body is decoded in place after the head). */
static const char *framing_error(h2o_req_t *req) {
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return NULL; /* HTTP/2 frames each message itself */
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || sock->input == NULL)
        return NULL;
    return sld_http_framing_error(sock->input->bytes, sock->input->size, req->version < 0x101);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
    sld_http_t *h = ((handler_t *)self)->h;
    sld_http_worker_t *w = H2O_STRUCT_FROM_MEMBER(sld_http_worker_t, ctx, req->conn->ctx);
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof peer);
    req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    size_t path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    header_lookup_t lookup = {req};
    sld_http_request_t in = {
        .method = {req->method.base, req->method.len},
        .path = {req->path.base, path_len},
        .query = req->query_at != SIZE_MAX
                     ? (sld_span_t){req->path.base + req->query_at + 1, req->path.len - req->query_at - 1}
                     : (sld_span_t){NULL, 0},
        .body = {req->entity.base, req->entity.base ? req->entity.len : 0},
        .peer = (const struct sockaddr *)&peer,
        .header = find_header,
        .header_ctx = &lookup,
    };
    sld_http_reply_t *r = &w->reply;
    size_t head = req->path.len;
    for (size_t i = 0; i < req->headers.size; i++)
        head += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    size_t max_head = sld_runtime(h->d)->cfg->max_request_bytes;
    if (max_head > MAX_HEAD_BYTES)
        max_head = MAX_HEAD_BYTES;
    const char *ambiguous = framing_error(req);
    if (ambiguous != NULL || req->path.len > MAX_URI_BYTES || head > max_head) {
        /* h2o buffers up to about 400 KiB of head: less is allowed here. */
        sld_http_reply_reset(r);
        if (ambiguous != NULL)
            sld_http_error(r, 400, "bad_request", NULL, "ambiguous request framing: %s", ambiguous);
        else if (req->path.len > MAX_URI_BYTES)
            sld_http_error(r, 414, "uri_too_long", NULL, "the request target is longer than %d bytes",
                           MAX_URI_BYTES);
        else
            sld_http_error(r, 431, "headers_too_large", NULL,
                           "the request line and headers take more than %zu bytes", max_head);
        req->http1_is_persistent = 0;
    } else {
        sld_http_pending_t *later = NULL;
        sld_http_handle_async(h->d, w->index, &in, r, &later);
        if (later) {
            /* The request waits for the store. Its pool outlives it only as
             * long as the request does: if the client goes, the holder's
             * dispose tells the pending answer nobody wants it. */
            waiting_t *wt = h2o_mem_alloc_shared(&req->pool, sizeof *wt, on_waiting_disposed);
            wt->req = req;
            wt->pending = later;
            wt->worker = w->index;
            wt->d = h->d;
            sld_http_pending_wait(later, on_answer, wt);
            return 0;
        }
    }
    respond(h->d, w->index, req, r);
    return 0;
}

/* ---- connections --------------------------------------------------------------------------- */

static void unlink_conn(http_conn_t *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (c->w->conns == c)
        c->w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void on_conn_closed(uv_handle_t *handle) {
    http_conn_t *c = (http_conn_t *)handle;
    unlink_conn(c);
    sld_linger_add(&c->w->linger, c->linger_fd); /* -1: nothing */
    sld_conn_release(c->w->h->d);
    free(c);
}

/* Resets every connection whose client has not taken a byte of its replies
 * for write_timeout -- a client that does not read -- and moves lingering
 * closes on. */
static void worker_tick(void *arg, uint64_t now) {
    sld_http_worker_t *w = arg;
    sld_daemon_t *d = w->h->d;
    sl_usec_t timeout = sld_runtime(d)->cfg->write_timeout;
    uint64_t reaped = 0;
    sld_linger_poll(&w->linger);
    for (http_conn_t *c = w->conns; c; c = c->next) {
        uv_os_fd_t fd;
        if (c->aborted || uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0 ||
            !sld_tcp_stalled(&c->stall, fd, uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp), now,
                             timeout))
            continue;
        /* h2o owns the connection: a socket shut both ways fails its
         * pending write, and h2o closes it; SO_LINGER 0 makes that close a
         * reset, so the kernel drops the unsent bytes at once. */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        shutdown(fd, SHUT_RDWR);
        c->aborted = true;
        reaped++;
    }
    atomic_fetch_add(&d->stats.idle_closed, reaped);
}

/* What a connection over max_connections is told, on every HTTP listener. */
const char sld_http_busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 24\r\nConnection: close\r\n\r\nmax connections reached\n";

static void on_accept(uv_stream_t *listener, int status) {
    sld_http_worker_t *w = listener->data;
    sld_daemon_t *d = w->h->d;
    if (status != 0 || w->stopping)
        return;
    http_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->w = w;
    if (!sld_conn_accept(d, w->loop, listener, &c->tcp, sld_http_busy, strlen(sld_http_busy)))
        return;
    uv_tcp_nodelay(&c->tcp, 1);
    c->linger_fd = -1;
    c->stall.since = uv_now(w->loop);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    h2o_accept(&w->accept, h2o_uv_socket_create((uv_stream_t *)&c->tcp, on_conn_closed));
}

/* ---- set-up and stop ------------------------------------------------------------------------- */

int sld_http_new(sld_daemon_t *d, sld_http_t **out) {
    sld_http_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return SL_ENOMEM;
    h->d = d;
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    h2o_config_init(&h->config);
    h->config.server_name = h2o_iovec_init(H2O_STRLIT("sluiced"));
    h->config.max_request_entity_size = cfg->max_request_bytes;
    uint64_t idle_ms = cfg->idle_timeout > 0 ? (uint64_t)(cfg->idle_timeout / 1000) : FOREVER_MS;
    h->config.http1.req_timeout = idle_ms > 0 ? idle_ms : 1;
    h->config.http2.idle_timeout = h->config.http1.req_timeout;
    h->host = h2o_config_register_host(&h->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(h->host, "/", 0);
    handler_t *handler = (handler_t *)h2o_create_handler(path, sizeof *handler);
    handler->super.on_req = on_req;
    handler->h = h;
    *out = h;
    return SL_OK;
}

void sld_http_free(sld_http_t *h) {
    if (h == NULL)
        return;
    h2o_config_dispose(&h->config);
    free(h);
}

/* ---- the front's hooks (net/front.h) ------------------------------------------------------ */

static int worker_start(void *ctx, uv_loop_t *loop, int fd, uint32_t index, void **out, char *err,
                        size_t err_len) {
    sld_http_t *h = ctx;
    sld_http_worker_t *w = calloc(1, sizeof *w);
    if (w == NULL) {
        close(fd);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    w->h = h;
    w->index = index;
    w->loop = loop;
    h2o_context_init(&w->ctx, loop, &h->config);
    w->accept.ctx = &w->ctx;
    w->accept.hosts = h->config.hosts;
    int rc = sld_listener_serve(loop, &w->listener, fd, w, on_accept, &w->listening);
    if (rc != 0) {
        snprintf(err, err_len, "cannot serve HTTP: %s", uv_strerror(rc));
        *out = w; /* the caller stops and disposes it like any other */
        return SL_EIO;
    }
    *out = w;
    return SL_OK;
}

static void worker_begin_stop(void *arg) {
    sld_http_worker_t *w = arg;
    if (w->stopping)
        return;
    w->stopping = true;
    sld_listener_close(&w->listener, w->listening);
    /* Replies say "Connection: close" from now on. Not through
     * h2o_context_request_shutdown(): it arms an HTTP/2 goaway timer that
     * keeps the context from being disposed for a second, and every
     * connection is about to be closed anyway. */
    w->ctx.shutdown_requested = 1;
    sld_http_wait_release(w->index); /* held answers (wait=) must not hold the stop */
    for (http_conn_t *c = w->conns; c; c = c->next) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
            /* h2o closes on its last reply, maybe with the client's next
             * requests unread, which would reset the connection and could
             * lose that reply: the dup keeps the socket for a lingering
             * close once h2o is done with it (on_conn_closed). */
            c->linger_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        }
    }
    /* Connections waiting for a request (idle keep-alive, HTTP/2 idle)
     * close now: their timeouts become 0 and are run. Not by shutting the
     * sockets' reading side, which would make the kernel answer a client
     * still sending after our FIN with a reset. */
    w->ctx.http1.req_timeout.timeout = 0;
    w->ctx.http2.idle_timeout.timeout = 0;
    h2o_timeout_run(w->loop, &w->ctx.http1.req_timeout, uv_now(w->loop));
    h2o_timeout_run(w->loop, &w->ctx.http2.idle_timeout, uv_now(w->loop));
}

static void worker_force_close(void *arg) {
    sld_http_worker_t *w = arg;
    sld_linger_close_all(&w->linger);
    for (http_conn_t *c = w->conns; c; c = c->next) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
    }
}

static bool worker_idle(void *arg) {
    const sld_http_worker_t *w = arg;
    return w->conns == NULL && sld_linger_empty(&w->linger);
}

static void worker_dispose(void *arg) {
    sld_http_worker_t *w = arg;
    if (w->disposed)
        return;
    w->disposed = true;
    sld_listener_close(&w->listener, w->listening);
    h2o_context_dispose(&w->ctx);
    sld_linger_close_all(&w->linger);
    sld_http_reply_free(&w->reply);
}

static void worker_free(void *arg) { free(arg); }

const sld_front_ops_t sld_http_front_ops = {
    .name = "http",
    .start = worker_start,
    .begin_stop = worker_begin_stop,
    .tick = worker_tick,
    .force_close = worker_force_close,
    .idle = worker_idle,
    .dispose = worker_dispose,
    .free = worker_free,
};
