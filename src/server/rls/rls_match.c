/* rls_match.c -- Envoy ratelimit's descriptor matching over a loaded
 * configuration: which limit applies to one descriptor, its counter key and
 * its stat name, and replaces across the descriptors of one request.
 * Pure: no allocation, no locks, so every worker thread matches at once.
 *
 * The reference (config_impl.go, GetLimit) looks up each entry in a map
 * keyed by "key_value" (config "key" alone when it has no value): first
 * key + "_" + value, then the level's wildcard patterns in file order over
 * that same string, then key alone. Its quirks are kept on purpose (a
 * key-only rule "a_b" answers the entry (a, b)), so that a configuration
 * decides here as it does there.
 *
 * Not here: loading (rls_load.c), policies (rls_policy.c).
 */
#include <stdlib.h>
#include <string.h>

#include "server/rls/rls_private.h"

/* An entry as the reference's lookup string, key + "_" + value, without
 * building it. */
typedef struct joined {
    const char *k, *v;
    size_t kl, vl;
} joined_t;

static size_t joined_len(const joined_t *j) {
    return j->kl + 1 + j->vl;
}

static unsigned char joined_at(const joined_t *j, size_t i) {
    if (i < j->kl)
        return (unsigned char)j->k[i];
    if (i == j->kl)
        return '_';
    return (unsigned char)j->v[i - j->kl - 1];
}

/* memcmp order of s[0..sl) against the joined string (or against the key
 * alone when key_only). */
static int cmp_joined(const char *s, size_t sl, const joined_t *j, bool key_only) {
    size_t jl = key_only ? j->kl : joined_len(j);
    size_t n = sl < jl ? sl : jl;
    for (size_t i = 0; i < n; i++) {
        int d = (int)(unsigned char)s[i] - (int)joined_at(j, i);
        if (d)
            return d;
    }
    return sl < jl ? -1 : sl > jl ? 1 : 0;
}

/* Whether the joined string starting at `from` holds lit[0..ll) at `at`. */
static bool joined_has(const joined_t *j, size_t at, const char *lit, size_t ll) {
    for (size_t i = 0; i < ll; i++)
        if (joined_at(j, at + i) != (unsigned char)lit[i])
            return false;
    return true;
}

/* The reference's wildcardMatch: each '*' of pattern matches any bytes
 * (none too); the literal parts appear in order, the first at the start and
 * the last at the end. */
static bool wildcard_match(const char *pat, size_t pl, const joined_t *j) {
    size_t len = joined_len(j);
    const char *star = memchr(pat, '*', pl);
    size_t first = (size_t)(star - pat);
    const char *last_star = star;
    for (const char *p = star; p; p = memchr(p + 1, '*', pl - (size_t)(p + 1 - pat)))
        last_star = p;
    size_t last_len = pl - (size_t)(last_star + 1 - pat);
    if (first + last_len > len || !joined_has(j, 0, pat, first) ||
        !joined_has(j, len - last_len, last_star + 1, last_len))
        return false;
    size_t at = first, end = len - last_len;
    const char *p = star + 1;
    while (p <= last_star) {
        const char *next = memchr(p, '*', (size_t)(last_star + 1 - p));
        size_t ll = (size_t)(next - p);
        bool found = false;
        for (; at + ll <= end; at++)
            if (joined_has(j, at, p, ll)) {
                found = true;
                break;
            }
        if (!found)
            return false;
        at += ll;
        p = next + 1;
    }
    return true;
}

