/* store.h -- the store interface: where limit state lives.
 *
 * A store is a table of function pointers plus the implementation's context
 * (the struct that embeds sl_store_t first). The memory store implements it;
 * a Redis store and test fakes can too. A store evaluates a whole policy for
 * one key atomically: it finds the cells, runs sl__policy_evaluate() under its
 * own lock (or script), and writes the charged cells back.
 */
#ifndef SL_STORE_STORE_H
#define SL_STORE_STORE_H

#include "group.h"
#include "sluice.h"

struct sl__held; /* core/refund.h */

/* sl_check_batch() looks ahead in two stages (limiter.c, and a store's
 * evaluate_batch): the key bytes of request i + 2*SL__LOOKAHEAD (hashing a
 * key that is not in cache would stall on it), then the state of request
 * i + SL__LOOKAHEAD. Enough to cover a DRAM miss with decisions, few
 * enough to stay in L1: measured best at 8. */
#define SL__LOOKAHEAD 8

typedef struct sl__store_ops {
    const char *name;
    int (*evaluate)(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                    uint64_t cost, sl_usec_t now, bool peek, sl_decision_t *out,
                    sl_limit_report_t *limits);
    /* A reservation (sl_reserve): as evaluate with sl__policy_reserve
     * (not_before, peek, held: as there). NULL: the store cannot (SL_ENOTSUP). */
    int (*reserve)(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                   uint64_t cost, sl_usec_t now, sl_usec_t max_wait, sl_usec_t not_before, bool peek,
                   sl_decision_t *out, sl_limit_report_t *limits, struct sl__held *held);
    /* Gives back what a reservation held (core/refund.h: sl__policy_refund).
     * NULL: the store cannot (SL_ENOTSUP). */
    int (*refund)(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                  sl_usec_t now, const struct sl__held *held);
    int (*reset)(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len);
    /* Optional: a hint that (p, key) will be evaluated soon. Must be cheap,
     * take no lock and have no effect but on caches. */
    void (*prefetch)(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len);
    /* Optional: decides reqs[0..n) on p at `now`, in order, exactly as n
     * evaluate calls would (no peek, no limit reports); *done gets how many
     * were decided, and the first error stops the batch and is returned.
     * No key is NULL with a length; p is not elastic (the limiter finishes
     * elastic decisions one by one). NULL: the limiter calls evaluate. */
    int (*evaluate_batch)(sl_store_t *s, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                          sl_usec_t now, sl_decision_t *out, size_t *done);
    int (*stats)(sl_store_t *s, sl_store_stats_t *out);
    int (*sweep)(sl_store_t *s, sl_usec_t now, size_t budget, size_t *reclaimed);
    int (*save)(sl_store_t *s, const char *path, sl_usec_t now);
    int (*load)(sl_store_t *s, const char *path, sl_usec_t now, size_t *loaded);
    void (*destroy)(sl_store_t *s);
    /* Optional (group.h): holds keys[0..n) (all: every key) for the calling
     * thread until group_end; its evaluations and resets in between skip
     * what it holds. */
    int (*group_begin)(sl_store_t *s, const sl__group_key_t *keys, size_t n, bool all);
    void (*group_end)(sl_store_t *s);
} sl__store_ops_t;

struct sl_store {
    const sl__store_ops_t *ops;
};

#endif
