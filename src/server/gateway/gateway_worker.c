/* gateway_worker.c -- the gateway on each worker loop (see gateway.h): its
 * h2o configuration (one handler on "/", after it one libh2o reverse proxy
 * per route, and a filter that rewrites libh2o's own 502 for an upstream
 * failure into a clear 502 or 504), the shared part, and the front's hooks.
 *
 * Per worker, not shared, because the proxies' keep-alive socket pools run
 * a timer on the loop of the first context that uses them and must be
 * disposed while that loop still runs.
 *
 * Not here: serving a request (gateway.c, gateway_wait.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <h2o.h>

#include "server/base/log.h"
#include "server/config/section.h"
#include "server/gateway/gateway.h"
#include "server/gateway/gateway_access_log.h"
#include "server/gateway/gateway_private.h"
#include "server/gateway/gateway_route.h"
#include "server/gateway/gateway_spool.h"

#define KEEPALIVE_MS 2000 /* an idle upstream connection stays in the pool this long */

/* ---- upstream failures ------------------------------------------------------------------------- */

typedef struct error_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
    bool sent;
} error_ostream_t;

static void error_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n,
                          h2o_send_state_t state) {
    error_ostream_t *o = (error_ostream_t *)self;
    (void)bufs;
    (void)n;
    if (!o->sent) {
        o->sent = true;
        h2o_ostream_send_next(&o->super, req, &o->body, 1, state);
    } else {
        h2o_ostream_send_next(&o->super, req, NULL, 0, state);
    }
}

typedef struct gw_filter {
    h2o_filter_t super;
    gw_worker_t *w;
} gw_filter_t;

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot) {
    const h2o_iovec_t *why = req->res.status == 502 ? sld_gw_proxy_error(req) : NULL;
    if (why != NULL) {
        bool timeout = memmem(why->base, why->len, "timeout", 7) != NULL;
        gw_worker_t *w = ((gw_filter_t *)self)->w;
        size_t index;
        const sld_gw_route_t *route = sld_gw_forwarded_route(req, &index) ? &w->gw->g->routes[index] : NULL;
        if (route != NULL)
            sld_gw_count(w->gw->conc, index, timeout ? SLD_GW_TIMED_OUT : SLD_GW_BAD_GATEWAY);
        /* an https upstream's handshake: libh2o says what OpenSSL found
         * ("self-signed certificate", "certificate name mismatch", ...) */
        bool tls = !timeout && route != NULL && route->tls != NULL &&
                   (memmem(why->base, why->len, "certificate", 11) != NULL ||
                    memmem(why->base, why->len, "ssl", 3) != NULL);
        char *body = h2o_mem_alloc_pool(&req->pool, 256);
        int len = snprintf(body, 256,
                           timeout ? "gateway timeout: the upstream did not answer in time (%.*s)\n"
                           : tls   ? "bad gateway: TLS with the upstream failed (%.*s)\n"
                                   : "bad gateway: the upstream cannot be reached (%.*s)\n",
                           (int)(why->len > 100 ? 100 : why->len), why->base);
        req->res.status = timeout ? 504 : 502;
        req->res.reason = timeout ? "Gateway Timeout" : "Bad Gateway";
        req->res.content_length = (size_t)len;
        error_ostream_t *o = (error_ostream_t *)h2o_add_ostream(req, sizeof *o, slot);
        o->super.do_send = error_do_send;
        o->body = h2o_iovec_init(body, (size_t)len);
        o->sent = false;
        slot = &o->super.next;
    }
    sld_http_server_name(req);
    h2o_setup_next_ostream(req, slot);
}

/* ---- set-up ------------------------------------------------------------------------------------- */

