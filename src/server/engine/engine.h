/* engine.h -- the asynchronous decision engine: "decide this request for
 * this worker, and call me back".
 *
 * Every front (RESP, HTTP, and the gateway and gRPC to come) decides here
 * and never learns which store is behind. The store is a *kind*: a small
 * table of hooks (sld_store_kind_t) with its context, in the manner of
 * the Redis C client's event-loop adapter hooks. Three kinds exist
 * (decide.h): memory, Redis strict, and write-back; the daemon picks one at
 * start. A test gives its own (tests/unit/test_engine.c).
 *
 * A decision either comes back at once (the call returns SL_OK or an error
 * with *out filled, and the callback is never called) or later: the call
 * returns SLD_PENDING and the callback is called exactly once, on the
 * worker's loop. The engine times one decision in 64 (metrics latency) and
 * counts every decision once, through the hooks it was given.
 *
 * Batching: commands that arrived in one read are decided between
 * sld_engine_batch_begin() and sld_engine_batch_flush(): one clock read for
 * them all, and for Redis one pipelined round trip per node (the store kind
 * queues and sends at the flush or at the end of the loop turn).
 * sld_engine_decide_batch() decides several requests in one call: a store
 * kind with a decide_batch hook (memory: sl_check_batch, which prefetches
 * the next keys' states) decides them together, others one by one.
 *
 * Groups: the requests a worker makes between sld_engine_group_begin()
 * and sld_engine_group_end() (a MULTI ... EXEC block) are decided as one
 * group: no other worker's (memory) or daemon's (Redis, one script call)
 * decision on their keys comes between them.
 *
 * Not here: the stores themselves (decide.c, remote.c, write_back.c), the
 * fronts' replies, the configuration.
 */
#ifndef SL_SERVER_ENGINE_H
#define SL_SERVER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/observe/metrics.h"
#include "sluice.h"

/* The decision (or reset) will come to the callback. */
#define SLD_PENDING 1

/* Called once, on the worker's loop, with rc SL_OK and the decision, or an
 * error. `out` and `limits` are valid during the call only (both NULL for a
 * reset). */
typedef void (*sld_decided_fn)(void *arg, int rc, const sl_decision_t *out,
                               const sl_limit_report_t *limits);

struct sld_runtime;
struct uv_loop_s;

/* Where a policy came from, for the fallback of the shared store. */
typedef struct sld_origin {
    const struct sld_runtime *rt; /* the runtime p belongs to (kept alive while pending) */
    size_t index;                 /* p's policy index in rt, SIZE_MAX for CL.THROTTLE's */
    uint32_t slot;                /* metrics */
    const sl_policy_t *local;     /* for index SIZE_MAX: the local fallback's policy
                                     (NULL: p itself) */
} sld_origin_t;

/* One request to decide. */
typedef struct sld_request {
    sld_origin_t origin;
    const sl_policy_t *p;
    const void *key;
    size_t key_len;
    uint64_t cost;
    unsigned flags;               /* SL_DECIDE_PEEK, SLD_DECIDE_WAIT */
    sl_usec_t max_wait;           /* SLD_DECIDE_WAIT: reserve within this (sl_reserve) */
    sl_usec_t not_before;         /* SLD_DECIDE_WAIT: run no earlier (store/reserve.h); with
                                     SL_DECIDE_PEEK: where the place is, nothing charged */
    struct sl__held *held;        /* SLD_DECIDE_WAIT, may be NULL: gets what a place held for
                                     later left (at 0: none, or a store that cannot give it
                                     back), for sld_engine_refund; a store that answers
                                     later fills it then: valid until the callback
                                     (server/state/held_place.h: sld_held_place_pending) */
} sld_request_t;

/* sld_request_t.flags: a reservation (sl_reserve) within max_wait; an
 * admitted decision's delay is how long the front holds the reply. The
 * memory store and Redis strict (the script holds the place; a dead Redis:
 * on_store_failure, local reserving here); write-back policies answer
 * SL_ENOTSUP. */
#define SLD_DECIDE_WAIT 0x100u

/* A decision on its way: the engine's. A store kind that answers later
 * keeps it (sld_job_keep) and finishes it (sld_job_done). */
typedef struct sld_job sld_job_t;

