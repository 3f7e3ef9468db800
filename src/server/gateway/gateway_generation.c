/* gateway_generation.c -- the gateway's routes in force and a reload's new
 * ones (see gateway_private.h, gateway.h "Reload").
 *
 * The routes in force are a gw_shared_t: a gateway: section held and one
 * lane per route (gateway_concurrency.h: its counts, found by name, so a
 * route kept by a reload keeps them). A reload whose configuration has
 * other routes (sld_gw_routes_equal) makes a new one current; requests
 * that arrive from then on take it, on every worker, while those admitted
 * before keep theirs (their worker generation holds it) until they end.
 * Whoever sees the reload first makes it current: the reload itself
 * (sld_gateway_reloaded), or a worker whose request saw the new runtime
 * before that. The same routes again keep the running ones, and with them
 * their proxies' upstream connections.
 *
 * Not here: a generation on a worker (gateway_proxies.c), comparing
 * sections (gateway_diff.h).
 */
#include <stdlib.h>
#include <string.h>

#include "server/base/log.h"
#include "server/config/section.h"
#include "server/gateway/gateway.h"
#include "server/gateway/gateway_diff.h"
#include "server/gateway/gateway_private.h"

/* The routes of part (held by the caller, taken over), each route's lane
 * held; NULL when out of memory (part released). */
static gw_shared_t *shared_new(sld_gateway_t *gw, sld_config_part_t *part) {
    const sld_gw_config_t *g = sld_config_part_value(part);
    gw_shared_t *s = calloc(1, sizeof *s);
    if (s == NULL || (s->lanes = calloc(g->nroutes ? g->nroutes : 1, sizeof *s->lanes)) == NULL) {
        free(s);
        sld_config_part_release(part);
        return NULL;
    }
    s->part = part;
    s->g = g;
    atomic_init(&s->holds, 1);
    for (size_t i = 0; i < g->nroutes; i++)
        if ((s->lanes[i] = sld_gw_conc_lane(gw->conc, &g->routes[i])) == NULL) {
            sld__gw_shared_release(gw, s);
            return NULL;
        }
    return s;
}

void sld__gw_shared_release(sld_gateway_t *gw, gw_shared_t *s) {
    if (s == NULL || atomic_fetch_sub(&s->holds, 1) != 1)
        return;
    for (size_t i = 0; i < s->g->nroutes; i++)
        sld_gw_conc_unlane(gw->conc, s->lanes[i]);
    free(s->lanes);
    sld_config_part_release(s->part);
    free(s);
}

int sld__gw_shared_start(sld_gateway_t *gw) {
    sld_config_part_t *part = sld_config_section_hold(sld_runtime(gw->d)->cfg, sld_gateway_section.name);
    gw_shared_t *s = part ? shared_new(gw, part) : NULL;
    if (s == NULL)
        return SL_ENOMEM;
    pthread_mutex_init(&gw->lock, NULL);
    gw->followed = sld_runtime(gw->d)->generation;
    atomic_store(&gw->access_log_on, s->g->access_log != NULL);
    atomic_store(&gw->current, s);
    return SL_OK;
}

void sld__gw_shared_stop(sld_gateway_t *gw) {
    gw_shared_t *s = atomic_exchange(&gw->current, NULL);
    if (s == NULL)
        return;
    sld__gw_shared_release(gw, s);
    pthread_mutex_destroy(&gw->lock);
}

gw_shared_t *sld__gw_shared_hold(sld_gateway_t *gw) {
    pthread_mutex_lock(&gw->lock); /* against a swap that lets the last hold go meanwhile */
    gw_shared_t *s = atomic_load(&gw->current);
    atomic_fetch_add(&s->holds, 1);
    pthread_mutex_unlock(&gw->lock);
    return s;
}

void sld__gw_follow(sld_gateway_t *gw, const sld_runtime_t *rt) {
    const sld_gw_config_t *next = sld_config_value(rt->cfg, &sld_gateway_section);
    pthread_mutex_lock(&gw->lock);
    if (rt->generation <= gw->followed) { /* seen already, or older than what was */
        pthread_mutex_unlock(&gw->lock);
        return;
    }
    gw->followed = rt->generation;
    gw_shared_t *now = atomic_load(&gw->current);
    if (next == NULL || next == now->g || sld_gw_routes_equal(now->g, next)) {
        pthread_mutex_unlock(&gw->lock);
        if (next == NULL)
            sld_warn("gateway: the configuration has no gateway: section any more: the gateway keeps its "
                     "listeners and routes until a restart");
        return;
    }
    sld_config_part_t *part = sld_config_section_hold(rt->cfg, sld_gateway_section.name);
    gw_shared_t *s = part ? shared_new(gw, part) : NULL;
    if (s == NULL) {
        pthread_mutex_unlock(&gw->lock);
        sld_error("gateway: out of memory: the new routes cannot apply, the gateway keeps its routes");
        return;
    }
    char what[512];
    sld_gw_routes_change_t change;
    sld_gw_routes_change(now->g, next, &change, what, sizeof what);
    atomic_store(&gw->access_log_on, next->access_log != NULL);
    atomic_store(&gw->current, s);
    pthread_mutex_unlock(&gw->lock);
    sld_info("gateway: %zu routes (%s) apply to the requests arriving from now on; those queued or in "
             "flight end under their routes",
             next->nroutes, what);
    sld__gw_shared_release(gw, now);
}

void sld__gw_write_metrics(void *ctx, sld_buf_t *out) {
    sld_gateway_t *gw = ctx;
    pthread_mutex_lock(&gw->lock);
    gw_shared_t *s = atomic_load(&gw->current);
    if (s != NULL)
        sld_gw_conc_write_metrics(s->g, s->lanes, out);
    pthread_mutex_unlock(&gw->lock);
}
