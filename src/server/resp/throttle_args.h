/* throttle_args.h -- the arguments of CL.THROTTLE (redis-cell) and GCRA
 * (Redis), and redis-cell's rounding of the seconds it replies.
 *
 * Pure parsing: the arguments of one command in, the key, max_burst, the
 * emission interval in nanoseconds and the quantity out, or the error reply
 * redis-cell users know. The interval is redis-cell's: T = period * 1e9 /
 * count, truncated.
 *
 * Not here: the policy of each parameter set (engine/throttle.c), the
 * decision, the reply.
 */
#ifndef SL_SERVER_THROTTLE_ARGS_H
#define SL_SERVER_THROTTLE_ARGS_H

#include <stdint.h>

#include "server/resp/resp.h"
#include "sluice.h"

typedef struct sld_throttle_args {
    sld_arg_t key;
    int64_t max_burst;
    int64_t interval_ns;
    int64_t quantity;
} sld_throttle_args_t;

/* CL.THROTTLE key max_burst count period [quantity]   (argv[0] is the name)
 * GCRA key max_burst tokens_per_period period [TOKENS n]  (period may be
 * fractional seconds). Fills *out, or returns a static error message. */
const char *sld_throttle_parse(const sld_arg_t *argv, size_t argc, sld_throttle_args_t *out);
const char *sld_gcra_parse(const sld_arg_t *argv, size_t argc, sld_throttle_args_t *out);

/* Whole seconds as redis-cell replies them: truncated, plus one when the
 * rest is at least a millisecond. */
int64_t sld_throttle_seconds(sl_usec_t us);

#endif
