/* decide.c -- a decision, timed and counted, in the memory store or in Redis
 * with the policy's fallback (see decide.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "core/policy.h"
#include "server/engine/decide.h"
#include "server/engine/remote.h"
#include "server/engine/write_back.h"
#include "store/redis/script.h"

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* What every decision goes through once made: errors and results counted. */
static void account(sld_daemon_t *d, uint32_t worker, uint32_t slot, int rc, unsigned flags,
                    const sl_decision_t *out) {
    if (rc != SL_OK && rc != SL_EINVAL && rc != SL_ERANGE) /* not the client's mistake */
        atomic_fetch_add(&d->stats.decision_errors, 1);
    if (rc != SL_OK || (flags & SL_DECIDE_PEEK))
        return;
    sld_counters_t *c = &d->counters[worker];
    sld_count(out->allowed ? &c->allowed : &c->denied);
    if (d->metrics)
        sld_metrics_decision(d->metrics, worker, slot, out->allowed);
}

int sld_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, const sl_policy_t *p, const void *key,
               size_t key_len, uint64_t cost, unsigned flags, sl_decision_t *out,
               sl_limit_report_t *limits) {
    sld_metrics_t *m = d->metrics;
    int rc;
    if (m == NULL || !sld_metrics_sample(m, worker)) {
        rc = sl_decide(d->limiter, p, key, key_len, cost, flags, out, limits);
    } else {
        uint64_t a = mono_ns();
        rc = sl_decide(d->limiter, p, key, key_len, cost, flags, out, limits);
        sld_metrics_latency(m, worker, mono_ns() - a);
    }
    account(d, worker, slot, rc, flags, out);
    return rc;
}

/* ---- the shared store ------------------------------------------------------------------ */

