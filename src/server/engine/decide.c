/* decide.c -- the daemon's store kinds (see decide.h): the memory store,
 * Redis strict with the policy's fallback, and write-back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "server/engine/decide.h"
#include "store/group.h"
#include "store/reserve.h"
#include "store/redis/script.h"

/* ---- counting (the engine's hooks) ------------------------------------------------------------ */

static void account(void *ctx, uint32_t worker, uint32_t slot, int rc, unsigned flags,
                    const sl_decision_t *out) {
    sld_decide_ctx_t *d = ctx;
    if (rc != SL_OK && rc != SL_EINVAL && rc != SL_ERANGE && d->stats) /* not the client's mistake */
        atomic_fetch_add(&d->stats->decision_errors, 1);
    if (rc != SL_OK || (flags & SL_DECIDE_PEEK))
        return;
    if (d->metrics) /* INFO's totals are these, summed */
        sld_metrics_decision(d->metrics, worker, slot, sld_result_of(out));
}

/* The heavy hitters and the per-second rates count decisions (not peeks,
 * not errors) by key and by second: /v1/stats. One clock reading (the
 * batch's, sld_now) and one second for both; the sketch's sampling is
 * tested inline, so a note sampled out costs no call (bench/README.md).
 * This is the sketch's part; the run hook counts the rates apart. */
static inline bool observe_hh(sld_decide_ctx_t *d, uint32_t worker, const sld_request_t *r, int rc,
                              const sl_decision_t *out, int64_t now, int64_t second) {
    if (rc != SL_OK || (r->flags & SL_DECIDE_PEEK))
        return false;
    if (now < 0) { /* not counted; the sketch says so in its dropped count */
        if (d->heavy)
            sld_hh_note(d->heavy, worker, r->origin.slot, r->key, r->key_len, !out->allowed, now);
        return false;
    }
    uint32_t weight;
    if (d->heavy && (weight = sld_hh_weight(d->heavy, worker, second)) != 0)
        sld_hh_note_weighted(d->heavy, worker, r->origin.slot, r->key, r->key_len, !out->allowed, now, weight);
    return true;
}

static inline void observe_at(sld_decide_ctx_t *d, uint32_t worker, const sld_request_t *r, int rc,
                              const sl_decision_t *out, int64_t now, int64_t second) {
    if (observe_hh(d, worker, r, rc, out, now, second) && d->rates)
        sld_rates_note_second(d->rates, worker, r->origin.slot, sld_result_of(out),
                              out->allowed && out->delay > 0, second);
}

static int64_t observe_now(const sld_decide_ctx_t *d) {
    return d->rt.now ? d->rt.now(d->rt.ctx) : sl_clock_realtime(NULL);
}

/* With the heavy hitters on, the engine's one hook for both (it calls
 * account then observe, always together): one call through its pointer
 * a decision instead of two. */
static void account_observe(void *ctx, uint32_t worker, const sld_request_t *r, int rc,
                            const sl_decision_t *out) {
    sld_decide_ctx_t *d = ctx;
    account(ctx, worker, r->origin.slot, rc, r->flags, out);
    int64_t now = observe_now(d);
    observe_at(d, worker, r, rc, out, now, now / 1000000);
}

/* The same for a run the store kind decided together: one call and one
 * clock reading a run instead of a decision (the run shares the batch's
 * instant anyway: sld_now returns what sld_batch_begin read), and the
 * rates' counts summed by policy slot, one sld_rates_add_second a slot's
 * stretch of the run instead of a call a decision (bench/README.md). */
static void account_observe_run(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                                const int *rcs, const sl_decision_t *out) {
    sld_decide_ctx_t *d = ctx;
    int64_t now = observe_now(d), second = now / 1000000;
    uint32_t counts[SLD_RATE_COLUMNS] = {0}, slot = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const sld_request_t *r = &reqs[i];
        account(ctx, worker, r->origin.slot, rcs[i], r->flags, &out[i]);
        if (!observe_hh(d, worker, r, rcs[i], &out[i], now, second) || d->rates == NULL)
            continue;
        if (any && r->origin.slot != slot) {
            sld_rates_add_second(d->rates, worker, slot, second, counts);
            memset(counts, 0, sizeof counts);
        }
        slot = r->origin.slot;
        any = true;
        counts[sld_result_of(&out[i])]++;
        counts[SLD_RATE_DELAYED] += out[i].allowed && out[i].delay > 0;
    }
    if (any)
        sld_rates_add_second(d->rates, worker, slot, second, counts);
}

