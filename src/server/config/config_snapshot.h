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
 * Not here: checking the path and interval values (config.c), where the
 * file goes (state_location.c), writing or loading it (the store), the timer
 * and the log lines (persist.c).
 */
#ifndef SL_SERVER_CONFIG_SNAPSHOT_H
#define SL_SERVER_CONFIG_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>


typedef enum {
    SLD_SNAPSHOT_DEFAULT = 0,  /* not set: on with the memory store, off with Redis */
    SLD_SNAPSHOT_OFF,          /* store.snapshot: off */
    SLD_SNAPSHOT_ON            /* store.snapshot: on, or a mapping */
} sld_snapshot_mode_t;

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

#endif
