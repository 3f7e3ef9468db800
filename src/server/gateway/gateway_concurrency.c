/* gateway_concurrency.c -- the in-flight counts of the gateway's routes
 * (see gateway_concurrency.h).
 *
 * Not here: waiting, configuration.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/gateway/gateway_concurrency.h"
#include "server/observe/route_figures.h"

#define NBUCKETS 4096

typedef struct key_entry {
    struct key_entry *next;
    const sld_gw_lane_t *lane;
    uint32_t count;
    size_t len;
    char key[];
} key_entry_t;

/* seconds: the delay and the upstream latency alike */
static const double delay_bounds[] = {0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
#define NBOUNDS (sizeof delay_bounds / sizeof delay_bounds[0])

typedef struct histogram {
    _Atomic uint64_t buckets[NBOUNDS + 1]; /* not cumulative; the last: above every bound */
    _Atomic uint64_t sum_us;
} histogram_t;

struct sld_gw_lane {
    struct sld_gw_lane *next;  /* the table's list; under its lock */
    uint32_t holds;            /* generations that have the route; under the lock */
    _Atomic uint32_t limit;    /* concurrency limit in force; 0: none */
    atomic_bool per_key;       /* per: key in force */
    _Atomic uint32_t queue;    /* the route's waiting bound in force */
    _Atomic uint32_t inflight; /* all keys */
    _Atomic uint32_t waiting;
    _Atomic uint64_t counts[SLD_GW_NCOUNTS];
    histogram_t delay, latency;
    char name[];
};

struct sld_gw_conc {
    pthread_mutex_t lock; /* the lanes' list and the table of keys */
    sld_gw_lane_t *lanes;
    key_entry_t *buckets[NBUCKETS];
};

int sld_gw_conc_new(sld_gw_conc_t **out) {
    sld_gw_conc_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return SL_ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return SL_OK;
}

void sld_gw_conc_free(sld_gw_conc_t *c) {
    if (c == NULL)
        return;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (key_entry_t *e = c->buckets[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    for (sld_gw_lane_t *l = c->lanes, *next; l; l = next) {
        next = l->next;
        free(l);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

sld_gw_lane_t *sld_gw_conc_lane(sld_gw_conc_t *c, const sld_gw_route_t *rt) {
    pthread_mutex_lock(&c->lock);
    sld_gw_lane_t *l = c->lanes;
    while (l && strcmp(l->name, rt->name) != 0)
        l = l->next;
    if (l == NULL && (l = calloc(1, sizeof *l + strlen(rt->name) + 1)) != NULL) {
        strcpy(l->name, rt->name);
        l->next = c->lanes;
        c->lanes = l;
    }
    if (l != NULL) {
        l->holds++;
        atomic_store(&l->limit, rt->concurrency.limit);
        atomic_store(&l->per_key, rt->concurrency.per_key);
        atomic_store(&l->queue, rt->queue);
    }
    pthread_mutex_unlock(&c->lock);
    return l;
}

void sld_gw_conc_unlane(sld_gw_conc_t *c, sld_gw_lane_t *lane) {
    if (lane == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    if (--lane->holds == 0) {
        sld_gw_lane_t **at = &c->lanes;
        while (*at != lane)
            at = &(*at)->next;
        *at = lane->next;
        free(lane);
    }
    pthread_mutex_unlock(&c->lock);
}

static size_t bucket_of(const sld_gw_lane_t *lane, const char *key, size_t len) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)lane; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return (size_t)(h % NBUCKETS);
}

static key_entry_t **find(sld_gw_conc_t *c, const sld_gw_lane_t *lane, const char *key, size_t len) {
    key_entry_t **at = &c->buckets[bucket_of(lane, key, len)];
    while (*at && !((*at)->lane == lane && (*at)->len == len && memcmp((*at)->key, key, len) == 0))
        at = &(*at)->next;
    return at;
}

bool sld_gw_conc_take(sld_gw_conc_t *c, sld_gw_lane_t *lane, const char *key, size_t key_len, bool *per_key) {
    uint32_t limit = atomic_load(&lane->limit);
    *per_key = limit != 0 && atomic_load(&lane->per_key);
    if (!*per_key) {
        uint32_t n = atomic_load(&lane->inflight);
        do {
            if (limit != 0 && n >= limit)
                return false;
        } while (!atomic_compare_exchange_weak(&lane->inflight, &n, n + 1));
        return true;
    }
    bool ok = false;
    pthread_mutex_lock(&c->lock);
    key_entry_t **at = find(c, lane, key, key_len);
    if (*at == NULL && (*at = malloc(sizeof **at + key_len)) != NULL) {
        **at = (key_entry_t){.lane = lane, .len = key_len};
        memcpy((*at)->key, key, key_len);
    }
    if (*at != NULL && (*at)->count < limit) {
        (*at)->count++;
        atomic_fetch_add(&lane->inflight, 1);
        ok = true;
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}

void sld_gw_conc_give(sld_gw_conc_t *c, sld_gw_lane_t *lane, bool per_key, const char *key, size_t key_len) {
    if (!per_key) {
        atomic_fetch_sub(&lane->inflight, 1);
        return;
    }
    pthread_mutex_lock(&c->lock);
    key_entry_t **at = find(c, lane, key, key_len);
    if (*at != NULL && --(*at)->count == 0) {
        key_entry_t *e = *at;
        *at = e->next;
        free(e);
    }
    atomic_fetch_sub(&lane->inflight, 1);
    pthread_mutex_unlock(&c->lock);
}

bool sld_gw_conc_enter(sld_gw_lane_t *lane) {
    uint32_t n = atomic_load(&lane->waiting);
    do {
        if (n >= atomic_load(&lane->queue))
            return false;
    } while (!atomic_compare_exchange_weak(&lane->waiting, &n, n + 1));
    return true;
}

void sld_gw_conc_leave(sld_gw_lane_t *lane) { atomic_fetch_sub(&lane->waiting, 1); }

void sld_gw_count(sld_gw_lane_t *lane, sld_gw_count_t what) {
    atomic_fetch_add_explicit(&lane->counts[what], 1, memory_order_relaxed);
}

static void observe(histogram_t *h, sl_usec_t us) {
    double s = (double)us / (double)SL_USEC_PER_SEC;
    size_t b = 0;
    while (b < NBOUNDS && s > delay_bounds[b])
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint64_t)(us > 0 ? us : 0), memory_order_relaxed);
}

void sld_gw_count_delay(sld_gw_lane_t *lane, sl_usec_t delay) { observe(&lane->delay, delay); }

void sld_gw_count_latency(sld_gw_lane_t *lane, sl_usec_t took) { observe(&lane->latency, took); }

static uint64_t load(_Atomic uint64_t *v) { return atomic_load_explicit(v, memory_order_relaxed); }

/* route names are [A-Za-z0-9_.-]: no escaping */
static void write_histogram(sld_buf_t *out, const char *metric, const char *route, histogram_t *h) {
    uint64_t sum = 0;
    for (size_t b = 0; b <= NBOUNDS; b++) {
        sum += load(&h->buckets[b]);
        if (b < NBOUNDS)
            sld_buf_printf(out, "%s_bucket{route=\"%s\",le=\"%g\"} %llu\n", metric, route, delay_bounds[b],
                           (unsigned long long)sum);
        else
            sld_buf_printf(out, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", metric, route,
                           (unsigned long long)sum);
    }
    sld_buf_printf(out, "%s_sum{route=\"%s\"} %.6f\n", metric, route,
                   (double)load(&h->sum_us) / (double)SL_USEC_PER_SEC);
    sld_buf_printf(out, "%s_count{route=\"%s\"} %llu\n", metric, route, (unsigned long long)sum);
}

void sld_gw_conc_write_metrics(const sld_gw_config_t *g, sld_gw_lane_t *const *lanes, sld_buf_t *out) {
    /* route names are [A-Za-z0-9_.-]: no escaping */
    sld_buf_printf(out, "# HELP sluice_gateway_requests_total Gateway requests by route and what became of "
                        "them.\n# TYPE sluice_gateway_requests_total counter\n");
    for (size_t i = 0; i < g->nroutes; i++)
        for (size_t k = 0; k < SLD_ROUTE_RESULTS; k++)
            sld_buf_printf(out, "sluice_gateway_requests_total{route=\"%s\",result=\"%s\"} %llu\n",
                           g->routes[i].name, sld_route_result_names[k],
                           (unsigned long long)load(&lanes[i]->counts[k]));
    sld_buf_printf(out, "# HELP sluice_gateway_upstream_errors_total Upstream failures answered 502 or 504.\n"
                        "# TYPE sluice_gateway_upstream_errors_total counter\n");
    for (size_t i = 0; i < g->nroutes; i++) {
        sld_buf_printf(out, "sluice_gateway_upstream_errors_total{route=\"%s\",status=\"502\"} %llu\n",
                       g->routes[i].name, (unsigned long long)load(&lanes[i]->counts[SLD_GW_BAD_GATEWAY]));
        sld_buf_printf(out, "sluice_gateway_upstream_errors_total{route=\"%s\",status=\"504\"} %llu\n",
                       g->routes[i].name, (unsigned long long)load(&lanes[i]->counts[SLD_GW_TIMED_OUT]));
    }
    sld_buf_printf(out, "# HELP sluice_gateway_inflight Requests of the route in flight to the upstream "
                        "(routes with concurrency: only).\n# TYPE sluice_gateway_inflight gauge\n");
    for (size_t i = 0; i < g->nroutes; i++)
        if (g->routes[i].concurrency.limit)
            sld_buf_printf(out, "sluice_gateway_inflight{route=\"%s\"} %u\n", g->routes[i].name,
                           (unsigned)atomic_load(&lanes[i]->inflight));
    sld_buf_printf(out, "# HELP sluice_gateway_queue_depth Requests of the route waiting (for their moment "
                        "or a slot).\n# TYPE sluice_gateway_queue_depth gauge\n");
    for (size_t i = 0; i < g->nroutes; i++)
        sld_buf_printf(out, "sluice_gateway_queue_depth{route=\"%s\"} %u\n", g->routes[i].name,
                       (unsigned)atomic_load(&lanes[i]->waiting));
    sld_buf_printf(out, "# HELP sluice_gateway_delay_seconds How long delayed requests were held "
                        "(excess: delay).\n# TYPE sluice_gateway_delay_seconds histogram\n");
    for (size_t i = 0; i < g->nroutes; i++)
        if (g->routes[i].excess == SLD_GW_DELAY)
            write_histogram(out, "sluice_gateway_delay_seconds", g->routes[i].name, &lanes[i]->delay);
    sld_buf_printf(out, "# HELP sluice_gateway_upstream_seconds From handing a request to the upstream to "
                        "its response's head.\n# TYPE sluice_gateway_upstream_seconds histogram\n");
    for (size_t i = 0; i < g->nroutes; i++)
        write_histogram(out, "sluice_gateway_upstream_seconds", g->routes[i].name, &lanes[i]->latency);
}
