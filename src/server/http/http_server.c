/* http_server.c -- libh2o's listeners, connections and stop on the worker
 * loops, for every HTTP front (see http_server.h).
 *
 * A client that does not read: h2o reads an HTTP/1 connection's next
 * request only once the reply to the last one is written, so at most one
 * reply waits per connection (HTTP/2: its streams' replies, up to
 * max_concurrent_streams; the gateway: the upstream's response, which h2o
 * streams); what h2o lacks is a bound in time, so a connection whose
 * client has not taken a byte of its replies for write_timeout
 * (tcp_stall.h) is reset (the tick).
 *
 * Stopping: no new connections, h2o stops keeping connections alive, and
 * connections waiting for a request close now (their timeouts run at 0; a
 * request already read is still answered, with "Connection: close"); a dup
 * of each socket outlives h2o's close for a lingering close (linger.h), so
 * a client still sending sees its last reply and a clean end, not a reset.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http/http_server.h"
#include "server/net/admission.h"
#include "server/net/listener.h"
#include "server/net/tcp_stall.h"

#define FOREVER_MS (24u * 3600 * 1000)

struct sld_http_conn {
    uv_tcp_t tcp;  /* first: h2o's close callback hands us the handle */
    sld_http_server_t *s;
    sld_http_conn_t *prev, *next;
    sld_tcp_stall_t stall; /* whether the client still takes its replies */
    bool aborted;          /* reset for a stalled write: counted once */
    int linger_fd;         /* while stopping: a dup kept to close without a reset; else -1 */
};

/* What a connection over max_connections is told, on every HTTP listener. */
static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                           "Content-Length: 24\r\nConnection: close\r\n\r\nmax connections reached\n";

void sld_http_server_config(h2o_globalconf_t *config, const sld_config_t *cfg) {
    h2o_config_init(config);
    /* No name for libh2o to write: its HTTP/1 head writes one with a
     * sprintf of its own on every response, about 700 instructions
     * (bench/README.md). sld_http_server_name() adds it as any header. */
    config->server_name = h2o_iovec_init(H2O_STRLIT(""));
    config->max_request_entity_size = cfg->max_request_bytes;
    uint64_t idle_ms = cfg->idle_timeout > 0 ? (uint64_t)(cfg->idle_timeout / 1000) : FOREVER_MS;
    config->http1.req_timeout = idle_ms > 0 ? idle_ms : 1;
    config->http2.idle_timeout = config->http1.req_timeout;
}

void sld_http_server_name(h2o_req_t *req) {
    if (h2o_find_header(&req->res.headers, H2O_TOKEN_SERVER, -1) == -1)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("sluiced"));
}

/* ---- connections ---------------------------------------------------------------------------- */

static void unlink_conn(sld_http_conn_t *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (c->s->conns == c)
        c->s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void on_conn_closed(uv_handle_t *handle) {
    sld_http_conn_t *c = (sld_http_conn_t *)handle;
    unlink_conn(c);
    sld_linger_add(&c->s->linger, c->linger_fd); /* -1: nothing */
    sld_conn_release(c->s->d);
    free(c);
}

static void on_accept(uv_stream_t *listener, int status) {
    sld_http_server_t *s = listener->data;
    if (status != 0 || s->stopping)
        return;
    sld_http_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->s = s;
    if (!sld_conn_accept(s->d, s->loop, listener, &c->tcp, busy, sizeof busy - 1))
        return;
    uv_tcp_nodelay(&c->tcp, 1);
    c->linger_fd = -1;
    c->stall.since = uv_now(s->loop);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    h2o_accept(&s->accept, h2o_uv_socket_create((uv_stream_t *)&c->tcp, on_conn_closed));
}

/* ---- a worker's listener ------------------------------------------------------------------- */

int sld_http_server_start(sld_http_server_t *s, sld_daemon_t *d, uv_loop_t *loop, h2o_globalconf_t *config,
                          int fd, const char *what, char *err, size_t err_len) {
    s->d = d;
    s->loop = loop;
    h2o_context_init(&s->ctx, loop, config);
    s->serving = true;
    s->accept.ctx = &s->ctx;
    s->accept.hosts = config->hosts;
    int rc = sld_listener_serve(loop, &s->listener, fd, s, on_accept, &s->listening);
    if (rc != 0) {
        snprintf(err, err_len, "cannot serve %s: %s", what, uv_strerror(rc));
        return SL_EIO;
    }
    return SL_OK;
}

void sld_http_server_begin_stop(void *worker) {
    sld_http_server_t *s = worker;
    if (s->stopping)
        return;
    s->stopping = true;
    sld_listener_close(&s->listener, s->listening);
    if (!s->serving)
        return;
    /* Replies say "Connection: close" from now on. Not through
     * h2o_context_request_shutdown(): it arms an HTTP/2 goaway timer that
     * keeps the context from being disposed for a second, and every
     * connection is about to be closed anyway. */
    s->ctx.shutdown_requested = 1;
    for (sld_http_conn_t *c = s->conns; c; c = c->next) {
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
    s->ctx.http1.req_timeout.timeout = 0;
    s->ctx.http2.idle_timeout.timeout = 0;
    h2o_timeout_run(s->loop, &s->ctx.http1.req_timeout, uv_now(s->loop));
    h2o_timeout_run(s->loop, &s->ctx.http2.idle_timeout, uv_now(s->loop));
}

/* Resets every connection whose client has not taken a byte of its replies
 * for write_timeout -- a client that does not read -- and moves lingering
 * closes on. */
void sld_http_server_tick(void *worker, uint64_t now) {
    sld_http_server_t *s = worker;
    if (!s->serving)
        return; /* a start that failed early: nothing to watch */
    sl_usec_t timeout = sld_runtime(s->d)->cfg->write_timeout;
    uint64_t reaped = 0;
    sld_linger_poll(&s->linger);
    for (sld_http_conn_t *c = s->conns; c; c = c->next) {
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
    atomic_fetch_add(&s->d->stats.idle_closed, reaped);
}

void sld_http_server_force_close(void *worker) {
    sld_http_server_t *s = worker;
    sld_linger_close_all(&s->linger);
    for (sld_http_conn_t *c = s->conns; c; c = c->next) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
    }
}

bool sld_http_server_idle(void *worker) {
    const sld_http_server_t *s = worker;
    return s->conns == NULL && sld_linger_empty(&s->linger);
}

void sld_http_server_dispose(sld_http_server_t *s) {
    if (s->disposed)
        return;
    s->disposed = true;
    sld_listener_close(&s->listener, s->listening);
    if (s->serving)
        h2o_context_dispose(&s->ctx);
    sld_linger_close_all(&s->linger);
}

/* ---- replies ------------------------------------------------------------------------------- */

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

void sld_http_send_reply(h2o_req_t *req, const sld_http_reply_t *r) {
    req->res.status = r->status;
    req->res.reason = sld_http_reason(r->status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, "Server", H2O_STRLIT("sluiced"));
    if (r->content_type)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, "Content-Type", r->content_type,
                       strlen(r->content_type));
    for (size_t i = 0; i < r->nheaders; i++)
        add_header(req, &r->headers[i], r->values.data + r->headers[i].off);
    req->res.content_length = r->body.len;
    h2o_send_inline(req, r->body.len ? r->body.data : "", r->body.len);
}
