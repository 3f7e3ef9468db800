/* prometheus.h -- a statistics snapshot as the Prometheus text format 0.0.4
 * (what GET /metrics answers).
 *
 * Not here: taking the snapshot (snapshot.h), HTTP (the http front).
 */
#ifndef SL_SERVER_PROMETHEUS_H
#define SL_SERVER_PROMETHEUS_H

#include "server/base/buf.h"
#include "server/observe/snapshot.h"

/* Appends every metric of s: decisions per policy and result, decision
 * latency, HTTP statuses, then each row of sld_stat_table with a metric
 * name that shows in s, then the extra writer's series (extra_metrics.h).
 * Label values are escaped (\\, \", newlines). */
void sld_prometheus_render(const sld_snapshot_t *s, sld_buf_t *out);

#endif
