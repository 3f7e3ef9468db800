/* limiter.c -- the public decision calls: a store, a clock and the policies.
 *
 * Reads the clock once per call, clamps it into the range the algorithms
 * accept, and hands the evaluation to the store. Elastic mode is finished
 * here: a key its own limits deny may borrow from the policy's shared pool,
 * which is a state of its own in the same store.
 *
 * Not here: any state (the store), any algorithm (core).
 */
#include <stdlib.h>
#include <time.h>

#include "../core/arith.h"
#include "../core/policy.h"
#include "store.h"

struct sl_limiter {
    sl_store_t *store;
    sl_clock_fn clock;
    void *clock_ctx;
};

sl_usec_t sl_clock_realtime(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (sl_usec_t)ts.tv_sec * SL_USEC_PER_SEC + ts.tv_nsec / 1000;
}

int sl_limiter_new(sl_store_t *store, const sl_limiter_options_t *opts, sl_limiter_t **out) {
    if (store == NULL || out == NULL)
        return SL_EINVAL;
    sl_limiter_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return SL_ENOMEM;
    l->store = store;
    l->clock = opts && opts->clock ? opts->clock : sl_clock_realtime;
    l->clock_ctx = opts ? opts->clock_ctx : NULL;
    *out = l;
    return SL_OK;
}

void sl_limiter_free(sl_limiter_t *l) { free(l); }

static sl_usec_t now_of(const sl_limiter_t *l) {
    sl_usec_t t = l->clock(l->clock_ctx);
    return t < 0 ? 0 : t > SL__MAX_TIME ? SL__MAX_TIME : t;
}

static int decide(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len,
                  uint64_t cost, bool peek, sl_decision_t *out) {
    if (l == NULL || p == NULL || out == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    if (key == NULL)
        key = "";
    sl_usec_t now = now_of(l);
    int rc = l->store->ops->evaluate(l->store, p, key, key_len, cost, now, peek, out);
    if (rc != SL_OK || out->allowed || p->mode != SL_MODE_ELASTIC)
        return rc;
    sl_decision_t pool;
    rc = l->store->ops->evaluate(l->store, p->pool, "", 0, cost, now, peek, &pool);
    if (rc != SL_OK)
        return rc;
    if (pool.allowed) { /* borrowed: the key's own limits stay as they were */
        out->allowed = true;
        out->retry_after = 0;
        out->remaining = 0;
        out->limit_index = -1;
    } else if (pool.retry_after < out->retry_after) {
        out->retry_after = pool.retry_after;
    }
    return SL_OK;
}

int sl_check(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
             sl_decision_t *out) {
    return decide(l, p, key, key_len, cost, false, out);
}

int sl_peek(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
            sl_decision_t *out) {
    return decide(l, p, key, key_len, cost, true, out);
}

int sl_reset(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len) {
    if (l == NULL || p == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    return l->store->ops->reset(l->store, p, key ? key : "", key_len);
}