/* ---- memory -------------------------------------------------------------------------------------- */

static int memory_decide(void *ctx, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                         sl_limit_report_t *limits, sld_job_t *job) {
    (void)worker, (void)job;
    sld_decide_ctx_t *d = ctx;
    if (r->flags & SLD_DECIDE_WAIT)
        return sl__reserve(d->limiter, r->p, r->key, r->key_len, r->cost, r->max_wait, r->not_before,
                           (r->flags & SL_DECIDE_PEEK) != 0, out, limits, r->held);
    return sl_decide(d->limiter, r->p, r->key, r->key_len, r->cost, r->flags, out, limits);
}

/* Runs of requests under one policy go to sl_check_batch, which looks
 * ahead and prefetches the next keys' states; a peek, or a run of one, is
 * decided as a single call (sl_check_batch neither peeks nor reports). */
#define MEMORY_RUN 64

static void memory_decide_batch(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                                sl_decision_t *out, int *rcs) {
    sld_decide_ctx_t *d = ctx;
    sl_request_t run[MEMORY_RUN];
    for (size_t i = 0; i < n;) {
        const sl_policy_t *p = reqs[i].p;
        size_t m = 0;
        while (i + m < n && m < MEMORY_RUN && reqs[i + m].p == p &&
               !(reqs[i + m].flags & (SL_DECIDE_PEEK | SLD_DECIDE_WAIT))) {
            run[m] = (sl_request_t){.key = reqs[i + m].key, .key_len = reqs[i + m].key_len,
                                    .cost = reqs[i + m].cost};
            m++;
        }
        if (m <= 1) {
            rcs[i] = memory_decide(ctx, worker, &reqs[i], &out[i], NULL, NULL);
            i++;
            continue;
        }
        size_t done = 0;
        int rc = sl_check_batch(d->limiter, p, run, m, &out[i], &done);
        for (size_t k = 0; k < done; k++)
            rcs[i + k] = SL_OK;
        if (done < m) /* it stopped at this one: the rest go on after it */
            rcs[i + done++] = rc;
        i += done;
    }
}

static int memory_refund(void *ctx, uint32_t worker, const sld_request_t *r) {
    (void)worker;
    sld_decide_ctx_t *d = ctx;
    return sl__refund(d->limiter, r->p, r->key, r->key_len, r->cost, r->held);
}

static int memory_reset(void *ctx, uint32_t worker, const sld_request_t *r, sld_job_t *job) {
    (void)worker, (void)job;
    sld_decide_ctx_t *d = ctx;
    return sl_reset(d->limiter, r->p, r->key, r->key_len);
}

/* The policy on_store_failure's local mode decides r with in memory. */
static const sl_policy_t *local_policy(const sld_decide_ctx_t *d, const sld_request_t *r) {
    sld_store_failure_t mode;
    const sl_policy_t *local = sld_policies_fallback(d->rt.policies(r->origin.rt), r->origin.index,
                                                     r->p, &mode);
    return r->origin.index == SIZE_MAX && r->origin.local ? r->origin.local : local;
}

/* A group's states in the memory store, held until memory_group_end. With
 * write-back (redis_too), its write-back policies' states and the local
 * fallback's of the others: a fallback deciding in memory while the
 * group holds shards must find its own held too, as taking another lock
 * then could wait on a group waiting on this one. Out of memory for the
 * list, or every_key: the whole store. A group already held (never:
 * groups do not nest) leaves this one unisolated. */
static void memory_group(sld_decide_ctx_t *d, const sld_request_t *reqs, size_t n, bool every_key,
                         bool redis_too) {
    sl__group_key_t *keys = n > 0 && !every_key ? malloc(n * sizeof *keys) : NULL;
    bool all = every_key || (n > 0 && keys == NULL);
    size_t k = 0;
    for (size_t i = 0; keys && i < n; i++) {
        const sl_policy_t *p = !redis_too || reqs[i].p->write_back ? reqs[i].p : local_policy(d, &reqs[i]);
        if (p != NULL)
            keys[k++] = (sl__group_key_t){p, reqs[i].key, reqs[i].key_len};
    }
    if (all || k > 0)
        (void)sl__limiter_group_begin(d->limiter, keys, all ? 0 : k, all);
    free(keys);
}

static void memory_group_begin(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                               bool every_key) {
    (void)worker;
    memory_group(ctx, reqs, n, every_key, false);
}

static void memory_group_end(void *ctx, uint32_t worker) {
    (void)worker;
    sld_decide_ctx_t *d = ctx;
    sl__limiter_group_end(d->limiter);
}

