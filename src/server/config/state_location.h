/* state_location.h -- where sluiced keeps its state across restarts.
 *
 * After the file and the command line are read, the snapshot's place is
 * settled once: an explicit path, or by default sluice.snap in
 * $STATE_DIRECTORY (systemd's; the first of its paths) or else in the working
 * directory, as Redis writes dump.rdb; nowhere with `off`, or by default with
 * a Redis store (the state lives in Redis).
 *
 * Not here: reading store.snapshot (config_snapshot.c), the timer, the log
 * lines and the file itself (persist.c, the store).
 */
#ifndef SL_SERVER_STATE_LOCATION_H
#define SL_SERVER_STATE_LOCATION_H

#include <stddef.h>

#include "server/config/config.h"

#define SLD_SNAPSHOT_FILE "sluice.snap"

/* Settles cfg->snapshot_path after the file and the command line:
 * `override` is --snapshot's argument (a path or "off") or NULL. Afterwards
 * snapshot_path is absolute, or NULL when no snapshot is written, and
 * snapshot_origin says why ("store.snapshot.path", "--snapshot",
 * "$STATE_DIRECTORY", "the working directory", "store.snapshot: off",
 * "--snapshot off", "the Redis store"). SL_ENOMEM, or SL_EINVAL with a
 * message (a path too long). */
int sld_snapshot_resolve(sld_config_t *cfg, const char *override, char *err, size_t err_len);

#endif
