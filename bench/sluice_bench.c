/* sluice_bench.c -- sluice-bench: throughput, memory and accuracy of libsluice.
 *
 * Three measurements of the library through its public API only:
 *   decide    decisions per second on one memory store, one hot key or a
 *             million random keys, one thread or one per online core, with
 *             the real clock (a real caller pays for reading it);
 *   memory    bytes per key, all-in (process RSS), each case in a fresh
 *             process re-executed from this one so earlier cases cannot hide
 *             or inflate the figure;
 *   accuracy  how often sliding_window (precision 1 and 60) decides
 *             differently from the exact sliding_log on a seeded, bursty,
 *             heavy-tailed synthetic trace replayed on a fake clock.
 * Output: one JSON object per line, then a blank line and a readable table,
 * all on stdout; progress goes to stderr.
 *
 * It is not a test: it never fails on speed or size, it only reports (the
 * table shows the design targets beside the figures). It is not a comparison
 * with peers either (../shared/bench/peers does that), and the client loop
 * runs in the same process and on the same cores as the library.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_rng.h"
#include "rmw_ceiling.h"
#include "sluice.h"

#define SEC SL_USEC_PER_SEC
#define MAX_REPS 1000
#define DEFAULT_SEED 42u

/* ---- failing loudly -------------------------------------------------------- */

/* For system calls: errno, when set, says why. */
static _Noreturn void die(const char *what) {
    if (errno)
        fprintf(stderr, "sluice-bench: %s: %s\n", what, strerror(errno));
    else
        fprintf(stderr, "sluice-bench: %s\n", what);
    exit(EXIT_FAILURE);
}

/* A library error here is a bug in the library or in this program: stop at
 * once, with a core, rather than print figures that mean nothing. */
static void check_rc(int rc, const char *what) {
    if (rc == SL_OK)
        return;
    fprintf(stderr, "sluice-bench: %s: %s (%s)\n", what, sl_errname(rc), sl_strerror(rc));
    abort();
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (p == NULL) {
        errno = 0;
        die("out of memory");
    }
    return p;
}

/* ---- time and randomness ----------------------------------------------------- */

/* CPU time of the calling thread: what a decision costs its thread, apart
 * from the time it spends off the CPU on a busy machine. */
static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double monotonic_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_seconds(double s) {
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* Uniform in (0, 1]: never 0, so that log() of it is finite. */
static double unit_open(uint64_t *state) {
    return (double)((splitmix64(state) >> 11) + 1) * 0x1p-53;
}

static double exponential(uint64_t *state, double mean) { return -mean * log(unit_open(state)); }

static double standard_normal(uint64_t *state) {
    const double two_pi = 6.283185307179586;
    return sqrt(-2.0 * log(unit_open(state))) * cos(two_pi * unit_open(state));
}

/* ---- library helpers ----------------------------------------------------------- */

static sl_policy_t *new_policy(const char *name, sl_algorithm_t algorithm, uint64_t limit,
                               sl_usec_t period, uint32_t precision) {
    sl_limit_t l;
    memset(&l, 0, sizeof l);
    l.algorithm = algorithm;
    l.limit = limit;
    l.period = period;
    l.precision = precision;
    sl_policy_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.name = name;
    cfg.limits = &l;
    cfg.nlimits = 1;
    cfg.mode = SL_MODE_HARD;
    sl_policy_t *p = NULL;
    char why[256] = "";
    int rc = sl_policy_new(&cfg, &p, why, sizeof why);
    if (rc != SL_OK)
        fprintf(stderr, "sluice-bench: policy %s: %s\n", name, why);
    check_rc(rc, "sl_policy_new");
    return p;
}

static sl_store_t *new_memory_store(void) {
    sl_store_t *s = NULL;
    check_rc(sl_store_memory_new(NULL, &s), "sl_store_memory_new");
    return s;
}

static sl_limiter_t *new_limiter(sl_store_t *store, const sl_limiter_options_t *opts) {
    sl_limiter_t *l = NULL;
    check_rc(sl_limiter_new(store, opts, &l), "sl_limiter_new");
    return l;
}

/* A clock the caller sets: the limiter reads the variable clock_ctx points to. */
static sl_usec_t fake_clock(void *ctx) { return *(const sl_usec_t *)ctx; }

static bool check_once(sl_limiter_t *lim, const sl_policy_t *p, const char *key, size_t len,
                       uint64_t cost) {
    sl_decision_t d;
    check_rc(sl_check(lim, p, key, len, cost, &d), "sl_check");
    return d.allowed;
}

/* ---- options ------------------------------------------------------------------- */

enum { ONLY_DECIDE = 1, ONLY_MEMORY = 2, ONLY_ACCURACY = 4, ONLY_CEILING = 8, ONLY_ALL = 15 };

typedef struct options {
    bool quick;
    unsigned only;
    double duration;  /* seconds per decide measurement */
    int reps;
    uint64_t seed;
    uint32_t decide_keys;
    uint32_t memory_keys[2];
    size_t memory_sizes;
    uint64_t accuracy_requests;
    uint32_t accuracy_keys;
    int algorithm;   /* decide: only this algorithm (-1: all) */
    unsigned keysel; /* decide: 1 the hot key, 2 the many keys, 3 both */
} options_t;

static void usage(FILE *f) {
    fprintf(f,
            "usage: sluice-bench [--quick] [--only decide|memory|accuracy|ceiling]\n"
            "                    [--duration SEC]\n"
            "                    [--reps N] [--seed N] [--algorithm ALG] [--keys hot|many]\n"
            "                    [--help]\n"
            "  --quick          tiny sizes, a smoke test of a few seconds\n"
            "  --only WHAT      run one of the benchmarks (ceiling: the random\n"
            "                   read-modify-write ceiling of one core, as many keys)\n"
            "  --duration SEC   length of one decide measurement (default 1.0)\n"
            "  --reps N         decide measurements per case, the median is kept (default 3)\n"
            "  --seed N         seed of key choice and of the accuracy trace (default %u)\n"
            "  --algorithm ALG  decide: only this algorithm\n"
            "  --keys hot|many  decide: only the one hot key, or only the many keys\n"
            "Prints one JSON object per line, then a table, on stdout.\n",
            DEFAULT_SEED);
}

static _Noreturn void bad_usage(const char *msg, const char *arg) {
    fprintf(stderr, "sluice-bench: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    usage(stderr);
    exit(2);
}

static const char *option_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc)
        bad_usage("missing value for", argv[*i]);
    return argv[++*i];
}