/* One clock read per batch; Redis sends its queue at the end of the loop
 * turn (remote.c), one round trip per node. */
static void batch_begin(void *ctx, uint32_t worker) {
    (void)worker;
    sld_decide_ctx_t *d = ctx;
    if (d->batch_begin)
        d->batch_begin(d->rt.ctx);
}

static void batch_flush(void *ctx, uint32_t worker) {
    (void)worker;
    sld_decide_ctx_t *d = ctx;
    if (d->batch_end)
        d->batch_end();
}

const sld_store_kind_t sld_kind_memory = {
    .name = "memory",
    .decide = memory_decide,
    .reset = memory_reset,
    .refund = memory_refund,
    .decide_batch = memory_decide_batch,
    .batch_begin = batch_begin,
    .batch_flush = batch_flush,
    .group_begin = memory_group_begin,
    .group_end = memory_group_end,
};

/* ---- Redis strict ------------------------------------------------------------------------------ */

/* Answers without the shared store, by the policy's on_store_failure (a
 * reservation: local reserves in this daemon's memory, open admits now,
 * closed denies). */
static int fall_back(sld_decide_ctx_t *d, const sld_request_t *r, sl_decision_t *out,
                     sl_limit_report_t *limits) {
    const sld_origin_t *o = &r->origin;
    const sl_policy_t *p = r->p;
    sld_store_failure_t mode;
    const sl_policy_t *local = sld_policies_fallback(d->rt.policies(o->rt), o->index, p, &mode);
    if (o->index == SIZE_MAX && o->local)
        local = o->local;
    sld_remote_count_fallback(d->remote, mode);
    if (mode == SLD_FAIL_LOCAL && (r->flags & SLD_DECIDE_WAIT))
        return sl__reserve(d->limiter, local, r->key, r->key_len, r->cost, r->max_wait, r->not_before,
                           (r->flags & SL_DECIDE_PEEK) != 0, out, limits, NULL);
    if (mode == SLD_FAIL_LOCAL)
        return sl_decide(d->limiter, local, r->key, r->key_len, r->cost, r->flags, out, limits);
    /* open or closed: no state anywhere says more than the limits themselves */
    bool open = mode == SLD_FAIL_OPEN;
    sl_usec_t retry = open ? 0 : d->rt.config(o->rt)->breaker_cooldown;
    memset(out, 0, sizeof *out);
    out->allowed = open;
    out->limited = !open;
    size_t n = sl_policy_limit_count(p);
    for (size_t i = 0; i < n; i++) {
        const sl_limit_t *l = sl_policy_limit(p, i);
        uint64_t cap = l->burst > l->limit ? l->burst : l->limit;
        if (i == 0 || cap < out->limit)
            out->limit = cap;
        if (limits)
            limits[i] = (sl_limit_report_t){.allowed = open, .limit = cap,
                                            .remaining = open ? cap : 0,
                                            .reset_after = retry, .retry_after = retry};
    }
    out->remaining = open ? out->limit : 0;
    out->reset_after = retry;
    out->retry_after = retry;
    return SL_OK;
}

static void on_remote(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *limits) {
    sld_job_t *job = arg;
    const sld_request_t *r = sld_job_request(job);
    const struct sld_runtime *rt = r->origin.rt;
    sld_decide_ctx_t *d = sld_job_store(job);
    sl_decision_t out;
    sl_limit_report_t reports[SL_MAX_LIMITS];
    if (rc == SL_OK) {
        out = *dec;
        memcpy(reports, limits, sl_policy_limit_count(r->p) * sizeof *reports);
    } else {
        rc = fall_back(d, r, &out, reports);
    }
    sld_job_done(job, rc, &out, reports);
    d->rt.pin(rt, -1);
}

