/* persist.c -- the snapshot's life in the daemon (see persist.h).
 *
 * Everything here runs on the main thread: the load before the workers
 * start, the timer and the last write after they stopped. Saving blocks one
 * shard at a time (the store copies a shard under its lock and writes it
 * outside), so the workers keep deciding while it runs.
 *
 * A file that cannot be loaded is never overwritten: it is renamed aside,
 * and if even that fails, this run writes no snapshot there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/base/log.h"
#include "server/daemon/persist.h"

static uv_timer_t timer;
static bool armed;
static sl_usec_t armed_interval;
static char *kept_path; /* a file that could not be loaded nor moved: not to be written */

/* "No space left on device (ENOSPC)": the system's words and the name to
 * search for. */
static const char *show_errno(int e, char *buf, size_t n) {
    const char *name = strerrorname_np(e);
    snprintf(buf, n, "%s (%s)", strerror(e), name ? name : "?");
    return buf;
}

/* What went wrong, as precisely as the store can say. */
static const char *cause(int rc, int sys, char *buf, size_t n) {
    if (rc == SL_EIO)
        return show_errno(sys, buf, n);
    snprintf(buf, n, "%s", sl_strerror(rc));
    return buf;
}

static const char *schedule(const sld_config_t *cfg, char *buf, size_t n) {
    char iv[32];
    if (cfg->snapshot_interval > 0)
        snprintf(buf, n, "every %s and at shutdown", sld_config_duration_text(cfg->snapshot_interval, iv, sizeof iv));
    else
        snprintf(buf, n, "at shutdown");
    return buf;
}

/* Said at start, not a minute later at the first write. */
static void warn_if_unwritable(const char *path) {
    char *copy = strdup(path);
    if (copy == NULL)
        return;
    const char *dir = dirname(copy);
    if (access(dir, W_OK | X_OK) != 0) {
        char why[160];
        sld_warn("state: cannot write in %s: %s: no snapshot will be written until it can", dir,
                 show_errno(errno, why, sizeof why));
    }
    free(copy);
}

void sld_persist_load(sld_daemon_t *d) {
    const sld_config_t *cfg = sld_runtime(d)->cfg;
    const char *path = cfg->snapshot_path;
    char when[64], why[160];
    if (path == NULL && cfg->store_url && cfg->snapshot_mode == SLD_SNAPSHOT_DEFAULT) {
        sld_info("state: kept in Redis; no snapshot of this daemon's memory (the local fallback's "
                 "counters start afresh; store.snapshot: on writes one)");
        return;
    }
    if (path == NULL) {
        sld_info("state: no snapshots (%s): a restart starts every key afresh",
                 cfg->snapshot_origin ? cfg->snapshot_origin : "off");
        return;
    }
    schedule(cfg, when, sizeof when);
    if (access(path, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
        sld_info("state: no snapshot at %s (%s) yet: starting empty; writing it %s", path,
                 cfg->snapshot_origin, when);
        warn_if_unwritable(path);
        return;
    }
    size_t loaded = 0;
    int rc = sl_store_load(d->store, path, sld_now(d), &loaded);
    int sys = errno;
    if (rc == SL_OK) {
        sld_info("state: loaded %zu state%s from the snapshot %s (%s); writing it %s", loaded,
                 loaded == 1 ? "" : "s", path, cfg->snapshot_origin, when);
        return;
    }
    cause(rc, sys, why, sizeof why);
    char aside[4200];
    snprintf(aside, sizeof aside, "%s.bad-%lld", path,
             (long long)(sl_clock_realtime(NULL) / SL_USEC_PER_SEC));
    if (rename(path, aside) == 0) {
        sld_error("state: cannot load the snapshot %s: %s; STARTING EMPTY; the file was moved to %s "
                  "for inspection; writing the state %s to %s", path, why, aside, when, path);
        return;
    }
    char moved[160];
    show_errno(errno, moved, sizeof moved);
    kept_path = strdup(path);
    sld_error("state: cannot load the snapshot %s: %s; STARTING EMPTY; it cannot be moved aside "
              "either (%s), so this run writes NO snapshot there, to keep it", path, why, moved);
}

void sld_persist_save(sld_daemon_t *d, const char *why) {
    const char *path = sld_runtime(d)->cfg->snapshot_path;
    if (path == NULL)
        return;
    if (kept_path && strcmp(kept_path, path) == 0) {
        atomic_fetch_add(&d->stats.snapshot_failures, 1);
        sld_error("state: not writing the snapshot (%s) over %s, which could not be loaded: move "
                  "it away or set another store.snapshot.path", why, path);
        return;
    }
    sl_usec_t began = sl_clock_realtime(NULL);
    int rc = sl_store_save(d->store, path, sld_now(d));
    int sys = errno;
    if (rc == SL_OK) {
        sl_usec_t ended = sl_clock_realtime(NULL);
        atomic_fetch_add(&d->stats.snapshot_saves, 1);
        atomic_store(&d->stats.snapshot_last_at, ended);
        /* how long the write took: a decision made after the write began may
         * or may not be in the file, so whoever reasons about what a crash
         * can lose needs the beginning, not only the line's own time */
        sld_debug("state: snapshot written to %s (%s) in %.1f ms", path, why, (double)(ended - began) / 1000.0);
        return;
    }
    char text[160];
    atomic_fetch_add(&d->stats.snapshot_failures, 1);
    sld_error("state: cannot write the snapshot (%s) to %s: %s; the file keeps the previous "
              "snapshot", why, path, cause(rc, sys, text, sizeof text));
}

static void on_timer(uv_timer_t *t) { sld_persist_save(t->data, "periodic"); }

static void arm(sld_daemon_t *d) {
    sl_usec_t interval = sld_runtime(d)->cfg->snapshot_interval;
    armed_interval = interval;
    if (interval <= 0) {
        uv_timer_stop(&timer);
        return;
    }
    uint64_t ms = (uint64_t)(interval + 999) / 1000;
    uv_timer_start(&timer, on_timer, ms, ms);
}

void sld_persist_start(sld_daemon_t *d, uv_loop_t *loop) {
    uv_timer_init(loop, &timer);
    timer.data = d;
    armed = true;
    arm(d);
}

void sld_persist_tick(sld_daemon_t *d) {
    if (armed && sld_runtime(d)->cfg->snapshot_interval != armed_interval)
        arm(d);
}

void sld_persist_finish(sld_daemon_t *d) {
    if (armed) {
        uv_timer_stop(&timer);
        uv_close((uv_handle_t *)&timer, NULL);
        armed = false;
    }
    sld_persist_save(d, "shutdown");
    free(kept_path);
    kept_path = NULL;
}
