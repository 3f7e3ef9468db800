/* evaluate_call.h -- a batch of evaluations sent to Redis and read back:
 * one EVALSHA of evaluate.lua (script.c builds it), its reply split into one
 * decision per request, so that nothing above src/store/redis/ reads a
 * Redis reply.
 *
 * Not here: batching by instant and slot and the fallbacks (the daemon's
 * engine/remote.c, engine/decide.c), the script's calling convention
 * (script.c), connections (client.c).
 */
#ifndef SL_STORE_REDIS_EVALUATE_CALL_H
#define SL_STORE_REDIS_EVALUATE_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "store/redis/client.h"
#include "store/redis/script.h"

/* Room for why an answer was unusable: the reason and the server's error
 * text (up to 200 bytes of it). */
#define SL__REDIS_EVAL_WHY_LEN 320

/* Called once per request i of a call, in order (i = 0 first, so a caller
 * may do per-call work there), on the client's loop. status: what became of
 * the call. rc SL_OK: d and limits hold request i's decision; SL_EIO: there
 * is none to use, and when status is SL__REDIS_OK, why says what was wrong
 * with the reply (else why is NULL). Pointers are valid during the call
 * only. */
typedef void (*sl__redis_eval_fn)(void *arg, size_t i, sl__redis_status_t status, int rc,
                                  const sl_decision_t *d, const sl_limit_report_t *limits,
                                  const char *why);

/* Sends reqs[0..n) (1 <= n <= SL__REDIS_MAX_BATCH, one Cluster slot) as
 * one evaluation at `now` (us, or SL__REDIS_SERVER_TIME). reqs is copied,
 * but the policies and keys it points to must stay valid until fn has been
 * called for their request. Returns 0, an sl__redis_status_t when it could
 * not be sent, or -1 when it could not be built (out of memory, a policy
 * the script does not support): then fn is not called. */
int sl__redis_evaluate_send(sl__redis_client_t *c, const sl__redis_eval_req_t *reqs, size_t n,
                            sl_usec_t now, sl__redis_eval_fn fn, void *arg);

/* The answer to a refund: ok when the script answered, with the limits
 * it changed (bit i: limit i; 0: nothing could be given back exactly). */
typedef void (*sl__redis_refund_fn)(void *arg, sl__redis_status_t status, bool ok, uint32_t changed);

struct sl__held;

/* Sends the refund of a reservation of `p` on `key` (sl__redis_build_refund:
 * held as its reply left it, now on the reservation's clock). fn may be
 * NULL. Returns 0, an sl__redis_status_t when it could not be sent, or -1
 * when it could not be built (nothing held, out of memory): then fn is not
 * called. */
int sl__redis_refund_send(sl__redis_client_t *c, const sl_policy_t *p, const void *key, size_t key_len,
                          uint64_t cost, sl_usec_t now, const struct sl__held *held, sl__redis_refund_fn fn,
                          void *arg);

#endif
