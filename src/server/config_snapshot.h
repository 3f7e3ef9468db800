/* config_snapshot.h -- store.snapshot: whether and where sluiced keeps its
 * state across restarts.
 *
 * The setting has two shapes, `snapshot: off` (or on) and a mapping
 * `snapshot: {path: ..., interval: ...}`, which libcyaml cannot describe as
 * one field: config.c lets libcyaml skip it and asks this module to read it
 * from the YAML text. With no setting, snapshots are on by default, written
 * to `sluice.snap` in $STATE_DIRECTORY (systemd's; the first of its paths)
 * or else in the working directory, as Redis writes dump.rdb; with a Redis
 * store they are off by default (the state lives in Redis).
 *
 * Not here: checking the path and interval values (config.c), writing or
 * loading the file (the store), the timer and the log lines (sluiced.c).
 */
#ifndef SL_SERVER_CONFIG_SNAPSHOT_H
#define SL_SERVER_CONFIG_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define SLD_SNAPSHOT_FILE "sluice.snap"

/* store.snapshot as written, values not yet checked. */
typedef struct sld_snapshot_setting {
    sld_snapshot_mode_t mode;  /* DEFAULT: absent or empty */
    char *path;                /* store.snapshot.path, NULL if not given */
    char *interval;            /* store.snapshot.interval, NULL if not given */
} sld_snapshot_setting_t;

/* Reads store.snapshot from a whole configuration file (already known to be
 * valid YAML). SL_EINVAL: a shape error, "message" in err and its line in
 * *line; SL_ENOMEM. The strings are the caller's to free. */
int sld_snapshot_setting_read(const char *yaml, size_t len, sld_snapshot_setting_t *out,
                              size_t *line, char *err, size_t err_len);
void sld_snapshot_setting_free(sld_snapshot_setting_t *s);

/* Settles cfg->snapshot_path after the file and the command line:
 * `override` is --snapshot's argument (a path or "off") or NULL. Afterwards
 * snapshot_path is absolute, or NULL when no snapshot is written, and
 * snapshot_origin says why ("store.snapshot.path", "--snapshot",
 * "$STATE_DIRECTORY", "the working directory", "store.snapshot: off",
 * "--snapshot off", "the Redis store"). SL_ENOMEM, or SL_EINVAL with a
 * message (a path too long). */
int sld_snapshot_resolve(sld_config_t *cfg, const char *override, char *err, size_t err_len);

#endif
