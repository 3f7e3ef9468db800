/* test_metrics.c -- what the daemon reports (src/server/observe/): counting
 * decisions per policy and result (metrics.c), the snapshot and its table
 * (snapshot.c), its two renderings, Prometheus text (prometheus.c) and INFO
 * sections (info_sections.c), and the process figures (process.c). Fixed
 * figures throughout; only the last test reads this process's own. */
#include <ctype.h>
#include <time.h>

#include "rig.h"
#include "server/observe/info_sections.h"
#include "server/observe/metrics.h"
#include "server/observe/process.h"
#include "server/observe/prometheus.h"
#include "server/observe/snapshot.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static char *text_of(sld_buf_t *b) {
    assert_false(b->failed);
    char *t = malloc(b->len + 1);
    assert_non_null(t);
    memcpy(t, b->data ? b->data : "", b->len);
    t[b->len] = '\0';
    return t;
}

static void expect_contains(const char *text, const char *want) {
    if (strstr(text, want) == NULL)
        fail_msg("missing %s\n--- in ---\n%s", want, text);
}

static void expect_lacks(const char *text, const char *unwanted) {
    if (strstr(text, unwanted) != NULL)
        fail_msg("unexpected %s\n--- in ---\n%s", unwanted, text);
}

static size_t occurrences(const char *text, const char *what) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static bool metric_name_ok(const char *s, size_t len) {
    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return false;
    return true;
}

/* Checks the text format 0.0.4 line by line, as a scraper reads it: every
 * sample belongs to the family its HELP and TYPE announced, a family is
 * announced once, no sample repeats, values are numbers. */
static void expect_prometheus_text(const char *text) {
    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    char family[128] = "", seen[64][128];
    size_t nseen = 0, nkeys = 0;
    char *keys[512];
    char *copy = strdup(text), *save = NULL;
    assert_non_null(copy);
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0) {
            const char *name = line + 7, *sp = strchr(name, ' ');
            assert_non_null(sp);
            assert_true(metric_name_ok(name, (size_t)(sp - name)));
            snprintf(family, sizeof family, "%.*s", (int)(sp - name), name);
            for (size_t i = 0; i < nseen; i++)
                if (strcmp(seen[i], family) == 0)
                    fail_msg("family announced twice: %s", family);
            assert_true(nseen < 64);
            strcpy(seen[nseen++], family);
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            const char *name = line + 7;
            size_t n = strlen(family);
            assert_true(strncmp(name, family, n) == 0 && name[n] == ' ');
            const char *type = name + n + 1;
            assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            continue;
        }
        assert_true(line[0] != '#');
        size_t n = strlen(family);
        if (strncmp(line, family, n) != 0)
            fail_msg("sample outside its family %s: %s", family, line);
        const char *value = strrchr(line, ' ');
        assert_non_null(value);
        char *end = NULL;
        strtod(value + 1, &end);
        if (end == value + 1 || *end != '\0')
            fail_msg("not a number: %s", line);
        /* the same series twice (name and labels) */
        size_t key = (size_t)(value - line);
        for (size_t i = 0; i < nkeys; i++)
            if (strlen(keys[i]) == key && strncmp(keys[i], line, key) == 0)
                fail_msg("sample repeated: %s", line);
        assert_true(nkeys < sizeof keys / sizeof keys[0]);
        keys[nkeys] = strndup(line, key);
        assert_non_null(keys[nkeys++]);
    }
    for (size_t i = 0; i < nkeys; i++)
        free(keys[i]);
    free(copy);
}

/* ---- counting ----------------------------------------------------------------------------- */

static void decide(rig_t *r, const char *key, sl_decision_t *d) {
    assert_int_equal(sl_check(r->limiter, r->policy, key, strlen(key), 1, d), SL_OK);
}

