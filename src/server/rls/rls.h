/* rls.h -- Envoy ratelimit's configuration (envoyproxy/ratelimit), loaded
 * from its directory of YAML files, and its descriptor matching: which
 * configured limit applies to one descriptor of a RateLimitRequest, under
 * which counter key, and what the reference service would name its stats.
 *
 * A loaded configuration is immutable and shared by threads without locks
 * (only the cache of request-supplied limits takes a mutex); a reload loads
 * a new one and swaps it whole. Every configured limit comes compiled into
 * a libsluice policy whose name depends only on the limit's place in the
 * configuration ("rls:domain.key_value.key2"), so a reload keeps the
 * counters of limits that did not change.
 *
 * Not here: the gRPC front that receives requests (server/grpc/), charging
 * (the engine), metrics.
 */
#ifndef SL_SERVER_RLS_H
#define SL_SERVER_RLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* Nesting of descriptors in a file, and so the most entries a request's
 * descriptor can have and still match. */
#define SLD_RLS_MAX_DEPTH 16

typedef struct sld_rls_config sld_rls_config_t;   /* every domain of a directory */

/* One entry of a request's descriptor (bytes, not NUL-terminated). */
typedef struct sld_rls_entry {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} sld_rls_entry_t;

/* The reference's units, numbered as Envoy's RateLimitResponse.RateLimit.Unit
 * (UNKNOWN = 0 is not a unit). MONTH is 30 days and YEAR 365, as there. */
typedef enum sld_rls_unit {
    SLD_RLS_SECOND = 1,
    SLD_RLS_MINUTE = 2,
    SLD_RLS_HOUR = 3,
    SLD_RLS_DAY = 4,
    SLD_RLS_MONTH = 5,
    SLD_RLS_YEAR = 6,
    SLD_RLS_WEEK = 7,
} sld_rls_unit_t;

/* "second", ... (lower case), or NULL for a value that is not a unit. */
const char *sld_rls_unit_name(sld_rls_unit_t unit);
/* The unit's length in microseconds, or 0 for a value that is not a unit. */
sl_usec_t sld_rls_unit_usec(sld_rls_unit_t unit);

typedef struct sld_rls_limit {
    const char *name;               /* rate_limit.name, or NULL */
    uint32_t requests_per_unit;
    sld_rls_unit_t unit;            /* 0 when unlimited without a unit */
    bool unlimited;                 /* OK without counting (policy NULL) */
    bool shadow_mode;               /* counts, always answers OK (the policy's
                                       mode is shadow unless mode: says else) */
    bool quota_mode;                /* the reference's quota_mode, as written */
    bool detailed_metric;           /* stats per request value (sld_rls_stat) */
    /* The compiled limit: fixed_window by default; sluice's extensions
     * (algorithm, burst, precision, mode, soft_percent) change it. NULL when
     * unlimited, and when requests_per_unit is 0: then every hit with a
     * cost is over the limit, as in the reference. */
    const sl_policy_t *policy;
    const char *stat_name;          /* "domain.key_value.key2", as the reference
                                       names the descriptor's stats */
    const char *const *replaces;    /* names of limits this one replaces */
    size_t n_replaces;
    const char *file;               /* where it is written, for messages */
    size_t line;
} sld_rls_limit_t;

/* Loads every *.yaml and *.yml file of dir (not hidden, not in
 * subdirectories), in name order, each one domain. On success *out owns
 * the configuration (free with sld_rls_free) and returns SL_OK; otherwise
 * a negative error, *out untouched, and err gets "FILE:LINE: message"
 * (FILE as dir/name). A configuration the reference service rejects is
 * rejected; so are a few it silently ignores (docs/integrations/envoy-rls.md). */
int sld_rls_load_dir(const char *dir, sld_rls_config_t **out, char *err, size_t err_size);
/* The same for one file's bytes (name for messages), into a configuration
 * of its own: for tests and the fuzzer. */
int sld_rls_load_buffer(const char *name, const char *yaml, size_t len, sld_rls_config_t **out,
                        char *err, size_t err_size);
void sld_rls_free(sld_rls_config_t *c);

