/* sluice.h -- the public API of libsluice, an exact and compact rate limiter.
 *
 * A limiter applies policies (named lists of limits) to keys through a store
 * that keeps the state of every (policy, limit, key). The library never sleeps,
 * never starts threads and never reads the clock behind the caller's back: time
 * comes from a clock function the caller may replace (tests use a fake clock).
 *
 * Conventions
 *   - Functions that can fail return int: 0 (SL_OK) on success, a negative
 *     sl_error_t otherwise; sl_strerror() explains it. "Denied" is a decision,
 *     never an error.
 *   - Times are integer microseconds (sl_usec_t). SL_NEVER means "never".
 *   - Objects are created with *_new and released with *_free; *_free(NULL) is
 *     a no-op. Every function is safe to call from several threads at once on
 *     the same limiter and store, except *_free, which the caller must order
 *     after every other use.
 *
 * This header is all there is: nothing else of the library is exported.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SL_BUILDING_LIBRARY) && defined(__GNUC__)
#define SL_EXPORT __attribute__((visibility("default")))
#else
#define SL_EXPORT
#endif

#define SL_VERSION_MAJOR 0
#define SL_VERSION_MINOR 1
#define SL_VERSION_PATCH 0
#define SL_VERSION_STRING "0.1.0"

/* Microseconds. Absolute times are microseconds since the Unix epoch. */
typedef int64_t sl_usec_t;
#define SL_USEC_PER_SEC INT64_C(1000000)
#define SL_NEVER INT64_MAX /* retry_after of a cost that can never pass */

/* ---- errors ------------------------------------------------------------ */

/* X(name, value, message): one table generates the enum, sl_strerror() and
 * sl_errname(). */
#define SL_ERROR_TABLE(X)                                                       \
    X(EINVAL, -1, "invalid argument")                                           \
    X(ENOMEM, -2, "out of memory")                                              \
    X(ERANGE, -3, "value out of range")                                         \
    X(EIO, -4, "input/output error")                                            \
    X(EFORMAT, -5, "not a sluice snapshot, or a version this build cannot read") \
    X(ECORRUPT, -6, "snapshot is truncated or corrupted")                       \
    X(ESEED, -7, "snapshot was written with another hash seed than this non-empty store") \
    X(EFULL, -8, "store is full: max_memory cannot hold this state")            \
    X(ENOTSUP, -9, "operation not supported by this store")                     \
    X(ENOENT, -10, "no such policy")                                            \
    X(ETOOMANY, -11, "too many distinct parameter sets")                        \
    X(ENOCONFIG, -12, "no configuration file to reload")                       \
    X(ENOWAIT, -13, "sliding_window and sliding_log cannot wait: use gcra, token_bucket, leaky_bucket or fixed_window")

typedef enum sl_error {
    SL_OK = 0,
#define SL__ERROR_ENUM(name, value, msg) SL_##name = (value),
    SL_ERROR_TABLE(SL__ERROR_ENUM)
#undef SL__ERROR_ENUM
} sl_error_t;

/* A static, human-readable message for an error code (also for unknown ones). */
SL_EXPORT const char *sl_strerror(int err);
/* The symbolic name of an error code, e.g. "SL_EINVAL". */
SL_EXPORT const char *sl_errname(int err);

/* ---- limits and policies ----------------------------------------------- */

typedef enum sl_algorithm {
    SL_GCRA = 0,        /* generic cell rate: theoretical arrival time */
    SL_TOKEN_BUCKET,    /* tokens refilled at limit/period, capacity burst */
    SL_LEAKY_BUCKET,    /* level leaking at limit/period; meter or shaper */
    SL_FIXED_WINDOW,    /* count per window floor(now/period) */
    SL_SLIDING_LOG,     /* exact: timestamps of admitted requests */
    SL_SLIDING_WINDOW,  /* counters: two-window estimate or N sub-windows */
    SL_ALGORITHM_COUNT
} sl_algorithm_t;

/* "gcra", "token_bucket", ... or NULL for an unknown value. */
SL_EXPORT const char *sl_algorithm_name(sl_algorithm_t algorithm);
/* Parses an algorithm name as printed by sl_algorithm_name(). SL_EINVAL if unknown. */
SL_EXPORT int sl_algorithm_parse(const char *name, sl_algorithm_t *out);

/* One rule: `limit` units of cost per `period`. A zeroed struct plus
 * algorithm, limit and period is a valid limit. */