static double parse_positive_double(const char *s, const char *opt) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || v > 3600)
        bad_usage("bad value for", opt);
    return v;
}

static uint64_t parse_u64(const char *s, const char *opt, uint64_t min, uint64_t max) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
        bad_usage("bad value for", opt);
    return v;
}

static options_t parse_options(int argc, char **argv) {
    options_t o;
    memset(&o, 0, sizeof o);
    o.only = ONLY_ALL;
    o.seed = DEFAULT_SEED;
    o.algorithm = -1;
    o.keysel = 3;
    double duration = 0;
    int reps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            o.quick = true;
        } else if (strcmp(a, "--only") == 0) {
            const char *v = option_value(argc, argv, &i);
            if (strcmp(v, "decide") == 0)
                o.only = ONLY_DECIDE;
            else if (strcmp(v, "memory") == 0)
                o.only = ONLY_MEMORY;
            else if (strcmp(v, "accuracy") == 0)
                o.only = ONLY_ACCURACY;
            else if (strcmp(v, "ceiling") == 0)
                o.only = ONLY_CEILING;
            else
                bad_usage("--only takes decide, memory, accuracy or ceiling, not", v);
        } else if (strcmp(a, "--duration") == 0) {
            duration = parse_positive_double(option_value(argc, argv, &i), a);
        } else if (strcmp(a, "--reps") == 0) {
            reps = (int)parse_u64(option_value(argc, argv, &i), a, 1, MAX_REPS);
        } else if (strcmp(a, "--seed") == 0) {
            o.seed = parse_u64(option_value(argc, argv, &i), a, 0, UINT64_MAX);
        } else if (strcmp(a, "--algorithm") == 0) {
            const char *v = option_value(argc, argv, &i);
            sl_algorithm_t alg;
            if (sl_algorithm_parse(v, &alg) != SL_OK)
                bad_usage("unknown algorithm", v);
            o.algorithm = (int)alg;
        } else if (strcmp(a, "--keys") == 0) {
            const char *v = option_value(argc, argv, &i);
            if (strcmp(v, "hot") == 0)
                o.keysel = 1;
            else if (strcmp(v, "many") == 0)
                o.keysel = 2;
            else
                bad_usage("--keys takes hot or many, not", v);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else {
            bad_usage("unknown option", a);
        }
    }
    /* --quick sets the sizes; an explicit --duration or --reps still wins. */
    o.duration = duration > 0 ? duration : o.quick ? 0.1 : 1.0;
    o.reps = reps > 0 ? reps : o.quick ? 1 : 3;
    o.decide_keys = o.quick ? 1000 : 1000000;
    if (o.quick) {
        o.memory_keys[0] = 10000;
        o.memory_sizes = 1;
    } else {
        o.memory_keys[0] = 1000000;
        o.memory_keys[1] = 10000000;
        o.memory_sizes = 2;
    }
    o.accuracy_requests = o.quick ? 100000 : 10000000;
    o.accuracy_keys = o.quick ? 1000 : 10000;
    return o;
}

/* ---- results, kept for the table ------------------------------------------------ */

typedef struct decide_result {
    const char *algorithm;
    uint32_t precision;  /* 0: not a sliding_window */
    uint64_t limit;
    sl_usec_t period;
    uint32_t keys;
    unsigned threads;
    unsigned batch;      /* 0: one sl_check() per decision; else sl_check_batch() size */
    double ops_per_sec;
    double cpu_ns_per_op;  /* the workers' CPU time per decision */
} decide_result_t;

typedef struct memory_result {
    const char *algorithm;
    uint32_t keys;
    uint32_t entries;  /* sliding_log only, else 0 */
    uint64_t limit;
    double bytes_per_key;
    double store_bytes_per_key;
} memory_result_t;

typedef struct accuracy_result {
    uint32_t precision;
    uint64_t requests;
    uint32_t keys;
    double wrong_pct, wrongly_allowed_pct, wrongly_denied_pct, denied_pct;
} accuracy_result_t;

typedef struct ceiling_result {
    uint32_t keys;
    uint64_t table_bytes;
    unsigned run, lookahead;  /* lookahead 0: no prefetch */
    bool huge;                /* table and keys on huge pages */
    double ops_per_sec;
} ceiling_result_t;

#define MAX_DECIDE 96
#define MAX_CEILING 4
#define MAX_MEMORY 32

typedef struct results {
    decide_result_t decide[MAX_DECIDE];
    size_t ndecide;
    memory_result_t memory[MAX_MEMORY];
    size_t nmemory;
    accuracy_result_t accuracy[2];
    size_t naccuracy;
    ceiling_result_t ceiling[MAX_CEILING];
    size_t nceiling;
    uint64_t seed;
} results_t;

