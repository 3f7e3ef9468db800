/* sluice_cli.c -- the `sluice` command-line tool.
 *
 *   sluice demo             the source articles' scenarios, decided by libsluice
 *   sluice snapshot FILE    what a snapshot file holds (or why it is refused)
 *   sluice top [...]        a running daemon's /v1/stats, live (top.h)
 *   sluice version
 *
 * A thin user of the public API (plus the snapshot reader): no decision is
 * made here that the library does not make.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/top.h"
#include "sluice.h"
#include "store/snapshot.h"

#define SEC(x) ((sl_usec_t)(x) * SL_USEC_PER_SEC)
#define MS(x) ((sl_usec_t)(x) * 1000)

/* ---- demo ---------------------------------------------------------------------- */

typedef struct scene {
    sl_usec_t now;  /* the demo's own clock: the scenarios replay instantly */
    sl_store_t *store;
    sl_limiter_t *limiter;
    sl_policy_t *policy;
} scene_t;

static sl_usec_t scene_clock(void *ctx) { return ((scene_t *)ctx)->now; }

static int scene_open(scene_t *s, const sl_limit_t *limits, size_t n) {
    char why[256];
    memset(s, 0, sizeof *s);
    sl_policy_config_t cfg = {.name = "demo", .limits = limits, .nlimits = n};
    sl_limiter_options_t lo = {.clock = scene_clock, .clock_ctx = s};
    int rc = sl_store_memory_new(&(sl_memory_options_t){.shards = 1}, &s->store);
    if (rc == SL_OK)
        rc = sl_limiter_new(s->store, &lo, &s->limiter);
    if (rc == SL_OK)
        rc = sl_policy_new(&cfg, &s->policy, why, sizeof why);
    if (rc != SL_OK)
        fprintf(stderr, "sluice demo: %s\n", sl_strerror(rc));
    return rc;
}

static void scene_close(scene_t *s) {
    sl_policy_free(s->policy);
    sl_limiter_free(s->limiter);
    sl_store_free(s->store);
}

static sl_decision_t scene_check(scene_t *s, sl_usec_t at) {
    sl_decision_t d;
    s->now = at;
    if (sl_check(s->limiter, s->policy, "user42", 6, 1, &d) != SL_OK) {
        fprintf(stderr, "sluice demo: check failed\n");
        exit(1);
    }
    return d;
}

/* Replays arrival times; returns how many passed and writes a pass/deny map. */
static int scene_replay(const sl_limit_t *limits, size_t n, const sl_usec_t *at, int count, char *map) {
    scene_t s;
    if (scene_open(&s, limits, n) != SL_OK)
        exit(1);
    int passed = 0;
    for (int i = 0; i < count; i++) {
        bool ok = scene_check(&s, at[i]).allowed;
        passed += ok;
        if (map)
            map[i] = ok ? '+' : '-';
    }
    if (map)
        map[count] = '\0';
    scene_close(&s);
    return passed;
}

static void row(const char *scenario, const char *algorithm, const char *result) {
    printf("  %-46s %-30s %s\n", scenario, algorithm, result);
}

static void demo_boundary(void) {
    const sl_usec_t at[] = {MS(59000), MS(59500), MS(59900), MS(60000), MS(60500), MS(60900)};
    char map[8], line[64];
    static const sl_algorithm_t algs[] = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW};
    for (size_t i = 0; i < 3; i++) {
        sl_limit_t l = {.algorithm = algs[i], .limit = 3, .period = SEC(60)};
        int passed = scene_replay(&l, 1, at, 6, map);
        snprintf(line, sizeof line, "%d of 6 pass  %s", passed, map);
        row(i == 0 ? "3/min; 6 requests from 59.0 s to 60.9 s" : "", sl_algorithm_name(algs[i]), line);
    }
}

static void demo_sliding_estimate(void) {
    sl_limit_t l = {.algorithm = SL_SLIDING_WINDOW, .limit = 7, .period = SEC(60)};
    scene_t s;
    if (scene_open(&s, &l, 1) != SL_OK)
        exit(1);
    for (int i = 0; i < 5; i++)
        scene_check(&s, SEC(10 + i));
    for (int i = 0; i < 3; i++)
        scene_check(&s, SEC(61 + i));
    sl_decision_t d = scene_check(&s, SEC(78));
    char line[96];
    /* estimate 3 + floor(5 x 0.7) = 6, so one more fits in 7 */
    snprintf(line, sizeof line, "%s, %" PRIu64 " left after it", d.allowed ? "passes" : "denied",
             d.remaining);
    row("7/min; 5 last minute, 3 now; one at 30 %", "sliding_window", line);
    scene_close(&s);
}

/* One request a second for `seconds`: how many pass. */
static int every_second(const sl_limit_t *limits, size_t n, int seconds) {
    static sl_usec_t at[3600];
    for (int i = 0; i < seconds; i++)
        at[i] = SEC(i);
    return scene_replay(limits, n, at, seconds, NULL);
}

static void demo_hour_and_minute(void) {
    const sl_limit_t l[] = {{.algorithm = SL_SLIDING_LOG, .limit = 500, .period = SEC(3600)},
                            {.algorithm = SL_SLIDING_LOG, .limit = 10, .period = SEC(60)}};
    char line[64];
    snprintf(line, sizeof line, "%d of 3600 pass", every_second(l, 2, 3600));
    row("500/hour + 10/min; one a second for an hour", "sliding_log + sliding_log", line);
}

