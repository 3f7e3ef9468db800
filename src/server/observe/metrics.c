/* metrics.c -- per-worker counters and their Prometheus text (metrics.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/observe/metrics.h"

/* Upper bounds of the latency buckets, nanoseconds (+Inf after the last). */
static const uint64_t bucket_ns[SLD_LATENCY_BUCKETS] = {
    500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 10000000};

/* HTTP statuses counted one by one; others fall into their class. */
static const int statuses[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 414, 429, 431, 500, 503};
#define NSTATUS (sizeof statuses / sizeof statuses[0])

typedef struct worker_metrics {
    _Alignas(64) _Atomic uint64_t samples;  /* decisions seen, for sampling */
    _Atomic uint64_t latency[SLD_LATENCY_BUCKETS + 1];
    _Atomic uint64_t latency_sum_ns;
    _Atomic uint64_t latency_count;
    _Atomic uint64_t http[NSTATUS + 1];     /* last: any other status */
    _Atomic uint64_t (*decisions)[2];       /* [slot][allowed] */
} worker_metrics_t;

struct sld_metrics {
    uint32_t workers;
    worker_metrics_t *w;
    pthread_mutex_t names_lock;
    char *names[SLD_METRIC_SLOTS];
    _Atomic uint32_t nslots;
};

static inline void bump(_Atomic uint64_t *c, uint64_t by) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by, memory_order_relaxed);
}

int sld_metrics_new(uint32_t workers, sld_metrics_t **out) {
    sld_metrics_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return SL_ENOMEM;
    m->workers = workers;
    m->w = aligned_alloc(64, sizeof *m->w * workers);
    if (m->w == NULL) {
        free(m);
        return SL_ENOMEM;
    }
    memset(m->w, 0, sizeof *m->w * workers);
    for (uint32_t i = 0; i < workers; i++) {
        m->w[i].decisions = calloc(SLD_METRIC_SLOTS, sizeof *m->w[i].decisions);
        if (m->w[i].decisions == NULL) {
            m->workers = i;
            sld_metrics_free(m);
            return SL_ENOMEM;
        }
    }
    pthread_mutex_init(&m->names_lock, NULL);
    *out = m;
    return SL_OK;
}

void sld_metrics_free(sld_metrics_t *m) {
    if (m == NULL)
        return;
    for (uint32_t i = 0; i < m->workers; i++)
        free((void *)m->w[i].decisions);
    for (uint32_t i = 0; i < SLD_METRIC_SLOTS; i++)
        free(m->names[i]);
    free(m->w);
    free(m);
}

uint32_t sld_metrics_slot(sld_metrics_t *m, const char *name) {
    pthread_mutex_lock(&m->names_lock);
    uint32_t n = atomic_load(&m->nslots), slot = SLD_METRIC_SLOTS - 1;
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(m->names[i], name) == 0) {
            slot = i;
            goto done;
        }
    }
    if (n < SLD_METRIC_SLOTS - 1 && (m->names[n] = strdup(name)) != NULL) {
        slot = n;
        atomic_store(&m->nslots, n + 1); /* published after the name */
    }
done:
    pthread_mutex_unlock(&m->names_lock);
    return slot;
}

void sld_metrics_decision(sld_metrics_t *m, uint32_t w, uint32_t slot, bool allowed) {
    bump(&m->w[w].decisions[slot][allowed], 1);
}

bool sld_metrics_sample(sld_metrics_t *m, uint32_t w) {
    uint64_t n = atomic_load_explicit(&m->w[w].samples, memory_order_relaxed);
    atomic_store_explicit(&m->w[w].samples, n + 1, memory_order_relaxed);
    return (n & 63) == 0;
}

void sld_metrics_latency(sld_metrics_t *m, uint32_t w, uint64_t ns) {
    size_t b = 0;
    while (b < SLD_LATENCY_BUCKETS && ns > bucket_ns[b])
        b++;
    bump(&m->w[w].latency[b], 1);
    bump(&m->w[w].latency_sum_ns, ns);
    bump(&m->w[w].latency_count, 1);
}

void sld_metrics_http(sld_metrics_t *m, uint32_t w, int status) {
    size_t i = 0;
    while (i < NSTATUS && statuses[i] != status)
        i++;
    bump(&m->w[w].http[i], 1);
}

static uint64_t sum(const sld_metrics_t *m, size_t offset) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->workers; i++)
        total += atomic_load_explicit((_Atomic uint64_t *)((char *)&m->w[i] + offset), memory_order_relaxed);
    return total;
}

/* Label values are policy names ([A-Za-z0-9_.-]) or fixed words: nothing to escape. */
/* One unlabelled series: HELP, TYPE and its value. */
typedef struct row {
    const char *name, *type, *help;
    double value;
} row_t;