/* Whatever the workers saw allowed ends here, so no check can be dropped. */
static volatile uint64_t sink;

/* ---- decide ------------------------------------------------------------------------ */

/* "user:%07u": 12 bytes, at a fixed stride so a key is found by index. */
#define KEY_LEN 12
#define KEY_STRIDE 16

typedef struct variant {
    sl_algorithm_t algorithm;
    uint32_t precision;
    uint64_t limit;
    sl_usec_t period;
} variant_t;

/* 100 per second, like the peer benchmarks: random keys are nearly all
 * allowed, the hot key nearly all denied. Precision 60 cannot divide one
 * second of microseconds, so that variant keeps the rate as 6000 per minute
 * with sub-windows of one second. */
static const variant_t decide_variants[] = {
    {SL_GCRA, 0, 100, SEC},           {SL_TOKEN_BUCKET, 0, 100, SEC},
    {SL_LEAKY_BUCKET, 0, 100, SEC},   {SL_FIXED_WINDOW, 0, 100, SEC},
    {SL_SLIDING_LOG, 0, 100, SEC},    {SL_SLIDING_WINDOW, 1, 100, SEC},
    {SL_SLIDING_WINDOW, 60, 6000, 60 * SEC},
};

typedef struct decide_case {
    sl_limiter_t *limiter;
    const sl_policy_t *policy;
    const char *keys;
    uint32_t nkeys;
    bool batch;  /* decide CHECKS_PER_STOP_TEST at a time with sl_check_batch() */
    pthread_barrier_t start;
    atomic_bool stop;
} decide_case_t;

typedef struct worker {
    pthread_t thread;
    decide_case_t *c;
    uint64_t rng;
    uint64_t ops;
    uint64_t allowed;
    double cpu;  /* this thread's CPU seconds while measuring */
} worker_t;

static char *make_decide_keys(uint32_t n) {
    if (n > 9999999) {
        errno = 0;
        die("too many keys for the user:%07u format");
    }
    char *keys = xcalloc(n, KEY_STRIDE);
    for (uint32_t i = 0; i < n; i++)
        snprintf(keys + (size_t)i * KEY_STRIDE, KEY_STRIDE, "user:%07" PRIu32, i);
    return keys;
}

/* Checks in batches so that the stop flag costs nothing measurable. */
#define CHECKS_PER_STOP_TEST 32

static void *decide_worker(void *arg) {
    worker_t *w = arg;
    decide_case_t *c = w->c;
    uint64_t ops = 0, allowed = 0;
    int rc = pthread_barrier_wait(&c->start);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        errno = rc;
        die("pthread_barrier_wait");
    }
    sl_request_t reqs[CHECKS_PER_STOP_TEST];
    sl_decision_t out[CHECKS_PER_STOP_TEST];
    double cpu0 = thread_cpu_seconds();
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        for (int i = 0; i < CHECKS_PER_STOP_TEST; i++) {
            uint32_t k = c->nkeys == 1 ? 0 : below(splitmix64(&w->rng), c->nkeys);
            reqs[i] = (sl_request_t){c->keys + (size_t)k * KEY_STRIDE, KEY_LEN, 1};
            if (!c->batch)
                check_rc(sl_check(c->limiter, c->policy, reqs[i].key, KEY_LEN, 1, &out[i]),
                         "sl_check");
        }
        if (c->batch)
            check_rc(sl_check_batch(c->limiter, c->policy, reqs, CHECKS_PER_STOP_TEST, out, NULL),
                     "sl_check_batch");
        for (int i = 0; i < CHECKS_PER_STOP_TEST; i++)
            allowed += out[i].allowed;
        ops += CHECKS_PER_STOP_TEST;
    }
    w->cpu = thread_cpu_seconds() - cpu0;
    w->ops = ops;
    w->allowed = allowed;
    return NULL;
}

/* One measurement: all threads start at the barrier, the main thread times
 * the run and raises the stop flag. Returns decisions per second, and in
 * *cpu_ns the workers' CPU nanoseconds per decision. */
static double measure_decide(decide_case_t *c, unsigned threads, double duration, uint64_t seed,
                             double *cpu_ns) {
    worker_t *w = xcalloc(threads, sizeof *w);
    atomic_store(&c->stop, false);
    errno = pthread_barrier_init(&c->start, NULL, threads + 1);
    if (errno)
        die("pthread_barrier_init");
    for (unsigned t = 0; t < threads; t++) {
        w[t].c = c;
        w[t].rng = seed ^ (UINT64_C(0x51ed27) * (t + 1));
        errno = pthread_create(&w[t].thread, NULL, decide_worker, &w[t]);
        if (errno)
            die("pthread_create");
    }
    int rc = pthread_barrier_wait(&c->start);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        errno = rc;
        die("pthread_barrier_wait");
    }
    double t0 = monotonic_seconds();
    sleep_seconds(duration);
    atomic_store(&c->stop, true);
    double elapsed = monotonic_seconds() - t0;
    uint64_t ops = 0;
    double cpu = 0;
    for (unsigned t = 0; t < threads; t++) {
        errno = pthread_join(w[t].thread, NULL);
        if (errno)
            die("pthread_join");
        ops += w[t].ops;
        cpu += w[t].cpu;
        sink += w[t].allowed;
    }
    *cpu_ns = ops ? cpu * 1e9 / (double)ops : 0;
    pthread_barrier_destroy(&c->start);
    free(w);
    return (double)ops / elapsed;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_decide_json(const decide_result_t *r) {
    printf("{\"bench\":\"decide\",\"algorithm\":\"%s\"", r->algorithm);
    if (r->precision)
        printf(",\"precision\":%" PRIu32, r->precision);
    if (r->limit != 100 || r->period != SEC) /* only where it is not the usual 100/s */
        printf(",\"limit\":%" PRIu64 ",\"period_s\":%" PRId64, r->limit, r->period / SEC);
    printf(",\"keys\":%" PRIu32 ",\"threads\":%u", r->keys, r->threads);
    if (r->batch)
        printf(",\"batch\":%u", r->batch);
    printf(",\"ops_per_sec\":%.0f,\"ns_per_op\":%.1f,\"cpu_ns_per_op\":%.1f}\n", r->ops_per_sec,
           1e9 * r->threads / r->ops_per_sec, r->cpu_ns_per_op);
    fflush(stdout);
}