/* A store kind. Hooks left NULL do nothing (or: "never", "every policy"). */
typedef struct sld_store_kind {
    const char *name;
    /* Decides r now (returns SL_OK or an error, *out and limits filled),
     * or keeps `job` and returns SLD_PENDING. job NULL: the caller cannot
     * wait, answer now. */
    int (*decide)(void *ctx, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                  sl_limit_report_t *limits, sld_job_t *job);
    /* Forgets r->key under r->p: SL_OK, an error, or SLD_PENDING with job kept. */
    int (*reset)(void *ctx, uint32_t worker, const sld_request_t *r, sld_job_t *job);
    /* Gives back the place a reservation of r (its policy, key and cost)
     * held (r->held; store/reserve.h: sl__refund), now. NULL: the store
     * cannot. */
    int (*refund)(void *ctx, uint32_t worker, const sld_request_t *r);
    /* Whether a decision or reset under p may answer later. */
    bool (*defers)(void *ctx, const sl_policy_t *p);
    /* Whether p can be decided exactly in this store (*why: why not). */
    bool (*supports)(void *ctx, const sl_policy_t *p, const char **why);
    /* Worker `worker` starts on `loop` (from its thread, before it serves). */
    int (*attach)(void *ctx, uint32_t worker, struct uv_loop_s *loop);
    /* Worker `worker` stops: what is pending fails, its connections close,
     * then done(arg); the loop must run until then. */
    void (*detach)(void *ctx, uint32_t worker, void (*done)(void *arg), void *arg);
    /* Decides reqs[0..n) now, in order, exactly as n calls of decide with
     * job NULL would: rcs[i] and out[i] for each (no limit reports). The
     * engine gives it only requests whose policy does not defer. NULL: the
     * engine calls decide for each. */
    void (*decide_batch)(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                         sl_decision_t *out, int *rcs);
    void (*batch_begin)(void *ctx, uint32_t worker);
    void (*batch_flush)(void *ctx, uint32_t worker);
    /* Optional: what worker `worker` decides, resets and peeks until
     * group_end is one group (see sld_engine_group_begin). */
    void (*group_begin)(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                        bool every_key);
    void (*group_end)(void *ctx, uint32_t worker);
    /* Fills what INFO, /metrics and /readyz show (zeroed, up, "memory" before). */
    void (*status)(void *ctx, sld_store_status_t *out);
    /* Stores policy `name`'s JSON (NULL: its removal) for every daemon; fn
     * gets SL_OK once stored, or SL_EIO. Returns SL_OK (fn to come), SL_EIO
     * (nothing sent, fn not called). NULL: nothing is shared. */
    int (*share_rules)(void *ctx, uint32_t worker, const char *name, const char *json,
                       size_t json_len, void (*fn)(void *arg, int rc), void *arg);
} sld_store_kind_t;

/* How the engine counts: the daemon's counters and metrics. All optional. */
typedef struct sld_engine_hooks {
    void *ctx;
    sld_metrics_t *metrics;   /* latency sampling; NULL: none */
    /* A decision was made (or failed): rc, and *out when rc is SL_OK. */
    void (*account)(void *ctx, uint32_t worker, uint32_t slot, int rc, unsigned flags,
                    const sl_decision_t *out);
    /* Beside account, with the request (its policy slot and key): what
     * the heavy-hitter sketches count. NULL: not called, no cost. */
    void (*observe)(void *ctx, uint32_t worker, const sld_request_t *r, int rc,
                    const sl_decision_t *out);
    /* For a run of n requests decided together (rcs[i], out[i]): what
     * account then observe would count, request by request, in one call.
     * NULL: account and observe are called for each. */
    void (*observe_run)(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                        const int *rcs, const sl_decision_t *out);
    /* The monotonic clock, ns (NULL: CLOCK_MONOTONIC). */
    uint64_t (*mono_ns)(void *ctx);
} sld_engine_hooks_t;

typedef struct sld_engine sld_engine_t;

/* An engine over `kind` (kept, not copied: static tables) and its ctx. */
int sld_engine_new(const sld_store_kind_t *kind, void *kind_ctx, const sld_engine_hooks_t *hooks,
                   sld_engine_t **out);
void sld_engine_free(sld_engine_t *e);

/* Decides r on worker `worker`: SL_OK or an error now (fn never called),
 * or SLD_PENDING and fn(arg, ...) later, exactly once. fn NULL: the caller
 * cannot wait, the store answers now. r's pointers need not outlive the call. */
int sld_engine_decide(sld_engine_t *e, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                      sl_limit_report_t *limits, sld_decided_fn fn, void *arg);

