/* decide.h -- a decision as every front makes it (RESP and HTTP alike):
 * timed one time in 64 for the latency histogram, and counted per worker and
 * per policy unless it only peeks. */
#ifndef SL_SERVER_DECIDE_H
#define SL_SERVER_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

/* sl_decide() on worker `worker`, counted under the metrics slot `slot`. */
int sld_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, const sl_policy_t *p, const void *key,
               size_t key_len, uint64_t cost, unsigned flags, sl_decision_t *out,
               sl_limit_report_t *limits);

#endif