/* One case: a fresh store and limiter, warmed by checking every key once so
 * that the tables have grown to the key count, measured reps times; the
 * median is kept. (States that recover are reclaimed while measuring, which
 * a real store does too, but its tables never shrink.) */
static decide_result_t run_decide_case(const options_t *o, const variant_t *v, const char *keys,
                                       uint32_t nkeys, unsigned threads, bool batch) {
    const char *name = sl_algorithm_name(v->algorithm);
    fprintf(stderr, "decide %s%s keys=%" PRIu32 " threads=%u%s\n", name,
            v->precision == 60 ? " precision=60" : "", nkeys, threads, batch ? " batch" : "");
    sl_store_t *store = new_memory_store();
    sl_limiter_t *lim = new_limiter(store, NULL);
    sl_policy_t *p = new_policy("bench-decide", v->algorithm, v->limit, v->period, v->precision);
    uint64_t warm_allowed = 0;
    for (uint32_t k = 0; k < nkeys; k++)
        warm_allowed += check_once(lim, p, keys + (size_t)k * KEY_STRIDE, KEY_LEN, 1);
    sink += warm_allowed;

    decide_case_t c;
    memset(&c, 0, sizeof c);
    c.limiter = lim;
    c.policy = p;
    c.keys = keys;
    c.nkeys = nkeys;
    c.batch = batch;
    double rates[MAX_REPS], cpus[MAX_REPS];
    for (int r = 0; r < o->reps; r++)
        rates[r] = measure_decide(&c, threads, o->duration, o->seed + (uint64_t)r * 7919, &cpus[r]);

    decide_result_t res = {name,    v->precision, v->limit, v->period, nkeys, threads,
                           batch ? CHECKS_PER_STOP_TEST : 0, median(rates, o->reps),
                           median(cpus, o->reps)};
    sl_policy_free(p);
    sl_limiter_free(lim);
    sl_store_free(store);
    return res;
}

static void run_decide(const options_t *o, results_t *res) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned thread_counts[2] = {1, online > 1 ? (unsigned)online : 1};
    size_t nthread_counts = thread_counts[1] > 1 ? 2 : 1;
    uint32_t key_counts[2] = {1, o->decide_keys};
    char *keys = make_decide_keys(o->decide_keys);
    /* Batches only where they can help: many keys, whose states are not in
     * cache. One hot key's state always is. */
    for (size_t vi = 0; vi < sizeof decide_variants / sizeof decide_variants[0]; vi++)
        for (size_t ki = 0; ki < 2; ki++)
            for (int batch = 0; batch <= (ki == 1); batch++)
                for (size_t ti = 0; ti < nthread_counts; ti++) {
                    if ((o->algorithm >= 0 && (int)decide_variants[vi].algorithm != o->algorithm) ||
                        !(o->keysel & (1u << ki)))
                        continue;
                    decide_result_t r = run_decide_case(o, &decide_variants[vi], keys,
                                                        key_counts[ki], thread_counts[ti], batch);
                    print_decide_json(&r);
                    if (res->ndecide < MAX_DECIDE)
                        res->decide[res->ndecide++] = r;
                }
    free(keys);
}

/* ---- the read-modify-write ceiling ------------------------------------------------------ */

/* The table's size is the memory store's own for the decide keys, read
 * from a store warmed with them (gcra: one packed slot per key). */
static uint64_t store_table_bytes(const char *keys, uint32_t nkeys) {
    sl_store_t *store = new_memory_store();
    sl_limiter_t *lim = new_limiter(store, NULL);
    sl_policy_t *p = new_policy("bench-ceiling", SL_GCRA, 100, SEC, 0);
    for (uint32_t k = 0; k < nkeys; k++)
        sink += check_once(lim, p, keys + (size_t)k * KEY_STRIDE, KEY_LEN, 1);
    sl_store_stats_t st;
    check_rc(sl_store_stats(store, &st), "sl_store_stats");
    sl_policy_free(p);
    sl_limiter_free(lim);
    sl_store_free(store);
    return st.bytes;
}