/* Decides reqs[0..n) in order, exactly as n calls of sld_engine_decide
 * (limits NULL) would: rcs[i] is what the i-th would return and out[i] its
 * decision; for rcs[i] == SLD_PENDING, fn(args[i], ...) comes later (fn
 * NULL: nothing may wait, every request is answered now). Requests under a
 * policy that does not defer go to the store kind's decide_batch together,
 * the others one by one. Each is counted and sampled as a single call. */
void sld_engine_decide_batch(sld_engine_t *e, uint32_t worker, const sld_request_t *reqs, size_t n,
                             sl_decision_t *out, int *rcs, sld_decided_fn fn, void *const *args);

/* The waiter of reservation r left before its moment: gives back what its
 * place held (r->held, as its decision filled it), where the store can do
 * so exactly (core/refund.h). SL_OK, SL_ENOTSUP (the store keeps it). */
int sld_engine_refund(sld_engine_t *e, uint32_t worker, const sld_request_t *r);

/* Forgets r->key under r->p: SL_OK, an error, or SLD_PENDING with
 * fn(arg, rc, NULL, NULL) to come. */
int sld_engine_reset(sld_engine_t *e, uint32_t worker, const sld_request_t *r, sld_decided_fn fn,
                     void *arg);

/* Whether a decision under p may come later: a front that must keep its
 * replies in order reserves a place for it first. */
bool sld_engine_defers(const sld_engine_t *e, const sl_policy_t *p);

/* Whether p can be decided exactly by the store behind (*why: why not). */
bool sld_engine_supports(const sld_engine_t *e, const sl_policy_t *p, const char **why);

/* Worker `worker`'s loop is there (its thread, before it serves): the
 * store's clients for it start. */
int sld_engine_attach(sld_engine_t *e, uint32_t worker, struct uv_loop_s *loop);
/* Worker `worker`'s loop as attached (NULL: not attached): where a front
 * holds a reply on a timer (SLD_DECIDE_WAIT). */
struct uv_loop_s *sld_engine_loop(const sld_engine_t *e, uint32_t worker);
/* Worker `worker` is stopping: done(arg) once the store holds nothing of it
 * (maybe at once). The loop must keep running until then. */
void sld_engine_detach(sld_engine_t *e, uint32_t worker, void (*done)(void *arg), void *arg);

/* Requests of one read: decided at one instant, sent together. */
void sld_engine_batch_begin(sld_engine_t *e, uint32_t worker);
void sld_engine_batch_flush(sld_engine_t *e, uint32_t worker);

/* The decisions, peeks and resets worker `worker` asks for from now until
 * sld_engine_group_end() are one group: no other worker or daemon decides
 * on their keys in between, so they see the keys as if they ran alone
 * (what each store can promise: docs/protocol.md, Transactions). reqs[0..n)
 * name every (origin, policy, key) the group will touch (cost and flags do
 * not matter; the origin finds a fallback's policy); every_key: it may touch keys beyond them (DEL of a key under
 * every CL.THROTTLE parameter set), so hold them all. The caller runs the
 * group's calls at once, on this worker's thread, and ends it before it
 * returns to its loop. Groups do not nest. */
void sld_engine_group_begin(sld_engine_t *e, uint32_t worker, const sld_request_t *reqs, size_t n,
                            bool every_key);
void sld_engine_group_end(sld_engine_t *e, uint32_t worker);

void sld_engine_status(const sld_engine_t *e, sld_store_status_t *out);

/* Shares an admin edit of policy `name` with every daemon (see
 * sld_store_kind_t.share_rules): SL_ENOTSUP when the store shares nothing
 * (fn not called). */
int sld_engine_share_rules(sld_engine_t *e, uint32_t worker, const char *name, const char *json,
                           size_t json_len, void (*fn)(void *arg, int rc), void *arg);

/* ---- for store kinds ------------------------------------------------------------------------- */

/* Keeps a job past the decide/reset hook: returns the kept copy (with its
 * own copy of the key, which sld_job_request() points to), or NULL when out
 * of memory (then answer now). */
sld_job_t *sld_job_keep(sld_job_t *job);
/* The request of a kept job. */
const sld_request_t *sld_job_request(const sld_job_t *job);
/* The store kind's ctx (as given to sld_engine_new) of the job's engine. */
void *sld_job_store(const sld_job_t *job);
/* Lets go of a kept job that will not be answered (it could not be sent
 * and the hook answers now instead): the caller is not called back. */
void sld_job_drop(sld_job_t *job);
/* Finishes a kept job: counts it (a decision), calls the caller back, frees it. */
void sld_job_done(sld_job_t *job, int rc, const sl_decision_t *out, const sl_limit_report_t *limits);

#endif
