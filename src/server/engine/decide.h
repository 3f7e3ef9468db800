/* decide.h -- a decision as every front makes it (RESP and HTTP alike):
 * timed one time in 64 for the latency histogram, and counted per worker and
 * per policy unless it only peeks. With the Redis store a decision may
 * finish later, in a callback on the worker's loop (sld_decide_start). */
#ifndef SL_SERVER_DECIDE_H
#define SL_SERVER_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "server/daemon/daemon.h"

/* sl_decide() on worker `worker`, counted under the metrics slot `slot`,
 * in this daemon's memory store. */
int sld_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, const sl_policy_t *p, const void *key,
               size_t key_len, uint64_t cost, unsigned flags, sl_decision_t *out,
               sl_limit_report_t *limits);

/* sld_decide_start(): the decision will come to the callback. */
#define SLD_PENDING 1

/* Called once, on the worker's loop, with rc SL_OK and the decision, or an
 * error. `out` and `limits` are valid during the call only. */
typedef void (*sld_decided_fn)(void *arg, int rc, const sl_decision_t *out,
                               const sl_limit_report_t *limits);

/* Where a policy came from, for the fallback of the shared store. */
typedef struct sld_origin {
    const sld_runtime_t *rt;  /* the runtime p belongs to (kept alive while pending) */
    size_t index;             /* p's policy index in rt, SIZE_MAX for CL.THROTTLE's */
    uint32_t slot;            /* metrics */
    const sl_policy_t *local; /* for index SIZE_MAX: the local fallback's policy
                                 (NULL: p itself) */
} sld_origin_t;

/* Decides through the configured store. With the memory store (or when
 * Redis cannot be asked and on_store_failure answers at once) the decision
 * is made now: returns SL_OK or an error with *out (and limits) filled.
 * Otherwise returns SLD_PENDING and fn(arg, ...) is called later, exactly
 * once: the caller keeps arg valid until then. */
int sld_decide_start(sld_daemon_t *d, uint32_t worker, const sld_origin_t *origin,
                     const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                     unsigned flags, sl_decision_t *out, sl_limit_report_t *limits,
                     sld_decided_fn fn, void *arg);

/* Forgets key under p in the configured store: SL_OK, an error, or
 * SLD_PENDING with fn(arg, rc, NULL, NULL) to come. */
int sld_reset_start(sld_daemon_t *d, uint32_t worker, const sld_origin_t *origin,
                    const sl_policy_t *p, const void *key, size_t key_len, sld_decided_fn fn,
                    void *arg);

#endif
