/* snapshot.h -- the daemon's statistics taken once, and the one table that
 * declares each of them for both INFO and /metrics.
 *
 * A front hands over what it can see of the daemon (sld_figures_t);
 * sld_snapshot_take() reads every counter once into a plain struct, and
 * the renderers (prometheus.h, info_sections.h) write that same snapshot.
 * A statistic is one row of sld_stat_table: its INFO field, its metric
 * name, type and help, and where its value sits in the snapshot, so adding
 * one shows in both.
 *
 * Not here: counting (metrics.h, stats.h), the text formats, gathering the
 * figures from the daemon (the fronts: resp/info.c, http/).
 */
#ifndef SL_SERVER_SNAPSHOT_H
#define SL_SERVER_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/observe/metrics.h"
#include "server/observe/process.h"
#include "server/observe/stats.h"
#include "sluice.h"

/* What a front gives the snapshot, read at the moment of the scrape. */
typedef struct sld_figures {
    const sld_stats_t *stats;     /* the daemon's counters (NULL: all zero) */
    sl_store_stats_t store;       /* the local store's figures */
    sld_store_status_t status;    /* the store behind the engine (sld_engine_status) */
    uint64_t generation;          /* of the configuration in force, 0 = none yet */
    uint64_t policies;            /* configured policies */
    sl_usec_t started_at;         /* us, wall clock */
    bool process;                 /* read this process's figures (/proc) too */
    /* what only INFO shows (the RESP front fills them) */
    uint64_t commands;            /* RESP commands run */
    int64_t resp_port;
    uint64_t threads, max_connections;
    bool test_clock;
    const char *config_path;      /* "" = the embedded default */
    const char *snapshot_path;    /* "" = none */
} sld_figures_t;

/* Every statistic, read once. Plain values: copy it, keep it, render it
 * any number of times. */
typedef struct sld_snapshot {
    sld_figures_t f;              /* as given (f.stats not read again) */
    sld_counts_t counts;          /* decisions, latency, HTTP statuses */
    sld_process_t process;        /* ok = false unless f.process */
    /* the daemon's counters (stats.h), read once */
    uint64_t connections_received, connections_rejected, protocol_errors, auth_failures, decision_errors;
    uint64_t idle_closed, reloads, reload_failures, snapshot_saves, snapshot_failures;
    int64_t connected;
    sl_usec_t snapshot_last_at;   /* us, 0 = never */
    /* worked out from the above */
    sl_usec_t uptime;             /* us */
    int64_t uptime_days;
    int64_t pid;
    int64_t wb_last_sync_ms_ago;  /* -1 = never */
    uint64_t loading;             /* INFO's loading: always 0 (snapshots load before the ports open) */
    uint64_t cluster_enabled;     /* INFO's: always 1, one node owning every slot (CLUSTER SLOTS) */
    const char *version, *redis_version, *redis_mode, *store_type, *store_url;
} sld_snapshot_t;

/* Reads m's counters (m may be NULL: none) and, when f is not NULL, the figures (f is copied;
 * NULL gives decisions only, as SL.STATS wants). SL_ENOMEM: *s is empty
 * (sld_snapshot_free is still safe). */
int sld_snapshot_take(sld_snapshot_t *s, sld_metrics_t *m, const sld_figures_t *f);
void sld_snapshot_free(sld_snapshot_t *s);

/* ---- the table ------------------------------------------------------------------------------ */

/* The INFO sections, in INFO's order. */
typedef enum sld_section {
    SLD_SEC_SERVER, SLD_SEC_CLIENTS, SLD_SEC_MEMORY, SLD_SEC_PERSISTENCE, SLD_SEC_STATS,
    SLD_SEC_PROCESS, SLD_SEC_STORE, SLD_SEC_WRITE_BACK, SLD_SEC_CLUSTER, SLD_SEC_KEYSPACE, SLD_SECTIONS
} sld_section_t;

/* Each section's title ("Write-back") and the name INFO asks for it by
 * ("store": the write-back part comes with the store). */
extern const char *const sld_section_titles[SLD_SECTIONS];
extern const char *const sld_section_names[SLD_SECTIONS];

typedef enum sld_value_kind {
    SLD_V_U64,      /* uint64_t */
    SLD_V_I64,      /* int64_t */
    SLD_V_BOOL,     /* bool, 0 or 1 */
    SLD_V_USEC,     /* sl_usec_t: INFO whole seconds, /metrics seconds */
    SLD_V_DOUBLE,   /* double */
    SLD_V_TEXT,     /* const char *: INFO only, or a /metrics label (value 1) */
    SLD_V_CHARS,    /* char[]: as TEXT */
    SLD_V_KEYSPACE, /* uint64_t states: "keys=N,expires=N,avg_ttl=0" */
} sld_value_kind_t;

/* When a row shows (both renderers). */
typedef enum sld_when {
    SLD_ALWAYS,
    SLD_SHARED,      /* a shared store (Redis) is behind the engine */
    SLD_STORE_DOWN,  /* ... and it is down */
    SLD_WRITE_BACK,  /* store.sync: write_back */
    SLD_PROCESS,     /* the process figures were read */
} sld_when_t;

typedef struct sld_stat {
    sld_section_t section;        /* INFO's */
    const char *info;             /* INFO field; NULL = not in INFO */
    const char *metric;           /* Prometheus name; NULL = not in /metrics. Rows of
                                     one metric follow each other (one HELP/TYPE) */
    const char *type, *help;
    const char *label;            /* numbers: this series' labels (mode="open");
                                     text: the label the text is the value of */
    sld_value_kind_t kind;
    size_t offset;                /* of the value in sld_snapshot_t */
    sld_when_t when;
} sld_stat_t;

extern const sld_stat_t sld_stat_table[];
extern const size_t sld_stat_count;

/* Whether row r shows in snapshot s. */
bool sld_stat_shows(const sld_stat_t *r, const sld_snapshot_t *s);

#endif