static void test_result_of_a_decision(void **state) {
    (void)state;
    const sl_limit_t two = {.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(60)};
    rig_t *hard = rig_limits(&two, 1, SL_MODE_HARD), *shadow = rig_limits(&two, 1, SL_MODE_SHADOW);
    sl_decision_t d;
    for (int i = 0; i < 2; i++) {
        decide(hard, "k", &d);
        assert_int_equal(sld_result_of(&d), SLD_ALLOWED);
        decide(shadow, "k", &d);
        assert_int_equal(sld_result_of(&d), SLD_ALLOWED);
    }
    decide(hard, "k", &d);
    assert_int_equal(sld_result_of(&d), SLD_DENIED);
    decide(shadow, "k", &d); /* over the limit, let through */
    assert_true(d.allowed && d.limited);
    assert_int_equal(sld_result_of(&d), SLD_LIMITED);

    sl_policy_config_t soft = {.name = "soft", .limits = &two, .nlimits = 1, .mode = SL_MODE_SOFT,
                               .soft_percent = 50};
    rig_t *s = rig_policy(&soft);
    decide(s, "k", &d);
    decide(s, "k", &d);
    assert_int_equal(sld_result_of(&d), SLD_ALLOWED);
    decide(s, "k", &d); /* the third of 2 + 50 % */
    assert_int_equal(sld_result_of(&d), SLD_LIMITED);
    decide(s, "k", &d);
    assert_int_equal(sld_result_of(&d), SLD_DENIED);
    rig_free(hard);
    rig_free(shadow);
    rig_free(s);
    assert_string_equal(sld_result_names[SLD_LIMITED], "limited");
}

static void test_counts_per_policy_and_result_over_workers(void **state) {
    (void)state;
    sld_metrics_t *m;
    assert_int_equal(sld_metrics_new(3, &m), SL_OK);
    uint32_t a = sld_metrics_slot(m, "a"), b = sld_metrics_slot(m, "b");
    assert_int_equal(sld_metrics_slot(m, "a"), a); /* a name keeps its slot */
    sld_metrics_decision(m, 0, a, SLD_ALLOWED);
    sld_metrics_decision(m, 1, a, SLD_ALLOWED);
    sld_metrics_decision(m, 2, a, SLD_DENIED);
    sld_metrics_decision(m, 2, a, SLD_LIMITED);
    sld_metrics_decision(m, 1, b, SLD_LIMITED);

    sld_counts_t c;
    assert_int_equal(sld_metrics_read(m, &c), SL_OK);
    assert_int_equal(c.npolicies, 2); /* "other" only once it counts */
    assert_string_equal(c.policies[0].name, "a");
    assert_int_equal(c.policies[0].n[SLD_ALLOWED], 2);
    assert_int_equal(c.policies[0].n[SLD_DENIED], 1);
    assert_int_equal(c.policies[0].n[SLD_LIMITED], 1);
    assert_string_equal(c.policies[1].name, "b");
    assert_int_equal(c.policies[1].n[SLD_LIMITED], 1);
    assert_int_equal(c.total[SLD_ALLOWED], 2);
    assert_int_equal(c.total[SLD_DENIED], 1);
    assert_int_equal(c.total[SLD_LIMITED], 2);
    sld_counts_free(&c);

    uint64_t allowed, denied; /* limited ones are in neither */
    sld_metrics_totals(m, &allowed, &denied);
    assert_int_equal(allowed, 2);
    assert_int_equal(denied, 1);
    sld_metrics_free(m);
}

static void test_names_past_the_slots_count_as_other(void **state) {
    (void)state;
    sld_metrics_t *m;
    assert_int_equal(sld_metrics_new(1, &m), SL_OK);
    char name[16];
    for (int i = 0; i < SLD_METRIC_SLOTS - 1; i++) {
        snprintf(name, sizeof name, "p%d", i);
        assert_int_equal(sld_metrics_slot(m, name), (uint32_t)i);
    }
    uint32_t other = sld_metrics_slot(m, "one-too-many");
    assert_int_equal(other, SLD_METRIC_SLOTS - 1);
    sld_metrics_decision(m, 0, other, SLD_DENIED);
    sld_counts_t c;
    assert_int_equal(sld_metrics_read(m, &c), SL_OK);
    assert_int_equal(c.npolicies, SLD_METRIC_SLOTS);
    assert_string_equal(c.policies[SLD_METRIC_SLOTS - 1].name, "other");
    assert_int_equal(c.policies[SLD_METRIC_SLOTS - 1].n[SLD_DENIED], 1);
    sld_counts_free(&c);
    sld_metrics_free(m);
}

