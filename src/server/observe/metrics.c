/* metrics.c -- per-worker counters, summed when read (metrics.h). */
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/observe/metrics.h"

const uint64_t sld_metrics_bucket_ns[SLD_LATENCY_BUCKETS] = {
    500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 10000000};

const int sld_metrics_statuses[SLD_HTTP_STATUSES] = {200, 201, 400, 401, 403, 404, 405,
                                                     409, 413, 414, 429, 431, 500, 503};
#define NSTATUS SLD_HTTP_STATUSES

const char *const sld_result_names[SLD_RESULTS] = {"denied", "allowed", "limited"};

typedef struct worker_metrics {
    _Alignas(64) _Atomic uint64_t samples;  /* decisions seen, for sampling */
    _Atomic uint64_t latency[SLD_LATENCY_BUCKETS + 1];
    _Atomic uint64_t latency_sum_ns;
    _Atomic uint64_t latency_count;
    _Atomic uint64_t http[NSTATUS + 1];     /* last: any other status */
    _Atomic uint64_t (*decisions)[SLD_RESULTS]; /* [slot][sld_result_t] */
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

void sld_metrics_decision(sld_metrics_t *m, uint32_t w, uint32_t slot, sld_result_t result) {
    bump(&m->w[w].decisions[slot][result], 1);
}

bool sld_metrics_sample(sld_metrics_t *m, uint32_t w) {
    uint64_t n = atomic_load_explicit(&m->w[w].samples, memory_order_relaxed);
    atomic_store_explicit(&m->w[w].samples, n + 1, memory_order_relaxed);
    return (n & 63) == 0;
}

void sld_metrics_latency(sld_metrics_t *m, uint32_t w, uint64_t ns) {
    size_t b = 0;
    while (b < SLD_LATENCY_BUCKETS && ns > sld_metrics_bucket_ns[b])
        b++;
    bump(&m->w[w].latency[b], 1);
    bump(&m->w[w].latency_sum_ns, ns);
    bump(&m->w[w].latency_count, 1);
}

void sld_metrics_http(sld_metrics_t *m, uint32_t w, int status) {
    size_t i = 0;
    while (i < NSTATUS && sld_metrics_statuses[i] != status)
        i++;
    bump(&m->w[w].http[i], 1);
}

static uint64_t sum(const sld_metrics_t *m, size_t offset) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->workers; i++)
        total += atomic_load_explicit((_Atomic uint64_t *)((char *)&m->w[i] + offset), memory_order_relaxed);
    return total;
}

static void slot_counts(const sld_metrics_t *m, uint32_t slot, uint64_t n[SLD_RESULTS]) {
    for (int r = 0; r < SLD_RESULTS; r++) {
        n[r] = 0;
        for (uint32_t i = 0; i < m->workers; i++)
            n[r] += atomic_load_explicit(&m->w[i].decisions[slot][r], memory_order_relaxed);
    }
}

void sld_metrics_totals(sld_metrics_t *m, uint64_t *allowed, uint64_t *denied) {
    *allowed = *denied = 0;
    for (uint32_t s = 0; s < SLD_METRIC_SLOTS; s++) {
        uint64_t n[SLD_RESULTS];
        slot_counts(m, s, n);
        *allowed += n[SLD_ALLOWED];
        *denied += n[SLD_DENIED];
    }
}

int sld_metrics_read(sld_metrics_t *m, sld_counts_t *out) {
    memset(out, 0, sizeof *out);
    uint32_t n = atomic_load(&m->nslots); /* names[0..n) are published */
    out->policies = malloc(sizeof *out->policies * (n + 1));
    if (out->policies == NULL)
        return SL_ENOMEM;
    for (uint32_t s = 0; s <= n && s < SLD_METRIC_SLOTS; s++) {
        sld_policy_counts_t *p = &out->policies[out->npolicies];
        slot_counts(m, s < n ? s : SLD_METRIC_SLOTS - 1, p->n);
        if (s == n && p->n[SLD_DENIED] + p->n[SLD_ALLOWED] + p->n[SLD_LIMITED] == 0)
            continue; /* "other" appears once it counts */
        p->name = s < n ? m->names[s] : "other";
        for (int r = 0; r < SLD_RESULTS; r++)
            out->total[r] += p->n[r];
        out->npolicies++;
    }
    for (size_t b = 0; b <= SLD_LATENCY_BUCKETS; b++)
        out->latency[b] = sum(m, offsetof(worker_metrics_t, latency) + b * sizeof(_Atomic uint64_t));
    out->latency_sum_ns = sum(m, offsetof(worker_metrics_t, latency_sum_ns));
    out->latency_count = sum(m, offsetof(worker_metrics_t, latency_count));
    for (size_t i = 0; i <= NSTATUS; i++)
        out->http[i] = sum(m, offsetof(worker_metrics_t, http) + i * sizeof(_Atomic uint64_t));
    return SL_OK;
}

void sld_counts_free(sld_counts_t *c) {
    free(c->policies);
    c->policies = NULL;
    c->npolicies = 0;
}
