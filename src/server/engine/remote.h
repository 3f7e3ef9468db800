/* remote.h -- decisions in the shared store (Redis), for every front.
 *
 * With store type redis, each worker has its own client on its own loop
 * (store/redis/client.c) and a decision is one EVALSHA of the evaluation
 * script: the front starts it, goes on with other work, and gets the result
 * in a callback on the same loop. While Redis cannot answer (timeout, down,
 * breaker open, a reply that makes no sense) the policy's on_store_failure
 * decides instead: open admits, closed denies, local decides in this
 * daemon's memory with every limit divided by store.nodes.
 *
 * Not here: the protocol with Redis (store/redis/), the fronts' replies.
 */
#ifndef SL_SERVER_REMOTE_H
#define SL_SERVER_REMOTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "server/config/config.h"
#include "sluice.h"

typedef struct sld_remote sld_remote_t;

#define SLD_REMOTE_ERROR_LEN 640

/* What /metrics, INFO and /readyz show of the shared store. */
typedef struct sld_remote_stats {
    bool up;                  /* every worker's client is connected */
    char last_error[SLD_REMOTE_ERROR_LEN]; /* why not, when !up ("" when up) */
    bool breaker_open;        /* some worker's breaker is open */
    uint64_t calls;           /* evaluations sent */
    uint64_t failures;        /* ... that got no usable answer */
    uint64_t timeouts;
    uint64_t fallback_open, fallback_closed, fallback_local;
    uint64_t reconnects;
    /* script calls answered by Redis, from send to reply (a call carries
     * one batch: up to SL__REDIS_MAX_BATCH evaluations); a reader takes
     * the mean between two reads */
    uint64_t latency_count, latency_sum_us;
} sld_remote_stats_t;

/* Reads cfg's store settings (the URL is parsed here: a bad one is an
 * error in err). Clients start when the workers attach. */
int sld_remote_new(const sld_config_t *cfg, uint32_t nworkers, sld_remote_t **out, char *err,
                   size_t err_len);
void sld_remote_free(sld_remote_t *r);

/* Checks at start that the URL's host names resolve, and logs every
 * address of each (blocking: call it before the loops run). A name that
 * does not resolve is an error. The clients look the names up again, off
 * their loops, at each connection round and try every address in order
 * (store/redis/resolve.h), so a name that moves is followed. */
int sld_remote_resolve(sld_remote_t *r, char *err, size_t err_len);

/* From worker `worker`'s thread, on its loop, before it serves. */
int sld_remote_attach(sld_remote_t *r, uint32_t worker, uv_loop_t *loop);
/* Fails what is pending and closes the worker's client; done(arg) once
 * closed. The loop must keep running until then. */
void sld_remote_detach(sld_remote_t *r, uint32_t worker, void (*done)(void *arg), void *arg);

/* An answer from Redis: rc SL_OK with the decision, or SL_EIO when there is
 * none to use (timeout, down, breaker open, an unusable reply). Called on
 * the worker's loop; the pointers are valid during the call only. */
typedef void (*sld_remote_fn)(void *arg, int rc, const sl_decision_t *d,
                              const sl_limit_report_t *limits);

/* Sends one evaluation from worker `worker` (its thread). now: us, or
 * SL__REDIS_SERVER_TIME. max_wait > 0: a reservation within it, running
 * no earlier than not_before (sl__redis_build_reserve; with peek: where
 * its place is). SL_OK: fn will be called exactly once, within
 * store.timeout and a little; SL_EIO: it could not be sent (fn is not
 * called). */
int sld_remote_evaluate(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                        size_t key_len, uint64_t cost, bool peek, sl_usec_t max_wait,
                        sl_usec_t not_before, sl_usec_t now, sld_remote_fn fn, void *arg);

struct sl__held; /* core/policy.h */

/* The same for a reservation whose place may be given back: *held (valid
 * until fn is called) gets what the place held before fn is called (at 0:
 * none). */
int sld_remote_reserve(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                       size_t key_len, uint64_t cost, bool peek, sl_usec_t max_wait, sl_usec_t not_before,
                       sl_usec_t now, struct sl__held *held, sld_remote_fn fn, void *arg);

/* Gives back the place a reservation held (held as its answer filled it;
 * now on the same clock): store/redis/script.h, sl__redis_build_refund.
 * Nothing is answered; SL_EIO when it could not be sent. */
int sld_remote_refund(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                      size_t key_len, uint64_t cost, sl_usec_t now, const struct sl__held *held);

/* A transaction's n evaluations from worker `worker` follow at once: they
 * go in one script call (Redis runs it with no other command in between)
 * when they fit in one (SL__REDIS_MAX_BATCH, and in a Cluster one slot:
 * each run of one slot is one call). A reset among them (a DEL, sent on
 * its own) ends the call before it. */
void sld_remote_group_begin(sld_remote_t *r, uint32_t worker, size_t n);


/* The parsed store URL and client options, for other clients of the same
 * store (the rules, on the main loop). */
struct sl__redis_url;
struct sl__redis_client_options;
const struct sl__redis_url *sld_remote_url(const sld_remote_t *r);
const struct sl__redis_client_options *sld_remote_options(const sld_remote_t *r);

/* The answer to a command whose reply is an integer: rc SL_OK when it
 * came, SL_EIO when there is none (timeout, down) or it is something else
 * (an error). Called on the worker's loop. */
typedef void (*sld_remote_done_fn)(void *arg, int rc);

/* Any command whose reply is an integer (DEL, HSET, INCR, PUBLISH), from
 * worker `worker`. key names the Cluster slot (NULL: any). SL_OK: fn will
 * be called exactly once; SL_EIO: it could not be sent (fn is not called). */
int sld_remote_command_int(sld_remote_t *r, uint32_t worker, const char *key, size_t key_len, int argc,
                           const char *const *argv, const size_t *argvlen, sld_remote_done_fn fn,
                           void *arg);

/* Forgets `key` under `p` in Redis: fn gets SL_OK once DEL has answered. */
int sld_remote_reset(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                     size_t key_len, sld_remote_done_fn fn, void *arg);

/* Stores policy `name` as `json` (NULL: its removal) in the rules of every
 * daemon (store/redis/rules_feed.h): HSET, INCR of the version, PUBLISH,
 * in order on one connection.
 * SL_OK: fn(arg, SL_OK) once Redis has all three, or fn(arg, SL_EIO);
 * SL_EIO: nothing could be sent (fn is not called). */
int sld_remote_share_rule(sld_remote_t *r, uint32_t worker, const char *name, const char *json,
                          size_t json_len, sld_remote_done_fn fn, void *arg);

/* Whether evaluations use the daemon's clock (store.clock: local). */
bool sld_remote_clock_local(const sld_remote_t *r);

/* A decision was made by on_store_failure `mode` instead of Redis. */
void sld_remote_count_fallback(sld_remote_t *r, sld_store_failure_t mode);

void sld_remote_stats(sld_remote_t *r, sld_remote_stats_t *out);

/* A short description for INFO and logs: "redis://127.0.0.1:6379 (strict)". */
const char *sld_remote_describe(const sld_remote_t *r);

/* Whether evaluations of `p` in Redis decide exactly as the memory store;
 * *why gets the reason when not. */
bool sld_remote_supports(const sl_policy_t *p, const char **why);

#endif