static void test_latency_and_http_statuses(void **state) {
    (void)state;
    sld_metrics_t *m;
    assert_int_equal(sld_metrics_new(2, &m), SL_OK);
    sld_metrics_latency(m, 0, 400);      /* <= 0.5 us */
    sld_metrics_latency(m, 1, 500);      /* on the bound: that bucket */
    sld_metrics_latency(m, 1, 20000000); /* past 10 ms: +Inf */
    sld_metrics_http(m, 0, 429);
    sld_metrics_http(m, 1, 429);
    sld_metrics_http(m, 1, 418); /* not listed: other */
    sld_counts_t c;
    assert_int_equal(sld_metrics_read(m, &c), SL_OK);
    assert_int_equal(c.latency[0], 2);
    assert_int_equal(c.latency[SLD_LATENCY_BUCKETS], 1);
    assert_int_equal(c.latency_count, 3);
    assert_int_equal(c.latency_sum_ns, 20000900);
    assert_int_equal(c.http[10], 2);
    assert_int_equal(sld_metrics_statuses[10], 429);
    assert_int_equal(c.http[SLD_HTTP_STATUSES], 1);
    sld_counts_free(&c);
    sld_metrics_free(m);
}

/* ---- the snapshot on fixed figures -------------------------------------------------------- */

typedef struct fixture {
    sld_metrics_t *m;
    sld_stats_t stats;
    sld_figures_t f;
    sld_snapshot_t s;
} fixture_t;

static int setup(void **state) {
    fixture_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    assert_int_equal(sld_metrics_new(2, &x->m), SL_OK);
    uint32_t dry = sld_metrics_slot(x->m, "dry"), hard = sld_metrics_slot(x->m, "hard");
    sld_metrics_decision(x->m, 0, dry, SLD_ALLOWED);
    sld_metrics_decision(x->m, 1, dry, SLD_LIMITED);
    sld_metrics_decision(x->m, 1, dry, SLD_LIMITED);
    sld_metrics_decision(x->m, 0, hard, SLD_DENIED);
    sld_metrics_http(x->m, 0, 200);
    atomic_store(&x->stats.connections_received, 7);
    atomic_store(&x->stats.connections_rejected, 1);
    atomic_store(&x->stats.connected, 3);
    atomic_store(&x->stats.protocol_errors, 4);
    atomic_store(&x->stats.decision_errors, 5);
    atomic_store(&x->stats.reloads, 2);
    atomic_store(&x->stats.snapshot_saves, 9);
    atomic_store(&x->stats.snapshot_last_at, SEC(1700000000) + 999999);
    x->f = (sld_figures_t){.stats = &x->stats,
                           .store = {.states = 11, .bytes = 4096, .max_memory = 0, .evictions = 1},
                           .generation = 3,
                           .policies = 2,
                           .started_at = sl_clock_realtime(NULL) - SEC(90061), /* 1 d 1 h 1 min 1 s */
                           .commands = 42,
                           .resp_port = 6390,
                           .threads = 2,
                           .max_connections = 100,
                           .test_clock = true,
                           .config_path = "/etc/sluice.yaml",
                           .snapshot_path = "/var/lib/sluice/a,b.snap"};
    x->f.status.describe = "memory";
    x->f.status.up = true;
    *state = x;
    return 0;
}

static int teardown(void **state) {
    fixture_t *x = *state;
    sld_snapshot_free(&x->s);
    sld_metrics_free(x->m);
    free(x);
    return 0;
}

static char *take_and_render(fixture_t *x, bool prometheus, unsigned mask) {
    sld_snapshot_free(&x->s);
    assert_int_equal(sld_snapshot_take(&x->s, x->m, &x->f), SL_OK);
    sld_buf_t b = {0};
    if (prometheus)
        sld_prometheus_render(&x->s, &b);
    else
        sld_info_render(&x->s, mask, &b);
    char *t = text_of(&b);
    sld_buf_free(&b);
    return t;
}

static void set_redis_down(fixture_t *x) {
    x->f.status.shared = true;
    x->f.status.describe = "redis://127.0.0.1:6379, strict";
    x->f.status.up = false;
    snprintf(x->f.status.last_error, sizeof x->f.status.last_error, "NOAUTH \"no\", \\ it\nsaid");
    x->f.status.calls = 12;
    x->f.status.fallback_open = 1;
    x->f.status.fallback_closed = 2;
    x->f.status.fallback_local = 3;
}

