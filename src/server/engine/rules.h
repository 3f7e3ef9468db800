/* rules.h -- policies kept in the shared store, the same for every daemon.
 *
 * With the Redis store, policies (and their tiers, the per-key overrides)
 * may also live in Redis: the hash {sluice}:rules maps a policy name to its
 * JSON (as the admin API takes it; "" removes a policy of the file), and
 * {sluice}:rules:version counts the changes. Every daemon applies the file's
 * policies overlaid with Redis's, and re-applies when a change is published
 * on the channel sluice:rules (SUBSCRIBE) or, as a safety net, when the
 * version moves (read every RULES_POLL_MS). The admin API writes there.
 *
 * Not here: the policies' format (config.c), applying a configuration
 * (runtime.c).
 */
#ifndef SL_SERVER_RULES_H
#define SL_SERVER_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "server/state/daemon.h"
#include "server/engine/remote.h" /* SLD_RULES_KEY ... */


typedef struct sld_rules sld_rules_t;

/* Starts following the rules in d's Redis store, on `loop` (the main one). */
int sld_rules_start(sld_daemon_t *d, uv_loop_t *loop, sld_rules_t **out);
/* Whether the rules have been read from Redis once (or Redis could not be
 * asked): the daemon waits for it, briefly, before it serves. */
bool sld_rules_read_once(const sld_rules_t *r);

/* Stops and closes its handles (the loop must run once more). */
void sld_rules_stop(sld_rules_t *r);
void sld_rules_free(sld_rules_t *r);

/* The configuration to apply for a freshly loaded file: the file's
 * policies overlaid with the rules last read from Redis. Takes cfg, returns
 * the merged one (cfg itself when there is nothing to overlay, or NULL when
 * out of memory, cfg freed). Remembers the file's for later changes. */
sld_config_t *sld_rules_overlay(sld_rules_t *r, sld_config_t *cfg);

typedef struct sld_rules_stats {
    uint64_t version;    /* the last version applied */
    uint64_t applied;    /* times the rules changed the configuration */
    uint64_t invalid;    /* rules refused (bad JSON, bad policy) */
    uint64_t errors;     /* reads that failed */
} sld_rules_stats_t;

void sld_rules_stats(sld_rules_t *r, sld_rules_stats_t *out);

#endif