static void run_ceiling(const options_t *o, results_t *res) {
    char *keys = make_decide_keys(o->decide_keys);
    uint64_t bytes = store_table_bytes(keys, o->decide_keys);
    rmw_keys_t ks = {keys, o->decide_keys, KEY_STRIDE, KEY_LEN};
    /* {run, lookahead, huge}: none; as sl_check_batch() of a worker's 32
     * requests; a stream whose prefetching never restarts; the batch on
     * huge pages */
    static const unsigned shapes[][3] = {{CHECKS_PER_STOP_TEST, 0, 0},
                                         {CHECKS_PER_STOP_TEST, 8, 0},
                                         {256, 8, 0},
                                         {CHECKS_PER_STOP_TEST, 8, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && res->nceiling < MAX_CEILING; i++) {
        fprintf(stderr, "ceiling run=%u lookahead=%u%s\n", shapes[i][0], shapes[i][1],
                shapes[i][2] ? " huge pages" : "");
        double rates[MAX_REPS];
        for (int r = 0; r < o->reps; r++)
            rates[r] = rmw_ceiling(&ks, (size_t)(bytes / 16), shapes[i][0], shapes[i][1], shapes[i][2],
                                   o->duration, o->seed + (uint64_t)r * 7919);
        ceiling_result_t c = {o->decide_keys, bytes, shapes[i][0], shapes[i][1], shapes[i][2] != 0,
                              median(rates, o->reps)};
        printf("{\"bench\":\"ceiling\",\"keys\":%" PRIu32 ",\"table_bytes\":%" PRIu64
               ",\"run\":%u,\"lookahead\":%u,\"huge_pages\":%s,\"ops_per_sec\":%.0f}\n",
               c.keys, c.table_bytes, c.run, c.lookahead, c.huge ? "true" : "false", c.ops_per_sec);
        fflush(stdout);
        res->ceiling[res->nceiling++] = c;
    }
    free(keys);
}

/* ---- memory --------------------------------------------------------------------------- */

#define MEMORY_PERIOD (60 * SEC)
#define MEMORY_LIMIT 100
#define MEMORY_LOG_LIMIT 500

static uint64_t resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        die("/proc/self/statm");
    unsigned long long size = 0, resident = 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    if (n != 2) {
        errno = 0;
        die("cannot parse /proc/self/statm");
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The child's side (--memory-one ALG K ENTRIES): fill a fresh store with K
 * keys and print "states rss_delta store_bytes unexpected_denials". Keys are
 * formatted into a stack buffer: an array of them would be counted too.
 * Time stands still while filling: gcra, token_bucket and leaky_bucket
 * recover one unit of cost in period/limit = 0.6 s, far less than 10 M
 * checks take, and on the real clock the sweep would reclaim the early keys
 * and leave the figure divided by a fraction of the keys. */
static int memory_child(int argc, char **argv) {
    if (argc != 5)
        bad_usage("--memory-one takes ALG K ENTRIES", NULL);
    sl_algorithm_t alg;
    if (sl_algorithm_parse(argv[2], &alg) != SL_OK)
        bad_usage("unknown algorithm", argv[2]);
    uint32_t nkeys = (uint32_t)parse_u64(argv[3], "K", 1, UINT32_MAX);
    uint32_t entries = (uint32_t)parse_u64(argv[4], "ENTRIES", 1, MEMORY_LOG_LIMIT);
    uint64_t limit = alg == SL_SLIDING_LOG ? MEMORY_LOG_LIMIT : MEMORY_LIMIT;

    sl_usec_t frozen = sl_clock_realtime(NULL);
    sl_limiter_options_t lo = {fake_clock, &frozen};
    uint64_t before = resident_bytes();
    sl_store_t *store = new_memory_store();
    sl_limiter_t *lim = new_limiter(store, &lo);
    sl_policy_t *p = new_policy("bench-memory", alg, limit, MEMORY_PERIOD,
                                alg == SL_SLIDING_WINDOW ? 1 : 0);
    uint64_t denied = 0;
    for (uint32_t i = 0; i < nkeys; i++) {
        char key[16];
        int len = snprintf(key, sizeof key, "k%" PRIu32, i);
        denied += !check_once(lim, p, key, (size_t)len, entries);
    }
    uint64_t after = resident_bytes();
    sl_store_stats_t st;
    check_rc(sl_store_stats(store, &st), "sl_store_stats");
    printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", st.states,
           after > before ? after - before : 0, st.bytes, denied);
    sl_policy_free(p);
    sl_limiter_free(lim);
    sl_store_free(store);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Runs one memory case in a re-executed copy of this program and reads its
 * figures from a pipe. */
static void spawn_memory_child(const char *alg, uint32_t nkeys, uint32_t entries, char *out,
                               size_t out_len) {
    char abuf[32], kbuf[16], ebuf[16];
    snprintf(abuf, sizeof abuf, "%s", alg);
    snprintf(kbuf, sizeof kbuf, "%" PRIu32, nkeys);
    snprintf(ebuf, sizeof ebuf, "%" PRIu32, entries);
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        char prog[] = "sluice-bench";
        char opt[] = "--memory-one";
        char *args[] = {prog, opt, abuf, kbuf, ebuf, NULL};
        if (dup2(fd[1], STDOUT_FILENO) < 0)
            _exit(127);
        close(fd[0]);
        close(fd[1]);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fd[1]);
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fd[0], out + used, out_len - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read from the memory child");
        if (n == 0 || (used += (size_t)n) == out_len - 1)
            break;
    }
    out[used] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "sluice-bench: memory child for %s K=%" PRIu32 " failed (status %d)\n",
                alg, nkeys, status);
        exit(EXIT_FAILURE);
    }
}