static void test_snapshot_reads_every_figure_once(void **state) {
    fixture_t *x = *state;
    assert_int_equal(sld_snapshot_take(&x->s, x->m, &x->f), SL_OK);
    atomic_store(&x->stats.connections_received, 1000); /* after: not seen */
    assert_int_equal(x->s.connections_received, 7);
    assert_int_equal(x->s.connected, 3);
    assert_int_equal(x->s.counts.total[SLD_LIMITED], 2);
    assert_int_equal(x->s.uptime_days, 1);
    assert_true(x->s.uptime >= SEC(90061) && x->s.uptime < SEC(90061 + 60));
    assert_int_equal(x->s.wb_last_sync_ms_ago, -1);
    assert_false(x->s.process.ok); /* not asked for */
    assert_string_equal(x->s.store_type, "memory");

    sld_snapshot_t only; /* SL.STATS: decisions only */
    assert_int_equal(sld_snapshot_take(&only, x->m, NULL), SL_OK);
    assert_int_equal(only.counts.npolicies, 2);
    assert_int_equal(only.connections_received, 0);
    sld_snapshot_free(&only);
}

static void test_table_declares_each_statistic_once(void **state) {
    (void)state;
    for (size_t i = 0; i < sld_stat_count; i++) {
        const sld_stat_t *r = &sld_stat_table[i];
        assert_true(r->info != NULL || r->metric != NULL);
        assert_true(r->offset < sizeof(sld_snapshot_t));
        if (r->metric) {
            assert_true(metric_name_ok(r->metric, strlen(r->metric)));
            assert_non_null(r->type);
            assert_non_null(r->help);
            size_t n = strlen(r->metric);
            bool total = n > 6 && strcmp(r->metric + n - 6, "_total") == 0;
            if (strcmp(r->type, "counter") == 0 && !total)
                fail_msg("a counter without _total: %s", r->metric);
            if ((r->kind == SLD_V_TEXT || r->kind == SLD_V_CHARS) && r->label == NULL)
                fail_msg("text with no label to carry it: %s", r->metric);
            /* one family's rows follow each other, with one help and type */
            for (size_t k = i + 2; k < sld_stat_count; k++)
                if (sld_stat_table[k].metric && strcmp(sld_stat_table[k].metric, r->metric) == 0 &&
                    !(sld_stat_table[k - 1].metric && strcmp(sld_stat_table[k - 1].metric, r->metric) == 0))
                    fail_msg("%s split in the table", r->metric);
        }
        for (size_t k = i + 1; r->info && k < sld_stat_count; k++)
            if (sld_stat_table[k].info && strcmp(sld_stat_table[k].info, r->info) == 0)
                fail_msg("INFO field twice: %s", r->info);
        if (i > 0) /* INFO's section order */
            assert_true(sld_stat_table[i - 1].section <= r->section);
    }
}