static int redis_decide(void *ctx, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                        sl_limit_report_t *limits, sld_job_t *job) {
    sld_decide_ctx_t *d = ctx;
    bool wait = (r->flags & SLD_DECIDE_WAIT) != 0;
    /* the script is only sent what it can reserve (the rate family and fixed windows) */
    int rc = wait ? sl__policy_reservable(r->p, r->max_wait, r->not_before) : SL_OK;
    if (rc != SL_OK)
        return rc;
    if (job == NULL) /* the caller cannot wait: this daemon's memory */
        return memory_decide(ctx, worker, r, out, limits, NULL);
    sld_job_t *kept = sld_job_keep(job);
    if (kept == NULL)
        return SL_ENOMEM;
    sl_usec_t now = sld_remote_clock_local(d->remote) ? d->rt.now(d->rt.ctx) : SL__REDIS_SERVER_TIME;
    d->rt.pin(r->origin.rt, +1);
    const sld_request_t *kr = sld_job_request(kept);
    /* the place's held (a front's, valid until its callback) is filled by the answer */
    if (sld_remote_reserve(d->remote, worker, kr->p, kr->key, kr->key_len, kr->cost,
                           (kr->flags & SL_DECIDE_PEEK) != 0, wait ? kr->max_wait : 0,
                           wait ? kr->not_before : 0, now, wait ? kr->held : NULL, on_remote, kept) == SL_OK)
        return SLD_PENDING;
    /* not even sent (breaker open, no connection): the fallback answers now */
    d->rt.pin(r->origin.rt, -1);
    sld_job_drop(kept);
    return fall_back(d, r, out, limits);
}

/* A left waiter's place, given back in Redis (evaluate.lua's refund) on
 * the clock it was reserved on. A place the fallback held (held->at 0)
 * has nothing to give back. */
static int redis_refund(void *ctx, uint32_t worker, const sld_request_t *r) {
    sld_decide_ctx_t *d = ctx;
    if (r->p->write_back)
        return SL_ENOTSUP; /* held no place */
    if (r->held == NULL || r->held->at <= 0)
        return SL_OK;
    sl_usec_t now = sld_remote_clock_local(d->remote) ? d->rt.now(d->rt.ctx) : SL__REDIS_SERVER_TIME;
    return sld_remote_refund(d->remote, worker, r->p, r->key, r->key_len, r->cost, now, r->held);
}

static void on_reset(void *arg, int rc) {
    sld_job_done(arg, rc, NULL, NULL);
}

static int redis_reset(void *ctx, uint32_t worker, const sld_request_t *r, sld_job_t *job) {
    sld_decide_ctx_t *d = ctx;
    /* the local fallback's state goes too, so a reset key is new everywhere */
    sld_store_failure_t mode;
    sl_reset(d->limiter, sld_policies_fallback(d->rt.policies(r->origin.rt), r->origin.index, r->p, &mode),
             r->key, r->key_len);
    if (job == NULL)
        return SL_EIO; /* Redis answers later, and nobody can wait */
    sld_job_t *kept = sld_job_keep(job);
    if (kept == NULL)
        return SL_ENOMEM;
    if (sld_remote_reset(d->remote, worker, r->p, r->key, r->key_len, on_reset, kept) == SL_OK)
        return SLD_PENDING;
    sld_job_drop(kept);
    return SL_EIO;
}

static int redis_attach(void *ctx, uint32_t worker, struct uv_loop_s *loop) {
    sld_decide_ctx_t *d = ctx;
    return sld_remote_attach(d->remote, worker, loop);
}

static void redis_detach(void *ctx, uint32_t worker, void (*done)(void *arg), void *arg) {
    sld_decide_ctx_t *d = ctx;
    sld_remote_detach(d->remote, worker, done, arg);
}

/* A group's evaluations go to Redis in one script call per Cluster slot
 * (remote.c), which Redis runs with nothing in between. */
static void redis_group_begin(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                              bool every_key) {
    (void)reqs, (void)every_key;
    sld_decide_ctx_t *d = ctx;
    sld_remote_group_begin(d->remote, worker, n);
}

static bool redis_defers(void *ctx, const sl_policy_t *p) {
    (void)ctx, (void)p;
    return true;
}

static bool redis_supports(void *ctx, const sl_policy_t *p, const char **why) {
    (void)ctx;
    return sld_remote_supports(p, why);
}

static void redis_status(void *ctx, sld_store_status_t *out) {
    sld_decide_ctx_t *d = ctx;
    sld_remote_stats_t rs;
    sld_remote_stats(d->remote, &rs);
    out->shared = true;
    out->describe = sld_remote_describe(d->remote);
    out->up = rs.up;
    snprintf(out->last_error, sizeof out->last_error, "%s", rs.last_error);
    out->breaker_open = rs.breaker_open;
    out->calls = rs.calls;
    out->failures = rs.failures;
    out->timeouts = rs.timeouts;
    out->reconnects = rs.reconnects;
    out->fallback_open = rs.fallback_open;
    out->fallback_closed = rs.fallback_closed;
    out->fallback_local = rs.fallback_local;
    out->latency_count = rs.latency_count;
    out->latency_sum_us = rs.latency_sum_us;
}