static memory_result_t run_memory_case(const char *alg, uint32_t nkeys, uint32_t entries) {
    fprintf(stderr, "memory %s keys=%" PRIu32 " entries=%" PRIu32 "\n", alg, nkeys, entries);
    char line[256];
    spawn_memory_child(alg, nkeys, entries, line, sizeof line);
    unsigned long long states, rss, bytes, denied;
    if (sscanf(line, "%llu %llu %llu %llu", &states, &rss, &bytes, &denied) != 4 || states == 0) {
        fprintf(stderr, "sluice-bench: memory child for %s said: %s\n", alg, line);
        exit(EXIT_FAILURE);
    }
    if (denied)
        fprintf(stderr, "sluice-bench: warning: %s: %llu of %" PRIu32 " first checks denied\n", alg,
                denied, nkeys);
    if (states != nkeys)
        fprintf(stderr, "sluice-bench: warning: %s: %llu states for %" PRIu32 " keys\n", alg,
                states, nkeys);
    bool log = strcmp(alg, sl_algorithm_name(SL_SLIDING_LOG)) == 0;
    memory_result_t r = {alg, nkeys, log ? entries : 0, log ? MEMORY_LOG_LIMIT : MEMORY_LIMIT,
                         (double)rss / (double)states, (double)bytes / (double)states};
    return r;
}

static void print_memory_json(const memory_result_t *r) {
    printf("{\"bench\":\"memory\",\"algorithm\":\"%s\"", r->algorithm);
    if (strcmp(r->algorithm, sl_algorithm_name(SL_SLIDING_WINDOW)) == 0)
        printf(",\"precision\":1");
    printf(",\"keys\":%" PRIu32, r->keys);
    if (r->entries)
        printf(",\"entries\":%" PRIu32 ",\"limit\":%" PRIu64, r->entries, r->limit);
    printf(",\"bytes_per_key\":%.1f,\"store_bytes_per_key\":%.1f}\n", r->bytes_per_key,
           r->store_bytes_per_key);
    fflush(stdout);
}

static void add_memory(results_t *res, memory_result_t r) {
    print_memory_json(&r);
    if (res->nmemory < MAX_MEMORY)
        res->memory[res->nmemory++] = r;
}

static void run_memory(const options_t *o, results_t *res) {
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        const char *name = sl_algorithm_name((sl_algorithm_t)a);
        if (a == SL_SLIDING_LOG) {
            /* One size only: a full log of 500 entries per key at 10 M keys
             * would need some 20 GB. */
            add_memory(res, run_memory_case(name, o->memory_keys[0], 1));
            add_memory(res, run_memory_case(name, o->memory_keys[0], MEMORY_LOG_LIMIT));
            continue;
        }
        for (size_t s = 0; s < o->memory_sizes; s++)
            add_memory(res, run_memory_case(name, o->memory_keys[s], 1));
    }
}

/* ---- accuracy -------------------------------------------------------------------------- */

/* Limit of the replay: 60 per minute per key. */
#define ACC_LIMIT 60
#define ACC_PERIOD (60 * SEC)
/* Keys alternate ON and OFF periods with exponential lengths; while ON they
 * send Poisson arrivals at a log-normal rate (median 0.5/s, one key in a
 * thousand above 6/s, capped so one key cannot be the whole trace). Tuned so
 * that the exact log denies about a tenth of the requests: a trace nobody
 * limits would make any estimate look perfect. */
#define ACC_MEAN_ON (20.0 * SEC)
#define ACC_MEAN_OFF (60.0 * SEC)
#define ACC_RATE_MEDIAN 0.5
#define ACC_RATE_SIGMA 0.8
#define ACC_RATE_MAX 500.0
/* A start off the whole second, so sub-window edges fall anywhere. */
#define ACC_EPOCH (INT64_C(1700000000) * SEC + 123457)

typedef struct source {
    sl_usec_t on_end;  /* end of the current or last ON period */
    double mean_gap;   /* us between arrivals while ON */
} source_t;

typedef struct arrival {
    sl_usec_t at;
    uint32_t key;
} arrival_t;

typedef struct trace {
    source_t *src;
    arrival_t *heap;  /* next arrival of every key, earliest on top */
    uint32_t n;
    uint64_t rng;
} trace_t;

/* The first arrival after t. Exponential gaps are memoryless, so a gap that
 * overruns the ON period is simply drawn again from the next ON period. */
static sl_usec_t next_arrival(trace_t *tr, source_t *s, sl_usec_t t) {
    double at = (double)t + exponential(&tr->rng, s->mean_gap);
    while (at >= (double)s->on_end) {
        double start = (double)s->on_end + exponential(&tr->rng, ACC_MEAN_OFF);
        s->on_end = (sl_usec_t)(start + exponential(&tr->rng, ACC_MEAN_ON)) + 1;
        at = start + exponential(&tr->rng, s->mean_gap);
    }
    return (sl_usec_t)at;
}

static bool earlier(const arrival_t *a, const arrival_t *b) {
    return a->at < b->at || (a->at == b->at && a->key < b->key);
}

static void sift_down(arrival_t *h, uint32_t n, uint32_t i) {
    for (;;) {
        uint32_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && earlier(&h[l], &h[least]))
            least = l;
        if (r < n && earlier(&h[r], &h[least]))
            least = r;
        if (least == i)
            return;
        arrival_t t = h[i];
        h[i] = h[least];
        h[least] = t;
        i = least;
    }
}

static void trace_init(trace_t *tr, uint32_t nkeys, uint64_t seed) {
    tr->n = nkeys;
    tr->rng = seed;
    tr->src = xcalloc(nkeys, sizeof *tr->src);
    tr->heap = xcalloc(nkeys, sizeof *tr->heap);
    double on_share = ACC_MEAN_ON / (ACC_MEAN_ON + ACC_MEAN_OFF);
    for (uint32_t k = 0; k < nkeys; k++) {
        source_t *s = &tr->src[k];
        double rate = ACC_RATE_MEDIAN * exp(ACC_RATE_SIGMA * standard_normal(&tr->rng));
        s->mean_gap = (double)SEC / (rate < ACC_RATE_MAX ? rate : ACC_RATE_MAX);
        /* Keys start in their steady state: ON with the ON share, else OFF. */
        bool on = unit_open(&tr->rng) <= on_share;
        s->on_end = ACC_EPOCH + (on ? (sl_usec_t)exponential(&tr->rng, ACC_MEAN_ON) + 1 : 0);
        tr->heap[k].key = k;
        tr->heap[k].at = next_arrival(tr, s, ACC_EPOCH);
    }
    for (uint32_t i = nkeys / 2; i-- > 0;)
        sift_down(tr->heap, nkeys, i);
}

