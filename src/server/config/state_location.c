/* state_location.c -- where sluiced keeps its state (state_location.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config/state_location.h"

#define MAX_PATH_BYTES 4096  /* as config.c allows for store.snapshot.path */

/* dir + "/" + name into a fresh string; NULL when out of memory. */
static char *joined(const char *dir, size_t dir_len, const char *name) {
    while (dir_len > 1 && dir[dir_len - 1] == '/')
        dir_len--;
    size_t n = dir_len + 1 + strlen(name) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%.*s/%s", (int)dir_len, dir, name);
    return p;
}

/* A relative path made absolute against the working directory, so that the
 * log and INFO say exactly where the file is. */
static char *absolute(const char *path) {
    if (path[0] == '/')
        return strdup(path);
    char cwd[MAX_PATH_BYTES];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return strdup(path); /* still right: relative to the same directory */
    return joined(cwd, strlen(cwd), path);
}

int sld_snapshot_resolve(sld_config_t *cfg, const char *override, char *err, size_t err_len) {
    if (override) {
        free(cfg->snapshot_path);
        cfg->snapshot_path = NULL;
        if (strcmp(override, "off") == 0) {
            cfg->snapshot_mode = SLD_SNAPSHOT_OFF;
            cfg->snapshot_origin = "--snapshot off";
            return SL_OK;
        }
        if ((cfg->snapshot_path = absolute(override)) == NULL)
            goto oom;
        cfg->snapshot_mode = SLD_SNAPSHOT_ON;
        cfg->snapshot_origin = "--snapshot";
    } else if (cfg->snapshot_path) {
        char *abs = absolute(cfg->snapshot_path);
        if (abs == NULL)
            goto oom;
        free(cfg->snapshot_path);
        cfg->snapshot_path = abs;
        if (cfg->snapshot_origin == NULL)
            cfg->snapshot_origin = "store.snapshot.path";
    } else if (cfg->snapshot_mode == SLD_SNAPSHOT_OFF) {
        cfg->snapshot_origin = "store.snapshot: off";
        return SL_OK;
    } else if (cfg->snapshot_mode == SLD_SNAPSHOT_DEFAULT && cfg->store_url) {
        cfg->snapshot_origin = "the Redis store";
        return SL_OK;
    } else {
        /* systemd's StateDirectory= may list several, colon-separated */
        const char *state = getenv("STATE_DIRECTORY");
        size_t n = state ? strcspn(state, ":") : 0;
        if (n > 0) {
            cfg->snapshot_path = joined(state, n, SLD_SNAPSHOT_FILE);
            cfg->snapshot_origin = "$STATE_DIRECTORY";
        } else {
            cfg->snapshot_path = absolute(SLD_SNAPSHOT_FILE);
            cfg->snapshot_origin = "the working directory";
        }
        if (cfg->snapshot_path == NULL)
            goto oom;
    }
    if (strlen(cfg->snapshot_path) >= MAX_PATH_BYTES) {
        snprintf(err, err_len, "the snapshot path %.64s... is longer than %d bytes",
                 cfg->snapshot_path, MAX_PATH_BYTES - 1);
        return SL_EINVAL;
    }
    return SL_OK;
oom:
    snprintf(err, err_len, "out of memory");
    return SL_ENOMEM;
}