static void test_prometheus_on_fixed_figures(void **state) {
    fixture_t *x = *state;
    char *t = take_and_render(x, true, 0);
    expect_prometheus_text(t);
    expect_contains(t, "# HELP sluice_decisions_total Decisions, by policy and result.\n"
                       "# TYPE sluice_decisions_total counter\n"
                       "sluice_decisions_total{policy=\"dry\",result=\"allowed\"} 1\n"
                       "sluice_decisions_total{policy=\"dry\",result=\"denied\"} 0\n"
                       "sluice_decisions_total{policy=\"dry\",result=\"limited\"} 2\n"
                       "sluice_decisions_total{policy=\"hard\",result=\"allowed\"} 0\n"
                       "sluice_decisions_total{policy=\"hard\",result=\"denied\"} 1\n"
                       "sluice_decisions_total{policy=\"hard\",result=\"limited\"} 0\n");
    expect_contains(t, "\nsluice_decision_duration_seconds_bucket{le=\"5e-07\"} 0\n");
    expect_contains(t, "\nsluice_http_responses_total{code=\"200\"} 1\n");
    expect_contains(t, "# HELP sluice_connections_received_total Connections accepted.\n"
                       "# TYPE sluice_connections_received_total counter\n"
                       "sluice_connections_received_total 7\n");
    expect_contains(t, "\nsluice_connections 3\n");
    expect_contains(t, "\nsluice_states 11\n");
    expect_contains(t, "\nsluice_memory_bytes 4096\n");
    expect_contains(t, "\nsluice_evictions_total 1\n");
    expect_contains(t, "\nsluice_decision_errors_total 5\n");
    expect_contains(t, "\nsluice_config_generation 3\n");
    expect_contains(t, "\nsluice_snapshot_saves_total 9\n");
    expect_contains(t, "\nsluice_build_info{version=\"" SL_VERSION_STRING "\"} 1\n");
    expect_contains(t, "\nsluice_uptime_seconds 90061");
    /* INFO-only figures and those of a store not there stay out */
    expect_lacks(t, "sluice_store_");
    expect_lacks(t, "sluice_write_back_");
    expect_lacks(t, "process_"); /* not read */
    free(t);

    set_redis_down(x);
    x->f.status.write_back = true;
    x->f.status.wb_unsynced = 6;
    t = take_and_render(x, true, 0);
    expect_prometheus_text(t);
    expect_contains(t, "\nsluice_store_up 0\n");
    expect_contains(t, "\nsluice_store_calls_total 12\n");
    expect_contains(t, "# HELP sluice_store_fallbacks_total Decisions made by on_store_failure.\n"
                       "# TYPE sluice_store_fallbacks_total counter\n"
                       "sluice_store_fallbacks_total{mode=\"open\"} 1\n"
                       "sluice_store_fallbacks_total{mode=\"closed\"} 2\n"
                       "sluice_store_fallbacks_total{mode=\"local\"} 3\n");
    expect_contains(t, "\nsluice_store_down_info{reason=\"NOAUTH \\\"no\\\", \\\\ it said\"} 1\n");
    expect_contains(t, "\nsluice_write_back_unsynced_keys 6\n");
    assert_int_equal(occurrences(t, "# HELP "), occurrences(t, "# TYPE "));
    free(t);

    x->f.status.up = true; /* up: no reason to give */
    t = take_and_render(x, true, 0);
    expect_lacks(t, "sluice_store_down_info");
    expect_contains(t, "\nsluice_store_up 1\n");
    free(t);
}

