/* throttle.c -- the policies of CL.THROTTLE / GCRA parameter sets (throttle.h).
 *
 * The table is fixed-size open addressing of atomic entry pointers: readers
 * load-acquire and compare, never lock; a miss takes the mutex, looks again
 * and publishes a new entry with a store-release. Entries live until the
 * daemon exits, so a pointer read is never freed under a reader.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/throttle.h"

#define SLOTS (2 * SLD_THROTTLE_MAX_SETS)  /* power of two, at most half full */

typedef struct entry {
    int64_t max_burst;
    int64_t interval_ns;
    sl_policy_t *policy;
    sl_policy_t *local;  /* one node's share, or NULL: the policy itself */
} entry_t;

struct sld_throttles {
    _Atomic(entry_t *) slots[SLOTS];
    pthread_mutex_t insert;
    size_t count;
    uint32_t nodes;
};

int sld_throttles_new(uint32_t nodes, sld_throttles_t **out) {
    sld_throttles_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return SL_ENOMEM;
    t->nodes = nodes ? nodes : 1;
    pthread_mutex_init(&t->insert, NULL);
    *out = t;
    return SL_OK;
}

void sld_throttles_free(sld_throttles_t *t) {
    if (t == NULL)
        return;
    for (size_t i = 0; i < SLOTS; i++) {
        entry_t *e = atomic_load(&t->slots[i]);
        if (e) {
            sl_policy_free(e->policy);
            sl_policy_free(e->local);
            free(e);
        }
    }
    pthread_mutex_destroy(&t->insert);
    free(t);
}

static size_t home(int64_t max_burst, int64_t interval_ns) {
    uint64_t h = (uint64_t)max_burst * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)interval_ns;
    h ^= h >> 29;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return (size_t)(h >> 32) & (SLOTS - 1);
}

/* The entry for the set, or the index of the first empty slot in *free_at. */
static entry_t *lookup(sld_throttles_t *t, int64_t max_burst, int64_t interval_ns, size_t *free_at) {
    for (size_t i = home(max_burst, interval_ns);; i = (i + 1) & (SLOTS - 1)) {
        entry_t *e = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (e == NULL) {
            *free_at = i;
            return NULL;
        }
        if (e->max_burst == max_burst && e->interval_ns == interval_ns)
            return e;
    }
}

static int compile(int64_t max_burst, int64_t interval_ns, sl_policy_t **out) {
    /* limit 1000 per interval_ns us: an emission interval of exactly
     * interval_ns nanoseconds. */
    sl_limit_t l = {.algorithm = SL_GCRA, .limit = 1000, .period = interval_ns,
                    .burst = (uint64_t)max_burst};
    sl_policy_config_t cfg = {.name = "CL.THROTTLE", .limits = &l, .nlimits = 1};
    return sl_policy_new(&cfg, out, NULL, 0);
}

int sld_throttles_get(sld_throttles_t *t, int64_t max_burst, int64_t interval_ns,
                      const sl_policy_t **out, const sl_policy_t **local) {
    size_t at;
    entry_t *e = lookup(t, max_burst, interval_ns, &at);
    if (e) {
        *out = e->policy;
        if (local)
            *local = e->local ? e->local : e->policy;
        return SL_OK;
    }
    pthread_mutex_lock(&t->insert);
    int rc = SL_OK;
    e = lookup(t, max_burst, interval_ns, &at);
    if (e == NULL) {
        if (t->count >= SLD_THROTTLE_MAX_SETS) {
            rc = SL_ETOOMANY;
        } else {
            e = calloc(1, sizeof *e);
            rc = e ? compile(max_burst, interval_ns, &e->policy) : SL_ENOMEM;
            /* one node's share of the rate and the burst, for the local
             * fallback of the shared store: n times the interval, and
             * (max_burst + 1) / n - 1 (at least 0) */
            if (rc == SL_OK && t->nodes > 1) {
                int64_t burst = (max_burst + 1) / t->nodes - 1;
                if (interval_ns > INT64_MAX / t->nodes ||
                    compile(burst > 0 ? burst : 0, interval_ns * t->nodes, &e->local) != SL_OK)
                    e->local = NULL; /* an interval beyond range: the whole limit */
            }
            if (rc == SL_OK) {
                e->max_burst = max_burst;
                e->interval_ns = interval_ns;
                atomic_store_explicit(&t->slots[at], e, memory_order_release);
                t->count++;
            } else {
                free(e);
                e = NULL;
            }
        }
    }
    pthread_mutex_unlock(&t->insert);
    if (e) {
        *out = e->policy;
        if (local)
            *local = e->local ? e->local : e->policy;
    }
    return rc;
}

size_t sld_throttles_list(sld_throttles_t *t, const sl_policy_t **policies,
                          const sl_policy_t **locals, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < SLOTS && n < max; i++) {
        entry_t *e = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (e) {
            policies[n] = e->policy;
            locals[n++] = e->local ? e->local : e->policy;
        }
    }
    return n;
}
