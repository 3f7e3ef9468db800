/* gateway_proxies.c -- a generation of the gateway's routes on one worker
 * (see gateway_private.h): the routes in force (gateway_generation.c) with
 * one libh2o reverse proxy per upstream, made on this worker's loop, since
 * a proxy's keep-alive socket pool runs its timer on the loop of the first
 * context that uses it and must be disposed of while that loop runs.
 *
 * The proxies of a generation are not in the worker's h2o configuration
 * (its one path serves every request with the gateway's handler, which
 * hands a request to its route's proxy itself): their handlers live in a
 * path of the generation's own that no host has, their per-context state
 * is made and let go of here. libh2o 2.2 has no call for a handler added
 * to a running context, so two of its internals are reached: the context's
 * table of handler contexts (_module_configs) grows to the handlers' slots,
 * and a disposed proxy's socket pool and client timeout, whose timers
 * libh2o closes and then frees at once, are freed here a tick later, once
 * the loop has closed those timers (libuv still touches a closing handle).
 * Slots are not reused: the table keeps 8 bytes per upstream per reload
 * that changed the routes, for the life of the process.
 *
 * A worker takes the routes in force for the first request after a reload
 * (and at its tick, when idle); the generation it leaves stays while
 * requests it admitted are queued, waiting or in flight, and goes at the
 * first tick after the last of them ended.
 *
 * Not here: the routes in force (gateway_generation.c), serving requests
 * (gateway.c, gateway_wait.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>
#include <h2o/http1client.h>
#include <h2o/socketpool.h>

#include "server/base/log.h"
#include "server/gateway/gateway_private.h"

#define KEEPALIVE_MS 2000 /* an idle upstream connection stays in the pool this long */

#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
/* libh2o 2.2's proxy handler, its leading fields as lib/handler/proxy.c
 * declares them: its copy of the upstream URL, whose authority it never
 * frees, and its socket pool, which it frees right after closing its
 * timer. */
struct rp_handler_head {
    h2o_handler_t super;
    h2o_url_t upstream;
    h2o_socketpool_t *sockpool;
};
#define SLD_GW_RP_HEAD 1
#endif

/* Keeps p to be freed at the next tick; false when there is no room (then
 * it is never freed: a leak rather than a use after free). */
static bool bury(gw_worker_t *w, void *p) {
    if (p == NULL)
        return true;
    if (w->ngraveyard == w->graveyard_cap) {
        size_t cap = w->graveyard_cap ? 2 * w->graveyard_cap : 16;
        void **more = realloc(w->graveyard, cap * sizeof *more);
        if (more == NULL)
            return false;
        w->graveyard = more;
        w->graveyard_cap = cap;
    }
    w->graveyard[w->ngraveyard++] = p;
    return true;
}

static void free_graveyard(gw_worker_t *w) {
    for (size_t i = 0; i < w->ngraveyard; i++)
        free(w->graveyard[i]);
    w->ngraveyard = 0;
}

/* Lets go of proxy k of gen: its client context on this worker (when
 * `inited`), its socket pool and the handler. */
static void proxy_dispose(gw_worker_t *w, gw_gen_t *gen, size_t k, bool inited) {
    h2o_handler_t *h = gen->path.handlers.entries[k];
    h2o_http1client_ctx_t *cc = inited ? gen->client_ctx[k] : NULL;
    if (cc != NULL) { /* what libh2o's on_context_dispose does, the timeout's memory kept a tick */
        if (cc->io_timeout != &w->server.ctx.proxy.io_timeout) {
            h2o_timeout_dispose(cc->loop, cc->io_timeout);
            if (!bury(w, cc->io_timeout))
                sld_warn("gateway: out of memory: a proxy's timeout is not freed");
        }
        free(cc);
    }
#ifdef SLD_GW_RP_HEAD
    struct rp_handler_head *rp = (struct rp_handler_head *)h;
    free(rp->upstream.authority.base);
    rp->upstream.authority = h2o_iovec_init(NULL, 0);
    h2o_socketpool_t *pool = rp->sockpool;
    rp->sockpool = NULL;
    if (pool != NULL) {
        h2o_socketpool_dispose(pool); /* its pooled connections close; its timer is closing */
        if (!bury(w, pool))
            sld_warn("gateway: out of memory: a proxy's socket pool is not freed");
    }
#endif
    if (h->dispose)
        h->dispose(h);
    free(h);
}

/* The proxies of gen go (their first `inited` made their client contexts). */
static void gen_dispose_proxies(gw_worker_t *w, gw_gen_t *gen, size_t inited) {
    if (gen->disposed)
        return;
    gen->disposed = true;
    for (size_t k = 0; k < gen->path.handlers.size; k++)
        proxy_dispose(w, gen, k, k < inited);
    free(gen->path.handlers.entries);
    gen->path.handlers.entries = NULL;
    gen->path.handlers.size = 0;
}

static void gen_free(sld_gateway_t *gw, gw_gen_t *gen) {
    sld__gw_shared_release(gw, gen->shared);
    free(gen->client_ctx);
    free(gen->upstreams);
    free(gen);
}

/* Room in the h2o context for the handler contexts of every slot given. */
static bool grow_contexts(gw_worker_t *w) {
    size_t n = w->config._num_config_slots;
    if (n <= w->nslots)
        return true;
    void **more = realloc(w->server.ctx._module_configs, n * sizeof *more);
    if (more == NULL)
        return false;
    memset(more + w->nslots, 0, (n - w->nslots) * sizeof *more);
    w->server.ctx._module_configs = more;
    w->nslots = n;
    return true;
}

/* The generation of s (its hold taken over) on w into *out, its proxies
 * ready for requests; SL_ENOMEM or SL_EINVAL with the reason in err (s
 * released). */