static void test_prometheus_process_figures(void **state) {
    fixture_t *x = *state;
    assert_int_equal(sld_snapshot_take(&x->s, x->m, &x->f), SL_OK);
    x->s.process = (sld_process_t){.ok = true, .cpu_seconds = 1.5, .resident_bytes = 8192,
                                   .virtual_bytes = 65536, .open_fds = 9, .max_fds = 1024,
                                   .start_time = 1700000000.25};
    sld_buf_t b = {0};
    sld_prometheus_render(&x->s, &b);
    char *t = text_of(&b);
    sld_buf_free(&b);
    expect_prometheus_text(t);
    expect_contains(t, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                       "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n");
    expect_contains(t, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 8192\n");
    expect_contains(t, "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes 65536\n");
    expect_contains(t, "# HELP process_open_fds Number of open file descriptors.\n"
                       "# TYPE process_open_fds gauge\nprocess_open_fds 9\n");
    expect_contains(t, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                       "# TYPE process_max_fds gauge\nprocess_max_fds 1024\n");
    expect_contains(t, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
                       "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1700000000.25\n");
    free(t);
    sld_buf_t i = {0};
    sld_info_render(&x->s, 1u << SLD_SEC_PROCESS, &i);
    t = text_of(&i);
    sld_buf_free(&i);
    assert_string_equal(t, "# Process\r\nprocess_cpu_seconds:1.500\r\nprocess_resident_memory_bytes:8192\r\n"
                           "process_virtual_memory_bytes:65536\r\nprocess_open_fds:9\r\nprocess_max_fds:1024\r\n"
                           "process_start_time_seconds:1700000000.250\r\n");
    free(t);
}

static void test_info_on_fixed_figures(void **state) {
    fixture_t *x = *state;
    char *t = take_and_render(x, false, SLD_INFO_ALL);
    expect_contains(t, "# Server\r\nredis_version:7.0.0\r\nsluice_version:" SL_VERSION_STRING
                       "\r\nredis_mode:standalone\r\nprocess_id:");
    expect_contains(t, "\r\ntcp_port:6390\r\nuptime_in_seconds:90061\r\n");
    expect_contains(t, "\r\nuptime_in_days:1\r\nio_threads_active:2\r\nconfig_file:/etc/sluice.yaml\r\n"
                       "test_clock:1\r\n\r\n# Clients\r\nconnected_clients:3\r\nmaxclients:100\r\n\r\n");
    expect_contains(t, "# Memory\r\nused_memory:4096\r\nmaxmemory:0\r\nstates:11\r\nevicted_states:1\r\n"
                       "reclaimed_states:0\r\n\r\n");
    /* a ',' in a value would split it for clients that parse a=1,b=2 */
    expect_contains(t, "# Persistence\r\nloading:0\r\nsnapshot_path:/var/lib/sluice/a;b.snap\r\n"
                       "snapshot_saves:9\r\nsnapshot_failures:0\r\nlast_snapshot_time:1700000000\r\n\r\n");
    expect_contains(t, "# Stats\r\ntotal_connections_received:7\r\ntotal_commands_processed:42\r\n"
                       "rejected_connections:1\r\ndecisions_allowed:1\r\ndecisions_denied:1\r\n"
                       "decisions_limited:2\r\ndecision_errors:5\r\nprotocol_errors:4\r\nauth_failures:0\r\n"
                       "idle_timeouts:0\r\n"
                       "config_reloads:2\r\nconfig_reload_failures:0\r\nconfig_generation:3\r\npolicies:2\r\n\r\n");
    expect_lacks(t, "# Process"); /* not read */
    expect_contains(t, "\r\n\r\n# Store\r\nstore_type:memory\r\n\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n# Keyspace\r\n"
                       "db0:keys=11,expires=11,avg_ttl=0\r\n");
    assert_true(strncmp(t, "# Server\r\n", 10) == 0);
    assert_int_equal(strlen(t) - (size_t)(strstr(t, "avg_ttl=0\r\n") - t), strlen("avg_ttl=0\r\n"));
    free(t);

    t = take_and_render(x, false, 1u << SLD_SEC_MEMORY);
    assert_string_equal(t, "# Memory\r\nused_memory:4096\r\nmaxmemory:0\r\nstates:11\r\nevicted_states:1\r\n"
                           "reclaimed_states:0\r\n");
    free(t);

    set_redis_down(x);
    x->f.status.write_back = true;
    x->f.status.wb_syncs = 8;
    x->f.status.wb_last_sync = sl_clock_realtime(NULL) - SEC(2);
    t = take_and_render(x, false, (1u << SLD_SEC_STORE) | (1u << SLD_SEC_WRITE_BACK));
    expect_contains(t, "# Store\r\nstore_type:redis\r\nstore_url:redis://127.0.0.1:6379; strict\r\n"
                       "store_up:0\r\nstore_breaker_open:0\r\nstore_calls:12\r\nstore_failures:0\r\n"
                       "store_timeouts:0\r\nstore_reconnects:0\r\nstore_fallback_open:1\r\n"
                       "store_fallback_closed:2\r\nstore_fallback_local:3\r\n"
                       "store_last_error:NOAUTH \"no\"; \\ it said\r\n\r\n# Write-back\r\n");
    expect_contains(t, "\r\nwrite_back_syncs:8\r\n");
    expect_contains(t, "\r\nwrite_back_last_sync_ms_ago:2");
    expect_lacks(t, "# Keyspace");
    free(t);
}

static void test_info_section_names(void **state) {
    (void)state;
    const char *none[1] = {NULL};
    size_t zero[1] = {0};
    assert_int_equal(sld_info_sections(none, zero, 0), SLD_INFO_ALL);
    const char *one[] = {"MEMORY"};
    size_t one_len[] = {6};
    assert_int_equal(sld_info_sections(one, one_len, 1), 1u << SLD_SEC_MEMORY);
    const char *store[] = {"store", "keyspace"};
    size_t store_len[] = {5, 8};
    assert_int_equal(sld_info_sections(store, store_len, 2),
                     (1u << SLD_SEC_STORE) | (1u << SLD_SEC_WRITE_BACK) | (1u << SLD_SEC_KEYSPACE));
    const char *all[] = {"memory", "everything"};
    size_t all_len[] = {6, 10};
    assert_int_equal(sld_info_sections(all, all_len, 2), SLD_INFO_ALL);
    const char *unknown[] = {"commandstats", "mem"};
    size_t unknown_len[] = {12, 3};
    assert_int_equal(sld_info_sections(unknown, unknown_len, 2), 0);
}

/* ---- process figures ------------------------------------------------------------------------ */

/* A /proc/<pid>/stat line whose command name holds spaces and parentheses. */
static const char STAT[] =
    "4242 (sl (x) d) S 1 4242 4242 0 -1 4194560 900 0 0 0 "
    "250 150 0 0 20 0 3 0 12345 160976896 1247 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

static void test_process_stat_parse(void **state) {
    (void)state;
    sld_process_t p = {0};
    assert_true(sld_process_parse_stat(STAT, strlen(STAT), 100, 4096, &p));
    assert_true(p.cpu_seconds == 4.0);        /* (250 + 150) / 100 */
    assert_true(p.start_time == 123.45);      /* since boot */
    assert_int_equal(p.virtual_bytes, 160976896);
    assert_int_equal(p.resident_bytes, 1247 * 4096);

    /* every prefix that stops before the last field it needs is refused */
    const char *rss = strstr(STAT, " 1247 ") + 1;
    for (size_t n = 0; n < (size_t)(rss - STAT); n++) {
        sld_process_t q = {.cpu_seconds = -1};
        if (sld_process_parse_stat(STAT, n, 100, 4096, &q))
            fail_msg("a prefix of %zu bytes parsed", n);
        assert_true(q.cpu_seconds == -1); /* untouched */
    }
    const char *bad[] = {"", "4242 sluiced S 1", "4242 (x)S 1 2 3", "4242 (x) S a b c d e f g h i j k l m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(sld_process_parse_stat(bad[i], strlen(bad[i]), 100, 4096, &p));
    assert_false(sld_process_parse_stat(STAT, strlen(STAT), 0, 4096, &p));
    const char big[] = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 99999999999999999999 0 0 0 0 0 0 0 0 0 0";
    assert_false(sld_process_parse_stat(big, strlen(big), 100, 4096, &p)); /* overflow */

    const char stat_file[] = "cpu  1 2 3\ncpu0 1 2 3\nintr 5 6\nctxt 77\nbtime 1700000000\nprocesses 9\n";
    uint64_t btime = 0;
    assert_true(sld_process_parse_btime(stat_file, strlen(stat_file), &btime));
    assert_int_equal(btime, 1700000000);
    assert_false(sld_process_parse_btime(stat_file, 20, &btime));
    assert_false(sld_process_parse_btime("btime x\n", 8, &btime));
}

static void test_process_read_is_plausible(void **state) {
    (void)state;
    sld_process_t p;
    sld_process_read(&p);
    assert_true(p.ok);
    assert_true(p.resident_bytes > 0);
    assert_true(p.virtual_bytes >= p.resident_bytes);
    assert_true(p.open_fds >= 3 && p.open_fds <= p.max_fds);
    assert_true(p.cpu_seconds >= 0);
    double now = (double)time(NULL);
    assert_true(p.start_time <= now + 1 && p.start_time > now - 60);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_of_a_decision),
        cmocka_unit_test(test_counts_per_policy_and_result_over_workers),
        cmocka_unit_test(test_names_past_the_slots_count_as_other),
        cmocka_unit_test(test_latency_and_http_statuses),
        cmocka_unit_test_setup_teardown(test_snapshot_reads_every_figure_once, setup, teardown),
        cmocka_unit_test(test_table_declares_each_statistic_once),
        cmocka_unit_test_setup_teardown(test_prometheus_on_fixed_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prometheus_process_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_on_fixed_figures, setup, teardown),
        cmocka_unit_test(test_info_section_names),
        cmocka_unit_test(test_process_stat_parse),
        cmocka_unit_test(test_process_read_is_plausible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
