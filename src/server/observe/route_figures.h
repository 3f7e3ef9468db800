/* route_figures.h -- the gateway's per-route figures for /v1/stats and
 * /status, read back from the series the gateway appends to /metrics
 * (extra_metrics.h): in flight, waiting, what became of the requests, the
 * upstream's latency.
 *
 * The gateway is a room above observe/ and http/: it cannot be named here,
 * and its series are already its public report, so they are parsed rather
 * than asked for again through a second hook. The caller renders the
 * gateway's writer alone (sld_metrics_extra_render_gateway); even so, only
 * lines named sluice_gateway_* are read, anything else is skipped.
 *
 * Pure: text in, figures out; no allocation.
 *
 * Not here: the series themselves (gateway/gateway_concurrency.c), JSON.
 */
#ifndef SL_SERVER_ROUTE_FIGURES_H
#define SL_SERVER_ROUTE_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLD_ROUTE_NAME_LEN 64  /* longer route names are skipped */
#define SLD_ROUTES_SHOWN 64    /* routes beyond are left out */

typedef enum sld_route_result {
    SLD_ROUTE_FORWARDED, SLD_ROUTE_DELAYED, SLD_ROUTE_REJECTED, SLD_ROUTE_BUSY, SLD_ROUTE_RESULTS
} sld_route_result_t;

extern const char *const sld_route_result_names[SLD_ROUTE_RESULTS];

/* One route's figures, totals since start except the two gauges. */
typedef struct sld_route_figures {
    char name[SLD_ROUTE_NAME_LEN + 1];
    bool has_inflight;            /* the route has a concurrency: limit */
    uint64_t inflight;            /* requests at the upstream now */
    uint64_t queue_depth;         /* requests waiting now (their moment or a slot) */
    uint64_t requests[SLD_ROUTE_RESULTS];
    uint64_t errors_502, errors_504;
    uint64_t upstream_count;      /* upstream answers timed */
    double upstream_sum;          /* their time, seconds */
} sld_route_figures_t;

/* Reads text[0..len) (Prometheus text) into out[0..max): returns the
 * routes found, in the order they first appear. Lines it does not know
 * are skipped; a malformed one is skipped too. */
size_t sld_route_figures_parse(const char *text, size_t len, sld_route_figures_t *out, size_t max);

#endif
