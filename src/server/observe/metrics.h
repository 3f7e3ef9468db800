/* metrics.h -- what /metrics reports, counted where it happens.
 *
 * Counters live per worker thread (one writer each, no locked instruction
 * on the hot path) and are summed when scraped. Decisions are counted per
 * policy: a policy name gets a slot the first time a runtime compiles it and
 * keeps it for the life of the process, so counters survive reloads as
 * Prometheus expects of counters. Decision latency is sampled (one in 64).
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

typedef struct sld_metrics sld_metrics_t;

int sld_metrics_new(uint32_t workers, sld_metrics_t **out);
void sld_metrics_free(sld_metrics_t *m);

/* The slot of a policy name, created on first use (thread-safe). The last
 * slot, "other", collects names beyond SLD_METRIC_SLOTS - 1. */
uint32_t sld_metrics_slot(sld_metrics_t *m, const char *name);

/* Worker w decided under `slot`. */
void sld_metrics_decision(sld_metrics_t *m, uint32_t w, uint32_t slot, bool allowed);
/* Every decision counted so far, over every policy and worker (INFO's
 * totals: the same counts as /metrics, summed). */
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
    bool write_back;              /* store.sync: write_back; the figures below */
    uint64_t wb_keys, wb_unsynced, wb_syncs, wb_conflicts, wb_failures, wb_dropped;
    int64_t wb_last_sync;         /* us, wall clock, 0 = never */
} sld_store_status_t;

/* What the daemon gives the rendering, read at the moment of the scrape. */
typedef struct sld_figures {
    const sld_stats_t *stats;     /* the daemon's counters */
    sl_store_stats_t store;       /* the local store's figures */
    uint64_t generation;          /* of the configuration in force, 0 = none yet */
    sl_usec_t started_at;         /* us, wall clock */
} sld_figures_t;

/* Appends the Prometheus text format of everything, process figures
 * included; `store` is the engine's store status. */
void sld_metrics_render(sld_metrics_t *m, const sld_figures_t *f, const sld_store_status_t *store,
                        sld_buf_t *out);

#endif
