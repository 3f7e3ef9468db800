/* refund.h -- giving back a reservation whose waiter left before its
 * moment (sl__reserve's place, store/reserve.h).
 *
 * Only what can be given back exactly: a limit's state is changed only
 * when it still ends where that reservation left it, so no place charged
 * after it moves. The rate family (gcra, token_bucket, leaky_bucket) then
 * takes the reservation's increment off its schedule: the next request
 * gets that place. A fixed window uncounts it in the window it was charged
 * to, as long as the state still holds that window as its last (counts in
 * a window have no order). Anything else (a later charge, a window held
 * ahead of it, the moment passed) keeps the charge: conservative.
 *
 * Not here: where the token comes from (policy.c, sl__policy_reserve),
 * the stores' locks.
 */
#ifndef SL_CORE_REFUND_H
#define SL_CORE_REFUND_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"
#include "policy.h"

/* Gives back `cost` reserved at held->at from each limit of p whose state
 * still ends where that reservation left it (held->exp[i]); the bit i of
 * the result: limit i's cell changed (to be written back). */
uint32_t sl__policy_refund(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, const sl__held_t *held,
                           uint64_t cost);

#endif