/* Pops the earliest arrival and schedules that key's next one. */
static arrival_t trace_next(trace_t *tr) {
    arrival_t a = tr->heap[0];
    tr->heap[0].at = next_arrival(tr, &tr->src[a.key], a.at);
    sift_down(tr->heap, tr->n, 0);
    return a;
}

static void trace_free(trace_t *tr) {
    free(tr->src);
    free(tr->heap);
}

typedef struct disagreement {
    uint64_t wrongly_allowed, wrongly_denied;
} disagreement_t;

static void tally(disagreement_t *d, bool exact, bool estimate) {
    d->wrongly_allowed += estimate && !exact;
    d->wrongly_denied += exact && !estimate;
}

static accuracy_result_t accuracy_result(uint32_t precision, const options_t *o,
                                         const disagreement_t *d, uint64_t exact_denied) {
    double n = (double)o->accuracy_requests;
    accuracy_result_t r = {precision, o->accuracy_requests, o->accuracy_keys,
                           100.0 * (double)(d->wrongly_allowed + d->wrongly_denied) / n,
                           100.0 * (double)d->wrongly_allowed / n,
                           100.0 * (double)d->wrongly_denied / n,
                           100.0 * (double)exact_denied / n};
    return r;
}

static void print_accuracy_json(const accuracy_result_t *r, uint64_t seed) {
    printf("{\"bench\":\"accuracy\",\"algorithm\":\"sliding_window\",\"precision\":%" PRIu32
           ",\"requests\":%" PRIu64 ",\"keys\":%" PRIu32
           ",\"wrong_pct\":%.4f,\"wrongly_allowed_pct\":%.4f,\"wrongly_denied_pct\":%.4f"
           ",\"denied_pct\":%.4f,\"seed\":%" PRIu64 "}\n",
           r->precision, r->requests, r->keys, r->wrong_pct, r->wrongly_allowed_pct,
           r->wrongly_denied_pct, r->denied_pct, seed);
    fflush(stdout);
}

/* Every request goes to the exact log and to both estimates, each with its
 * own state, exactly as three separate deployments would see the trace. */
static void run_accuracy(const options_t *o, results_t *res) {
    fprintf(stderr, "accuracy: %" PRIu64 " requests over %" PRIu32 " keys, seed %" PRIu64 "\n",
            o->accuracy_requests, o->accuracy_keys, o->seed);
    sl_usec_t now = ACC_EPOCH;
    sl_limiter_options_t lo = {fake_clock, &now};
    sl_store_t *store = new_memory_store();
    sl_limiter_t *lim = new_limiter(store, &lo);
    sl_policy_t *exact = new_policy("acc-log", SL_SLIDING_LOG, ACC_LIMIT, ACC_PERIOD, 0);
    sl_policy_t *sw1 = new_policy("acc-sw1", SL_SLIDING_WINDOW, ACC_LIMIT, ACC_PERIOD, 1);
    sl_policy_t *sw60 = new_policy("acc-sw60", SL_SLIDING_WINDOW, ACC_LIMIT, ACC_PERIOD, 60);

    char *keys = xcalloc(o->accuracy_keys, KEY_STRIDE);
    for (uint32_t k = 0; k < o->accuracy_keys; k++)
        snprintf(keys + (size_t)k * KEY_STRIDE, KEY_STRIDE, "acc:%" PRIu32, k);

    trace_t tr;
    trace_init(&tr, o->accuracy_keys, o->seed);
    disagreement_t d1 = {0, 0}, d60 = {0, 0};
    uint64_t exact_denied = 0;
    for (uint64_t i = 0; i < o->accuracy_requests; i++) {
        arrival_t a = trace_next(&tr);
        now = a.at;
        const char *key = keys + (size_t)a.key * KEY_STRIDE;
        size_t len = strlen(key);
        bool e = check_once(lim, exact, key, len, 1);
        exact_denied += !e;
        tally(&d1, e, check_once(lim, sw1, key, len, 1));
        tally(&d60, e, check_once(lim, sw60, key, len, 1));
    }
    fprintf(stderr, "accuracy: the trace spans %.0f s\n", (double)(now - ACC_EPOCH) / SEC);

    res->accuracy[0] = accuracy_result(1, o, &d1, exact_denied);
    res->accuracy[1] = accuracy_result(60, o, &d60, exact_denied);
    res->naccuracy = 2;
    print_accuracy_json(&res->accuracy[0], o->seed);
    print_accuracy_json(&res->accuracy[1], o->seed);

    trace_free(&tr);
    free(keys);
    sl_policy_free(exact);
    sl_policy_free(sw1);
    sl_policy_free(sw60);
    sl_limiter_free(lim);
    sl_store_free(store);
}

/* ---- the table ---------------------------------------------------------------------------- */

static const decide_result_t *single_thread_twin(const results_t *res, const decide_result_t *r) {
    for (size_t i = 0; i < res->ndecide; i++) {
        const decide_result_t *t = &res->decide[i];
        if (t->threads == 1 && t->keys == r->keys && t->precision == r->precision &&
            t->batch == r->batch && strcmp(t->algorithm, r->algorithm) == 0)
            return t;
    }
    return NULL;
}

