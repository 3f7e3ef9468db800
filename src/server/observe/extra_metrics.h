/* extra_metrics.h -- series a front keeps itself and appends to /metrics
 * (the gateway's per-route series), after the snapshot's.
 *
 * One writer at a time, set before the fronts serve and cleared after they
 * stop; its values are read live at the scrape, not from the snapshot.
 *
 * Not here: the snapshot's own series (prometheus.h), what the writer says.
 */
#ifndef SL_SERVER_EXTRA_METRICS_H
#define SL_SERVER_EXTRA_METRICS_H

#include "server/base/buf.h"

typedef struct sld_metrics_extra {
    void (*write)(void *ctx, sld_buf_t *out); /* Prometheus text, HELP and TYPE included */
    void *ctx;
} sld_metrics_extra_t;

/* NULL clears it. e must stay valid until cleared. */
void sld_metrics_extra_set(const sld_metrics_extra_t *e);
/* The same for a second writer of its own: the gRPC front's (Envoy
 * ratelimit's stats), written after the first. */
void sld_metrics_extra_set_rls(const sld_metrics_extra_t *e);
/* The same for the server's own: each worker's connections per front. */
void sld_metrics_extra_set_workers(const sld_metrics_extra_t *e);
/* Appends what the writers set say, if any. */
void sld_metrics_extra_render(sld_buf_t *out);
/* Appends what the first writer (the gateway's) says, if set: what
 * /v1/stats reads back (route_figures.h), without the gRPC front's. */
void sld_metrics_extra_render_gateway(sld_buf_t *out);

#endif
