/* reserve.h -- the daemon's reservations beyond sl_reserve(): a peek at
 * the place a request would get, and a place no earlier than a given
 * moment. Together they let a request under several policies wait all or
 * nothing (the gateway's excess: delay): every policy is asked where its
 * place is, then each is charged at the latest of them.
 *
 * Not here: the public sl_reserve() (sluice.h), the algorithms' rules
 * (core/policy.c: sl__policy_reserve).
 */
#ifndef SL_STORE_RESERVE_H
#define SL_STORE_RESERVE_H

#include <stdbool.h>

#include "../core/refund.h"
#include "sluice.h"

/* sl_reserve() with more arguments: not_before (0 .. max_wait) is the
 * earliest the request may run, so its delay is at least that and every
 * limit is charged as if it arrived then; peek decides without charging
 * anything (the pool of an elastic policy included); held (may be NULL)
 * gets what an admitted request's later place left (held->at 0: none),
 * for sl__refund. */
int sl__reserve(sl_limiter_t *limiter, const sl_policy_t *policy, const void *key, size_t key_len,
                uint64_t cost, sl_usec_t max_wait, sl_usec_t not_before, bool peek, sl_decision_t *out,
                sl_limit_report_t *limits, sl__held_t *held);

/* The waiter of a reservation left before its moment: gives back what can
 * be given back exactly (core/refund.h says what), so the next request
 * gets that place. The same policy and key as the reservation, and its
 * held. SL_OK (given back or not), SL_ENOTSUP when the store cannot. */
int sl__refund(sl_limiter_t *limiter, const sl_policy_t *policy, const void *key, size_t key_len,
               uint64_t cost, const sl__held_t *held);

#endif
