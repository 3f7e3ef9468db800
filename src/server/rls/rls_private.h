/* rls_private.h -- what the files of server/rls/ share: the loaded tree of
 * descriptors and the configuration that owns it.
 *
 * Not for use outside server/rls/ (rls.h is the interface).
 */
#ifndef SL_SERVER_RLS_PRIVATE_H
#define SL_SERVER_RLS_PRIVATE_H

#include <pthread.h>

#include "server/rls/rls.h"

/* How an entry matched its descriptor (sld_rls_match_t.via). */
enum { RLS_VIA_VALUE = 1, RLS_VIA_WILDCARD = 2, RLS_VIA_KEY = 3 };

/* One descriptor of a file, and the level of descriptors nested in it (a
 * domain is a node with only children). */
typedef struct rls_node {
    char *key;                  /* NUL-terminated copies */
    size_t key_len;
    char *value;                /* NULL when the file has none */
    size_t value_len;
    char *full;                 /* the reference's map key: "key" or "key_value" */
    size_t full_len;
    bool wildcard;              /* full has a '*' */
    bool share_threshold;
    bool value_to_metric;
    sld_rls_limit_t *limit;     /* NULL: no rate_limit */
    struct rls_node *children;  /* in file order */
    size_t n_children;
    size_t *sorted;             /* children indexes sorted by full, for lookups */
    size_t *wild;               /* children indexes with a wildcard, file order */
    size_t n_wild;
} rls_node_t;

typedef struct rls_domain {
    char *name;
    size_t name_len;
    char *file;                 /* where it came from, for messages */
    rls_node_t root;
} rls_domain_t;

typedef struct rls_override {
    uint32_t rpu;
    sld_rls_unit_t unit;
    sl_policy_t *policy;
} rls_override_t;

struct sld_rls_config {
    rls_domain_t *domains;      /* sorted by name once loaded */
    size_t n_domains;
    sld_rls_limit_t **limits;   /* every limit, file order; owned */
    size_t n_limits;
    pthread_mutex_t lock;       /* guards overrides */
    rls_override_t *overrides;
    size_t n_overrides;
};

/* rls_policy.c: compiles the policy of a limit from its rate_limit and
 * sluice's extensions; message into why on error. */
typedef struct rls_ext {
    const char *algorithm;      /* NULL: fixed_window */
    const char *burst;          /* the scalars as written, or NULL */
    const char *precision;
    const char *mode;
    const char *soft_percent;
} rls_ext_t;
int sld__rls_policy_name(char *buf, size_t size, const char *stat_name);
int sld__rls_compile(sld_rls_limit_t *l, const rls_ext_t *ext, const char **field, char *why,
                     size_t why_size);

/* rls_match.c: the sorted index of a level, once its children are loaded. */
int sld__rls_index(rls_node_t *node);
void sld__rls_node_free(rls_node_t *node);
void sld__rls_limit_free(sld_rls_limit_t *l);

#endif