static int gen_new(gw_worker_t *w, gw_shared_t *s, gw_gen_t **out, char *err, size_t err_len) {
    const sld_gw_config_t *g = s->g;
    int rc = SL_ENOMEM;
    gw_gen_t *gen = calloc(1, sizeof *gen);
    if (gen == NULL) {
        sld__gw_shared_release(w->gw, s);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    gen->shared = s;
    gen->g = g;
    gen->path.global = &w->config; /* what h2o_create_handler reads: the slots */
    size_t total = 0;
    for (size_t i = 0; i < g->nroutes; i++)
        total += g->routes[i].nupstreams;
    gen->upstreams = calloc(g->nroutes ? g->nroutes : 1, sizeof *gen->upstreams);
    gen->client_ctx = calloc(total ? total : 1, sizeof *gen->client_ctx);
    if (gen->upstreams == NULL || gen->client_ctx == NULL) {
        snprintf(err, err_len, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < g->nroutes; i++) {
        const sld_gw_route_t *route = &g->routes[i];
        for (size_t k = 0; k < route->nupstreams; k++) {
            const char *upstream = route->upstreams[k];
            h2o_url_t url;
            if (h2o_url_parse(upstream, strlen(upstream), &url) != 0) {
                snprintf(err, err_len, "gateway: route %s: bad upstream %s", route->name, upstream);
                rc = SL_EINVAL;
                goto fail;
            }
            /* https: the route's context (libh2o holds a reference of its own) */
            h2o_proxy_config_vars_t vars = {.io_timeout = (uint64_t)(route->timeout / 1000),
                                            .keepalive_timeout = KEEPALIVE_MS,
                                            .ssl_ctx = url.scheme == &H2O_URL_SCHEME_HTTPS ? route->tls : NULL};
            h2o_proxy_register_reverse_proxy(&gen->path, &url, &vars);
        }
    }
    if (!grow_contexts(w)) {
        snprintf(err, err_len, "out of memory");
        goto fail;
    }
    for (size_t k = 0; k < total; k++) {
        h2o_handler_t *h = gen->path.handlers.entries[k];
        if (h->on_context_init)
            h->on_context_init(h, &w->server.ctx);
        gen->client_ctx[k] = h2o_context_get_handler_context(&w->server.ctx, h);
    }
    for (size_t i = 0, at = 0; i < g->nroutes; at += g->routes[i].nupstreams, i++)
        gen->upstreams[i] = (gw_upstreams_t){.proxies = &gen->path.handlers.entries[at], .n = g->routes[i].nupstreams};
    gen->pins = 1; /* the worker's */
    *out = gen;
    return SL_OK;
fail:
    gen_dispose_proxies(w, gen, 0);
    gen_free(w->gw, gen);
    return rc;
}

/* w takes the routes in force for its new requests; the generation it
 * leaves stays while requests pin it. */
static void take_current(gw_worker_t *w) {
    gw_shared_t *s = sld__gw_shared_hold(w->gw);
    char err[256];
    gw_gen_t *gen = NULL;
    if (gen_new(w, s, &gen, err, sizeof err) != SL_OK) {
        w->failed = s; /* compared only: tried again at the tick */
        sld_error("gateway: worker %u cannot take the new routes (%s): it keeps its routes", (unsigned)w->index,
                  err);
        return;
    }
    gw_gen_t *old = w->gen;
    sld__gw_gen_unpin(old);
    old->next = w->older;
    w->older = old;
    w->gen = gen;
}

gw_gen_t *sld__gw_gen(gw_worker_t *w) {
    const sld_runtime_t *rt = sld_runtime(w->gw->d);
    if (rt->generation != w->seen_generation) {
        w->seen_generation = rt->generation;
        sld__gw_follow(w->gw, rt);
    }
    const gw_shared_t *now = atomic_load(&w->gw->current);
    if (now != w->gen->shared && now != w->failed)
        take_current(w);
    return w->gen;
}

int sld__gw_gen_start(gw_worker_t *w, char *err, size_t err_len) {
    w->nslots = w->config._num_config_slots; /* what h2o_context_init made room for */
    w->seen_generation = sld_runtime(w->gw->d)->generation;
    return gen_new(w, sld__gw_shared_hold(w->gw), &w->gen, err, err_len);
}

void sld__gw_gens_tick(gw_worker_t *w) {
    free_graveyard(w); /* closed by the loop since the last tick */
    if (w->gen == NULL || w->closing)
        return;
    w->failed = NULL;
    sld__gw_gen(w);
    for (gw_gen_t **at = &w->older; *at;) {
        gw_gen_t *gen = *at;
        if (gen->pins > 0) {
            at = &gen->next;
            continue;
        }
        *at = gen->next;
        gen_dispose_proxies(w, gen, gen->path.handlers.size);
        gen_free(w->gw, gen);
        sld_debug("gateway: worker %u let go of routes a reload replaced (their requests are over)",
                  (unsigned)w->index);
    }
}

void sld__gw_gens_dispose(gw_worker_t *w) {
    if (w->gen)
        gen_dispose_proxies(w, w->gen, w->gen->path.handlers.size);
    for (gw_gen_t *gen = w->older; gen; gen = gen->next)
        gen_dispose_proxies(w, gen, gen->path.handlers.size);
}

void sld__gw_gens_free(gw_worker_t *w) {
    if (w->gen)
        gen_free(w->gw, w->gen);
    w->gen = NULL;
    for (gw_gen_t *gen = w->older, *next; gen; gen = next) {
        next = gen->next;
        gen_free(w->gw, gen);
    }
    w->older = NULL;
    free_graveyard(w);
    free(w->graveyard);
    w->graveyard = NULL;
}
