/* metrics.h -- decisions, their latency and HTTP statuses, counted where
 * they happen.
 *
 * Counters live per worker thread (one writer each, no locked instruction
 * on the hot path) and are summed when read (sld_metrics_read). Decisions are
 * counted per policy and result: a policy name gets a slot the first time a
 * runtime compiles it and keeps it for the life of the process, so counters
 * survive reloads as Prometheus expects of counters. Decision latency is
 * sampled (one in 64).
 *
 * Not here: rendering them (snapshot.h, prometheus.h, info_sections.h).
 */
#ifndef SL_SERVER_METRICS_H
#define SL_SERVER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/observe/stats.h"
#include "sluice.h"

#define SLD_METRIC_SLOTS 4096      /* policy names counted (then "other") */
#define SLD_LATENCY_BUCKETS 12
#define SLD_HTTP_STATUSES 14       /* counted one by one (then "other") */

/* Upper bounds of the latency buckets, nanoseconds (+Inf after the last). */
extern const uint64_t sld_metrics_bucket_ns[SLD_LATENCY_BUCKETS];
/* The HTTP statuses counted one by one; others count as "other". */
extern const int sld_metrics_statuses[SLD_HTTP_STATUSES];

/* A decision's result as counted. The three exclude each other, so they
 * add up to every decision: admitted = allowed + limited, over a limit =
 * denied + limited. */
typedef enum sld_result {
    SLD_DENIED,   /* refused */
    SLD_ALLOWED,  /* admitted within every limit */
    SLD_LIMITED,  /* admitted although over a limit: shadow, soft tolerance,
                     the elastic pool (sl_decision_t.limited) */
    SLD_RESULTS
} sld_result_t;

extern const char *const sld_result_names[SLD_RESULTS]; /* "denied", "allowed", "limited" */

static inline sld_result_t sld_result_of(const sl_decision_t *d) {
    return !d->allowed ? SLD_DENIED : d->limited ? SLD_LIMITED : SLD_ALLOWED;
}

typedef struct sld_metrics sld_metrics_t;

int sld_metrics_new(uint32_t workers, sld_metrics_t **out);
void sld_metrics_free(sld_metrics_t *m);

/* The slot of a policy name, created on first use (thread-safe). The last
 * slot, "other", collects names beyond SLD_METRIC_SLOTS - 1. */
uint32_t sld_metrics_slot(sld_metrics_t *m, const char *name);

/* Worker w decided under `slot` (sld_result_of the decision). */
void sld_metrics_decision(sld_metrics_t *m, uint32_t w, uint32_t slot, sld_result_t result);
/* Every decision counted so far, over every policy and worker: allowed
 * (within the limits) and denied; limited ones are in neither. */
void sld_metrics_totals(sld_metrics_t *m, uint64_t *allowed, uint64_t *denied);
/* Worker w: one in 64 decisions is timed; true when this one is. */
bool sld_metrics_sample(sld_metrics_t *m, uint32_t w);
void sld_metrics_latency(sld_metrics_t *m, uint32_t w, uint64_t ns);
/* Worker w answered an HTTP request with `status`. */
void sld_metrics_http(sld_metrics_t *m, uint32_t w, int status);

#define SLD_STORE_ERROR_LEN 640

/* What INFO, /metrics and /readyz show of the store behind the decision
 * engine (engine.h fills it; this module only renders it). */
typedef struct sld_store_status {
    bool shared;                  /* a shared store (Redis) is behind the engine */
    const char *describe;         /* "memory", "redis://127.0.0.1:6379 (strict)" */
    bool up;                      /* it answers (always, in memory) */
    char last_error[SLD_STORE_ERROR_LEN]; /* why not, when !up */
    bool breaker_open;
    uint64_t calls, failures, timeouts, reconnects;
    uint64_t fallback_open, fallback_closed, fallback_local;
    uint64_t latency_count, latency_sum_us; /* answered script calls, send to reply */
    bool write_back;              /* store.sync: write_back; the figures below */
    uint64_t wb_keys, wb_unsynced, wb_syncs, wb_conflicts, wb_failures, wb_dropped;
    int64_t wb_last_sync;         /* us, wall clock, 0 = never */
} sld_store_status_t;

/* One policy's decisions. */
typedef struct sld_policy_counts {
    const char *name;             /* the policy's, or "other"; the metrics' own copy */
    uint64_t n[SLD_RESULTS];      /* by sld_result_t */
} sld_policy_counts_t;

/* Everything counted here, summed over the workers at one moment. */
typedef struct sld_counts {
    sld_policy_counts_t *policies; /* every named slot in slot order, then "other"
                                      if it counted anything (sld_counts_free) */
    size_t npolicies;
    uint64_t total[SLD_RESULTS];  /* over every policy */
    uint64_t latency[SLD_LATENCY_BUCKETS + 1]; /* per bucket, not cumulative; +Inf last */
    uint64_t latency_sum_ns, latency_count;
    uint64_t http[SLD_HTTP_STATUSES + 1]; /* by sld_metrics_statuses, "other" last */
} sld_counts_t;

/* Reads every counter into *out (SL_ENOMEM: out is empty). The names stay
 * valid as long as m. */
int sld_metrics_read(sld_metrics_t *m, sld_counts_t *out);
void sld_counts_free(sld_counts_t *c);

#endif