typedef struct sl_limit {
    sl_algorithm_t algorithm;
    uint64_t limit;      /* units of cost per period, >= 1 */
    sl_usec_t period;    /* window length or refill period, >= 1 us */
    uint64_t burst;      /* gcra: requests admitted at once beyond the first
                            (0 = strictly spaced, tolerance T*(burst+1));
                            token_bucket, leaky_bucket: capacity (0 = limit);
                            must be 0 for the others */
    uint32_t precision;  /* sliding_window: sub-windows (0 or 1 = the two-window
                            estimate); period must be a multiple of it; must
                            be 0 for the other algorithms */
    bool shaper;         /* leaky_bucket: admitted requests get a delay (queue)
                            instead of passing at once; denied only when full */
    bool count_denied;   /* denied requests are charged too (off by default) */
} sl_limit_t;

typedef enum sl_mode {
    SL_MODE_HARD = 0,  /* never exceed a limit */
    SL_MODE_SOFT,      /* admit up to soft_percent over every limit */
    SL_MODE_SHADOW,    /* decide and report, but never deny */
    SL_MODE_ELASTIC    /* a key over its limits may borrow from a shared pool */
} sl_mode_t;

/* "hard", "soft", "shadow", "elastic" or NULL. */
SL_EXPORT const char *sl_mode_name(sl_mode_t mode);
SL_EXPORT int sl_mode_parse(const char *name, sl_mode_t *out);

#define SL_MAX_LIMITS 16      /* limits in one policy */
#define SL_MAX_POLICY_NAME 128

typedef struct sl_policy_config {
    const char *name;           /* 1..SL_MAX_POLICY_NAME bytes; identifies the
                                   policy's state, so keep it stable */
    const sl_limit_t *limits;   /* all must pass (all-or-nothing) */
    size_t nlimits;             /* 1..SL_MAX_LIMITS */
    sl_mode_t mode;
    uint32_t soft_percent;      /* SL_MODE_SOFT: tolerance, percent (1..1000) */
    sl_limit_t pool;            /* SL_MODE_ELASTIC: the pool shared by every key
                                   of this policy, with its own rate */
} sl_policy_config_t;

typedef struct sl_policy sl_policy_t;

/* Validates and compiles a policy. The config is copied; the caller keeps
 * ownership of it. Two identical limits in one policy, a limit whose
 * capacity * period does not fit the arithmetic, a period that precision
 * does not divide, or any other inconsistency gives SL_EINVAL (SL_ERANGE for
 * values too large) and, when `why` is not NULL, a message naming the field
 * in why[0..why_len); *out is then untouched. The policy is immutable and may
 * be shared by threads; it must outlive every call that uses it. */
SL_EXPORT int sl_policy_new(const sl_policy_config_t *config, sl_policy_t **out, char *why,
                            size_t why_len);
SL_EXPORT void sl_policy_free(sl_policy_t *policy);
SL_EXPORT const char *sl_policy_name(const sl_policy_t *policy);
SL_EXPORT sl_mode_t sl_policy_mode(const sl_policy_t *policy);
SL_EXPORT size_t sl_policy_limit_count(const sl_policy_t *policy);
/* The i-th limit as configured (NULL when i is out of range). */
SL_EXPORT const sl_limit_t *sl_policy_limit(const sl_policy_t *policy, size_t i);

/* Checks a limit on its own; on error writes a static reason to *why when
 * why is not NULL. */
SL_EXPORT int sl_limit_validate(const sl_limit_t *limit, const char **why);

/* ---- stores -------------------------------------------------------------- */

typedef struct sl_store sl_store_t;

typedef struct sl_memory_options {
    size_t max_memory;   /* bytes for tables and logs, 0 = unbounded; when full,
                            recovered states go first, then CLOCK eviction */
    uint32_t shards;     /* power of two up to 65536, 0 = 256 */
    uint64_t seed;       /* hash seed, 0 = random per process */
} sl_memory_options_t;

/* An in-process store: a sharded open-addressing table. opts may be NULL. */
SL_EXPORT int sl_store_memory_new(const sl_memory_options_t *opts, sl_store_t **out);
/* Frees the store and all its state. No other call may be in progress. */
SL_EXPORT void sl_store_free(sl_store_t *store);

