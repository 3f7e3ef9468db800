/* policies.h -- the configured policies, compiled and ready to decide.
 *
 * Built from a validated configuration; immutable afterwards, so worker
 * threads share it without locks. A reload builds a new table and swaps it
 * in whole (daemon/runtime.c). A policy's tiers are policies of their own, named
 * "<policy>/<tier>": a key listed in a tier is decided by the tier's limits
 * and keeps its own counters there.
 */
#ifndef SL_SERVER_POLICIES_H
#define SL_SERVER_POLICIES_H

#include <stddef.h>

#include "server/config/config.h"
#include "server/observe/metrics.h"
#include "sluice.h"

typedef struct sld_policies sld_policies_t;

/* Compiles every policy and tier of `cfg` (which must outlive the table),
 * giving each policy its metrics slot (metrics may be NULL: slot 0). On
 * error writes a message into err. */
int sld_policies_build(const sld_config_t *cfg, sld_metrics_t *metrics, sld_policies_t **out,
                       char *err, size_t err_len);
void sld_policies_free(sld_policies_t *t);

/* The policy deciding `key` under the policy called name[0..name_len), or
 * NULL if there is none. *tier (may be NULL) gets the tier's name or NULL;
 * *index (may be NULL) the policy's index in the configuration. */
const sl_policy_t *sld_policies_find(const sld_policies_t *t, const char *name, size_t name_len,
                                     const void *key, size_t key_len, const char **tier,
                                     size_t *index);

/* The metrics slot of the i-th policy. */
uint32_t sld_policies_slot(const sld_policies_t *t, size_t i);

/* What decides for p (the i-th policy or one of its tiers) while the shared
 * store cannot: *mode gets its on_store_failure (the store's when it has
 * none); the result is the policy to decide with locally (its limits
 * divided by store.nodes). For a policy not in the table (CL.THROTTLE's),
 * pass i = SIZE_MAX: the store's setting and p itself. */
const sl_policy_t *sld_policies_fallback(const sld_policies_t *t, size_t i, const sl_policy_t *p,
                                         sld_store_failure_t *mode);

/* Calls fn on every compiled policy and tier until it returns non-zero,
 * which is returned. */
int sld_policies_each(const sld_policies_t *t, int (*fn)(void *ctx, const sl_policy_t *p),
                      void *ctx);

size_t sld_policies_count(const sld_policies_t *t);
/* The i-th policy as configured, and its compiled form. */
const sld_policy_t *sld_policies_config(const sld_policies_t *t, size_t i);
const sl_policy_t *sld_policies_compiled(const sld_policies_t *t, size_t i);

#endif
