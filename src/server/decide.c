/* decide.c -- a decision, timed and counted (see decide.h). */
#include <time.h>

#include "decide.h"

int sld_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, const sl_policy_t *p, const void *key,
               size_t key_len, uint64_t cost, unsigned flags, sl_decision_t *out,
               sl_limit_report_t *limits) {
    sld_metrics_t *m = d->metrics;
    int rc;
    if (m == NULL || !sld_metrics_sample(m, worker)) {
        rc = sl_decide(d->limiter, p, key, key_len, cost, flags, out, limits);
    } else {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        rc = sl_decide(d->limiter, p, key, key_len, cost, flags, out, limits);
        clock_gettime(CLOCK_MONOTONIC, &b);
        sld_metrics_latency(m, worker, (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec)));
    }
    if (rc != SL_OK && rc != SL_EINVAL && rc != SL_ERANGE) /* not the client's mistake */
        atomic_fetch_add(&d->stats.decision_errors, 1);
    if (rc != SL_OK || (flags & SL_DECIDE_PEEK))
        return rc;
    sld_counters_t *c = &d->counters[worker];
    sld_count(out->allowed ? &c->allowed : &c->denied);
    if (m)
        sld_metrics_decision(m, worker, slot, out->allowed);
    return rc;
}
