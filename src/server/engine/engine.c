/* engine.c -- the decision engine over one store kind (see engine.h): the
 * calls every front makes, timed and counted once, whatever the store. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/engine/engine.h"

/* Workers whose loops are kept (threads are at most 256). */
#define MAX_LOOPS 256

struct sld_engine {
    const sld_store_kind_t *kind;
    void *ctx;
    sld_engine_hooks_t hooks;
    struct uv_loop_s *loops[MAX_LOOPS]; /* by worker, as attached */
};

struct sld_job {
    sld_engine_t *e;
    const sld_request_t *r; /* the caller's, or `own` once kept */
    sld_request_t own;      /* a kept job's copy, its key after the job */
    uint32_t worker;
    bool reset;         /* not a decision: not counted */
    bool kept;          /* on the heap, key copied after it */
    uint64_t started;   /* ns, when timed; 0 = not */
    sld_decided_fn fn;
    void *arg;
};

static uint64_t now_ns(const sld_engine_t *e) {
    if (e->hooks.mono_ns)
        return e->hooks.mono_ns(e->hooks.ctx);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int sld_engine_new(const sld_store_kind_t *kind, void *kind_ctx, const sld_engine_hooks_t *hooks,
                   sld_engine_t **out) {
    if (kind == NULL || kind->decide == NULL || kind->reset == NULL)
        return SL_EINVAL;
    sld_engine_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return SL_ENOMEM;
    *e = (sld_engine_t){.kind = kind, .ctx = kind_ctx};
    if (hooks)
        e->hooks = *hooks;
    *out = e;
    return SL_OK;
}

void sld_engine_free(sld_engine_t *e) { free(e); }

/* What every decision goes through once made. */
static void account(sld_engine_t *e, const sld_job_t *j, int rc, const sl_decision_t *out) {
    if (j->started && e->hooks.metrics)
        sld_metrics_latency(e->hooks.metrics, j->worker, now_ns(e) - j->started);
    if (e->hooks.account)
        e->hooks.account(e->hooks.ctx, j->worker, j->r->origin.slot, rc, j->r->flags, out);
    if (e->hooks.observe)
        e->hooks.observe(e->hooks.ctx, j->worker, j->r, rc, out);
}

int sld_engine_decide(sld_engine_t *e, uint32_t worker, const sld_request_t *r, sl_decision_t *out,
                      sl_limit_report_t *limits, sld_decided_fn fn, void *arg) {
    /* on the stack and pointing at the caller's request: a store that
     * answers later copies it (sld_job_keep), one that answers now costs
     * no copy */
    sld_job_t job = {.e = e, .r = r, .worker = worker, .fn = fn, .arg = arg};
    sld_metrics_t *m = e->hooks.metrics;
    if (m && sld_metrics_sample(m, worker))
        job.started = now_ns(e);
    int rc = e->kind->decide(e->ctx, worker, r, out, limits, fn ? &job : NULL);
    if (rc == SLD_PENDING)
        return rc;
    account(e, &job, rc, out);
    return rc;
}

/* A run of requests the store kind decides together: each is sampled as a
 * single call would be, and a sampled one gets the run's time per request. */
static void decide_run(sld_engine_t *e, uint32_t worker, const sld_request_t *reqs, size_t n,
                       sl_decision_t *out, int *rcs) {
    sld_metrics_t *m = e->hooks.metrics;
    size_t timed = 0;
    for (size_t i = 0; m && i < n; i++)
        timed += sld_metrics_sample(m, worker);
    uint64_t started = timed ? now_ns(e) : 0;
    e->kind->decide_batch(e->ctx, worker, reqs, n, out, rcs);
    uint64_t each = timed ? (now_ns(e) - started) / n : 0;
    for (size_t i = 0; i < timed; i++)
        sld_metrics_latency(m, worker, each);
    if (e->hooks.observe_run) {
        e->hooks.observe_run(e->hooks.ctx, worker, reqs, n, rcs, out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (e->hooks.account)
            e->hooks.account(e->hooks.ctx, worker, reqs[i].origin.slot, rcs[i], reqs[i].flags,
                             &out[i]);
        if (e->hooks.observe)
            e->hooks.observe(e->hooks.ctx, worker, &reqs[i], rcs[i], &out[i]);
    }
}

void sld_engine_decide_batch(sld_engine_t *e, uint32_t worker, const sld_request_t *reqs, size_t n,
                             sl_decision_t *out, int *rcs, sld_decided_fn fn, void *const *args) {
    for (size_t i = 0; i < n;) {
        size_t run = 0;
        if (e->kind->decide_batch)
            while (i + run < n && (fn == NULL || !sld_engine_defers(e, reqs[i + run].p)))
                run++;
        if (run > 0) {
            decide_run(e, worker, reqs + i, run, out + i, rcs + i);
            i += run;
            continue;
        }
        rcs[i] = sld_engine_decide(e, worker, &reqs[i], &out[i], NULL, fn, fn ? args[i] : NULL);
        i++;
    }
}

int sld_engine_reset(sld_engine_t *e, uint32_t worker, const sld_request_t *r, sld_decided_fn fn,
                     void *arg) {
    sld_job_t job = {.e = e, .r = r, .worker = worker, .reset = true, .fn = fn, .arg = arg};
    return e->kind->reset(e->ctx, worker, r, fn ? &job : NULL);
}

int sld_engine_refund(sld_engine_t *e, uint32_t worker, const sld_request_t *r) {
    return e->kind->refund ? e->kind->refund(e->ctx, worker, r) : SL_ENOTSUP;
}

bool sld_engine_defers(const sld_engine_t *e, const sl_policy_t *p) {
    return e->kind->defers && e->kind->defers(e->ctx, p);
}

bool sld_engine_supports(const sld_engine_t *e, const sl_policy_t *p, const char **why) {
    return e->kind->supports == NULL || e->kind->supports(e->ctx, p, why);
}

int sld_engine_attach(sld_engine_t *e, uint32_t worker, struct uv_loop_s *loop) {
    if (worker < MAX_LOOPS)
        e->loops[worker] = loop;
    return e->kind->attach ? e->kind->attach(e->ctx, worker, loop) : SL_OK;
}

struct uv_loop_s *sld_engine_loop(const sld_engine_t *e, uint32_t worker) {
    return worker < MAX_LOOPS ? e->loops[worker] : NULL;
}

void sld_engine_detach(sld_engine_t *e, uint32_t worker, void (*done)(void *arg), void *arg) {
    if (e->kind->detach)
        e->kind->detach(e->ctx, worker, done, arg);
    else
        done(arg);
}

void sld_engine_group_begin(sld_engine_t *e, uint32_t worker, const sld_request_t *reqs, size_t n,
                            bool every_key) {
    if (e->kind->group_begin)
        e->kind->group_begin(e->ctx, worker, reqs, n, every_key);
}

void sld_engine_group_end(sld_engine_t *e, uint32_t worker) {
    if (e->kind->group_end)
        e->kind->group_end(e->ctx, worker);
}

void sld_engine_batch_begin(sld_engine_t *e, uint32_t worker) {
    if (e->kind->batch_begin)
        e->kind->batch_begin(e->ctx, worker);
}

void sld_engine_batch_flush(sld_engine_t *e, uint32_t worker) {
    if (e->kind->batch_flush)
        e->kind->batch_flush(e->ctx, worker);
}

void sld_engine_status(const sld_engine_t *e, sld_store_status_t *out) {
    memset(out, 0, sizeof *out);
    out->up = true;
    out->describe = "memory";
    if (e->kind->status)
        e->kind->status(e->ctx, out);
}

int sld_engine_share_rules(sld_engine_t *e, uint32_t worker, const char *name, const char *json,
                           size_t json_len, void (*fn)(void *arg, int rc), void *arg) {
    if (e->kind->share_rules == NULL)
        return SL_ENOTSUP;
    return e->kind->share_rules(e->ctx, worker, name, json, json_len, fn, arg);
}

/* ---- for store kinds ------------------------------------------------------------------------- */

sld_job_t *sld_job_keep(sld_job_t *job) {
    sld_job_t *k = malloc(sizeof *k + job->r->key_len);
    if (k == NULL)
        return NULL;
    *k = *job;
    k->kept = true;
    k->own = *job->r;
    memcpy(k + 1, job->r->key, job->r->key_len);
    k->own.key = k + 1;
    k->r = &k->own;
    return k;
}

const sld_request_t *sld_job_request(const sld_job_t *job) { return job->r; }

void *sld_job_store(const sld_job_t *job) { return job->e->ctx; }

void sld_job_drop(sld_job_t *job) {
    if (job && job->kept)
        free(job);
}

void sld_job_done(sld_job_t *job, int rc, const sl_decision_t *out, const sl_limit_report_t *limits) {
    if (!job->reset)
        account(job->e, job, rc, out);
    job->fn(job->arg, rc, out, limits);
    if (job->kept)
        free(job);
}
