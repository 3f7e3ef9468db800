/* script.h -- the evaluation script's calling convention: how a policy
 * evaluation becomes one EVALSHA of evaluate.lua and how its reply becomes a
 * decision. Pure: builds argument vectors and reads replies, does no I/O.
 *
 * Not here: connections (connection.c), routing (routing.c), timeouts
 * (client.c).
 */
#ifndef SL_STORE_REDIS_SCRIPT_H
#define SL_STORE_REDIS_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct redisReply;
struct sl__held; /* core/policy.h */

/* `now` meaning "read the Redis server's TIME inside the script". */
#define SL__REDIS_SERVER_TIME ((sl_usec_t)-1)

/* Requests one batch may hold (sl__redis_build_evaluate_batch). */
#define SL__REDIS_MAX_BATCH 64

/* Arguments of the longest command: a batch of SL__REDIS_MAX_BATCH elastic
 * requests of distinct policies (a key and a pool key each; a limits and a
 * pool argument each), and six more. */
#define SL__REDIS_MAX_ARGS (6 + 4 * SL__REDIS_MAX_BATCH)

/* One command as an argument vector (argv[0] is "EVALSHA" or "DEL"...).
 * Arguments point into `inline_buf` or into `heap` (long keys); free with
 * sl__redis_call_free(). key/key_len: the first Redis key the command
 * touches, which names its Cluster slot. */
typedef struct sl__redis_call {
    int argc;
    const char *argv[SL__REDIS_MAX_ARGS];
    size_t argvlen[SL__REDIS_MAX_ARGS];
    const char *key;
    size_t key_len;
    char *heap;
    size_t used;
    char inline_buf[1024];
} sl__redis_call_t;

/* Whether evaluate.lua decides `p` exactly (all its integers stay below
 * 2^53, Lua's exact range). *why gets a static reason when it does not. */
bool sl__redis_policy_supported(const sl_policy_t *p, const char **why);

/* EVALSHA <sha> ... for one evaluation of `p` on `key` (peek: charge
 * nothing). now: microseconds since the epoch, or SL__REDIS_SERVER_TIME.
 * Returns SL_OK, SL_EINVAL (policy not supported) or SL_ENOMEM. */
int sl__redis_build_evaluate(const sl_policy_t *p, const void *key, size_t key_len,
                             uint64_t cost, sl_usec_t now, bool peek, sl__redis_call_t *call);

/* The same for a reservation (sl_reserve) within max_wait us (0 <
 * max_wait <= SL_MAX_WAIT; 0: a plain evaluation): admitted now or at a
 * place within max_wait, held in Redis, with out->delay until it; or
 * denied, charging nothing. not_before (0 .. max_wait) and peek as
 * sl__reserve (store/reserve.h). Only for policies of the rate family and
 * fixed windows (the caller refuses others: SL_ENOWAIT). */
int sl__redis_build_reserve(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                            sl_usec_t now, sl_usec_t max_wait, sl_usec_t not_before, bool peek,
                            sl__redis_call_t *call);

/* Reads evaluate.lua's reply into *out and, when not NULL, one report per
 * limit. Returns SL_OK, or SL_EINVAL for a reply that is not one (an error
 * reply, a wrong shape): *why says what. */
int sl__redis_parse_evaluate(const sl_policy_t *p, const struct redisReply *r, sl_decision_t *out,
                             sl_limit_report_t *limits, const char **why);

/* One request of a batch: what sl__redis_build_evaluate() takes. */
typedef struct sl__redis_eval_req {
    const sl_policy_t *p;
    const void *key;
    size_t key_len;
    uint64_t cost;
    bool peek;
    sl_usec_t max_wait;  /* > 0: a reservation (sl__redis_build_reserve) */
    sl_usec_t not_before; /* a reservation: the earliest it may run */
    struct sl__held *held; /* a reservation, may be NULL: gets what its place
                              held (at 0: none), for sl__redis_build_refund;
                              it then goes in a batch call even alone */
} sl__redis_eval_req_t;

