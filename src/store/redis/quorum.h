/* quorum.h -- Sentinel by quorum, pure: reading one sentinel's answer to
 * SENTINEL get-master-addr-by-name, and the master a strict majority of
 * the configured sentinels name.
 *
 * The rule (docs/distributed.md): every configured sentinel is asked; a
 * master is followed only when more than half of the *configured*
 * sentinels (not of those that answered) name the same address. Without
 * such a majority the client keeps the master it follows, if any, and
 * otherwise has none (the store is down). So a sentinel left alone on the
 * wrong side of a partition, or a stale one, cannot move the daemons.
 *
 * Not here: asking them (discovery.c).
 */
#ifndef SL_STORE_REDIS_QUORUM_H
#define SL_STORE_REDIS_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/redis/url.h"

struct redisReply;

typedef struct sl__redis_sentinel_answer {
    bool ok;                 /* it named a master */
    sl__redis_addr_t master; /* ... this one */
    char why[200];           /* why it did not, when !ok */
} sl__redis_sentinel_answer_t;

/* One round of questions, one per configured sentinel. */
typedef struct sl__redis_sentinel_round {
    uint64_t id;             /* rounds so far; a late answer of an old round is ignored */
    size_t pending;          /* answers still to come */
    bool running;
    sl__redis_sentinel_answer_t answers[SL__REDIS_URL_MAX_NODES];
    struct sl__redis_sentinel_ask {
        void *client;
        size_t index;
        uint64_t round;
    } ask[SL__REDIS_URL_MAX_NODES];  /* the callbacks' arguments */
} sl__redis_sentinel_round_t;

/* Reads a reply to SENTINEL get-master-addr-by-name into *out. Returns 0,
 * or -1 with *why (static, or the error reply's text) when it names none. */
int sl__redis_parse_master_addr(const struct redisReply *r, sl__redis_addr_t *out,
                                const char **why);

/* The index of an answer naming the master that more than configured/2 of
 * the n answers name, or -1; *votes gets the largest number of answers
 * naming one master. */
int sl__redis_sentinel_majority(const sl__redis_sentinel_answer_t *answers, size_t n,
                                size_t configured, size_t *votes);

/* "127.0.0.1:26379 says 127.0.0.1:6379, 127.0.0.1:26380: no reply" into buf. */
const char *sl__redis_sentinel_report(const sl__redis_sentinel_answer_t *answers,
                                      const sl__redis_addr_t *sentinels, size_t n, char *buf,
                                      size_t len);

#endif