int sld_gateway_new(sld_daemon_t *d, sld_gateway_t **out) {
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    sld_config_part_t *part = sld_config_section_hold(cfg, sld_gateway_section.name);
    if (part == NULL)
        return SL_ENOENT;
    sld_gateway_t *gw = calloc(1, sizeof *gw);
    if (gw == NULL) {
        sld_config_part_release(part);
        return SL_ENOMEM;
    }
    gw->d = d;
    gw->part = part;
    gw->g = sld_config_part_value(part);
    /* before any worker's listener: its buffers are the process's */
    sld_debug("gateway: buffers past %u MB go to temporary files in %s", SLD_GW_SPOOL_THRESHOLD >> 20,
              sld_gw_spool_setup());
    if (sld_gw_conc_new(gw->g, &gw->conc) != SL_OK) {
        sld_gateway_free(gw);
        return SL_ENOMEM;
    }
    if ((gw->listeners = calloc(gw->g->nlistens, sizeof *gw->listeners)) == NULL) {
        sld_gateway_free(gw);
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < gw->g->nlistens; i++)
        gw->listeners[i] = (gw_listener_t){.gw = gw, .index = i};
    gw->metrics = (sld_metrics_extra_t){.write = sld_gw_conc_write_metrics, .ctx = gw->conc};
    sld_metrics_extra_set(&gw->metrics);
    *out = gw;
    return SL_OK;
}

void sld_gateway_free(sld_gateway_t *gw) {
    if (gw == NULL)
        return;
    if (gw->conc != NULL)
        sld_metrics_extra_set(NULL);
    sld_gw_conc_free(gw->conc);
    sld_config_part_release(gw->part);
    free(gw->listeners);
    free(gw);
}

const char *sld_gateway_listen(const sld_gateway_t *gw) { return gw->g->listen; }

void sld_gateway_reloaded(const sld_gateway_t *gw) {
    const sld_gw_config_t *now = sld_config_section(sld_runtime(gw->d)->cfg, sld_gateway_section.name);
    if (now == NULL || !sld_gw_config_equal(gw->g, now))
        sld_warn("gateway: the file's gateway: section changed: it applies at the next restart; the "
                 "gateway keeps its routes (the new policies apply)");
}

size_t sld_gateway_nlistens(const sld_gateway_t *gw) { return gw->g->nlistens; }

sld_front_t sld_gateway_front(sld_gateway_t *gw, size_t i, int *port) {
    return (sld_front_t){&sld_gateway_front_ops, &gw->listeners[i], gw->g->listens[i].addr, port};
}