typedef struct sl_store_stats {
    uint64_t states;      /* live (policy, limit, key) states */
    uint64_t bytes;       /* memory held: tables and out-of-line logs */
    uint64_t max_memory;  /* the cap, 0 = unbounded */
    uint64_t evictions;   /* states dropped by the cap before recovering */
    uint64_t reclaimed;   /* recovered states freed */
} sl_store_stats_t;

SL_EXPORT int sl_store_stats(sl_store_t *store, sl_store_stats_t *out);

/* Frees recovered states, examining about `budget` slots, spread over the
 * shards, from where the previous sweep stopped, and gives back the memory of
 * tables left mostly empty. A budgeted sweep skips tables small enough that
 * keeping recovered states costs less than re-creating them (256 KiB per
 * shard); budget 0 sweeps every table entirely. *reclaimed (may be NULL) gets
 * the number freed. Checks only reclaim when they need room; a daemon calls
 * this from a timer so that memory follows the live keys down as well as up. */
SL_EXPORT int sl_store_sweep(sl_store_t *store, sl_usec_t now, size_t budget,
                             size_t *reclaimed);

/* Writes every live state to `path` atomically (a temporary file in the same
 * directory, fsync, rename). States recovered at `now` are left out. On
 * error the temporary file is removed and `path` keeps the previous
 * snapshot; SL_EIO leaves errno at the system's reason (ENOSPC, EROFS,
 * EACCES, ENOTDIR, ...). */
SL_EXPORT int sl_store_save(sl_store_t *store, const char *path, sl_usec_t now);

/* Reads a snapshot written by sl_store_save(). The whole file is verified
 * (magic, version, checksum, structure) before anything is loaded: on any
 * error nothing is loaded and the store is unchanged (SL_EFORMAT: not a
 * snapshot or unknown version; SL_ECORRUPT: truncated or damaged; SL_EIO:
 * unreadable, errno says why; SL_ESEED: the store already holds states
 * hashed with another seed). An empty store adopts the snapshot's seed. States recovered at `now`
 * are skipped. *loaded (may be NULL) gets the number of states loaded. */
SL_EXPORT int sl_store_load(sl_store_t *store, const char *path, sl_usec_t now,
                            size_t *loaded);

/* ---- limiter --------------------------------------------------------------- */

typedef struct sl_limiter sl_limiter_t;

/* Returns the current time in microseconds. Must be safe to call from any
 * thread. Time may go backwards; the algorithms clamp it. */
typedef sl_usec_t (*sl_clock_fn)(void *ctx);

typedef struct sl_limiter_options {
    sl_clock_fn clock;   /* NULL = sl_clock_realtime */
    void *clock_ctx;
} sl_limiter_options_t;

/* The wall clock (CLOCK_REALTIME) in microseconds. Wall time, not monotonic
 * time, so that snapshots and shared stores stay meaningful across restarts. */
SL_EXPORT sl_usec_t sl_clock_realtime(void *ctx);

/* Creates a limiter on `store` (borrowed: it must outlive the limiter).
 * opts may be NULL. */
SL_EXPORT int sl_limiter_new(sl_store_t *store, const sl_limiter_options_t *opts,
                             sl_limiter_t **out);
SL_EXPORT void sl_limiter_free(sl_limiter_t *limiter);

typedef struct sl_decision {
    bool allowed;           /* the answer: let the request through or not */
    bool limited;           /* the request is over a limit. Equals !allowed in
                               hard mode; an allowed request is limited when a
                               soft tolerance, shadow mode or the elastic pool
                               let it through */
    uint64_t limit;         /* capacity of the deciding limit: the most
                               unit-cost requests it admits at once */
    uint64_t remaining;     /* unit-cost requests that would pass now (after
                               this one when it was charged), fewest over all
                               limits */
    sl_usec_t reset_after;  /* until every limit is as if the key were new */
    sl_usec_t retry_after;  /* 0 when allowed; else until this cost would
                               pass; SL_NEVER when it never can */
    sl_usec_t delay;        /* how long to hold the admitted request: a
                               leaky_bucket shaper's queue, or the wait
                               sl_reserve() gave it; 0 otherwise */
    int limit_index;        /* the deciding limit (index in the policy), or -1
                               when the elastic pool decided */
} sl_decision_t;

/* Decides whether a request of `cost` units on `key` passes `policy`, and
 * charges it when it does (all limits or none). key is any bytes; key_len 0
 * is a valid (empty) key. cost 0 charges nothing. Writes *out on success. */
