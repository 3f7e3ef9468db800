/* sluiced.c -- the rate-limit daemon: main(), signals, reload, snapshots.
 *
 *   sluiced [--config FILE] [--resp HOST:PORT|off] [--http HOST:PORT|off] [--threads N]
 *           [--snapshot PATH|off] [--check-config] [--version] [--log-level LEVEL]
 *           [--test-clock[=US]]
 *
 * The main thread owns the lifecycle and the slow work (reload, snapshots,
 * sweeping); worker threads (net/server.c) serve clients through the fronts
 * (resp/resp_connection.c, http/http.c), wired here. SIGTERM and SIGINT stop
 * gracefully: no new connections, replies owed are sent, the snapshot is
 * saved (persist.c), exit 0. SIGHUP reloads the configuration file: the
 * whole new file is validated first and swapped in atomically; a bad one is
 * logged and the running configuration stays.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "server/config/state_location.h"
#include "server/state/daemon.h"
#include "server/base/log.h"
#include "server/daemon/persist.h"
#include "server/daemon/front_config.h"
#include "server/daemon/observe_config.h"
#include "server/daemon/wiring.h"
#include "server/engine/decide.h"
#include "server/engine/remote.h"
#include "server/engine/write_back.h"
#include "server/engine/rules.h"
#include "server/daemon/runtime.h"
#include "server/config/section.h"
#include "server/gateway/gateway.h"
#include "server/gateway/gateway_config.h"
#include "server/grpc/grpc_config.h"
#include "server/grpc/grpc_server.h"
#include "server/rls/rls_section.h"
#include "server/http/http.h"
#include "server/http/http_config.h"
#include "server/net/server.h"
#include "server/resp/resp_config.h"
#include "server/resp/resp_connection.h"

#define MAINTENANCE_MS 1000
#define SWEEP_BUDGET 65536  /* slots examined per maintenance tick */
#define STOP_GRACE_MS 5000

extern const char sld_embedded_config[];
extern const unsigned long sld_embedded_config_len;

typedef struct overrides {
    const char *listen[SLD_MAX_LISTENS]; /* --resp, --http, ...: by listen key (section.h) */
    long threads;  /* -1 = not given */
    const char *store;  /* --store: "memory" or a Redis URL */
    const char *snapshot;  /* --snapshot: a path or "off" */
} overrides_t;

static sld_daemon_t D;
static sld_server_t *server;
static sld_resp_front_t resp_front;
static sld_http_t *http_front;  /* NULL when the HTTP front is off */
static sld_gateway_t *gateway;  /* NULL when the configuration has no gateway: */
static int gateway_port;
static sld_grpc_server_t *grpc_front;  /* NULL when the gRPC front is off */
static int grpc_port;

static overrides_t overrides = {.threads = -1};
static uv_signal_t sig_term, sig_int, sig_hup;
static uv_timer_t maintenance;

static sl_usec_t limiter_clock(void *ctx) { return sld_now(ctx); }

/* The runtime's hooks to the workers: ctx is &server, NULL until they run
 * and once they stopped. */
static void wake_workers(void *ctx) {
    sld_server_t *s = *(sld_server_t **)ctx;
    if (s)
        sld_server_wake(s);
}

static bool workers_quiescent(void *ctx, uint64_t generation) {
    sld_server_t *s = *(sld_server_t **)ctx;
    return s && sld_server_quiescent(s, generation);
}

#if defined(__SANITIZE_ADDRESS__)
#define SLD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLD_ASAN 1
#endif
#endif
#ifdef SLD_ASAN
/* libh2o keeps freed buffers in per-thread caches (bounded, reused) that it
 * never frees when a thread ends and that no pointer we hold can reach: not
 * a leak, but LeakSanitizer cannot tell. Everything else is checked. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:h2o_mem_alloc_recycle\n"; }
#endif

/* ---- configuration ---------------------------------------------------------------------- */