static int configure(gw_worker_t *w, char *err, size_t err_len) {
    const sld_gw_config_t *g = w->gw->g;
    const sld_config_t *cfg = sld_runtime(w->gw->d)->cfg;
    size_t total = 0;
    for (size_t i = 0; i < g->nroutes; i++)
        total += g->routes[i].nupstreams;
    w->proxies = calloc(total ? total : 1, sizeof *w->proxies);
    w->upstreams = calloc(g->nroutes ? g->nroutes : 1, sizeof *w->upstreams);
    if (w->proxies == NULL || w->upstreams == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    sld_http_server_config(&w->config, cfg);
    w->has_config = true;
    w->config.proxy.io_timeout = (uint64_t)(g->timeout / 1000);
    w->config.proxy.emit_x_forwarded_headers = 1;
    h2o_hostconf_t *host = h2o_config_register_host(&w->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    path->error_log.emit_request_errors = 0; /* answered with a clear body instead */
    gw_handler_t *handler = (gw_handler_t *)h2o_create_handler(path, sizeof *handler);
    handler->super.on_req = sld__gw_on_req;
    handler->w = w;
    for (size_t i = 0, at = 0; i < g->nroutes; i++) {
        const sld_gw_route_t *route = &g->routes[i];
        w->upstreams[i] = (gw_upstreams_t){.proxies = &w->proxies[at], .n = route->nupstreams};
        for (size_t k = 0; k < route->nupstreams; k++, at++) {
            const char *upstream = route->upstreams[k];
            h2o_url_t url;
            if (h2o_url_parse(upstream, strlen(upstream), &url) != 0) {
                snprintf(err, err_len, "gateway: route %s: bad upstream %s", route->name, upstream);
                return SL_EINVAL;
            }
            /* https: the route's context (libh2o holds a reference of its own) */
            h2o_proxy_config_vars_t vars = {.io_timeout = (uint64_t)(route->timeout / 1000),
                                            .keepalive_timeout = KEEPALIVE_MS,
                                            .ssl_ctx = url.scheme == &H2O_URL_SCHEME_HTTPS ? route->tls : NULL};
            h2o_proxy_register_reverse_proxy(path, &url, &vars);
            w->proxies[at] = path->handlers.entries[path->handlers.size - 1];
        }
    }
    gw_filter_t *filter = (gw_filter_t *)h2o_create_filter(path, sizeof *filter);
    filter->super.on_setup_ostream = on_setup_ostream;
    filter->w = w;
    return sld_gw_access_log_register(path, g, &w->gw->d->stats, err, err_len);
}

#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
/* libh2o 2.2's proxy handler copies its upstream URL and frees the host and
 * path of the copy but not its authority (lib/handler/proxy.c,
 * on_handler_dispose): freed here, through the handler's leading fields as
 * that file declares them. */
struct rp_handler_head {
    h2o_handler_t super;
    h2o_url_t upstream;
};

static void free_upstream_authority(h2o_handler_t *proxy) {
    struct rp_handler_head *rp = (struct rp_handler_head *)proxy;
    free(rp->upstream.authority.base);
    rp->upstream.authority = h2o_iovec_init(NULL, 0);
}
#else
static void free_upstream_authority(h2o_handler_t *proxy) { (void)proxy; }
#endif

/* ---- the front's hooks (net/front.h) ------------------------------------------------------------ */

static int worker_start(void *ctx, uv_loop_t *loop, int fd, uint32_t index, void **out, char *err,
                        size_t err_len) {
    const gw_listener_t *l = ctx;
    sld_gateway_t *gw = l->gw;
    gw_worker_t *w = sld_front_worker_new(sizeof *w, fd, err, err_len);
    if (w == NULL)
        return SL_ENOMEM;
    w->gw = gw;
    w->index = index;
    *out = w; /* on failure the caller stops and disposes it like any other */
    uv_timer_init(loop, &w->wait_timer);
    w->wait_timer.data = w;
    w->timer_open = true;
    int rc = configure(w, err, err_len);
    if (rc != SL_OK) {
        close(fd);
        return rc;
    }
    rc = sld_http_server_start(&w->server, gw->d, loop, &w->config, fd, "the gateway", err, err_len);
    /* TLS: h2o_accept() does the handshake, and offers HTTP/2 by ALPN */
    w->server.accept.ssl_ctx = gw->g->listens[l->index].tls;
    return rc;
}

static void worker_dispose(void *arg) {
    gw_worker_t *w = arg;
    if (w->server.disposed)
        return;
    w->closing = true; /* the requests that end now wake no waiter */
    sld_http_server_dispose(&w->server);
    if (w->timer_open)
        uv_close((uv_handle_t *)&w->wait_timer, NULL);
    w->timer_open = false;
    if (w->has_config) {
        for (size_t i = 0; i < w->gw->g->nroutes; i++)
            for (size_t k = 0; k < w->upstreams[i].n; k++)
                if (w->upstreams[i].proxies[k])
                    free_upstream_authority(w->upstreams[i].proxies[k]);
        h2o_config_dispose(&w->config); /* the socket pools' timers, on this loop */
    }
    sld_http_reply_free(&w->reply);
}

static void worker_free(void *arg) {
    gw_worker_t *w = arg;
    for (gw_call_t *c = w->spare_calls, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(w->proxies);
    free(w->upstreams);
    free(w);
}

const sld_front_ops_t sld_gateway_front_ops = {
    .name = "gateway",
    .start = worker_start,
    SLD_HTTP_SERVER_HOOKS,
    .dispose = worker_dispose,
    .free = worker_free,
};
