/* gateway_worker.c -- the gateway on each worker loop (see gateway.h): its
 * h2o configuration (one handler on "/", and a filter that rewrites
 * libh2o's own 502 for an upstream failure into a clear 502 or 504), the
 * shared part, and the front's hooks.
 *
 * The routes' reverse proxies are not in this configuration: each worker
 * has them per generation of routes (gateway_proxies.c), so that a reload
 * can change them.
 *
 * Not here: serving a request (gateway.c, gateway_wait.c), the routes in
 * force (gateway_generation.c).
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
#include "server/gateway/gateway_diff.h"
#include "server/gateway/gateway_private.h"
#include "server/gateway/gateway_spool.h"

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

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot) {
    (void)self;
    const h2o_iovec_t *why = req->res.status == 502 ? sld_gw_proxy_error(req) : NULL;
    if (why != NULL) {
        bool timeout = memmem(why->base, why->len, "timeout", 7) != NULL;
        sld_gw_lane_t *lane = sld_gw_forwarded_route(req);
        if (lane != NULL)
            sld_gw_count(lane, timeout ? SLD_GW_TIMED_OUT : SLD_GW_BAD_GATEWAY);
        /* an https upstream's handshake (libh2o's proxy set the request's
         * scheme to the upstream's): libh2o says what OpenSSL found
         * ("self-signed certificate", "certificate name mismatch", ...) */
        bool tls = !timeout && lane != NULL && req->scheme == &H2O_URL_SCHEME_HTTPS &&
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
    if (sld_gw_conc_new(&gw->conc) != SL_OK || sld__gw_shared_start(gw) != SL_OK) {
        sld_gateway_free(gw);
        return SL_ENOMEM;
    }
    if ((gw->listeners = calloc(gw->g->nlistens, sizeof *gw->listeners)) == NULL) {
        sld_gateway_free(gw);
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < gw->g->nlistens; i++)
        gw->listeners[i] = (gw_listener_t){.gw = gw, .index = i};
    gw->metrics = (sld_metrics_extra_t){.write = sld__gw_write_metrics, .ctx = gw};
    sld_metrics_extra_set(&gw->metrics);
    *out = gw;
    return SL_OK;
}

void sld_gateway_free(sld_gateway_t *gw) {
    if (gw == NULL)
        return;
    if (gw->metrics.write != NULL)
        sld_metrics_extra_set(NULL);
    if (gw->conc != NULL)
        sld__gw_shared_stop(gw); /* the last routes' lanes let go of */
    sld_gw_conc_free(gw->conc);
    sld_config_part_release(gw->part);
    free(gw->listeners);
    free(gw);
}

const char *sld_gateway_listen(const sld_gateway_t *gw) { return gw->g->listen; }

void sld_gateway_reloaded(sld_gateway_t *gw) {
    const sld_runtime_t *rt = sld_runtime(gw->d);
    sld__gw_follow(gw, rt); /* unless a worker's request saw the reload first */
    const sld_gw_config_t *next = sld_config_section(rt->cfg, sld_gateway_section.name);
    char keys[512];
    if (next != NULL && sld_gw_restart_keys(gw->g, next, keys, sizeof keys) > 0)
        sld_warn("gateway: %s changed: %s a restart; the gateway keeps its listeners and access log "
                 "file as they were at start (the routes apply)",
                 keys, strchr(keys, ',') ? "they need" : "it needs");
}

size_t sld_gateway_nlistens(const sld_gateway_t *gw) { return gw->g->nlistens; }

sld_front_t sld_gateway_front(sld_gateway_t *gw, size_t i, int *port) {
    return (sld_front_t){&sld_gateway_front_ops, &gw->listeners[i], gw->g->listens[i].addr, port};
}

static int configure(gw_worker_t *w, char *err, size_t err_len) {
    const sld_config_t *cfg = sld_runtime(w->gw->d)->cfg;
    sld_http_server_config(&w->config, cfg);
    w->has_config = true;
    w->config.proxy.io_timeout = (uint64_t)(w->gw->g->timeout / 1000);
    w->config.proxy.emit_x_forwarded_headers = 1;
    h2o_hostconf_t *host = h2o_config_register_host(&w->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    path->error_log.emit_request_errors = 0; /* answered with a clear body instead */
    gw_handler_t *handler = (gw_handler_t *)h2o_create_handler(path, sizeof *handler);
    handler->super.on_req = sld__gw_on_req;
    handler->w = w;
    h2o_create_filter(path, sizeof(h2o_filter_t))->on_setup_ostream = on_setup_ostream;
    return sld_gw_access_log_register(path, w->gw->g, &w->gw->d->stats, &w->gw->access_log_on, err, err_len);
}

/* ---- the front's hooks (net/front.h) ------------------------------------------------------------ */

static int worker_start(void *ctx, uv_loop_t *loop, int fd, sld_spread_t *spread, uint32_t index, void **out,
                        char *err, size_t err_len) {
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
    rc = sld_http_server_start(&w->server, gw->d, loop, &w->config, fd, spread, index, "the gateway", err,
                               err_len);
    /* TLS: h2o_accept() does the handshake, and offers HTTP/2 by ALPN */
    w->server.accept.ssl_ctx = gw->g->listens[l->index].tls;
    if (rc == SL_OK) /* the routes' proxies, for this context */
        rc = sld__gw_gen_start(w, err, err_len);
    return rc;
}

static void worker_tick(void *arg, uint64_t now) {
    sld_http_server_tick(arg, now);
    sld__gw_gens_tick(arg);
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
    sld__gw_gens_dispose(w); /* the socket pools' timers, on this loop */
    if (w->has_config)
        h2o_config_dispose(&w->config);
    sld_http_reply_free(&w->reply);
}

static void worker_free(void *arg) {
    gw_worker_t *w = arg;
    sld__gw_gens_free(w);
    for (gw_call_t *c = w->spare_calls, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(w);
}

const sld_front_ops_t sld_gateway_front_ops = {
    .name = "gateway",
    .start = worker_start,
    .begin_stop = sld_http_server_begin_stop,
    .tick = worker_tick,
    .force_close = sld_http_server_force_close,
    .idle = sld_http_server_idle,
    .dispose = worker_dispose,
    .free = worker_free,
};