static void demo_spacing(void) {
    const sl_limit_t l[] = {{.algorithm = SL_SLIDING_LOG, .limit = 10, .period = SEC(60)},
                            {.algorithm = SL_GCRA, .limit = 1, .period = SEC(2)}};
    char line[64];
    snprintf(line, sizeof line, "%d of 120 pass (0,2..18 s, 60..78 s)", every_second(l, 2, 120));
    row("10/min, 2 s apart; one a second for 2 min", "sliding_log + gcra", line);
}

static void demo_token_bucket(void) {
    sl_limit_t l = {.algorithm = SL_TOKEN_BUCKET, .limit = 4, .period = SEC(60)};
    const sl_usec_t at[] = {0, 0, 0, 0, 0, 0, SEC(15), SEC(15)};
    char map[16], line[64];
    int passed = scene_replay(&l, 1, at, 8, map);
    snprintf(line, sizeof line, "%d of 8 pass  %s", passed, map);
    row("bucket of 4, 4/min; 6 at 0 s, 2 at 15 s", "token_bucket", line);
}

static void demo_shaper(void) {
    sl_limit_t l = {.algorithm = SL_LEAKY_BUCKET, .limit = 1, .period = SEC(1), .burst = 3, .shaper = true};
    scene_t s;
    if (scene_open(&s, &l, 1) != SL_OK)
        exit(1);
    char line[96];
    size_t len = 0;
    for (int i = 0; i < 4; i++) {
        sl_decision_t d = scene_check(&s, 0);
        if (d.allowed)
            len += (size_t)snprintf(line + len, sizeof line - len, "wait %" PRId64 " s, ", d.delay / SL_USEC_PER_SEC);
        else
            snprintf(line + len, sizeof line - len, "queue full");
    }
    row("queue of 3 leaving 1/s; 4 arrive at once", "leaky_bucket (shaper)", line);
    scene_close(&s);
}

static int cmd_demo(void) {
    printf("sluice %s: the source articles' scenarios, decided by libsluice\n\n", SL_VERSION_STRING);
    printf("  %-46s %-30s %s\n", "scenario", "algorithm", "result (+ passed, - denied)");
    printf("  %-46s %-30s %s\n", "--------", "---------", "------");
    demo_boundary();
    demo_sliding_estimate();
    demo_hour_and_minute();
    demo_spacing();
    demo_token_bucket();
    demo_shaper();
    printf("\nThe library is libsluice (include/sluice.h); the daemon, sluiced, answers the same\n"
           "decisions over the Redis protocol and HTTP: see README.md and docs/protocol.md.\n");
    return 0;
}

/* ---- snapshot ---------------------------------------------------------------------- */

/* "2026-11-25T16:00:38.527Z (3 min 2 s ago)": the file keeps microseconds
 * since the epoch, which nobody reads at a glance. */
static void format_saved_at(sl_usec_t at, char *out, size_t len) {
    time_t secs = (time_t)(at / SL_USEC_PER_SEC);
    struct tm tm;
    char stamp[32];
    if (at < 0 || gmtime_r(&secs, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(out, len, "%" PRId64 " us since the epoch", at);
        return;
    }
    int64_t ago = (int64_t)time(NULL) - (int64_t)secs;
    size_t n = (size_t)snprintf(out, len, "%s.%03dZ", stamp, (int)(at % SL_USEC_PER_SEC / 1000));
    if (n >= len)
        return;
    if (ago < 0)
        snprintf(out + n, len - n, " (in the future: check this machine's clock)");
    else if (ago < 60)
        snprintf(out + n, len - n, " (%" PRId64 " s ago)", ago);
    else if (ago < 3600)
        snprintf(out + n, len - n, " (%" PRId64 " min %" PRId64 " s ago)", ago / 60, ago % 60);
    else if (ago < 86400)
        snprintf(out + n, len - n, " (%" PRId64 " h %" PRId64 " min ago)", ago / 3600, ago % 3600 / 60);
    else
        snprintf(out + n, len - n, " (%" PRId64 " days ago)", ago / 86400);
}

static int cmd_snapshot(const char *path) {
    sl__snapshot_t snap;
    int rc = sl__snapshot_read(path, 0, &snap);
    if (rc != SL_OK) {
        fprintf(stderr, "sluice: %s: %s\n", path, sl_strerror(rc));
        return 1;
    }
    size_t blocks = 0;
    for (size_t i = 0; i < snap.count; i++)
        blocks += snap.records[i].block != NULL;
    char saved[96];
    format_saved_at(snap.saved_at, saved, sizeof saved);
    printf("%s: sluice snapshot, saved %s, seed %016" PRIx64 "\n", path, saved, snap.seed);
    printf("  %zu states (%zu inline, %zu with logs or sub-window counters)\n", snap.count,
           snap.count - blocks, blocks);
    sl__snapshot_release(&snap);
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: sluice demo | sluice snapshot FILE | sluice top [--http HOST:PORT] | sluice version\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "demo") == 0)
        return cmd_demo();
    if (argc >= 2 && strcmp(argv[1], "top") == 0)
        return sl_cli_top(argc - 1, argv + 1);
    if (argc == 3 && strcmp(argv[1], "snapshot") == 0)
        return cmd_snapshot(argv[2]);
    if (argc == 2 && (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0)) {
        printf("sluice %s\n", SL_VERSION_STRING);
        return 0;
    }
    return usage();
}
