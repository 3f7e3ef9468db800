/* group.h -- several decisions of one thread taken as one group (internal).
 *
 * A daemon running a transaction (RESP's MULTI ... EXEC) names the states
 * the block will touch, runs its decisions, resets and peeks one by one
 * through the ordinary calls (sl_decide, sl_reset, ...), then ends the
 * group: in between, no other thread decides on any of those states, so
 * the block sees them exactly as if it ran alone. The memory store does it
 * with the locks of the shards involved, taken in ascending order (a
 * single decision takes one lock and waits for nothing while it holds it,
 * so neither deadlocks the other) and held for the calling thread until
 * the end; the calls in between skip the locks their thread already holds.
 *
 * Not here: which states a command touches (the daemon knows its
 * commands), other stores (a store without the hooks runs a group as
 * plain calls: SL_ENOTSUP).
 */
#ifndef SL_STORE_GROUP_H
#define SL_STORE_GROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice.h"

/* One state a group will touch: the key under p (and, for an elastic p,
 * its shared pool). */
typedef struct sl__group_key {
    const sl_policy_t *p;
    const void *key;
    size_t key_len;
} sl__group_key_t;

/* Holds keys[0..n) (every key of the store when `all`) for the calling
 * thread until sl__limiter_group_end(). SL_OK; SL_EINVAL when this thread
 * already holds a group of this store; SL_ENOTSUP when the store cannot.
 * Only the calling thread may use the limiter's calls on these keys until
 * the end, and it must end the group before it waits on anything another
 * thread's decision could need. A call in between on a key not named here
 * still works, but is not isolated and takes its lock out of order. */
int sl__limiter_group_begin(sl_limiter_t *l, const sl__group_key_t *keys, size_t n, bool all);
/* Lets go of what sl__limiter_group_begin() held (nothing: nothing). */
void sl__limiter_group_end(sl_limiter_t *l);

#endif
