/* http.c -- libh2o on the worker loops (see http.h).
 *
 * h2o parses and writes HTTP; one handler on "/" hands every request to
 * sld_http_handle() and puts its reply back. Limits: a request target up
 * to 8 KiB (414), a request line
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
 * Connections, their write timeout and the stop are the HTTP layer every
 * listener shares (http_server.h); headers are read as http_request.h
 * reads them.
 */
#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "server/http/http.h"
#include "server/http/http_api.h"
#include "server/http/http_framing.h"
#include "server/http/http_request.h"
#include "server/http/http_server.h"
#include "server/http/http_wait.h"
#include "server/net/peer_gone.h"

#define MAX_URI_BYTES 8192   /* the request target, query included */
#define MAX_HEAD_BYTES 65536 /* request line and headers (or max_request_bytes if less) */

typedef struct sld_http_worker sld_http_worker_t; /* one per worker loop */

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
    sld_http_server_t server; /* first: the shared hooks take the worker as its server */
    sld_http_t *h;
    uint32_t index;
    sld_http_reply_t reply;   /* reused from request to request */
};

/* ---- requests ---------------------------------------------------------------------------- */

static void respond(sld_daemon_t *d, uint32_t worker, h2o_req_t *req, const sld_http_reply_t *r) {
    if (d->metrics)
        sld_metrics_http(d->metrics, worker, r->status);
    sld_http_send_reply(req, r);
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

static bool client_gone(void *req) { return sld_peer_gone(req); }

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
    sld_http_t *h = ((handler_t *)self)->h;
    sld_http_worker_t *w = H2O_STRUCT_FROM_MEMBER(sld_http_worker_t, server.ctx, req->conn->ctx);
    struct sockaddr_storage peer;
    memset(&peer, 0, sizeof peer);
    req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer);
    size_t path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    sld_http_request_t in = {
        .method = {req->method.base, req->method.len},
        .path = {req->path.base, path_len},
        .query = req->query_at != SIZE_MAX
                     ? (sld_span_t){req->path.base + req->query_at + 1, req->path.len - req->query_at - 1}
                     : (sld_span_t){NULL, 0},
        .body = {req->entity.base, req->entity.base ? req->entity.len : 0},
        .peer = (const struct sockaddr *)&peer,
        .header = sld_http_request_header,
        .header_ctx = req,
        .gone = client_gone,
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

/* ---- set-up ------------------------------------------------------------------------------- */

int sld_http_new(sld_daemon_t *d, sld_http_t **out) {
    sld_http_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return SL_ENOMEM;
    h->d = d;
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    sld_http_server_config(&h->config, cfg);
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

static int worker_start(void *ctx, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index, void **out,
                        char *err, size_t err_len) {
    sld_http_t *h = ctx;
    sld_http_worker_t *w = sld_front_worker_new(sizeof *w, fd, err, err_len);
    if (w == NULL)
        return SL_ENOMEM;
    w->h = h;
    w->index = index;
    *out = w; /* on failure the caller stops and disposes it like any other */
    return sld_http_server_start(&w->server, h->d, loop, &h->config, fd, spread, index, "HTTP", err, err_len);
}

/* Answers held by wait= are released (503) first: they must not hold the stop. */
static void worker_begin_stop(void *arg) {
    sld_http_worker_t *w = arg;
    sld_http_wait_release(w->index);
    sld_http_server_begin_stop(w);
}

static void worker_dispose(void *arg) {
    sld_http_worker_t *w = arg;
    sld_http_server_dispose(&w->server);
    sld_http_reply_free(&w->reply);
}

static void worker_free(void *arg) { free(arg); }

const sld_front_ops_t sld_http_front_ops = {
    .name = "http",
    .start = worker_start,
    .begin_stop = worker_begin_stop,
    .tick = sld_http_server_tick,
    .force_close = sld_http_server_force_close,
    .idle = sld_http_server_idle,
    .dispose = worker_dispose,
    .free = worker_free,
};
