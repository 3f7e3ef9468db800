/* rules_feed.h -- the policies kept in Redis, as Redis holds them: the hash
 * {sluice}:rules (a policy's name -> its JSON, "" for a removal), the
 * counter {sluice}:rules:version, and the channel sluice:rules where each
 * change is published.
 *
 * A feed follows them on one loop with a client of its own: it reads the
 * version every poll interval and SUBSCRIBEs to the channel (a plain
 * subscriber connection to the URL's first node; none for Sentinel, where
 * the poll serves); when either says something changed, it reads the whole
 * hash and hands it over, name -> JSON pairs, by callback. Writing a rule
 * (HSET, INCR, PUBLISH) is sl__redis_rules_share(), from any client.
 *
 * Not here: what a rule means, validating and applying it (the daemon's
 * engine/rules.c).
 */
#ifndef SL_STORE_REDIS_RULES_FEED_H
#define SL_STORE_REDIS_RULES_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "store/redis/client.h"
#include "store/redis/command.h"
#include "store/redis/url.h"

#define SL__REDIS_RULES_KEY "{sluice}:rules"
#define SL__REDIS_RULES_VERSION_KEY "{sluice}:rules:version"
#define SL__REDIS_RULES_CHANNEL "sluice:rules"
#define SL__REDIS_RULES_MAX 4096 /* rules read at most; a bigger hash is an error */

typedef struct sl__redis_rules_feed sl__redis_rules_feed_t;

typedef struct sl__redis_rules_hooks {
    void *arg;
    /* The hash was read: rules[0..n) (name -> JSON, value_len 0 for a
     * removal), at `version` (the version last read; -1 when a published
     * change made the read). Valid during the call only. */
    void (*rules)(void *arg, const sl__redis_field_t *rules, size_t n, long long version);
    /* A read failed (no answer, or a reply that is not the hash). */
    void (*failed)(void *arg);
    /* A change of `name` was published (for the log; may be NULL). */
    void (*published)(void *arg, const char *name, size_t len);
} sl__redis_rules_hooks_t;

/* Starts following on `loop` (the first version read at once). url and
 * opts must outlive the feed. */
int sl__redis_rules_feed_new(uv_loop_t *loop, const sl__redis_url_t *url,
                             const sl__redis_client_options_t *opts, uint32_t poll_ms,
                             const sl__redis_rules_hooks_t *hooks, sl__redis_rules_feed_t **out);

/* Whether the rules have been read once (or Redis could not be asked). */
bool sl__redis_rules_feed_read_once(const sl__redis_rules_feed_t *f);

/* Makes the next poll read the hash whatever the version says. */
void sl__redis_rules_feed_reread(sl__redis_rules_feed_t *f);

/* Stops: no hook is called after it; its handles close as the loop runs
 * on (run it once more before sl__redis_rules_feed_free()). */
void sl__redis_rules_feed_stop(sl__redis_rules_feed_t *f);
void sl__redis_rules_feed_free(sl__redis_rules_feed_t *f);

/* Stores `name` as `json` (NULL: its removal) for every follower: HSET,
 * INCR of the version, PUBLISH, in order on one connection of c. Returns 0
 * (fn(arg, true) once Redis has all three, else fn(arg, false)), or
 * nonzero when nothing could be sent (fn is not called). */
int sl__redis_rules_share(sl__redis_client_t *c, const char *name, const char *json, size_t json_len,
                          void (*fn)(void *arg, bool ok), void *arg);

#endif