static const rls_node_t *find(const rls_node_t *level, const joined_t *j, bool key_only) {
    size_t lo = 0, hi = level->n_children;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const rls_node_t *n = &level->children[level->sorted[mid]];
        int d = cmp_joined(n->full, n->full_len, j, key_only);
        if (d == 0)
            return n;
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int by_full(const void *a, const void *b) {
    const rls_node_t *x = *(const rls_node_t *const *)a, *y = *(const rls_node_t *const *)b;
    size_t n = x->full_len < y->full_len ? x->full_len : y->full_len;
    int d = memcmp(x->full, y->full, n);
    if (d == 0)
        d = x->full_len < y->full_len ? -1 : x->full_len > y->full_len;
    return d ? d : x < y ? -1 : x > y; /* equal keys in file order (load reports them) */
}

int sld__rls_index(rls_node_t *node) {
    size_t n = node->n_children;
    if (n == 0)
        return SL_OK;
    const rls_node_t **order = malloc(n * sizeof *order);
    node->sorted = malloc(n * sizeof *node->sorted);
    node->wild = malloc(n * sizeof *node->wild);
    if (!order || !node->sorted || !node->wild) {
        free(order);
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = &node->children[i];
        if (node->children[i].wildcard)
            node->wild[node->n_wild++] = i;
    }
    qsort(order, n, sizeof *order, by_full);
    for (size_t i = 0; i < n; i++)
        node->sorted[i] = (size_t)(order[i] - node->children);
    free(order);
    return SL_OK;
}

static const rls_domain_t *domain_of(const sld_rls_config_t *c, const char *d, size_t dl) {
    size_t lo = 0, hi = c ? c->n_domains : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const rls_domain_t *x = &c->domains[mid];
        size_t n = x->name_len < dl ? x->name_len : dl;
        int r = memcmp(x->name, d, n);
        if (r == 0)
            r = x->name_len < dl ? -1 : x->name_len > dl;
        if (r == 0)
            return x;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool sld_rls_has_domain(const sld_rls_config_t *c, const char *domain, size_t domain_len) {
    return domain_of(c, domain, domain_len) != NULL;
}

const sld_rls_limit_t *sld_rls_lookup(const sld_rls_config_t *c, const char *domain,
                                      size_t domain_len, const sld_rls_entry_t *entries,
                                      size_t n, sld_rls_match_t *m) {
    sld_rls_match_t scratch;
    if (m == NULL)
        m = &scratch;
    m->limit = NULL;
    m->n = 0;
    const rls_domain_t *d = domain_of(c, domain, domain_len);
    if (d == NULL || n == 0 || n > SLD_RLS_MAX_DEPTH)
        return NULL; /* deeper than any file can nest: nothing matches */
    const rls_node_t *level = &d->root;
    for (size_t i = 0; i < n; i++) {
        joined_t j = {entries[i].key, entries[i].value, entries[i].key_len, entries[i].value_len};
        unsigned char via = RLS_VIA_VALUE;
        const rls_node_t *next = find(level, &j, false);
        for (size_t w = 0; next == NULL && w < level->n_wild; w++) {
            const rls_node_t *cand = &level->children[level->wild[w]];
            if (wildcard_match(cand->full, cand->full_len, &j)) {
                next = cand;
                via = RLS_VIA_WILDCARD;
            }
        }
        if (next == NULL) {
            next = find(level, &j, true);
            via = RLS_VIA_KEY;
        }
        if (next == NULL)
            break;
        m->nodes[i] = next;
        m->via[i] = via;
        m->n = i + 1;
        if (next->limit && i == n - 1)
            m->limit = next->limit;
        if (next->n_children == 0)
            break;
        level = next;
    }
    return m->limit;
}

const sld_rls_limit_t *sld_rls_match(const sld_rls_config_t *c, const char *domain,
                                     size_t domain_len, const sld_rls_entry_t *entries, size_t n) {
    return sld_rls_lookup(c, domain, domain_len, entries, n, NULL);
}

/* Appends s[0..len) to buf at *at, escaped or not; false when it does not fit. */
static bool put(char *buf, size_t size, size_t *at, const char *s, size_t len, bool escape) {
    for (size_t i = 0; i < len; i++) {
        bool esc = escape && (s[i] == '\\' || s[i] == '|' || s[i] == '=');
        if (*at + 1 + esc > size)
            return false;
        if (esc)
            buf[(*at)++] = '\\';
        buf[(*at)++] = s[i];
    }
    return true;
}

static size_t make_key(char *buf, size_t size, const sld_rls_match_t *m, const char *domain,
                       size_t domain_len, const sld_rls_entry_t *entries, size_t n) {
    size_t at = 0;
    if (!put(buf, size, &at, domain, domain_len, true))
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = entries[i].value;
        size_t vl = entries[i].value_len;
        if (m && i < m->n && m->via[i] == RLS_VIA_WILDCARD) {
            const rls_node_t *node = m->nodes[i];
            if (node->share_threshold && node->value) {
                v = node->value;
                vl = node->value_len;
            }
        }
        if (!put(buf, size, &at, "|", 1, false) ||
            !put(buf, size, &at, entries[i].key, entries[i].key_len, true) ||
            !put(buf, size, &at, "=", 1, false) || !put(buf, size, &at, v, vl, true))
            return 0;
    }
    return at;
}

size_t sld_rls_key(char *buf, size_t size, const char *domain, size_t domain_len,
                   const sld_rls_entry_t *entries, size_t n) {
    return make_key(buf, size, NULL, domain, domain_len, entries, n);
}

size_t sld_rls_match_key(char *buf, size_t size, const sld_rls_match_t *m, const char *domain,
                         size_t domain_len, const sld_rls_entry_t *entries, size_t n) {
    return make_key(buf, size, m, domain, domain_len, entries, n);
}

size_t sld_rls_stat(char *buf, size_t size, const sld_rls_match_t *m, const char *domain,
                    size_t domain_len, const sld_rls_entry_t *entries, size_t n) {
    if (m == NULL || m->limit == NULL)
        return 0;
    size_t at = 0;
    if (m->limit->detailed_metric) {
        /* The request's key_value at every level (the reference writes the
         * '_' even for an empty value); when a wildcard shares its
         * threshold, its pattern instead, and no '_' for empty values. */
        bool shares = false;
        for (size_t i = 0; i < m->n; i++)
            shares |= m->via[i] == RLS_VIA_WILDCARD &&
                      ((const rls_node_t *)m->nodes[i])->share_threshold;
        if (!put(buf, size, &at, domain, domain_len, false))
            return 0;
        for (size_t i = 0; i < n && i < m->n; i++) {
            const rls_node_t *node = m->nodes[i];
            bool shared = m->via[i] == RLS_VIA_WILDCARD && node->share_threshold;
            const char *v = shared ? node->value : entries[i].value;
            size_t vl = shared ? node->value_len : entries[i].value_len;
            if (!put(buf, size, &at, ".", 1, false) ||
                !put(buf, size, &at, entries[i].key, entries[i].key_len, false) ||
                ((vl || !shares) &&
                 (!put(buf, size, &at, "_", 1, false) || !put(buf, size, &at, v, vl, false))))
                return 0;
        }
        return at;
    }
    bool any = false;
    for (size_t i = 0; i < m->n; i++) {
        const rls_node_t *node = m->nodes[i];
        any |= node->value_to_metric && m->via[i] != RLS_VIA_VALUE;
    }
    if (!any) {
        size_t len = strlen(m->limit->stat_name);
        return put(buf, size, &at, m->limit->stat_name, len, false) ? at : 0;
    }
    /* value_to_metric: the request's value where the rule was matched by key
     * alone or by a wildcard (unless the wildcard shares its threshold). */
    if (!put(buf, size, &at, domain, domain_len, false))
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const rls_node_t *node = m->nodes[i];
        const char *v = NULL;
        size_t vl = 0;
        if (m->via[i] == RLS_VIA_WILDCARD) {
            bool own = node->value_to_metric && !node->share_threshold;
            v = own ? entries[i].value : node->value;
            vl = own ? entries[i].value_len : node->value_len;
        } else if (m->via[i] == RLS_VIA_VALUE) {
            v = entries[i].value;
            vl = entries[i].value_len;
        } else if (node->value_to_metric) {
            v = entries[i].value;
            vl = entries[i].value_len;
        }
        if (!put(buf, size, &at, ".", 1, false) ||
            !put(buf, size, &at, entries[i].key, entries[i].key_len, false) ||
            (vl && (!put(buf, size, &at, "_", 1, false) || !put(buf, size, &at, v, vl, false))))
            return 0;
    }
    return at;
}

void sld_rls_apply_replaces(const sld_rls_limit_t **limits, size_t n) {
    /* Every drop is decided before any is made: a limit that is replaced
     * still replaces those it names, as in the reference. */
    unsigned char local[512], *drop = local;
    if (n > sizeof local * 8 && (drop = calloc((n + 7) / 8, 1)) == NULL)
        drop = NULL; /* out of memory: decide in place, in order */
    if (drop == local)
        memset(local, 0, sizeof local);
    for (size_t i = 0; i < n; i++) {
        const sld_rls_limit_t *l = limits[i];
        bool replaced = false;
        for (size_t k = 0; l && l->name && k < n && !replaced; k++) {
            const sld_rls_limit_t *o = limits[k];
            for (size_t r = 0; o && r < o->n_replaces && !replaced; r++)
                replaced = strcmp(o->replaces[r], l->name) == 0;
        }
        if (replaced && drop)
            drop[i / 8] |= (unsigned char)(1u << (i % 8));
        else if (replaced)
            limits[i] = NULL;
    }
    for (size_t i = 0; drop && i < n; i++)
        if (drop[i / 8] & (1u << (i % 8)))
            limits[i] = NULL;
    if (drop != local)
        free(drop);
}
