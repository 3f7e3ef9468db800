/* limiter.c -- the public decision calls: a store, a clock and the policies.
 *
 * Reads the clock once per call (once per batch), clamps it into the range
 * the algorithms accept, and hands the evaluation to the store. Elastic mode is finished
 * here: a key its own limits deny may borrow from the policy's shared pool,
 * which is a state of its own in the same store. A batch goes to the
 * store's own batch operation when it has one (not in elastic mode: a
 * borrow is a second evaluation), else request by request.
 *
 * Not here: any state (the store), any algorithm (core).
 */
#include <stdlib.h>
#include <time.h>

#include "../core/arith.h"
#include "../core/policy.h"
#include "reserve.h"
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

/* wait < 0: a plain decision; else a reservation of at most `wait` us,
 * running no earlier than not_before. */
static int decide_at(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len,
                     uint64_t cost, bool peek, sl_usec_t wait, sl_usec_t not_before, sl_usec_t now,
                     sl_decision_t *out, sl_limit_report_t *limits, sl__held_t *held) {
    if (key == NULL && key_len > 0)
        return SL_EINVAL;
    if (key == NULL)
        key = "";
    int rc;
    if (wait < 0)
        rc = l->store->ops->evaluate(l->store, p, key, key_len, cost, now, peek, out, limits);
    else if (l->store->ops->reserve == NULL)
        rc = SL_ENOTSUP;
    else
        rc = l->store->ops->reserve(l->store, p, key, key_len, cost, now, wait, not_before, peek, out,
                                    limits, held);
    if (rc != SL_OK || out->allowed || p->mode != SL_MODE_ELASTIC)
        return rc;
    sl_decision_t pool;
    rc = l->store->ops->evaluate(l->store, p->pool, "", 0, cost, now, peek, &pool, NULL);
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

int sl_decide(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
              unsigned flags, sl_decision_t *out, sl_limit_report_t *limits) {
    if (l == NULL || p == NULL || out == NULL)
        return SL_EINVAL;
    return decide_at(l, p, key, key_len, cost, flags & SL_DECIDE_PEEK, -1, 0, now_of(l), out, limits, NULL);
}

int sl_reserve(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
               sl_usec_t max_wait, sl_decision_t *out, sl_limit_report_t *limits) {
    if (l == NULL || p == NULL || out == NULL)
        return SL_EINVAL;
    if (max_wait < 0 || max_wait > SL_MAX_WAIT)
        return SL_ERANGE;
    return decide_at(l, p, key, key_len, cost, false, max_wait, 0, now_of(l), out, limits, NULL);
}

int sl__reserve(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                sl_usec_t max_wait, sl_usec_t not_before, bool peek, sl_decision_t *out,
                sl_limit_report_t *limits, sl__held_t *held) {
    if (held)
        held->at = 0;
    if (l == NULL || p == NULL || out == NULL)
        return SL_EINVAL;
    if (max_wait < 0 || max_wait > SL_MAX_WAIT || not_before < 0 || not_before > max_wait)
        return SL_ERANGE;
    return decide_at(l, p, key, key_len, cost, peek, max_wait, not_before, now_of(l), out, limits, held);
}

int sl__refund(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
               const sl__held_t *held) {
    if (l == NULL || p == NULL || held == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    if (held->at <= 0)
        return SL_OK;
    if (l->store->ops->refund == NULL)
        return SL_ENOTSUP;
    return l->store->ops->refund(l->store, p, key ? key : "", key_len, cost, now_of(l), held);
}

int sl_check(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
             sl_decision_t *out) {
    return sl_decide(l, p, key, key_len, cost, 0, out, NULL);
}

int sl_peek(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
            sl_decision_t *out) {
    return sl_decide(l, p, key, key_len, cost, SL_DECIDE_PEEK, out, NULL);
}

static void prefetch(sl_limiter_t *l, const sl_policy_t *p, const sl_request_t *r) {
    if (r->key != NULL)
        l->store->ops->prefetch(l->store, p, r->key, r->key_len);
}

/* sl_check_batch() by the store's own batch: the requests before the first
 * key that is NULL with a length, then that request's error, as one by one. */
static int store_batch(sl_limiter_t *l, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                       sl_usec_t now, sl_decision_t *out, size_t *done) {
    size_t valid = 0, decided = 0;
    while (valid < n && (reqs[valid].key != NULL || reqs[valid].key_len == 0))
        valid++;
    int rc = l->store->ops->evaluate_batch(l->store, p, reqs, valid, now, out, &decided);
    if (done)
        *done = decided;
    return rc == SL_OK && valid < n ? SL_EINVAL : rc;
}

int sl_check_batch(sl_limiter_t *l, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                   sl_decision_t *out, size_t *done) {
    if (done)
        *done = 0;
    if (l == NULL || p == NULL || (n > 0 && (reqs == NULL || out == NULL)))
        return SL_EINVAL;
    sl_usec_t now = now_of(l);
    if (l->store->ops->evaluate_batch != NULL && p->mode != SL_MODE_ELASTIC)
        return store_batch(l, p, reqs, n, now, out, done);
    bool ahead = l->store->ops->prefetch != NULL;
    for (size_t i = 0; ahead && i < n && i < 2 * SL__LOOKAHEAD; i++)
        __builtin_prefetch(reqs[i].key);
    for (size_t i = 0; ahead && i < n && i < SL__LOOKAHEAD; i++)
        prefetch(l, p, &reqs[i]);
    for (size_t i = 0; i < n; i++) {
        if (ahead && i + 2 * SL__LOOKAHEAD < n)
            __builtin_prefetch(reqs[i + 2 * SL__LOOKAHEAD].key);
        if (ahead && i + SL__LOOKAHEAD < n)
            prefetch(l, p, &reqs[i + SL__LOOKAHEAD]);
        int rc = decide_at(l, p, reqs[i].key, reqs[i].key_len, reqs[i].cost, false, -1, 0, now,
                           &out[i], NULL, NULL);
        if (rc != SL_OK)
            return rc;
        if (done)
            *done = i + 1;
    }
    return SL_OK;
}

int sl__limiter_group_begin(sl_limiter_t *l, const sl__group_key_t *keys, size_t n, bool all) {
    if (l == NULL || (n > 0 && keys == NULL))
        return SL_EINVAL;
    if (l->store->ops->group_begin == NULL)
        return SL_ENOTSUP;
    return l->store->ops->group_begin(l->store, keys, n, all);
}

void sl__limiter_group_end(sl_limiter_t *l) {
    if (l && l->store->ops->group_end)
        l->store->ops->group_end(l->store);
}

int sl_reset(sl_limiter_t *l, const sl_policy_t *p, const void *key, size_t key_len) {
    if (l == NULL || p == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    return l->store->ops->reset(l->store, p, key ? key : "", key_len);
}