static void put_rows(sld_buf_t *out, const row_t *rows, size_t n) {
    for (size_t i = 0; i < n; i++)
        sld_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", rows[i].name, rows[i].help,
                       rows[i].name, rows[i].type, rows[i].name, rows[i].value);
}

void sld_metrics_totals(sld_metrics_t *m, uint64_t *allowed, uint64_t *denied) {
    *allowed = *denied = 0;
    for (uint32_t i = 0; i < m->workers; i++)
        for (uint32_t s = 0; s < SLD_METRIC_SLOTS; s++) {
            *allowed += atomic_load_explicit(&m->w[i].decisions[s][1], memory_order_relaxed);
            *denied += atomic_load_explicit(&m->w[i].decisions[s][0], memory_order_relaxed);
        }
}

void sld_metrics_render(sld_metrics_t *m, const sld_figures_t *f, const sld_store_status_t *store,
                        sld_buf_t *out) {
    sld_buf_printf(out, "# HELP sluice_decisions_total Decisions, by policy and result.\n"
                        "# TYPE sluice_decisions_total counter\n");
    uint32_t n = atomic_load(&m->nslots);
    for (uint32_t s = 0; s <= n && s < SLD_METRIC_SLOTS; s++) {
        const char *name = s < n ? m->names[s] : "other";
        uint32_t at = s < n ? s : SLD_METRIC_SLOTS - 1;
        uint64_t allowed = 0, denied = 0;
        for (uint32_t i = 0; i < m->workers; i++) {
            allowed += atomic_load_explicit(&m->w[i].decisions[at][1], memory_order_relaxed);
            denied += atomic_load_explicit(&m->w[i].decisions[at][0], memory_order_relaxed);
        }
        if (s == n && allowed + denied == 0)
            continue;
        sld_buf_printf(out, "sluice_decisions_total{policy=\"%s\",result=\"allowed\"} %llu\n", name,
                       (unsigned long long)allowed);
        sld_buf_printf(out, "sluice_decisions_total{policy=\"%s\",result=\"denied\"} %llu\n", name,
                       (unsigned long long)denied);
    }

    sld_buf_printf(out, "# HELP sluice_decision_duration_seconds Time to decide, sampled one in 64.\n"
                        "# TYPE sluice_decision_duration_seconds histogram\n");
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= SLD_LATENCY_BUCKETS; b++) {
        cumulative += sum(m, offsetof(worker_metrics_t, latency) + b * sizeof(_Atomic uint64_t));
        if (b < SLD_LATENCY_BUCKETS)
            sld_buf_printf(out, "sluice_decision_duration_seconds_bucket{le=\"%g\"} %llu\n",
                           (double)bucket_ns[b] / 1e9, (unsigned long long)cumulative);
        else
            sld_buf_printf(out, "sluice_decision_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                           (unsigned long long)cumulative);
    }
    sld_buf_printf(out, "sluice_decision_duration_seconds_sum %.9f\nsluice_decision_duration_seconds_count %llu\n",
                   (double)sum(m, offsetof(worker_metrics_t, latency_sum_ns)) / 1e9,
                   (unsigned long long)sum(m, offsetof(worker_metrics_t, latency_count)));

    sld_buf_printf(out, "# HELP sluice_http_responses_total HTTP responses, by status.\n"
                        "# TYPE sluice_http_responses_total counter\n");
    for (size_t i = 0; i <= NSTATUS; i++) {
        uint64_t c = sum(m, offsetof(worker_metrics_t, http) + i * sizeof(_Atomic uint64_t));
        if (i < NSTATUS)
            sld_buf_printf(out, "sluice_http_responses_total{code=\"%d\"} %llu\n", statuses[i],
                           (unsigned long long)c);
        else
            sld_buf_printf(out, "sluice_http_responses_total{code=\"other\"} %llu\n", (unsigned long long)c);
    }

    const sl_store_stats_t st = f->store;
    const sld_stats_t *stats = f->stats;
    const row_t rows[] = {
        {"sluice_states", "gauge", "Live states in the store.", (double)st.states},
        {"sluice_memory_bytes", "gauge", "Memory held by the store.", (double)st.bytes},
        {"sluice_max_memory_bytes", "gauge", "The store's cap, 0 = none.", (double)st.max_memory},
        {"sluice_evictions_total", "counter", "States evicted by the cap before recovering.", (double)st.evictions},
        {"sluice_reclaimed_total", "counter", "Recovered states freed.", (double)st.reclaimed},
        {"sluice_connections", "gauge", "Open client connections.", (double)atomic_load(&stats->connected)},
        {"sluice_connections_received_total", "counter", "Connections accepted.",
         (double)atomic_load(&stats->connections_received)},
        {"sluice_connections_rejected_total", "counter", "Connections refused over max_connections.",
         (double)atomic_load(&stats->connections_rejected)},
        {"sluice_protocol_errors_total", "counter", "RESP connections closed for bad input.",
         (double)atomic_load(&stats->protocol_errors)},
        {"sluice_auth_failures_total", "counter", "RESP AUTH attempts with a wrong password.",
         (double)atomic_load(&stats->auth_failures)},
        {"sluice_decision_errors_total", "counter", "Decisions the store could not make (full, failing).",
         (double)atomic_load(&stats->decision_errors)},
        {"sluice_idle_timeouts_total", "counter", "Connections closed for idleness.",
         (double)atomic_load(&stats->idle_closed)},
        {"sluice_config_reloads_total", "counter", "Configurations applied since start.",
         (double)atomic_load(&stats->reloads)},
        {"sluice_config_reload_failures_total", "counter", "Reloads refused (bad file).",
         (double)atomic_load(&stats->reload_failures)},
        {"sluice_config_generation", "gauge", "Generation of the configuration in force.",
         (double)f->generation},
        {"sluice_snapshot_saves_total", "counter", "Snapshots written.", (double)atomic_load(&stats->snapshot_saves)},
        {"sluice_snapshot_failures_total", "counter", "Snapshots that could not be written.",
         (double)atomic_load(&stats->snapshot_failures)},
        {"sluice_uptime_seconds", "gauge", "Seconds since start.",
         (double)(sl_clock_realtime(NULL) - f->started_at) / 1e6},
    };
    put_rows(out, rows, sizeof rows / sizeof rows[0]);
    if (store->shared) {
        const sld_store_status_t rs = *store;
        const row_t store_rows[] = {
            {"sluice_store_up", "gauge", "Whether Redis answers (1) or decisions fall back (0).", rs.up},
            {"sluice_store_breaker_open", "gauge", "Whether a circuit breaker to Redis is open.",
             rs.breaker_open},
            {"sluice_store_calls_total", "counter", "Evaluations sent to Redis.", (double)rs.calls},
            {"sluice_store_failures_total", "counter", "Evaluations Redis did not answer usably.",
             (double)rs.failures},
            {"sluice_store_timeouts_total", "counter", "Evaluations that timed out.", (double)rs.timeouts},
            {"sluice_store_reconnects_total", "counter", "Reconnections to Redis.", (double)rs.reconnects},
        };
        put_rows(out, store_rows, sizeof store_rows / sizeof store_rows[0]);
        if (!rs.up) { /* why, as a label: Prometheus values are numbers */
            sld_buf_printf(out, "# HELP sluice_store_down_info Why the store is down (the "
                                "client's last error).\n# TYPE sluice_store_down_info gauge\n"
                                "sluice_store_down_info{reason=\"");
            for (const char *c = rs.last_error; *c; c++) {
                if (*c == '"' || *c == '\\')
                    sld_buf_printf(out, "\\%c", *c);
                else
                    sld_buf_printf(out, "%c", *c == '\n' ? ' ' : *c);
            }
            sld_buf_printf(out, "\"} 1\n");
        }
        sld_buf_printf(out,
                       "# HELP sluice_store_fallbacks_total Decisions made by on_store_failure.\n"
                       "# TYPE sluice_store_fallbacks_total counter\n"
                       "sluice_store_fallbacks_total{mode=\"open\"} %llu\n"
                       "sluice_store_fallbacks_total{mode=\"closed\"} %llu\n"
                       "sluice_store_fallbacks_total{mode=\"local\"} %llu\n",
                       (unsigned long long)rs.fallback_open, (unsigned long long)rs.fallback_closed,
                       (unsigned long long)rs.fallback_local);
    }
    if (store->write_back) {
        const sld_store_status_t *ws = store;
        const row_t wb[] = {
            {"sluice_write_back_keys", "gauge", "Keys in the write-back journal.", (double)ws->wb_keys},
            {"sluice_write_back_unsynced_keys", "gauge", "Keys with charges Redis has not merged yet.",
             (double)ws->wb_unsynced},
            {"sluice_write_back_syncs_total", "counter", "Keys whose charges were merged into Redis.",
             (double)ws->wb_syncs},
            {"sluice_write_back_conflicts_total", "counter",
             "Syncs another daemon wrote first (merged again).", (double)ws->wb_conflicts},
            {"sluice_write_back_failures_total", "counter",
             "Syncs without an answer (their charges wait).", (double)ws->wb_failures},
            {"sluice_write_back_dropped_total", "counter",
             "Charges not shared (journal full, policy removed).", (double)ws->wb_dropped},
        };
        put_rows(out, wb, sizeof wb / sizeof wb[0]);
    }
    sld_buf_printf(out, "# HELP sluice_build_info The running version.\n# TYPE sluice_build_info gauge\n"
                        "sluice_build_info{version=\"%s\"} 1\n", SL_VERSION_STRING);
}