static int apply_overrides(sld_config_t *cfg, char *err, size_t err_len) {
    /* --resp / --http take what listen.resp / listen.http take */
    int rc;
    for (size_t i = 0; i < SLD_MAX_LISTENS; i++)
        if (overrides.listen[i] &&
            (rc = sld_config_listen_override(cfg, i, overrides.listen[i], err, err_len)) != SL_OK)
            return rc;
    if (overrides.store) {
        char *url = NULL;
        if (strcmp(overrides.store, "memory") != 0 && (url = strdup(overrides.store)) == NULL) {
            snprintf(err, err_len, "out of memory");
            return SL_ENOMEM;
        }
        free(cfg->store_url);
        cfg->store_url = url;
    }
    if (!sld_config_serves(cfg)) {
        char names[256];
        size_t n = sld_config_listen_names(names, sizeof names);
        snprintf(err, err_len, "%s off (%s) and there is no gateway: nothing would answer",
                 n == 2 ? "both fronts are" : "every front is", names);
        return SL_EINVAL;
    }
    if (overrides.threads >= 0)
        cfg->threads = (uint32_t)overrides.threads;
    if (cfg->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg->threads = n > 0 ? (uint32_t)n : 1;
    }
    /* after --store: the default depends on the store */
    return sld_snapshot_resolve(cfg, overrides.snapshot, err, err_len);
}

static int load_config(const char *path, sld_config_t **out, char *err, size_t err_len) {
    /* the file, with the rls: section --rls-config adds when it has none */
    int rc = sld_rls_config_load(path, "(embedded default)", sld_embedded_config,
                                 sld_embedded_config_len, out, err, err_len);
    if (rc == SL_OK && (rc = apply_overrides(*out, err, err_len)) != SL_OK) {
        sld_config_free(*out);
        *out = NULL;
    }
    /* a reload keeps the policies kept in Redis over the file's */
    if (rc == SL_OK && D.rules && (*out = sld_rules_overlay(D.rules, *out)) == NULL) {
        snprintf(err, err_len, "out of memory");
        rc = SL_ENOMEM;
    }
    return rc;
}

/* ---- main loop -------------------------------------------------------------------------- */

/* Both ways to reload (SIGHUP, POST /v1/admin/reload) go through here, so
 * the gateway takes a reload's routes (and names what needs a restart)
 * after either. */
static int reload(sld_daemon_t *d, char *err, size_t err_len, uint64_t *generation) {
    int rc = sld_runtime_reload(d, err, err_len, generation);
    if (rc == SL_OK && gateway)
        sld_gateway_reloaded(gateway);
    else if (rc == SL_OK && sld_config_section(sld_runtime(d)->cfg, sld_gateway_section.name) != NULL)
        sld_warn("gateway: added by a reload: it needs a restart (the gateway's listeners open at start)");
    return rc;
}

static void on_signal(uv_signal_t *h, int signum) {
    (void)h;
    if (signum == SIGHUP) {
        char err[SLD_MAX_ERROR];
        reload(&D, err, sizeof err, NULL);
        return;
    }
    if (atomic_exchange(&D.stopping, true))
        return;
    sld_info("%s: stopping", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    uv_stop(uv_default_loop());
}

static void on_maintenance(uv_timer_t *t) {
    (void)t;
    sl_store_sweep(D.store, sld_now(&D), SWEEP_BUDGET, NULL);
    sld_runtime_collect(&D);
    sld_persist_tick(&D);
}

/* Every connection is a descriptor: ask for enough, as far as allowed. */
static void raise_file_limit(uint32_t max_connections) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)max_connections + 64;
    if (rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < want)
        sld_warn("open files are limited to %llu: fewer than max_connections (%u) can connect",
                 (unsigned long long)rl.rlim_cur, max_connections);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sluiced [options]\n"
            "  --config FILE        YAML configuration (default: the embedded example)\n");
    const sld_config_listen_t *l;
    for (size_t i = 0; (l = sld_config_listen_def(i)) != NULL; i++)
        fprintf(f, "  %s HOST:PORT|off %s\n", l->option, l->help);
    fprintf(f,
            "  --threads N          worker threads (default: one per core)\n"
            "  --store URL          memory, redis://[user:pass@]host:port[/db],\n"
            "                       sentinel://host:port,.../master or\n"
            "                       redis-cluster://host:port,... (overrides store:)\n"
            "  --snapshot PATH|off  where the state is kept across restarts (overrides\n"
            "                       store.snapshot; default: sluice.snap in $STATE_DIRECTORY,\n"
            "                       else in the working directory; off with a Redis store)\n"
            "  --rls-config DIR     Envoy ratelimit's configuration directory (overrides\n"
            "                       rls.config_dir)\n"
            "  --check-config       validate the configuration and exit (0 = valid)\n"
            "  --log-level LEVEL    debug, info, warn or error (default info)\n"
            "  --test-clock[=US]    tests only: a manual clock, set with SL.TESTCLOCK\n"
            "  --version            print the version and exit\n");
}

