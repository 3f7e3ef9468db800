/* throttle.h -- the policies of CL.THROTTLE (redis-cell) and GCRA (Redis).
 *
 * Both commands carry their limit in their arguments (parsed by
 * resp/throttle_args.c). Each distinct
 * (max_burst, emission interval) becomes one gcra policy, compiled on first
 * use and kept for the life of the daemon in a table read without locks.
 * The interval is redis-cell's, in nanoseconds: T = period * 1e9 / count,
 * truncated. It maps exactly onto the library's gcra: limit 1000 per T
 * microseconds has an emission interval of T/1000 us = T ns.
 */
#ifndef SL_SERVER_THROTTLE_H
#define SL_SERVER_THROTTLE_H

#include <stdint.h>

#include "sluice.h"

#define SLD_THROTTLE_MAX_SETS 4096  /* distinct parameter sets kept */

typedef struct sld_throttles sld_throttles_t;

/* nodes: how many daemons share the store (store.nodes), for the local
 * fallback's share; 1 without a shared store. */
int sld_throttles_new(uint32_t nodes, sld_throttles_t **out);
void sld_throttles_free(sld_throttles_t *t);

/* The policy for (max_burst, interval_ns), compiled the first time, and
 * (local, may be NULL) one node's share of it. SL_ERANGE: the parameters
 * overflow; SL_ETOOMANY: too many distinct sets. */
int sld_throttles_get(sld_throttles_t *t, int64_t max_burst, int64_t interval_ns,
                      const sl_policy_t **out, const sl_policy_t **local);

/* Every parameter set compiled so far, at most max: its policy in
 * policies[i] and its local share in locals[i] (the policy itself with one
 * node). Returns how many were written. For commands that act on a
 * CL.THROTTLE key under every set (DEL, EXISTS, TTL); sets added meanwhile
 * may be missed. */
size_t sld_throttles_list(sld_throttles_t *t, const sl_policy_t **policies,
                          const sl_policy_t **locals, size_t max);

#endif