/* Answers without the shared store, by the policy's on_store_failure. */
static int fall_back(sld_daemon_t *d, const sld_origin_t *o, const sl_policy_t *p,
                     const void *key, size_t key_len, uint64_t cost, unsigned flags,
                     sl_decision_t *out, sl_limit_report_t *limits) {
    sld_store_failure_t mode;
    const sl_policy_t *local = sld_policies_fallback(o->rt->policies, o->index, p, &mode);
    if (o->index == SIZE_MAX && o->local)
        local = o->local;
    sld_remote_count_fallback(d->remote, mode);
    if (mode == SLD_FAIL_LOCAL)
        return sl_decide(d->limiter, local, key, key_len, cost, flags, out, limits);
    /* open or closed: no state anywhere says more than the limits themselves */
    bool open = mode == SLD_FAIL_OPEN;
    sl_usec_t retry = open ? 0 : o->rt->cfg->breaker_cooldown;
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

typedef struct pending {
    sld_daemon_t *d;
    sld_origin_t origin;
    const sl_policy_t *p;
    uint32_t worker;
    unsigned flags;
    uint64_t cost;
    uint64_t started;   /* ns, when timed */
    sld_decided_fn fn;
    void *arg;
    size_t key_len;
    char key[];         /* for the fallback */
} pending_t;

static void unpin(const sld_runtime_t *rt) {
    atomic_fetch_sub(&((sld_runtime_t *)rt)->pins, 1);
}

static void on_remote(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    pending_t *pd = arg;
    sl_decision_t out;
    sl_limit_report_t reports[SL_MAX_LIMITS];
    if (rc == SL_OK) {
        out = *d;
        memcpy(reports, limits, sl_policy_limit_count(pd->p) * sizeof *reports);
    } else {
        rc = fall_back(pd->d, &pd->origin, pd->p, pd->key, pd->key_len, pd->cost,
                       pd->flags, &out, reports);
    }
    if (pd->started)
        sld_metrics_latency(pd->d->metrics, pd->worker, mono_ns() - pd->started);
    account(pd->d, pd->worker, pd->origin.slot, rc, pd->flags, &out);
    pd->fn(pd->arg, rc, &out, reports);
    unpin(pd->origin.rt);
    free(pd);
}

int sld_decide_start(sld_daemon_t *d, uint32_t worker, const sld_origin_t *origin,
                     const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                     unsigned flags, sl_decision_t *out, sl_limit_report_t *limits,
                     sld_decided_fn fn, void *arg) {
    /* write-back policies decide here; write_back.c shares their state */
    if (d->remote == NULL || p->write_back)
        return sld_decide(d, worker, origin->slot, p, key, key_len, cost, flags, out, limits);
    pending_t *pd = malloc(sizeof *pd + key_len);
    if (pd == NULL) {
        atomic_fetch_add(&d->stats.decision_errors, 1);
        return SL_ENOMEM;
    }
    *pd = (pending_t){.d = d, .origin = *origin, .p = p, .worker = worker, .flags = flags,
                      .cost = cost, .fn = fn, .arg = arg, .key_len = key_len};
    memcpy(pd->key, key, key_len);
    if (d->metrics && sld_metrics_sample(d->metrics, worker))
        pd->started = mono_ns();
    sl_usec_t now = sld_remote_clock_local(d->remote) ? sld_now(d) : SL__REDIS_SERVER_TIME;
    atomic_fetch_add(&((sld_runtime_t *)origin->rt)->pins, 1);
    if (sld_remote_evaluate(d->remote, worker, p, key, key_len, cost, (flags & SL_DECIDE_PEEK) != 0,
                            now, on_remote, pd) == SL_OK)
        return SLD_PENDING;
    /* not even sent (breaker open, no connection): the fallback answers now */
    unpin(origin->rt);
    free(pd);
    int rc = fall_back(d, origin, p, key, key_len, cost, flags, out, limits);
    account(d, worker, origin->slot, rc, flags, out);
    return rc;
}

typedef struct pending_reset {
    sld_decided_fn fn;
    void *arg;
} pending_reset_t;

static void on_reset(void *arg, const struct redisReply *reply) {
    pending_reset_t *pr = arg;
    pr->fn(pr->arg, reply && reply->type == REDIS_REPLY_INTEGER ? SL_OK : SL_EIO, NULL, NULL);
    free(pr);
}

int sld_reset_start(sld_daemon_t *d, uint32_t worker, const sld_origin_t *origin,
                    const sl_policy_t *p, const void *key, size_t key_len, sld_decided_fn fn,
                    void *arg) {
    (void)origin;
    if (d->remote == NULL)
        return sl_reset(d->limiter, p, key, key_len);
    if (p->write_back) { /* here, in the journal and in Redis; the others' copies at their next sync */
        sl_reset(d->limiter, p, key, key_len);
        sld_write_back_forget(d->write_back, p, key, key_len);
        size_t n = sld_write_back_key(p, key, key_len, NULL, 0);
        char *buf = malloc(n);
        pending_reset_t *pr = malloc(sizeof *pr);
        int rc = buf && pr ? SL_OK : SL_ENOMEM;
        if (rc == SL_OK) {
            sld_write_back_key(p, key, key_len, buf, n);
            const char *argv[2] = {"DEL", buf};
            size_t argvlen[2] = {3, n};
            *pr = (pending_reset_t){fn, arg};
            rc = sld_remote_command(d->remote, worker, buf, n, 2, argv, argvlen, on_reset, pr) == SL_OK
                     ? SLD_PENDING
                     : SL_EIO;
        }
        free(buf);
        if (rc != SLD_PENDING)
            free(pr);
        return rc;
    }
    /* the local fallback's state goes too, so a reset key is new everywhere */
    sld_store_failure_t mode;
    sl_reset(d->limiter, sld_policies_fallback(origin->rt->policies, origin->index, p, &mode), key,
             key_len);
    pending_reset_t *pr = malloc(sizeof *pr);
    if (pr == NULL)
        return SL_ENOMEM;
    *pr = (pending_reset_t){fn, arg};
    if (sld_remote_reset(d->remote, worker, p, key, key_len, on_reset, pr) == SL_OK)
        return SLD_PENDING;
    free(pr);
    return SL_EIO;
}
