/* stats.h -- the daemon's own counters, as INFO and /metrics report them.
 *
 * Written where things happen (accepts, closes, reloads, snapshots) with
 * relaxed atomics, read by INFO and /metrics from any thread.
 *
 * Not here: decisions, latency and HTTP statuses (metrics.c, per worker),
 * the store's figures (the store and the engine).
 */
#ifndef SL_SERVER_STATS_H
#define SL_SERVER_STATS_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct sld_stats {
    _Atomic uint64_t connections_received;
    _Atomic uint64_t connections_rejected;  /* over max_connections */
    _Atomic int64_t connected;
    _Atomic uint64_t protocol_errors;       /* connections closed for bad input */
    _Atomic uint64_t auth_failures;         /* AUTH / HELLO AUTH with a wrong password */
    _Atomic uint64_t decision_errors;       /* the store could not decide (full, failing) */
    _Atomic uint64_t idle_closed;
    _Atomic uint64_t reloads;
    _Atomic uint64_t reload_failures;
    _Atomic uint64_t snapshot_saves;
    _Atomic uint64_t snapshot_failures;
    _Atomic int64_t snapshot_last_at;       /* us, 0 = never */
} sld_stats_t;

#endif