static int redis_share_rules(void *ctx, uint32_t worker, const char *name, const char *json,
                             size_t json_len, void (*fn)(void *arg, int rc), void *arg) {
    sld_decide_ctx_t *d = ctx;
    return sld_remote_share_rule(d->remote, worker, name, json, json_len, fn, arg);
}

const sld_store_kind_t sld_kind_redis = {
    .name = "redis",
    .decide = redis_decide,
    .reset = redis_reset,
    .refund = redis_refund,
    .defers = redis_defers,
    .supports = redis_supports,
    .attach = redis_attach,
    .detach = redis_detach,
    .batch_begin = batch_begin,
    .batch_flush = batch_flush,
    .group_begin = redis_group_begin,
    .status = redis_status,
    .share_rules = redis_share_rules,
};

/* ---- write-back ----------------------------------------------------------------------------------- */

/* Write-back policies decide here; write_back.c shares their state. */
static int write_back_decide(void *ctx, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                             sl_limit_report_t *limits, sld_job_t *job) {
    if (r->p->write_back)
        return memory_decide(ctx, worker, r, out, limits, job);
    return redis_decide(ctx, worker, r, out, limits, job);
}

/* Here, in the journal and in Redis; the others' copies at their next sync. */
static int write_back_reset(void *ctx, uint32_t worker, const sld_request_t *r, sld_job_t *job) {
    sld_decide_ctx_t *d = ctx;
    if (!r->p->write_back)
        return redis_reset(ctx, worker, r, job);
    sl_reset(d->limiter, r->p, r->key, r->key_len);
    sld_write_back_forget(d->write_back, r->p, r->key, r->key_len);
    if (job == NULL)
        return SL_EIO;
    size_t n = sld_write_back_key(r->p, r->key, r->key_len, NULL, 0);
    char *buf = malloc(n);
    sld_job_t *kept = buf ? sld_job_keep(job) : NULL;
    int rc = kept ? SL_OK : SL_ENOMEM;
    if (rc == SL_OK) {
        sld_write_back_key(r->p, r->key, r->key_len, buf, n);
        const char *argv[2] = {"DEL", buf};
        size_t argvlen[2] = {3, n};
        rc = sld_remote_command_int(d->remote, worker, buf, n, 2, argv, argvlen, on_reset, kept) == SL_OK
                 ? SLD_PENDING
                 : SL_EIO;
    }
    free(buf);
    if (rc != SLD_PENDING)
        sld_job_drop(kept);
    return rc;
}

/* Write-back policies' states are held here as the memory store's; the
 * others go to Redis as a group (and their local fallback's are held). */
static void write_back_group_begin(void *ctx, uint32_t worker, const sld_request_t *reqs, size_t n,
                                   bool every_key) {
    memory_group(ctx, reqs, n, every_key, true);
    redis_group_begin(ctx, worker, reqs, n, every_key);
}

static void write_back_status(void *ctx, sld_store_status_t *out) {
    sld_decide_ctx_t *d = ctx;
    redis_status(ctx, out);
    if (d->write_back == NULL)
        return;
    sld_write_back_stats_t ws;
    sld_write_back_stats(d->write_back, &ws);
    out->write_back = true;
    out->wb_keys = ws.keys;
    out->wb_unsynced = ws.unsynced;
    out->wb_syncs = ws.syncs;
    out->wb_conflicts = ws.conflicts;
    out->wb_failures = ws.failures;
    out->wb_dropped = ws.dropped;
    out->wb_last_sync = ws.last_sync;
}

const sld_store_kind_t sld_kind_write_back = {
    .name = "write_back",
    .decide = write_back_decide,
    .reset = write_back_reset,
    .refund = redis_refund,
    .defers = redis_defers,
    .supports = redis_supports,
    .attach = redis_attach,
    .detach = redis_detach,
    .batch_begin = batch_begin,
    .batch_flush = batch_flush,
    .group_begin = write_back_group_begin,
    .group_end = memory_group_end,
    .status = write_back_status,
    .share_rules = redis_share_rules,
};

int sld_decide_engine_new(sld_decide_ctx_t *d, sld_engine_t **out) {
    const sld_store_kind_t *kind = d->remote == NULL ? &sld_kind_memory
                                   : d->write_back   ? &sld_kind_write_back
                                                     : &sld_kind_redis;
    bool observing = d->heavy || d->rates;
    sld_engine_hooks_t hooks = {.ctx = d, .metrics = d->metrics, .account = observing ? NULL : account,
                                .observe = observing ? account_observe : NULL,
                                .observe_run = observing ? account_observe_run : NULL};
    return sld_engine_new(kind, d, &hooks, out);
}
