/* daemon.h -- the state every part of sluiced shares (src/server/state/).
 *
 * One store and one limiter serve every worker thread. The configuration in
 * force is a runtime (config + compiled policies) behind an atomic pointer:
 * a reload builds a new one and swaps it in; the old one is freed once every
 * worker has been through a loop iteration since (the server's quiescence,
 * reached through d->workers). Counters are atomics read by INFO.
 *
 * This room sits below the network and the fronts, so both may hold a
 * sld_daemon_t; it includes only the rooms below it (config, keys, observe,
 * engine) and the library. Not here: building or swapping a runtime
 * (daemon/runtime.c), the worker loops (net/), anything a front does.
 */
#ifndef SL_SERVER_DAEMON_H
#define SL_SERVER_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/config/config.h"
#include "server/keys/forward.h"
#include "server/observe/metrics.h"
#include "server/observe/stats.h"
#include "server/engine/decide.h"
#include "server/engine/policies.h"
#include "sluice.h"
#include "server/engine/throttle.h"

typedef struct sld_runtime {
    sld_config_t *cfg;
    sld_policies_t *policies;
    sld_cidrs_t *trusted;  /* cfg->trusted_proxies, parsed */
    uint64_t generation;  /* 1 for the configuration loaded at start, +1 per reload */
    _Atomic uint32_t pins; /* decisions waiting on the shared store that use it */
} sld_runtime_t;

/* Counters of one worker thread: written by it alone, without locked
 * instructions (sld_count), read by INFO from any thread. */
typedef struct sld_counters {
    _Alignas(64) _Atomic uint64_t commands;
} sld_counters_t;

static inline void sld_count(_Atomic uint64_t *c) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Loads (and completes with command-line overrides) a configuration file. */
typedef int (*sld_load_fn)(const char *path, sld_config_t **out, char *err, size_t err_len);

struct sld_engine;

/* The worker loops as the runtime reaches them (a reload must wake them,
 * and a retired runtime waits until they have all moved on): hooks given
 * once the loops exist, so this lower part never names the server. */
typedef struct sld_workers_hooks {
    void *ctx;
    /* Makes every worker go through a loop iteration soon. */
    void (*wake)(void *ctx);
    /* Whether every worker has been through an iteration since generation
     * was published (false while there are no workers). */
    bool (*quiescent)(void *ctx, uint64_t generation);
} sld_workers_hooks_t;

struct sld_daemon;

/* Changes to the configuration in force, as the admin API asks for them:
 * runtime.c's sld_runtime_edit() and sld_runtime_reload(), given by whoever
 * wires the daemon (sluiced.c), so a front never names the runtime module. */
typedef struct sld_config_hooks {
    int (*edit)(struct sld_daemon *d, const sld_policy_t *put, const char *remove, const char *why,
                char *err, size_t err_len, uint64_t *generation);
    int (*reload)(struct sld_daemon *d, char *err, size_t err_len, uint64_t *generation);
} sld_config_hooks_t;

struct sld_retired;
struct sld_remote;
struct sld_rules;
struct sld_write_back;

typedef struct sld_daemon {
    sl_store_t *store;
    sl_limiter_t *limiter;
    struct sld_remote *remote;              /* the Redis store; NULL = memory only */
    struct sld_rules *rules;                /* policies kept in Redis (with remote) */
    struct sld_write_back *write_back;      /* store.sync: write_back (with remote) */
    struct sld_engine *engine;              /* decides for every front, whatever the store (engine.h) */
    sld_decide_ctx_t decide;                /* the engine's store kind's context (wiring.h) */
    _Atomic(sld_runtime_t *) runtime;
    sld_throttles_t *throttles;             /* CL.THROTTLE / GCRA parameter sets */
    sld_stats_t stats;
    sld_counters_t *counters;               /* one per worker thread (server.c) */
    uint32_t ncounters;
    sld_metrics_t *metrics;                 /* what /metrics reports */
    sld_hh_t *heavy;                        /* heavy hitters for /v1/stats; NULL: off */
    sld_rates_t *rates;                     /* decisions per second for /v1/stats */
    uint32_t throttle_slot;                 /* its slot for CL.THROTTLE and GCRA */
    sld_workers_hooks_t workers;            /* wake / quiescent (NULL hooks: no workers yet) */
    sld_config_hooks_t config;              /* edit / reload, for the admin API */
    struct sld_retired *retired;            /* runtimes replaced, not yet freed (runtime.c) */
    sld_load_fn load_config;                /* for reloads; NULL: nothing to reload */
    const char *reload_label;               /* what a reload rereads, for its log line */
    bool test_clock;                        /* SL.TESTCLOCK exists, the clock is manual */
    _Atomic int64_t test_now;               /* us, the manual clock */
    sl_usec_t started_at;                   /* us, wall clock */
    int resp_port;                          /* the port actually listened on */
    int http_port;                          /* 0 = no HTTP front */
    uint32_t threads;
    const char *config_path;                /* NULL = the embedded default */
    atomic_bool stopping;
} sld_daemon_t;

/* The daemon's notion of now: the wall clock, or the manual test clock;
 * inside sld_batch_begin/end, the instant the batch began. */
sl_usec_t sld_now(sld_daemon_t *d);

/* Commands that arrived together are decided at one instant: one clock read
 * per batch instead of one per decision. */
void sld_batch_begin(sld_daemon_t *d);
void sld_batch_end(void);

/* The runtime in force. Valid until the calling worker's next loop
 * iteration; never hold it across callbacks. */
static inline const sld_runtime_t *sld_runtime(sld_daemon_t *d) {
    return atomic_load_explicit(&d->runtime, memory_order_acquire);
}

#endif
