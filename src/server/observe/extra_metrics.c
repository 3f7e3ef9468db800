/* extra_metrics.c -- the one extra writer of /metrics (see extra_metrics.h). */
#include <stdatomic.h>
#include <stddef.h>

#include "server/observe/extra_metrics.h"

static _Atomic(const sld_metrics_extra_t *) extra;

void sld_metrics_extra_set(const sld_metrics_extra_t *e) { atomic_store(&extra, e); }

static _Atomic(const sld_metrics_extra_t *) extra_rls;

void sld_metrics_extra_set_rls(const sld_metrics_extra_t *e) { atomic_store(&extra_rls, e); }

static _Atomic(const sld_metrics_extra_t *) extra_workers;

void sld_metrics_extra_set_workers(const sld_metrics_extra_t *e) { atomic_store(&extra_workers, e); }

void sld_metrics_extra_render_gateway(sld_buf_t *out) {
    const sld_metrics_extra_t *e = atomic_load(&extra);
    if (e != NULL)
        e->write(e->ctx, out);
}

void sld_metrics_extra_render(sld_buf_t *out) {
    sld_metrics_extra_render_gateway(out);
    const sld_metrics_extra_t *r = atomic_load(&extra_rls);
    if (r != NULL)
        r->write(r->ctx, out);
    const sld_metrics_extra_t *w = atomic_load(&extra_workers);
    if (w != NULL)
        w->write(w->ctx, out);
}