/* One EVALSHA deciding reqs[0..n) in order, as n single evaluations would,
 * at one `now` (or SL__REDIS_SERVER_TIME): requests on the same key see
 * each other's effects. 1 <= n <= SL__REDIS_MAX_BATCH. All their Redis
 * keys must be in one Cluster slot when the server is a Cluster:
 * sl__redis_slot_of() tells the caller which slot each request needs (the
 * caller groups); call->key is the first request's key. Returns SL_OK,
 * SL_EINVAL (a bad argument, or a policy evaluate.lua does not support:
 * check sl__redis_policy_supported() first) or SL_ENOMEM. */
int sl__redis_build_evaluate_batch(const sl__redis_eval_req_t *reqs, size_t n, sl_usec_t now,
                                   sl__redis_call_t *call);

/* Reads the i-th decision of a batch reply (reqs and n as built) into *out
 * and, when not NULL, one report per limit. Returns SL_OK, or SL_EINVAL
 * with *why: the whole reply is not one (an error reply: every request
 * failed), or this request failed inside the script (the others may not
 * have). Each call checks the whole reply: O(n). */
int sl__redis_parse_evaluate_batch(const sl__redis_eval_req_t *reqs, size_t n,
                                   const struct redisReply *r, size_t i, sl_decision_t *out,
                                   sl_limit_report_t *limits, const char **why);

/* Checks a whole batch reply once and writes where each decision starts
 * (offsets[0..n)): reading them all costs one pass, not n. SL_OK, or
 * SL_EINVAL with *why when the reply is not one (every request failed). */
int sl__redis_batch_offsets(const sl__redis_eval_req_t *reqs, size_t n, const struct redisReply *r,
                            size_t *offsets, const char **why);
/* Reads the decision at `at` (from sl__redis_batch_offsets) of request req. */
int sl__redis_parse_evaluate_at(const sl__redis_eval_req_t *req, const struct redisReply *r,
                                size_t at, sl_decision_t *out, sl_limit_report_t *limits,
                                const char **why);

/* What the decision at `at` (from sl__redis_batch_offsets) of request req
 * held for later (an admitted reservation's place: core/refund.h), into
 * *held; held->at 0 when nothing. */
void sl__redis_parse_held_at(const sl__redis_eval_req_t *req, const struct redisReply *r, size_t at,
                             struct sl__held *held);

/* The refund of a reservation of `p` on `key` whose waiter left before its
 * moment (core/refund.h: sl__policy_refund), at `now` (or
 * SL__REDIS_SERVER_TIME: the clock of the reservation): EVALSHA of
 * evaluate.lua, answered by an integer, the limits changed (bit i: limit
 * i). held as the reservation's reply left it (sl__redis_parse_held_at).
 * SL_OK, SL_EINVAL (held->at 0: nothing to give back; a policy the script
 * does not support) or SL_ENOMEM. */
int sl__redis_build_refund(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                           sl_usec_t now, const struct sl__held *held, sl__redis_call_t *call);

/* The Cluster slot (0..16383) the Redis keys of `key` under `p` live in:
 * the CRC16 of their hash tag (sl__redis_key_slot). */
unsigned sl__redis_slot_of(const sl_policy_t *p, const void *key, size_t key_len);

/* The command that forgets `key` under `p` (what sl_reset() does). */
int sl__redis_build_reset(const sl_policy_t *p, const void *key, size_t key_len,
                          sl__redis_call_t *call);

void sl__redis_call_free(sl__redis_call_t *call);

/* The embedded script, joined from the files of lua/evaluate/. */
extern const char sl__redis_evaluate_lua[];
extern const unsigned long sl__redis_evaluate_lua_len;
extern const char sl__redis_evaluate_lua_sha1[];

/* sync.lua: write-back mode's compare-and-set (sync_cas.c). */
extern const char sl__redis_sync_lua[];
extern const unsigned long sl__redis_sync_lua_len;
extern const char sl__redis_sync_lua_sha1[];

#endif
