/* persist.h -- sluiced's state across restarts: the snapshot loaded at start,
 * written on a timer and at shutdown, and what the log says about it.
 *
 * Where the file is comes from the configuration in force
 * (cfg->snapshot_path, settled by sld_snapshot_resolve()); a reload may move
 * it or change the interval, from the next write on.
 *
 * Not here: the file format (src/store/snapshot.c), the setting
 * (config_snapshot.c).
 */
#ifndef SL_SERVER_PERSIST_H
#define SL_SERVER_PERSIST_H

#include <uv.h>

#include "server/state/daemon.h"

/* Loads the snapshot into d->store, before the workers start, and logs where
 * the state is kept and what was found (N states, nothing yet, or a file
 * that could not be used: moved aside to PATH.bad-<time>, never overwritten). */
void sld_persist_load(sld_daemon_t *d);

/* Arms the periodic write on `loop` (the main loop). */
void sld_persist_start(sld_daemon_t *d, uv_loop_t *loop);

/* Follows a reload's interval; called from the main loop's maintenance tick. */
void sld_persist_tick(sld_daemon_t *d);

/* Writes the snapshot now; `why` is for the log ("periodic", "shutdown"). */
void sld_persist_save(sld_daemon_t *d, const char *why);

/* The last write at shutdown: stops the timer (its handle is closed on the
 * loop, which must run once more) and saves. */
void sld_persist_finish(sld_daemon_t *d);

#endif
