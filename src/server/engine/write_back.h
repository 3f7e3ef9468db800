/* write_back.h -- store.sync: write_back, the articles' write-back cache.
 *
 * Policies are decided in this daemon's memory store, at memory speed, and
 * every store.sync_interval the keys this daemon charged are synced: their
 * charges are merged (in C, by the library) onto the state kept in Redis,
 * written back with a compare-and-set (sync.lua), and the merged state,
 * which holds what the other daemons charged too, replaces the local one.
 *
 * What it costs: between two syncs a daemon does not see what the others
 * admitted. docs/distributed.md gives the bound and its measurement; in
 * short, N daemons admit at most (N-1) x (capacity + rate x (interval +
 * round trip)) more than an exact limiter, in all for gcra, token_bucket
 * and leaky_bucket (what they over-admit is charged as debt, up to
 * store.nodes times a limit's capacity), per window for the window
 * algorithms.
 *
 * Runs on the main loop with a Redis client of its own; the journal of
 * charges (charge_journal.h), filled by the workers under the memory
 * store's key lock, is its own module.
 * While Redis cannot be reached, decisions go on locally and the charges
 * wait (up to a bound) for the next sync that succeeds.
 */
#ifndef SL_SERVER_WRITE_BACK_H
#define SL_SERVER_WRITE_BACK_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "sluice.h"

/* The daemon it syncs for (server/state/daemon.h, which this header does
 * not include: the daemon is a room above the engine). */
typedef struct sld_daemon sld_daemon_t;

typedef struct sld_write_back sld_write_back_t;

typedef struct sld_write_back_stats {
    uint64_t syncs;      /* keys written back */
    uint64_t conflicts;  /* compare-and-sets lost to another daemon, then retried */
    uint64_t failures;   /* syncs that got no answer (their charges wait) */
    uint64_t dropped;    /* charges given up: journal full, or policy gone */
    uint64_t keys;       /* keys in the journal */
    uint64_t unsynced;   /* ... with charges Redis has not merged yet */
    sl_usec_t last_sync; /* us, wall clock, of the last successful sync; 0 = none */
} sld_write_back_stats_t;

/* Starts syncing d's write-back policies on `loop` (the main loop), with a
 * client of d->remote's store. Installs the journal on d->store: call it
 * before the workers serve. */
int sld_write_back_start(sld_daemon_t *d, uv_loop_t *loop, sld_write_back_t **out);

/* Stops the timer and closes the client; the loop must run on until its
 * handles are closed. Charges not synced by then stay local. */
void sld_write_back_stop(sld_write_back_t *w);
void sld_write_back_free(sld_write_back_t *w);

void sld_write_back_stats(sld_write_back_t *w, sld_write_back_stats_t *out);

/* The Redis key of p's shared state of `key` (p is a write-back policy or
 * its pool): writes up to cap bytes into buf, returns the length. */
size_t sld_write_back_key(const sl_policy_t *p, const void *key, size_t key_len, char *buf,
                          size_t cap);

/* Forgets what the journal holds of (p, key): a reset key starts afresh. */
void sld_write_back_forget(sld_write_back_t *w, const sl_policy_t *p, const void *key,
                           size_t key_len);

#endif
