/* snapshot.c -- every statistic read once, and the table of them (see
 * snapshot.h). */
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "server/observe/snapshot.h"

const char *const sld_section_titles[SLD_SECTIONS] = {
    "Server", "Clients", "Memory", "Persistence", "Stats", "Process", "Store", "Write-back", "Cluster",
    "Keyspace"};
const char *const sld_section_names[SLD_SECTIONS] = {
    "server", "clients", "memory", "persistence", "stats", "process", "store", "store", "cluster",
    "keyspace"};

int sld_snapshot_take(sld_snapshot_t *s, sld_metrics_t *m, const sld_figures_t *f) {
    memset(s, 0, sizeof *s);
    s->wb_last_sync_ms_ago = -1;
    s->cluster_enabled = 1; /* redis-py's RedisCluster asks before CLUSTER SLOTS */
    int rc = m ? sld_metrics_read(m, &s->counts) : SL_OK;
    if (rc != SL_OK || f == NULL)
        return rc;
    s->f = *f;
    const sld_stats_t *st = f->stats;
    if (st) {
        s->connections_received = atomic_load(&st->connections_received);
        s->connections_rejected = atomic_load(&st->connections_rejected);
        s->protocol_errors = atomic_load(&st->protocol_errors);
        s->auth_failures = atomic_load(&st->auth_failures);
        s->decision_errors = atomic_load(&st->decision_errors);
        s->idle_closed = atomic_load(&st->idle_closed);
        s->reloads = atomic_load(&st->reloads);
        s->reload_failures = atomic_load(&st->reload_failures);
        s->snapshot_saves = atomic_load(&st->snapshot_saves);
        s->snapshot_failures = atomic_load(&st->snapshot_failures);
        s->connected = atomic_load(&st->connected);
        s->snapshot_last_at = atomic_load(&st->snapshot_last_at);
    }
    if (f->process)
        sld_process_read(&s->process);
    sl_usec_t now = sl_clock_realtime(NULL); /* the wall clock, whatever the test clock says */
    s->uptime = now - f->started_at;
    s->uptime_days = s->uptime / SL_USEC_PER_SEC / 86400;
    s->pid = (int64_t)getpid();
    if (f->status.wb_last_sync)
        s->wb_last_sync_ms_ago = (now - f->status.wb_last_sync) / 1000;
    s->version = SL_VERSION_STRING;
    s->redis_version = "7.0.0"; /* for clients that check */
    s->redis_mode = "standalone";
    s->store_type = f->status.shared ? "redis" : "memory";
    s->store_url = f->status.describe ? f->status.describe : "";
    if (s->f.config_path == NULL)
        s->f.config_path = "";
    if (s->f.snapshot_path == NULL)
        s->f.snapshot_path = "";
    return SL_OK;
}

void sld_snapshot_free(sld_snapshot_t *s) {
    sld_counts_free(&s->counts);
}

bool sld_stat_shows(const sld_stat_t *r, const sld_snapshot_t *s) {
    switch (r->when) {
    case SLD_SHARED: return s->f.status.shared;
    case SLD_STORE_DOWN: return s->f.status.shared && !s->f.status.up;
    case SLD_WRITE_BACK: return s->f.status.write_back;
    case SLD_PROCESS: return s->process.ok;
    default: return true;
    }
}

#define AT(field) offsetof(sld_snapshot_t, field)
#define C "counter"
#define G "gauge"