/* Domains and limits loaded, for logs and metrics. */
size_t sld_rls_domain_count(const sld_rls_config_t *c);
size_t sld_rls_limit_count(const sld_rls_config_t *c);
/* The i-th limit (configuration order), for whoever lists or reports them. */
const sld_rls_limit_t *sld_rls_limit_at(const sld_rls_config_t *c, size_t i);
/* Whether domain is configured: the reference answers OK for every
 * descriptor of an unknown domain, request-supplied limits included. */
bool sld_rls_has_domain(const sld_rls_config_t *c, const char *domain, size_t domain_len);

/* How one descriptor matched (filled by sld_rls_lookup): what its counter
 * key and stat name need beyond the limit. */
typedef struct sld_rls_match {
    const sld_rls_limit_t *limit;
    size_t n;                                   /* entries walked */
    const void *nodes[SLD_RLS_MAX_DEPTH];       /* the descriptor each entry matched */
    unsigned char via[SLD_RLS_MAX_DEPTH];       /* how: internal */
} sld_rls_match_t;

/* The limit of one descriptor in domain, or NULL (no rule: OK, not
 * limited). The reference's rules: the entries walk the nested descriptors
 * level by level; at each level key_value is tried, then the wildcard
 * values of that level in file order ("foo*", "a*b*c": each '*' any
 * bytes), then the key alone; only a descriptor at exactly the request's
 * depth that has a rate_limit applies. Never allocates. */
const sld_rls_limit_t *sld_rls_match(const sld_rls_config_t *c, const char *domain,
                                     size_t domain_len, const sld_rls_entry_t *entries, size_t n);
/* sld_rls_match() that also fills *m (may be NULL) for sld_rls_match_key
 * and sld_rls_stat. */
const sld_rls_limit_t *sld_rls_lookup(const sld_rls_config_t *c, const char *domain,
                                      size_t domain_len, const sld_rls_entry_t *entries,
                                      size_t n, sld_rls_match_t *m);

/* The counter key of a descriptor: "domain|k=v|k2=v2" with the request's own
 * values (a wildcard or key-only rule counts per value, as the reference
 * does), '\\', '|' and '=' escaped with '\\' so that different descriptors
 * never share a key. Returns its length, or 0 when it does not fit in size
 * (nothing is NUL-terminated). */
size_t sld_rls_key(char *buf, size_t size, const char *domain, size_t domain_len,
                   const sld_rls_entry_t *entries, size_t n);
/* sld_rls_key() for a matched descriptor: an entry matched by a wildcard
 * with share_threshold counts under the pattern instead ("k=foo*"), so every
 * value it matches shares one counter. */
size_t sld_rls_match_key(char *buf, size_t size, const sld_rls_match_t *m, const char *domain,
                         size_t domain_len, const sld_rls_entry_t *entries, size_t n);
/* The stat name of a matched descriptor as the reference names it: the
 * limit's stat_name, or with detailed_metric "domain.k_v.k2_v2" from the
 * request, with value_to_metric the request's values where the rule has
 * none. Length written (not NUL-terminated), 0 when it does not fit. */
size_t sld_rls_stat(char *buf, size_t size, const sld_rls_match_t *m, const char *domain,
                    size_t domain_len, const sld_rls_entry_t *entries, size_t n);

/* replaces: sets to NULL, among limits[0..n) (those one request matched,
 * NULL entries allowed), every limit whose name another matched limit
 * replaces, as the reference does. */
void sld_rls_apply_replaces(const sld_rls_limit_t **limits, size_t n);

/* The policy of a request-supplied per-descriptor limit (RateLimitDescriptor
 * .limit): fixed_window, requests_per_unit per unit, hard, named
 * "rls:override:RPU/UNIT". Compiled once per distinct pair and kept while c
 * lives (thread-safe; at most SLD_RLS_MAX_OVERRIDES pairs). NULL when rpu is
 * 0 (every hit over the limit, as for a configured 0), when unit is not a
 * unit, or when the cache is full (the caller answers an error). */
#define SLD_RLS_MAX_OVERRIDES 1024
const sl_policy_t *sld_rls_override_policy(sld_rls_config_t *c, uint32_t rpu,
                                           sld_rls_unit_t unit);

#endif
