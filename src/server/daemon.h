/* daemon.h -- the state every part of sluiced shares.
 *
 * One store and one limiter serve every worker thread. The configuration in
 * force is a runtime (config + compiled policies) behind an atomic pointer:
 * a reload builds a new one and swaps it in; the old one is freed once every
 * worker has been through a loop iteration since (server.c). Counters are
 * atomics read by INFO.
 */
#ifndef SL_SERVER_DAEMON_H
#define SL_SERVER_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "policies.h"
#include "sluice.h"
#include "throttle.h"

typedef struct sld_runtime {
    sld_config_t *cfg;
    sld_policies_t *policies;
    uint64_t generation;  /* 1 for the configuration loaded at start, +1 per reload */
} sld_runtime_t;

typedef struct sld_stats {
    _Atomic uint64_t connections_received;
    _Atomic uint64_t connections_rejected;  /* over max_connections */
    _Atomic int64_t connected;
    _Atomic uint64_t commands;
    _Atomic uint64_t allowed;               /* decisions that let the request through */
    _Atomic uint64_t denied;
    _Atomic uint64_t protocol_errors;       /* connections closed for bad input */
    _Atomic uint64_t idle_closed;
    _Atomic uint64_t reloads;
    _Atomic uint64_t reload_failures;
    _Atomic uint64_t snapshot_saves;
    _Atomic uint64_t snapshot_failures;
    _Atomic int64_t snapshot_last_at;       /* us, 0 = never */
} sld_stats_t;

typedef struct sld_daemon {
    sl_store_t *store;
    sl_limiter_t *limiter;
    _Atomic(sld_runtime_t *) runtime;
    sld_throttles_t *throttles;             /* CL.THROTTLE / GCRA parameter sets */
    sld_stats_t stats;
    bool test_clock;                        /* SL.TESTCLOCK exists, the clock is manual */
    _Atomic int64_t test_now;               /* us, the manual clock */
    sl_usec_t started_at;                   /* us, wall clock */
    int resp_port;                          /* the port actually listened on */
    uint32_t threads;
    const char *config_path;                /* NULL = the embedded default */
    atomic_bool stopping;
} sld_daemon_t;

/* The daemon's notion of now: the wall clock, or the manual test clock. */
sl_usec_t sld_now(sld_daemon_t *d);

/* The runtime in force. Valid until the calling worker's next loop
 * iteration; never hold it across callbacks. */
static inline const sld_runtime_t *sld_runtime(sld_daemon_t *d) {
    return atomic_load_explicit(&d->runtime, memory_order_acquire);
}

#endif