/* INFO's order; one metric's rows together. */
const sld_stat_t sld_stat_table[] = {
    {SLD_SEC_SERVER, "redis_version", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(redis_version), SLD_ALWAYS},
    {SLD_SEC_SERVER, "sluice_version", "sluice_build_info", G, "The running version.", "version",
     SLD_V_TEXT, AT(version), SLD_ALWAYS},
    {SLD_SEC_SERVER, "redis_mode", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(redis_mode), SLD_ALWAYS},
    {SLD_SEC_SERVER, "process_id", NULL, NULL, NULL, NULL, SLD_V_I64, AT(pid), SLD_ALWAYS},
    {SLD_SEC_SERVER, "tcp_port", NULL, NULL, NULL, NULL, SLD_V_I64, AT(f.resp_port), SLD_ALWAYS},
    {SLD_SEC_SERVER, "uptime_in_seconds", "sluice_uptime_seconds", G, "Seconds since start.", NULL,
     SLD_V_USEC, AT(uptime), SLD_ALWAYS},
    {SLD_SEC_SERVER, "uptime_in_days", NULL, NULL, NULL, NULL, SLD_V_I64, AT(uptime_days), SLD_ALWAYS},
    {SLD_SEC_SERVER, "io_threads_active", NULL, NULL, NULL, NULL, SLD_V_U64, AT(f.threads), SLD_ALWAYS},
    {SLD_SEC_SERVER, "config_file", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(f.config_path), SLD_ALWAYS},
    {SLD_SEC_SERVER, "test_clock", NULL, NULL, NULL, NULL, SLD_V_BOOL, AT(f.test_clock), SLD_ALWAYS},

    {SLD_SEC_CLIENTS, "connected_clients", "sluice_connections", G, "Open client connections.", NULL,
     SLD_V_I64, AT(connected), SLD_ALWAYS},
    {SLD_SEC_CLIENTS, "maxclients", NULL, NULL, NULL, NULL, SLD_V_U64, AT(f.max_connections), SLD_ALWAYS},

    {SLD_SEC_MEMORY, "used_memory", "sluice_memory_bytes", G, "Memory held by the store.", NULL,
     SLD_V_U64, AT(f.store.bytes), SLD_ALWAYS},
    {SLD_SEC_MEMORY, "maxmemory", "sluice_max_memory_bytes", G, "The store's cap, 0 = none.", NULL,
     SLD_V_U64, AT(f.store.max_memory), SLD_ALWAYS},
    {SLD_SEC_MEMORY, "states", "sluice_states", G, "Live states in the store.", NULL, SLD_V_U64,
     AT(f.store.states), SLD_ALWAYS},
    {SLD_SEC_MEMORY, "evicted_states", "sluice_evictions_total", C,
     "States evicted by the cap before recovering.", NULL, SLD_V_U64, AT(f.store.evictions), SLD_ALWAYS},
    {SLD_SEC_MEMORY, "reclaimed_states", "sluice_reclaimed_total", C, "Recovered states freed.", NULL,
     SLD_V_U64, AT(f.store.reclaimed), SLD_ALWAYS},

    {SLD_SEC_PERSISTENCE, "loading", NULL, NULL, NULL, NULL, SLD_V_U64, AT(loading), SLD_ALWAYS},
    {SLD_SEC_PERSISTENCE, "snapshot_path", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(f.snapshot_path),
     SLD_ALWAYS},
    {SLD_SEC_PERSISTENCE, "snapshot_saves", "sluice_snapshot_saves_total", C, "Snapshots written.", NULL,
     SLD_V_U64, AT(snapshot_saves), SLD_ALWAYS},
    {SLD_SEC_PERSISTENCE, "snapshot_failures", "sluice_snapshot_failures_total", C,
     "Snapshots that could not be written.", NULL, SLD_V_U64, AT(snapshot_failures), SLD_ALWAYS},
    {SLD_SEC_PERSISTENCE, "last_snapshot_time", NULL, NULL, NULL, NULL, SLD_V_USEC, AT(snapshot_last_at),
     SLD_ALWAYS},

    {SLD_SEC_STATS, "total_connections_received", "sluice_connections_received_total", C,
     "Connections accepted.", NULL, SLD_V_U64, AT(connections_received), SLD_ALWAYS},
    {SLD_SEC_STATS, "total_commands_processed", NULL, NULL, NULL, NULL, SLD_V_U64, AT(f.commands),
     SLD_ALWAYS},
    {SLD_SEC_STATS, "rejected_connections", "sluice_connections_rejected_total", C,
     "Connections refused over max_connections.", NULL, SLD_V_U64, AT(connections_rejected), SLD_ALWAYS},
    /* per policy in /metrics (sluice_decisions_total, prometheus.c): here the sums */
    {SLD_SEC_STATS, "decisions_allowed", NULL, NULL, NULL, NULL, SLD_V_U64, AT(counts.total[SLD_ALLOWED]),
     SLD_ALWAYS},
    {SLD_SEC_STATS, "decisions_denied", NULL, NULL, NULL, NULL, SLD_V_U64, AT(counts.total[SLD_DENIED]),
     SLD_ALWAYS},
    {SLD_SEC_STATS, "decisions_limited", NULL, NULL, NULL, NULL, SLD_V_U64, AT(counts.total[SLD_LIMITED]),
     SLD_ALWAYS},
    {SLD_SEC_STATS, "decision_errors", "sluice_decision_errors_total", C,
     "Decisions the store could not make (full, failing).", NULL, SLD_V_U64, AT(decision_errors),
     SLD_ALWAYS},
    {SLD_SEC_STATS, "protocol_errors", "sluice_protocol_errors_total", C,
     "RESP connections closed for bad input.", NULL, SLD_V_U64, AT(protocol_errors), SLD_ALWAYS},
    {SLD_SEC_STATS, "auth_failures", "sluice_auth_failures_total", C,
     "RESP AUTH attempts with a wrong password.", NULL, SLD_V_U64, AT(auth_failures), SLD_ALWAYS},
    {SLD_SEC_STATS, "idle_timeouts", "sluice_idle_timeouts_total", C, "Connections closed for idleness.",
     NULL, SLD_V_U64, AT(idle_closed), SLD_ALWAYS},
    {SLD_SEC_STATS, "config_reloads", "sluice_config_reloads_total", C,
     "Configurations applied since start.", NULL, SLD_V_U64, AT(reloads), SLD_ALWAYS},
    {SLD_SEC_STATS, "config_reload_failures", "sluice_config_reload_failures_total", C,
     "Reloads refused (bad file).", NULL, SLD_V_U64, AT(reload_failures), SLD_ALWAYS},
    {SLD_SEC_STATS, "config_generation", "sluice_config_generation", G,
     "Generation of the configuration in force.", NULL, SLD_V_U64, AT(f.generation), SLD_ALWAYS},
    {SLD_SEC_STATS, "policies", NULL, NULL, NULL, NULL, SLD_V_U64, AT(f.policies), SLD_ALWAYS},

    /* as the Prometheus client libraries name and define them */
    {SLD_SEC_PROCESS, "process_cpu_seconds", "process_cpu_seconds_total", C,
     "Total user and system CPU time spent in seconds.", NULL, SLD_V_DOUBLE, AT(process.cpu_seconds),
     SLD_PROCESS},
    {SLD_SEC_PROCESS, "process_resident_memory_bytes", "process_resident_memory_bytes", G,
     "Resident memory size in bytes.", NULL, SLD_V_U64, AT(process.resident_bytes), SLD_PROCESS},
    {SLD_SEC_PROCESS, "process_virtual_memory_bytes", "process_virtual_memory_bytes", G,
     "Virtual memory size in bytes.", NULL, SLD_V_U64, AT(process.virtual_bytes), SLD_PROCESS},
    {SLD_SEC_PROCESS, "process_open_fds", "process_open_fds", G, "Number of open file descriptors.", NULL,
     SLD_V_U64, AT(process.open_fds), SLD_PROCESS},
    {SLD_SEC_PROCESS, "process_max_fds", "process_max_fds", G, "Maximum number of open file descriptors.",
     NULL, SLD_V_U64, AT(process.max_fds), SLD_PROCESS},
    {SLD_SEC_PROCESS, "process_start_time_seconds", "process_start_time_seconds", G,
     "Start time of the process since unix epoch in seconds.", NULL, SLD_V_DOUBLE,
     AT(process.start_time), SLD_PROCESS},

    {SLD_SEC_STORE, "store_type", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(store_type), SLD_ALWAYS},
    {SLD_SEC_STORE, "store_url", NULL, NULL, NULL, NULL, SLD_V_TEXT, AT(store_url), SLD_SHARED},
    {SLD_SEC_STORE, "store_up", "sluice_store_up", G, "Whether Redis answers (1) or decisions fall back (0).",
     NULL, SLD_V_BOOL, AT(f.status.up), SLD_SHARED},
    {SLD_SEC_STORE, "store_breaker_open", "sluice_store_breaker_open", G,
     "Whether a circuit breaker to Redis is open.", NULL, SLD_V_BOOL, AT(f.status.breaker_open), SLD_SHARED},
    {SLD_SEC_STORE, "store_calls", "sluice_store_calls_total", C, "Evaluations sent to Redis.", NULL,
     SLD_V_U64, AT(f.status.calls), SLD_SHARED},
    {SLD_SEC_STORE, "store_failures", "sluice_store_failures_total", C,
     "Evaluations Redis did not answer usably.", NULL, SLD_V_U64, AT(f.status.failures), SLD_SHARED},
    {SLD_SEC_STORE, "store_timeouts", "sluice_store_timeouts_total", C, "Evaluations that timed out.", NULL,
     SLD_V_U64, AT(f.status.timeouts), SLD_SHARED},
    {SLD_SEC_STORE, "store_reconnects", "sluice_store_reconnects_total", C, "Reconnections to Redis.", NULL,
     SLD_V_U64, AT(f.status.reconnects), SLD_SHARED},
    {SLD_SEC_STORE, "store_fallback_open", "sluice_store_fallbacks_total", C,
     "Decisions made by on_store_failure.", "mode=\"open\"", SLD_V_U64, AT(f.status.fallback_open),
     SLD_SHARED},
    {SLD_SEC_STORE, "store_fallback_closed", "sluice_store_fallbacks_total", C,
     "Decisions made by on_store_failure.", "mode=\"closed\"", SLD_V_U64, AT(f.status.fallback_closed),
     SLD_SHARED},
    {SLD_SEC_STORE, "store_fallback_local", "sluice_store_fallbacks_total", C,
     "Decisions made by on_store_failure.", "mode=\"local\"", SLD_V_U64, AT(f.status.fallback_local),
     SLD_SHARED},
    {SLD_SEC_STORE, "store_last_error", NULL, NULL, NULL, NULL, SLD_V_CHARS, AT(f.status.last_error),
     SLD_SHARED},
    /* why, as a label: Prometheus values are numbers */
    {SLD_SEC_STORE, NULL, "sluice_store_down_info", G, "Why the store is down (the client's last error).",
     "reason", SLD_V_CHARS, AT(f.status.last_error), SLD_STORE_DOWN},

    {SLD_SEC_WRITE_BACK, "write_back_keys", "sluice_write_back_keys", G, "Keys in the write-back journal.",
     NULL, SLD_V_U64, AT(f.status.wb_keys), SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_unsynced_keys", "sluice_write_back_unsynced_keys", G,
     "Keys with charges Redis has not merged yet.", NULL, SLD_V_U64, AT(f.status.wb_unsynced),
     SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_syncs", "sluice_write_back_syncs_total", C,
     "Keys whose charges were merged into Redis.", NULL, SLD_V_U64, AT(f.status.wb_syncs), SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_conflicts", "sluice_write_back_conflicts_total", C,
     "Syncs another daemon wrote first (merged again).", NULL, SLD_V_U64, AT(f.status.wb_conflicts),
     SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_failures", "sluice_write_back_failures_total", C,
     "Syncs without an answer (their charges wait).", NULL, SLD_V_U64, AT(f.status.wb_failures),
     SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_dropped", "sluice_write_back_dropped_total", C,
     "Charges not shared (journal full, policy removed).", NULL, SLD_V_U64, AT(f.status.wb_dropped),
     SLD_WRITE_BACK},
    {SLD_SEC_WRITE_BACK, "write_back_last_sync_ms_ago", NULL, NULL, NULL, NULL, SLD_V_I64,
     AT(wb_last_sync_ms_ago), SLD_WRITE_BACK},

    {SLD_SEC_CLUSTER, "cluster_enabled", NULL, NULL, NULL, NULL, SLD_V_U64, AT(cluster_enabled),
     SLD_ALWAYS},

    {SLD_SEC_KEYSPACE, "db0", NULL, NULL, NULL, NULL, SLD_V_KEYSPACE, AT(f.store.states), SLD_ALWAYS},
};
const size_t sld_stat_count = sizeof sld_stat_table / sizeof sld_stat_table[0];
