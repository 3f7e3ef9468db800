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

/* "Server: sluiced" (not through h2o_add_header(), which copies "Server" each time) */
static const h2o_header_t server_field = {(h2o_iovec_t *)&H2O_TOKEN_SERVER->buf, "Server", {(char *)"sluiced", 7}};

void sld_http_server_name(h2o_req_t *req) {
    h2o_headers_t *hs = &req->res.headers;
    if (h2o_find_header(hs, H2O_TOKEN_SERVER, -1) != -1)
        return;
    h2o_vector_reserve(&req->pool, hs, hs->size + 1);
    hs->entries[hs->size++] = server_field;
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
    sld_conn_closed(c->s->d, &c->s->acceptor, true);
    free(c);
}

static void on_accept(void *data, sld_incoming_t *in) {
    sld_http_server_t *s = data;
    if (s->stopping)
        return;
    sld_http_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->s = s;
    if (!sld_conn_accept(s->d, in, &c->tcp, busy, sizeof busy - 1))
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
                          int fd, sld_spread_t *spread, uint32_t index, const char *what, char *err,
                          size_t err_len) {
    s->d = d;
    s->loop = loop;
    h2o_context_init(&s->ctx, loop, config);
    s->serving = true;
    s->accept.ctx = &s->ctx;
    s->accept.hosts = config->hosts;
    int rc = sld_acceptor_serve(&s->acceptor, loop, fd, spread, index, s, on_accept);
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
    sld_acceptor_close(&s->acceptor);
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
    sld_acceptor_close(&s->acceptor);
    if (s->serving)
        h2o_context_dispose(&s->ctx);
    sld_linger_close_all(&s->linger);
}

/* ---- replies ------------------------------------------------------------------------------- */

/* The wire forms of sluiced's response headers: the name as libh2o's
 * header lists hold it (h2o's token where it has one, else the lower-case
 * name HTTP/2 needs) beside the one HTTP/1 writes (sld_http_header_names).
 * sld_http_send_reply() puts a reply's headers into the list itself: one
 * reservation, one copy of all the values, names never copied. Through
 * h2o_add_header() each header cost a copy of its value, a copy of its
 * name (libh2o duplicates orig_name) and a growth of the list: about 2,000
 * of a /v1/check's 12,500 instructions (bench/README.md). */
#define WIRE(lit) {(char *)(lit), sizeof(lit) - 1}
static const h2o_iovec_t lower[SLD_H_COUNT] = {
    [SLD_H_RATELIMIT_POLICY] = WIRE("ratelimit-policy"),
    [SLD_H_RATELIMIT] = WIRE("ratelimit"),
    [SLD_H_X_RATELIMIT_LIMIT] = WIRE("x-ratelimit-limit"),
    [SLD_H_X_RATELIMIT_REMAINING] = WIRE("x-ratelimit-remaining"),
    [SLD_H_X_RATELIMIT_RESET] = WIRE("x-ratelimit-reset"),
};

static h2o_iovec_t *wire_name(sld_http_header_id_t id) {
    switch (id) {
    case SLD_H_RETRY_AFTER:
        return (h2o_iovec_t *)&H2O_TOKEN_RETRY_AFTER->buf;
    case SLD_H_ALLOW:
        return (h2o_iovec_t *)&H2O_TOKEN_ALLOW->buf;
    case SLD_H_WWW_AUTHENTICATE:
        return (h2o_iovec_t *)&H2O_TOKEN_WWW_AUTHENTICATE->buf;
    default:
        return (h2o_iovec_t *)&lower[id]; /* libh2o only reads a header's name */
    }
}

void sld_http_send_reply(h2o_req_t *req, const sld_http_reply_t *r) {
    req->res.status = r->status;
    req->res.reason = sld_http_reason(r->status);
    h2o_headers_t *hs = &req->res.headers;
    h2o_vector_reserve(&req->pool, hs, hs->size + 2 + r->nheaders);
    hs->entries[hs->size++] = server_field;
    if (r->content_type)
        hs->entries[hs->size++] = (h2o_header_t){(h2o_iovec_t *)&H2O_TOKEN_CONTENT_TYPE->buf, "Content-Type",
                                                 {(char *)r->content_type, strlen(r->content_type)}};
    /* the values in the request's pool: r is the worker's, reused at the
     * next request, and HTTP/2 may write the head later */
    char *values = NULL;
    if (r->nheaders > 0 && (values = h2o_mem_alloc_pool(&req->pool, r->values.len)) != NULL)
        memcpy(values, r->values.data, r->values.len);
    for (size_t i = 0; values != NULL && i < r->nheaders; i++) {
        const sld_http_header_t *h = &r->headers[i];
        hs->entries[hs->size++] = (h2o_header_t){wire_name(h->id), h->name, {values + h->off, h->len}};
    }
    req->res.content_length = r->body.len;
    h2o_send_inline(req, r->body.len ? r->body.data : "", r->body.len);
}
