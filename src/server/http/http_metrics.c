/* http_metrics.c -- GET /metrics: the Prometheus text of the daemon's
 * statistics (observe/prometheus.c renders the snapshot; docs/operations.md lists them).
 */
#include "server/http/http_api.h"  /* the daemon's state, as every HTTP route sees it */
#include "server/engine/engine.h"
#include "server/http/http_routes.h"
#include "server/observe/prometheus.h"

static void metrics(const sld_http_call_t *c) {
    sld_daemon_t *d = c->d;
    sld_http_reply_t *r = c->reply;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
    if (d->metrics) {
        const sld_runtime_t *now_rt = sld_runtime(d);
        sld_figures_t f = {.stats = &d->stats, .generation = now_rt ? now_rt->generation : 0,
                           .started_at = d->started_at, .process = true};
        sl_store_stats(d->store, &f.store);
        sld_engine_status(d->engine, &f.status);
        sld_snapshot_t s;
        if (sld_snapshot_take(&s, d->metrics, &f) == SL_OK)
            sld_prometheus_render(&s, &r->body);
        else
            r->body.failed = true;
        sld_snapshot_free(&s);
    }
}

const sld_http_route_t sld_http_metrics_routes[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/metrics", metrics, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