/* getopt's value for the option of listen key i (section.h) */
#define LISTEN_OPTION 0x100

static int parse_args(int argc, char **argv, bool *check_only, int64_t *test_start) {
    struct option opts[16 + SLD_MAX_LISTENS] = {
        {"config", required_argument, NULL, 'c'},    {"threads", required_argument, NULL, 't'},
        {"check-config", no_argument, NULL, 'k'},    {"version", no_argument, NULL, 'v'},
        {"log-level", required_argument, NULL, 'l'}, {"test-clock", optional_argument, NULL, 'T'},
        {"store", required_argument, NULL, 's'},     {"snapshot", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},            {"rls-config", required_argument, NULL, 'R'}};
    size_t nopts = 10;
    const sld_config_listen_t *l;
    for (size_t i = 0; (l = sld_config_listen_def(i)) != NULL; i++)
        opts[nopts++] = (struct option){l->option + 2, required_argument, NULL, LISTEN_OPTION + (int)i};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        if (o >= LISTEN_OPTION && o < LISTEN_OPTION + SLD_MAX_LISTENS) {
            overrides.listen[o - LISTEN_OPTION] = optarg;
            continue;
        }
        switch (o) {
        case 'c':
            D.config_path = optarg;
            break;
        case 't':
            overrides.threads = strtol(optarg, &end, 10);
            if (*end || overrides.threads < 0 || overrides.threads > 256) {
                fprintf(stderr, "sluiced: --threads takes 0 to 256\n");
                return 2;
            }
            break;
        case 's':
            if (strcmp(optarg, "memory") != 0 && strncmp(optarg, "redis://", 8) != 0 &&
                strncmp(optarg, "sentinel://", 11) != 0 && strncmp(optarg, "redis-cluster://", 16) != 0) {
                fprintf(stderr, "sluiced: --store takes memory, redis://..., sentinel://... or "
                                "redis-cluster://...\n");
                return 2;
            }
            overrides.store = optarg;
            break;
        case 'S':
            if (optarg[0] == '\0') {
                fprintf(stderr, "sluiced: --snapshot takes a file path or off\n");
                return 2;
            }
            overrides.snapshot = optarg;
            break;
        case 'R':
            sld_rls_section_override(optarg);
            break;
        case 'k':
            *check_only = true;
            break;
        case 'v':
            printf("sluiced %s\n", SL_VERSION_STRING);
            exit(0);
        case 'l':
            if (strcmp(optarg, "debug") == 0)
                sld_log_set_level(SLD_LOG_DEBUG);
            else if (strcmp(optarg, "info") == 0)
                sld_log_set_level(SLD_LOG_INFO);
            else if (strcmp(optarg, "warn") == 0)
                sld_log_set_level(SLD_LOG_WARN);
            else if (strcmp(optarg, "error") == 0)
                sld_log_set_level(SLD_LOG_ERROR);
            else {
                fprintf(stderr, "sluiced: --log-level takes debug, info, warn or error\n");
                return 2;
            }
            break;
        case 'T':
            D.test_clock = true;
            *test_start = optarg ? strtoll(optarg, NULL, 10) : 0;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluiced: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Serves the fronts that are on (apply_overrides made sure one is) on the
 * workers' loops. */
static int start_server(const sld_config_t *cfg, char *err, size_t err_len) {
    sld_front_t fronts[3 + SLD_GW_MAX_LISTENS];
    size_t n = 0;
    if (sld_resp_listen(cfg)[0] != '\0') {
        sld_resp_front_init(&resp_front, &D);
        fronts[n++] = (sld_front_t){&sld_resp_front_ops, &resp_front, sld_resp_listen(cfg), &D.resp_port};
    }
    if (sld_http_listen(cfg)[0] != '\0') {
        if (sld_http_new(&D, &http_front) != SL_OK) {
            snprintf(err, err_len, "out of memory");
            return SL_ENOMEM;
        }
        fronts[n++] = (sld_front_t){&sld_http_front_ops, http_front, sld_http_listen(cfg), &D.http_port};
    }
    if (sld_config_section(cfg, sld_gateway_section.name) != NULL) {
        if (sld_gateway_new(&D, &gateway) != SL_OK) {
            snprintf(err, err_len, "out of memory");
            return SL_ENOMEM;
        }
        for (size_t i = 0; i < sld_gateway_nlistens(gateway); i++) /* one front per listener */
            fronts[n++] = sld_gateway_front(gateway, i, i == 0 ? &gateway_port : NULL);
    }
    if (sld_grpc_listen(cfg)[0] != '\0') {
        int rc = sld_grpc_server_new(&D, cfg->threads, cfg->max_request_bytes, &grpc_front, err, err_len);
        if (rc != SL_OK)
            return rc;
        fronts[n++] = (sld_front_t){&sld_grpc_server_ops, grpc_front, sld_grpc_listen(cfg), &grpc_port};
    }
    return sld_server_start(&D, fronts, n, cfg->threads, &server, err, err_len);
}

int main(int argc, char **argv) {
    bool check_only = false;
    int64_t test_start = 0;
    /* first: the fronts' listen keys are command-line options too */
    if (sld_daemon_config_register() != SL_OK) {
        fprintf(stderr, "sluiced: the fronts' configuration tables are refused\n");
        return 1;
    }
    int rc = parse_args(argc, argv, &check_only, &test_start);
    if (rc != 0)
        return rc;
    atomic_store(&D.test_now, test_start);
    D.started_at = sl_clock_realtime(NULL);

    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    sld_runtime_t *rt = NULL;
    rc = load_config(D.config_path, &cfg, err, sizeof err);
    sld_observe_settings_t obs = rc == SL_OK ? sld_observe_settings(cfg) : (sld_observe_settings_t){0};
    if (rc == SL_OK && !check_only &&
        (sld_metrics_new(cfg->threads, &D.metrics) != SL_OK ||
         (obs.heavy_hitters &&
          (sld_hh_new(cfg->threads, SLD_METRIC_SLOTS, &obs.hh, &D.heavy) != SL_OK ||
           sld_rates_new(cfg->threads, SLD_METRIC_SLOTS, &D.rates) != SL_OK)))) {
        snprintf(err, sizeof err, "out of memory");
        rc = SL_ENOMEM;
    }
    if (rc == SL_OK)
        rc = sld_runtime_build(&D, cfg, 1, &rt, err, sizeof err);
    /* the store's URL is checked whole here, so --check-config catches it */
    if (rc == SL_OK && cfg->store_url)
        rc = sld_remote_new(cfg, cfg->threads, &D.remote, err, sizeof err);
    if (rc != SL_OK) {
        fprintf(stderr, "sluiced: %s\n", err);
        sld_config_free(cfg);
        sld_metrics_free(D.metrics);
        sld_hh_free(D.heavy);
        sld_rates_free(D.rates);
        return 1;
    }
    if (check_only) {
        printf("%s: valid (%zu %s)\n", cfg->source, cfg->npolicies, cfg->npolicies == 1 ? "policy" : "policies");
        if (cfg->snapshot_path)
            printf("state: %s (%s)\n", cfg->snapshot_path, cfg->snapshot_origin);
        else
            printf("state: no snapshots (%s)\n", cfg->snapshot_origin);
        sld_runtime_free(rt);
        sld_remote_free(D.remote);
        return 0;
    }
    if (D.remote && sld_remote_resolve(D.remote, err, sizeof err) != SL_OK) {
        fprintf(stderr, "sluiced: %s\n", err);
        return 1;
    }
    atomic_store(&D.runtime, rt);
    D.threads = cfg->threads;
    /* a reload rereads the file, or --rls-config's directory on the built-in default */
    static char reload_label[512];
    if (D.config_path) {
        D.load_config = load_config;
        D.reload_label = D.config_path;
    } else if (sld_rls_section_overridden()) {
        D.load_config = load_config;
        snprintf(reload_label, sizeof reload_label, "%s on the built-in default", sld_rls_section_overridden());
        D.reload_label = reload_label;
    }
    D.throttle_slot = sld_metrics_slot(D.metrics, "CL.THROTTLE");

    sl_memory_options_t mo = {.max_memory = cfg->max_memory, .shards = cfg->shards};
    sl_limiter_options_t lo = {.clock = limiter_clock, .clock_ctx = &D};
    rc = sl_store_memory_new(&mo, &D.store);
    if (rc == SL_OK)
        rc = sl_limiter_new(D.store, &lo, &D.limiter);
    if (rc == SL_OK)
        rc = sld_throttles_new(cfg->store_url ? cfg->store_nodes : 1, &D.throttles);
    if (rc != SL_OK) {
        fprintf(stderr, "sluiced: cannot create the store: %s\n", sl_strerror(rc));
        return 1;
    }
    sld_persist_load(&D);

    raise_file_limit(cfg->max_connections);
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t *loop = uv_default_loop();
    uv_signal_init(loop, &sig_term);
    uv_signal_init(loop, &sig_int);
    uv_signal_init(loop, &sig_hup);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    uv_signal_start(&sig_hup, on_signal, SIGHUP);
    uv_timer_init(loop, &maintenance);
    uv_timer_start(&maintenance, on_maintenance, MAINTENANCE_MS, MAINTENANCE_MS);
    sld_persist_start(&D, loop);

    if (D.remote && cfg->store_write_back &&
        (rc = sld_daemon_write_back_start(&D, loop)) != SL_OK) {
        fprintf(stderr, "sluiced: cannot start write-back: %s\n", sl_strerror(rc));
        return 1;
    }
    if (D.remote && (rc = sld_daemon_rules_start(&D, loop)) != SL_OK)
        sld_error("cannot follow the policies kept in Redis: %s", sl_strerror(rc));
    /* serve the policies kept in Redis from the first request: wait for
     * them, no longer than a Redis call may take (twice, with its connect) */
    if (D.rules) {
        uint64_t until = uv_now(loop) + 2 * (uint64_t)(cfg->store_timeout / 1000) + 50;
        while (!sld_rules_read_once(D.rules) && uv_now(loop) < until) {
            uv_run(loop, UV_RUN_ONCE);
            uv_update_time(loop);
        }
        if (!sld_rules_read_once(D.rules))
            sld_warn("the policies kept in Redis are not read yet: starting on the file's");
    }
    D.config = (sld_config_hooks_t){.edit = sld_runtime_edit, .reload = reload};
    D.workers = (sld_workers_hooks_t){.ctx = &server, .wake = wake_workers, .quiescent = workers_quiescent};
    if ((rc = sld_daemon_engine_new(&D)) != SL_OK) {
        fprintf(stderr, "sluiced: cannot start the decision engine: %s\n", sl_strerror(rc));
        return 1;
    }
    rc = start_server(cfg, err, sizeof err);
    if (rc != SL_OK) {
        fprintf(stderr, "sluiced: %s\n", err);
        return 1;
    }
    sld_info("sluiced %s ready: resp=%s port=%d http=%s http_port=%d gateway=%s gateway_port=%d grpc=%s grpc_port=%d "
             "threads=%u "
             "policies=%zu config=%s store=%s%s",
             SL_VERSION_STRING, sld_resp_listen(cfg)[0] ? sld_resp_listen(cfg) : "off", D.resp_port,
             sld_http_listen(cfg)[0] ? sld_http_listen(cfg) : "off",
             D.http_port, gateway ? sld_gateway_listen(gateway) : "off", gateway_port,
             sld_grpc_listen(cfg)[0] ? sld_grpc_listen(cfg) : "off", grpc_port, cfg->threads, cfg->npolicies, cfg->source,
             D.remote ? sld_remote_describe(D.remote) : "memory", D.test_clock ? " test-clock" : "");

    uv_run(loop, UV_RUN_DEFAULT);

    sld_rules_stop(D.rules);
    sld_server_stop(server, STOP_GRACE_MS);
    server = NULL;
    sld_http_free(http_front);
    http_front = NULL;
    sld_gateway_free(gateway);
    gateway = NULL;
    sld_grpc_server_free(grpc_front);
    grpc_front = NULL;
    sld_write_back_stop(D.write_back);
    sld_persist_finish(&D);
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
    uv_close((uv_handle_t *)&sig_hup, NULL);
    uv_close((uv_handle_t *)&maintenance, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    sld_rules_free(D.rules);
    D.rules = NULL;
    sld_write_back_free(D.write_back);
    D.write_back = NULL;
    sld_runtime_shutdown(&D);
    sld_engine_free(D.engine);
    D.engine = NULL;
    sld_remote_free(D.remote);
    sld_throttles_free(D.throttles);
    sld_metrics_free(D.metrics);
    sld_hh_free(D.heavy);
    sld_rates_free(D.rates);
    free(D.counters);
    sl_limiter_free(D.limiter);
    sl_store_free(D.store);
    sld_info("stopped");
    return 0;
}