SL_EXPORT int sl_check(sl_limiter_t *limiter, const sl_policy_t *policy,
                       const void *key, size_t key_len, uint64_t cost,
                       sl_decision_t *out);

/* Like sl_check() but never charges: reports what a request of `cost` would
 * get now; remaining is what is left before it. */
SL_EXPORT int sl_peek(sl_limiter_t *limiter, const sl_policy_t *policy,
                      const void *key, size_t key_len, uint64_t cost,
                      sl_decision_t *out);

/* One limit's own view of a decision, for callers that report every limit
 * (the HTTP RateLimit header has one item per limit). */
typedef struct sl_limit_report {
    bool allowed;           /* this limit alone would admit the request */
    uint64_t limit;         /* its capacity, as sl_decision_t.limit */
    uint64_t remaining;     /* unit-cost requests it would still admit */
    sl_usec_t reset_after;  /* until it is as if the key were new */
    sl_usec_t retry_after;  /* 0 when it admits; SL_NEVER when it never can */
} sl_limit_report_t;

#define SL_DECIDE_PEEK 1u  /* sl_decide(): charge nothing */

/* sl_check() (or with SL_DECIDE_PEEK, sl_peek()) that also fills, when
 * `limits` is not NULL, one report per limit of the policy
 * (sl_policy_limit_count() entries, in configuration order). */
SL_EXPORT int sl_decide(sl_limiter_t *limiter, const sl_policy_t *policy, const void *key,
                        size_t key_len, uint64_t cost, unsigned flags, sl_decision_t *out,
                        sl_limit_report_t *limits);

/* The longest wait sl_reserve() accepts: one hour. */
#define SL_MAX_WAIT (INT64_C(3600) * SL_USEC_PER_SEC)

/* Reserves a place for a request of `cost` units: admits it now or at a
 * moment within `max_wait` us, holding that place, or denies it now and
 * charges nothing (count_denied limits aside, as sl_check()). An admitted
 * request gets out->delay = how long to hold it before it runs (0: now);
 * waiters are admitted in the order of their calls, exactly as many as the
 * limits allow, each at its own moment (docs/algorithms.md says how each
 * algorithm reserves). A denied request's retry_after is until a reservation
 * with the same max_wait would succeed. max_wait 0 is sl_check().
 *   - gcra, token_bucket, leaky_bucket: the request takes the next slot of
 *     the limit's schedule; a leaky_bucket shaper's delay stays its queue's,
 *     and max_wait adds to the queue. A limit holds waits of at most
 *     SL_MAX_WAIT or 2^61/limit us, whichever is less.
 *   - fixed_window: the request is charged to the window it will run in
 *     (the current one, or the first later one with room); delay is until
 *     that window opens.
 *   - sliding_window, sliding_log: SL_ENOWAIT when max_wait > 0 (they keep
 *     no schedule that could hold a place).
 * Several limits: all or nothing; the delay is the largest, and a limit
 * whose own place is earlier is charged at that common moment
 * (conservative: it never admits more). Shadow and soft modes act as in
 * sl_check(); in elastic mode a key its own limits deny borrows from the
 * pool at once or not at all. max_wait < 0 or > SL_MAX_WAIT gives
 * SL_ERANGE. `limits`, when not NULL, gets one report per limit as
 * sl_decide() gives. */
SL_EXPORT int sl_reserve(sl_limiter_t *limiter, const sl_policy_t *policy, const void *key,
                         size_t key_len, uint64_t cost, sl_usec_t max_wait, sl_decision_t *out,
                         sl_limit_report_t *limits);

typedef struct sl_request {
    const void *key;
    size_t key_len;
    uint64_t cost;
} sl_request_t;

/* Decides reqs[0..n) on `policy` in order, exactly as n calls of sl_check()
 * at one instant would (the clock is read once), writing out[i] for each.
 * Faster on large key sets: the store looks ahead and prefetches the states
 * of the next requests while deciding the current one. Stops at the first
 * error and returns it; *done (may be NULL) gets the number of requests
 * decided, so out[0..*done) are valid either way. */
SL_EXPORT int sl_check_batch(sl_limiter_t *limiter, const sl_policy_t *policy,
                             const sl_request_t *reqs, size_t n, sl_decision_t *out,
                             size_t *done);

/* Forgets every limit's state of `key` under `policy`: the key is new again. */
SL_EXPORT int sl_reset(sl_limiter_t *limiter, const sl_policy_t *policy,
                       const void *key, size_t key_len);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
