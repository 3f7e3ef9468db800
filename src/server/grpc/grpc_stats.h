/* grpc_stats.h -- Envoy ratelimit's per-rule stats (total_hits,
 * within_limit, near_limit, over_limit, shadow_mode) for the decisions of
 * the rls: rules, kept by the gRPC front and written into /metrics as
 *
 *   sluice_rls_hits_total{domain="d",rule="<stat name>",stat="total_hits"} N
 *
 * Each worker counts into a table of its own (one writer, no lock; the
 * counters are atomics that the scrape reads live), keyed by domain and
 * stat name, so a rule's counters outlive a SIGHUP reload as long as its
 * stat name does. Bounded: at most SLD_GRPC_STATS_MAX series per worker,
 * of which at most SLD_GRPC_STATS_MAX_DETAILED come from request values
 * (detailed_metric, value_to_metric); past those, a detailed series counts
 * under its rule's own stat name and anything else under
 * rule="_overflow".
 *
 * Not here: what decides (grpc_decide.c), the rules (server/rls/).
 */
#ifndef SL_SERVER_GRPC_STATS_H
#define SL_SERVER_GRPC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"

#define SLD_GRPC_STATS_MAX 8192
#define SLD_GRPC_STATS_MAX_DETAILED 1024
/* the reference's NEAR_LIMIT_RATIO default */
#define SLD_GRPC_NEAR_LIMIT_PERCENT 80

/* The reference's five stats, in its order of names. */
enum { SLD_STAT_TOTAL, SLD_STAT_WITHIN, SLD_STAT_NEAR, SLD_STAT_OVER, SLD_STAT_SHADOW, SLD_STAT_N };

typedef struct sld_grpc_hits {
    uint64_t n[SLD_STAT_N];
} sld_grpc_hits_t;

/* What one answered descriptor adds, as the reference counts it: hits to
 * total_hits; to within_limit when allowed and not over (limited false);
 * to over_limit when over (denied, or let through by shadow mode or a soft
 * tolerance); to shadow_mode as well when shadow mode let it through. Of
 * the hits within the limit, those past 80 % of `limit` (used_before ..
 * used_before + hits, the units in use before and after it) are near_limit
 * too. A denial charges nothing in sluice, so all its hits are over_limit
 * (the reference, which charges them, splits them with near_limit). */
sld_grpc_hits_t sld_grpc_hits_classify(uint64_t limit, uint64_t used_before, uint64_t hits, bool allowed,
                                       bool limited, bool shadow);

typedef struct sld_grpc_stats sld_grpc_stats_t;

/* Tables for `workers` workers; NULL when out of memory (nothing counted). */
sld_grpc_stats_t *sld_grpc_stats_new(uint32_t workers);
void sld_grpc_stats_free(sld_grpc_stats_t *s);

/* On worker `worker`'s thread only: adds h to (domain, rule). detailed:
 * rule comes from request values; fallback (the rule's own stat name) takes
 * it past the bound. Names are bytes (not NUL-terminated). */
void sld_grpc_stats_count(sld_grpc_stats_t *s, uint32_t worker, const char *domain, size_t domain_len,
                          const char *rule, size_t rule_len, const char *fallback, size_t fallback_len,
                          bool detailed, const sld_grpc_hits_t *h);

/* The family, HELP and TYPE included, the workers' tables summed, series in
 * name order; nothing when no series was counted. Any thread. (An
 * sld_metrics_extra_t writer: ctx is the sld_grpc_stats_t.) */
void sld_grpc_stats_write(void *ctx, sld_buf_t *out);

#endif