static void print_decide_table(const results_t *res) {
    printf("decide: one limit of 100/s (sliding_window p60: 6000/60 s), real clock\n");
    printf("  %-16s %4s %8s %5s %7s %12s %9s %16s %8s\n", "algorithm", "prec", "keys", "batch",
           "threads", "decisions/s", "ns/op", "per thread /s", "scaling");
    for (size_t i = 0; i < res->ndecide; i++) {
        const decide_result_t *r = &res->decide[i];
        const decide_result_t *one = single_thread_twin(res, r);
        char prec[12] = "-", scaling[16] = "-", batch[12] = "-";
        if (r->batch)
            snprintf(batch, sizeof batch, "%u", r->batch);
        if (r->precision)
            snprintf(prec, sizeof prec, "%" PRIu32, r->precision);
        if (r->threads > 1 && one)
            snprintf(scaling, sizeof scaling, "%.2fx", r->ops_per_sec / one->ops_per_sec);
        printf("  %-16s %4s %8" PRIu32 " %5s %7u %12.0f %9.1f %16.0f %8s\n", r->algorithm, prec,
               r->keys, batch, r->threads, r->ops_per_sec, 1e9 * r->threads / r->ops_per_sec,
               r->ops_per_sec / r->threads, scaling);
    }
    printf("  batch: '-' one sl_check() per decision; N: sl_check_batch() of N requests\n");
    printf("  targets: gcra >= 10 M decisions/s per thread on 1 M random keys;"
           " >= 1.7x on 2 threads\n");
}

static void print_memory_table(const results_t *res) {
    printf("memory: limit 100 per 60 s (sliding_log 500 per 60 s), fresh process per line\n");
    printf("  %-16s %9s %7s %12s %12s %8s %6s\n", "algorithm", "keys", "entries", "B/key (RSS)",
           "B/key store", "target", "meets");
    for (size_t i = 0; i < res->nmemory; i++) {
        const memory_result_t *r = &res->memory[i];
        double target = r->entries ? 4.0 * (double)r->limit + 32 : 24;
        char entries[12] = "-";
        if (r->entries)
            snprintf(entries, sizeof entries, "%" PRIu32, r->entries);
        printf("  %-16s %9" PRIu32 " %7s %12.1f %12.1f %8.0f %6s\n", r->algorithm, r->keys,
               entries, r->bytes_per_key, r->store_bytes_per_key, target,
               r->bytes_per_key <= target ? "yes" : "NO");
    }
    printf("  targets: <= 24 B/key at 1 M and 10 M keys for the fixed-size algorithms (issue 17);"
           " sliding_log <= 4 x limit + 32\n");
}

static void print_accuracy_table(const results_t *res) {
    printf("accuracy: sliding_window against the exact sliding_log, 60 per 60 s, seed %" PRIu64
           "\n",
           res->seed);
    printf("  %4s %10s %7s %10s %10s %14s %14s\n", "prec", "requests", "keys", "denied %",
           "wrong %", "wrongly allow%", "wrongly deny%");
    for (size_t i = 0; i < res->naccuracy; i++) {
        const accuracy_result_t *r = &res->accuracy[i];
        printf("  %4" PRIu32 " %10" PRIu64 " %7" PRIu32 " %10.4f %10.4f %14.4f %14.4f\n",
               r->precision, r->requests, r->keys, r->denied_pct, r->wrong_pct,
               r->wrongly_allowed_pct, r->wrongly_denied_pct);
    }
    printf("  Cloudflare reported 0.003 %% on its traffic (wrong decisions of the"
           " two-window estimate)\n");
}

static void print_ceiling_table(const results_t *res) {
    printf("ceiling: random read-modify-write of 16-byte slots, one thread, the store's table"
           " size\n");
    printf("  %8s %12s %5s %9s %6s %12s %9s\n", "keys", "table bytes", "run", "lookahead", "pages",
           "RMW/s", "ns/op");
    for (size_t i = 0; i < res->nceiling; i++) {
        const ceiling_result_t *c = &res->ceiling[i];
        printf("  %8" PRIu32 " %12" PRIu64 " %5u %9u %6s %12.0f %9.1f\n", c->keys, c->table_bytes,
               c->run, c->lookahead, c->huge ? "2M" : "4K", c->ops_per_sec, 1e9 / c->ops_per_sec);
    }
    printf("  lookahead 0: no prefetch; else keys 2x and slots 1x that many ahead within a run;\n"
           "  pages 2M: table and keys madvised onto transparent huge pages\n");
}

static void print_table(const results_t *res) {
    printf("\n");
    if (res->ndecide) {
        print_decide_table(res);
        printf("\n");
    }
    if (res->nmemory) {
        print_memory_table(res);
        printf("\n");
    }
    if (res->naccuracy) {
        print_accuracy_table(res);
        printf("\n");
    }
    if (res->nceiling)
        print_ceiling_table(res);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--memory-one") == 0)
        return memory_child(argc, argv);
    options_t o = parse_options(argc, argv);
    static results_t res;
    res.seed = o.seed;
    if (o.only & ONLY_DECIDE)
        run_decide(&o, &res);
    if (o.only & ONLY_MEMORY)
        run_memory(&o, &res);
    if (o.only & ONLY_ACCURACY)
        run_accuracy(&o, &res);
    if (o.only & ONLY_CEILING)
        run_ceiling(&o, &res);
    print_table(&res);
    return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
