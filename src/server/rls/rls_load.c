/* rls_load.c -- reads Envoy ratelimit's configuration: a directory of YAML
 * files, one domain each, into the tree rls_match.c walks. libyaml composes
 * each file (so every node keeps its line); the walk checks what the
 * reference checks (config_impl.go), in its words where it has them, as
 * "FILE:LINE: message", and a little more: keys in the wrong place, values
 * of the wrong type and sluice's extensions.
 *
 * Bounds: a file of at most 16 MiB, descriptors nested SLD_RLS_MAX_DEPTH
 * deep, 100,000 descriptors in all (aliases included, so "billion laughs"
 * stops there).
 *
 * Not here: matching (rls_match.c), compiling policies (rls_policy.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

#include "server/rls/rls_private.h"

#define MAX_FILE_BYTES (16u << 20)
#define MAX_DESCRIPTORS 100000
#define MAX_FILES 4096

typedef struct loader {
    const char *file;           /* name in messages */
    const char *kept;           /* the same, owned by the domain being loaded */
    yaml_document_t doc;
    sld_rls_config_t *cfg;
    char *err;
    size_t err_size;
    size_t descriptors;         /* loaded so far, every file */
    size_t cap_limits;
} loader_t;

static int fail_at(loader_t *L, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(loader_t *L, size_t line, const char *fmt, ...) {
    if (L->err && L->err_size) {
        int n = snprintf(L->err, L->err_size, "%s:%zu: ", L->file, line ? line : 1);
        if (n >= 0 && (size_t)n < L->err_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(L->err + n, L->err_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return SL_EINVAL;
}

static size_t line_of(const yaml_node_t *n) {
    return n ? n->start_mark.line + 1 : 1;
}

static int oom(loader_t *L, const yaml_node_t *n) {
    fail_at(L, line_of(n), "out of memory");
    return SL_ENOMEM;
}

/* A value quoted for a message: printable, at most 40 bytes. */
static const char *show(const char *s, size_t len, char out[64]) {
    size_t o = 0;
    for (size_t i = 0; i < len && o < 40; i++)
        out[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (len > 40)
        memcpy(out + o, "...", 3), o += 3;
    out[o] = '\0';
    return out;
}

static bool is_null(const yaml_node_t *n) {
    if (n == NULL)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || !strcmp(v, "~") || !strcmp(v, "null") ||
           !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *type_name(const yaml_node_t *n) {
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list"
                                                                                      : "a value";
}

/* A scalar as text (NULL for null); other shapes are an error. */
static int get_text(loader_t *L, const yaml_node_t *n, const char *what, const char **out,
                    size_t *len) {
    *out = NULL;
    *len = 0;
    if (is_null(n))
        return SL_OK;
    if (n->type != YAML_SCALAR_NODE)
        return fail_at(L, line_of(n), "%s: expected a value, got %s", what, type_name(n));
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
        return fail_at(L, line_of(n), "%s: a NUL character in a value", what);
    *out = (const char *)n->data.scalar.value;
    *len = n->data.scalar.length;
    return SL_OK;
}

/* YAML 1.1 booleans, as the reference's YAML library reads them. */
static int get_bool(loader_t *L, const yaml_node_t *n, const char *what, bool *out) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON",
                                      "y", "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off",
                                     "OFF", "n", "N"};
    *out = false;
    if (is_null(n))
        return SL_OK;
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        const char *v = (const char *)n->data.scalar.value;
        for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
            if (!strcmp(v, yes[i]))
                return *out = true, SL_OK;
        for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
            if (!strcmp(v, no[i]))
                return SL_OK;
    }
    char b[64];
    return fail_at(L, line_of(n), "%s: expected true or false, got %s", what,
                   n->type == YAML_SCALAR_NODE
                       ? show((const char *)n->data.scalar.value, n->data.scalar.length, b)
                       : type_name(n));
}

static int get_u32(loader_t *L, const yaml_node_t *n, const char *what, uint32_t *out) {
    *out = 0;
    if (is_null(n))
        return SL_OK;
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        const char *v = (const char *)n->data.scalar.value;
        size_t i = v[0] == '+';
        uint64_t x = 0;
        bool ok = v[i] != '\0';
        for (; ok && v[i]; i++) {
            ok = v[i] >= '0' && v[i] <= '9';
            x = x * 10 + (uint64_t)(v[i] - '0');
            ok = ok && x <= UINT32_MAX;
        }
        if (ok)
            return *out = (uint32_t)x, SL_OK;
    }
    char b[64];
    return fail_at(L, line_of(n), "%s: expected a whole number from 0 to 4294967295, got %s",
                   what,
                   n->type == YAML_SCALAR_NODE
                       ? show((const char *)n->data.scalar.value, n->data.scalar.length, b)
                       : type_name(n));
}

/* The mapping's keys, each checked against names[] (NULL-terminated); the
 * value nodes land in vals[] at the key's index. */
static int get_fields(loader_t *L, const yaml_node_t *map, const char *what,
                      const char *const *names, const yaml_node_t **vals) {
    size_t count = 0;
    while (names[count])
        vals[count++] = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(&L->doc, p->value);
        if (k == NULL || k->type != YAML_SCALAR_NODE)
            return fail_at(L, line_of(k), "config error, key is not of type string (in %s)", what);
        const char *key = (const char *)k->data.scalar.value;
        size_t i = 0;
        while (i < count && strcmp(names[i], key) != 0)
            i++;
        if (i == count) {
            char b[64], list[256] = "";
            size_t at = 0;
            for (size_t j = 0; j < count && at < sizeof list; j++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", j ? ", " : "",
                                       names[j]);
            return fail_at(L, line_of(k), "config error, unknown key '%s' in %s (expected one of %s)",
                           show(key, k->data.scalar.length, b), what, list);
        }
        if (vals[i])
            return fail_at(L, line_of(k), "key '%s' appears twice in %s", names[i], what);
        vals[i] = v ? v : k;
    }
    return SL_OK;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int add_limit(loader_t *L, sld_rls_limit_t *l, const yaml_node_t *at) {
    sld_rls_config_t *c = L->cfg;
    if (c->n_limits == L->cap_limits) {
        size_t cap = L->cap_limits ? L->cap_limits * 2 : 16;
        sld_rls_limit_t **grown = realloc(c->limits, cap * sizeof *grown);
        if (grown == NULL)
            return oom(L, at);
        c->limits = grown;
        L->cap_limits = cap;
    }
    c->limits[c->n_limits++] = l;
    return SL_OK;
}

static const char *const rate_limit_keys[] = {"unit", "requests_per_unit", "unlimited", "name",
                                              "replaces", "algorithm", "burst", "precision",
                                              "mode", "soft_percent", NULL};
enum { RL_UNIT, RL_RPU, RL_UNLIMITED, RL_NAME, RL_REPLACES, RL_ALGORITHM, RL_BURST, RL_PRECISION,
       RL_MODE, RL_SOFT_PERCENT };

static int load_replaces(loader_t *L, sld_rls_limit_t *l, const yaml_node_t *seq) {
    if (is_null(seq))
        return SL_OK;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fail_at(L, line_of(seq), "replaces: expected a list of {name: ...}, got %s",
                       type_name(seq));
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    char **names = calloc(n ? n : 1, sizeof *names);
    if (names == NULL)
        return oom(L, seq);
    l->replaces = (const char *const *)names;
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *e = yaml_document_get_node(&L->doc, seq->data.sequence.items.start[i]);
        static const char *const keys[] = {"name", NULL};
        const yaml_node_t *v[1];
        if (e == NULL || e->type != YAML_MAPPING_NODE)
            return fail_at(L, line_of(e), "replaces: expected a list of {name: ...}");
        int rc = get_fields(L, e, "replaces", keys, v);
        const char *s;
        size_t len;
        if (rc == SL_OK)
            rc = get_text(L, v[0], "replaces.name", &s, &len);
        if (rc != SL_OK)
            return rc;
        if (len == 0)
            return fail_at(L, line_of(e), "should not have an empty replaces entry");
        if (l->name && strcmp(l->name, s) == 0)
            return fail_at(L, line_of(e), "replaces should not contain name of same descriptor");
        if ((names[i] = dup_n(s, len)) == NULL)
            return oom(L, e);
        l->n_replaces = i + 1;
    }
    return SL_OK;
}

static int load_rate_limit(loader_t *L, sld_rls_limit_t *l, const yaml_node_t *map) {
    const yaml_node_t *v[sizeof rate_limit_keys / sizeof rate_limit_keys[0]];
    if (map->type != YAML_MAPPING_NODE)
        return fail_at(L, line_of(map), "rate_limit: expected a mapping, got %s", type_name(map));
    int rc = get_fields(L, map, "rate_limit", rate_limit_keys, v);
    const char *s;
    size_t len;
    if (rc == SL_OK)
        rc = get_bool(L, v[RL_UNLIMITED], "unlimited", &l->unlimited);
    if (rc == SL_OK)
        rc = get_u32(L, v[RL_RPU], "requests_per_unit", &l->requests_per_unit);
    if (rc == SL_OK && (rc = get_text(L, v[RL_NAME], "name", &s, &len)) == SL_OK && len &&
        (l->name = dup_n(s, len)) == NULL)
        rc = oom(L, map);
    if (rc == SL_OK)
        rc = get_text(L, v[RL_UNIT], "unit", &s, &len);
    if (rc != SL_OK)
        return rc;
    for (int u = SLD_RLS_SECOND; u <= SLD_RLS_WEEK && s; u++)
        if (strlen(sld_rls_unit_name(u)) == len && !strncasecmp(s, sld_rls_unit_name(u), len))
            l->unit = (sld_rls_unit_t)u;
    const yaml_node_t *unit_at = v[RL_UNIT] ? v[RL_UNIT] : map;
    char b[64];
    if (l->unlimited && l->unit)
        return fail_at(L, line_of(unit_at), "should not specify rate limit unit when unlimited");
    if (!l->unlimited && !l->unit)
        return fail_at(L, line_of(unit_at),
                       "invalid rate limit unit '%s' (expected second, minute, hour, day, week, "
                       "month or year)",
                       show(s ? s : "", len, b));
    if ((rc = load_replaces(L, l, v[RL_REPLACES])) != SL_OK)
        return rc;
    rls_ext_t ext = {0};
    const char **slot[] = {&ext.algorithm, &ext.burst, &ext.precision, &ext.mode,
                           &ext.soft_percent};
    for (int f = RL_ALGORITHM; f <= RL_SOFT_PERCENT; f++)
        if ((rc = get_text(L, v[f], rate_limit_keys[f], slot[f - RL_ALGORITHM], &len)) != SL_OK)
            return rc;
    const char *field;
    char why[200];
    rc = sld__rls_compile(l, &ext, &field, why, sizeof why);
    if (rc != SL_OK) {
        const yaml_node_t *at = map;
        for (int f = 0; field && rate_limit_keys[f]; f++)
            if (!strcmp(field, rate_limit_keys[f]) && v[f])
                at = v[f];
        return fail_at(L, line_of(at), "rate_limit: %s", why);
    }
    return SL_OK;
}

static const char *const descriptor_keys[] = {"key", "value", "rate_limit", "descriptors",
                                              "shadow_mode", "quota_mode", "detailed_metric",
                                              "value_to_metric", "share_threshold", "metadata",
                                              NULL};
enum { D_KEY, D_VALUE, D_RATE_LIMIT, D_DESCRIPTORS, D_SHADOW, D_QUOTA, D_DETAILED, D_V2M,
       D_SHARE, D_METADATA };

static int load_level(loader_t *L, rls_node_t *parent, const yaml_node_t *seq,
                      const char *path, int depth);

static int load_descriptor(loader_t *L, rls_node_t *node, const yaml_node_t *map,
                           const char *path, int depth) {
    const yaml_node_t *v[sizeof descriptor_keys / sizeof descriptor_keys[0]];
    int rc = get_fields(L, map, "a descriptor", descriptor_keys, v);
    const char *key, *value;
    size_t key_len, value_len;
    if (rc == SL_OK)
        rc = get_text(L, v[D_KEY], "key", &key, &key_len);
    if (rc == SL_OK)
        rc = get_text(L, v[D_VALUE], "value", &value, &value_len);
    if (rc != SL_OK)
        return rc;
    if (key_len == 0)
        return fail_at(L, line_of(v[D_KEY] ? v[D_KEY] : map), "descriptor has empty key");
    node->key = dup_n(key, key_len);
    node->key_len = key_len;
    if (value_len && (node->value = dup_n(value, value_len)) == NULL)
        return oom(L, map);
    node->value_len = value_len;
    node->full_len = key_len + (value_len ? 1 + value_len : 0);
    node->full = malloc(node->full_len + 1);
    char *stat = malloc(strlen(path) + 1 + node->full_len + 1);
    if (!node->key || !node->full || !stat) {
        free(stat);
        return oom(L, map);
    }
    snprintf(node->full, node->full_len + 1, "%s%s%s", key, value_len ? "_" : "",
             value_len ? node->value : "");
    sprintf(stat, "%s.%s", path, node->full);
    node->wildcard = memchr(node->full, '*', node->full_len) != NULL;

    bool shadow = false, quota = false, detailed = false;
    if ((rc = get_bool(L, v[D_SHADOW], "shadow_mode", &shadow)) != SL_OK ||
        (rc = get_bool(L, v[D_QUOTA], "quota_mode", &quota)) != SL_OK ||
        (rc = get_bool(L, v[D_DETAILED], "detailed_metric", &detailed)) != SL_OK ||
        (rc = get_bool(L, v[D_V2M], "value_to_metric", &node->value_to_metric)) != SL_OK ||
        (rc = get_bool(L, v[D_SHARE], "share_threshold", &node->share_threshold)) != SL_OK)
        goto out;
    if (node->share_threshold && !node->wildcard) {
        char b[64];
        rc = fail_at(L, line_of(v[D_SHARE]),
                     "share_threshold can only be used with wildcard values (containing '*'), "
                     "but found key '%s'",
                     show(node->full, node->full_len, b));
        goto out;
    }
    if (!is_null(v[D_RATE_LIMIT])) {
        sld_rls_limit_t *l = calloc(1, sizeof *l);
        if (l == NULL || add_limit(L, l, map) != SL_OK) {
            free(l);
            rc = oom(L, map);
            goto out;
        }
        l->shadow_mode = shadow;
        l->quota_mode = quota;
        l->detailed_metric = detailed;
        l->stat_name = stat;
        stat = NULL;
        l->file = L->kept;
        l->line = line_of(v[D_RATE_LIMIT]);
        node->limit = l;
        if ((rc = load_rate_limit(L, l, v[D_RATE_LIMIT])) != SL_OK)
            goto out;
    }
    rc = load_level(L, node, v[D_DESCRIPTORS], node->limit ? node->limit->stat_name : stat,
                    depth + 1);
out:
    free(stat);
    return rc;
}

static int load_level(loader_t *L, rls_node_t *parent, const yaml_node_t *seq,
                      const char *path, int depth) {
    if (is_null(seq))
        return SL_OK;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fail_at(L, line_of(seq), "descriptors: expected a list, got %s", type_name(seq));
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (n == 0)
        return SL_OK;
    if (depth > SLD_RLS_MAX_DEPTH)
        return fail_at(L, line_of(seq), "descriptors nested deeper than %d levels",
                       SLD_RLS_MAX_DEPTH);
    if (n > MAX_DESCRIPTORS - L->descriptors)
        return fail_at(L, line_of(seq), "more than %d descriptors in all", MAX_DESCRIPTORS);
    L->descriptors += n;
    parent->children = calloc(n, sizeof *parent->children);
    if (parent->children == NULL)
        return oom(L, seq);
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *e = yaml_document_get_node(&L->doc, seq->data.sequence.items.start[i]);
        if (e == NULL || e->type != YAML_MAPPING_NODE) {
            char b[64];
            return fail_at(L, line_of(e),
                           "config error, yaml file contains list of type other than map: %s",
                           e && e->type == YAML_SCALAR_NODE
                               ? show((const char *)e->data.scalar.value, e->data.scalar.length, b)
                               : "a list");
        }
        parent->n_children = i + 1;
        rls_node_t *node = &parent->children[i];
        int rc = load_descriptor(L, node, e, path, depth);
        if (rc != SL_OK)
            return rc;
    }
    if (sld__rls_index(parent) != SL_OK)
        return oom(L, seq);
    /* Equal keys sit side by side in the index, in file order: the first
     * repeated one in the file is the one to report. */
    size_t dup = n;
    for (size_t i = 1; i < n; i++) {
        const rls_node_t *a = &parent->children[parent->sorted[i - 1]];
        const rls_node_t *b = &parent->children[parent->sorted[i]];
        if (a->full_len == b->full_len && !memcmp(a->full, b->full, a->full_len) &&
            parent->sorted[i] < dup)
            dup = parent->sorted[i];
    }
    if (dup < n) {
        const yaml_node_t *e = yaml_document_get_node(&L->doc, seq->data.sequence.items.start[dup]);
        return fail_at(L, line_of(e), "duplicate descriptor composite key '%s.%s'", path,
                       parent->children[dup].full);
    }
    return SL_OK;

}

void sld__rls_limit_free(sld_rls_limit_t *l) {
    if (l == NULL)
        return;
    free((char *)l->name);
    free((char *)l->stat_name);
    for (size_t i = 0; i < l->n_replaces; i++)
        free((char *)l->replaces[i]);
    free((void *)l->replaces);
    sl_policy_free((sl_policy_t *)l->policy);
    free(l);
}

void sld__rls_node_free(rls_node_t *node) {
    for (size_t i = 0; i < node->n_children; i++)
        sld__rls_node_free(&node->children[i]);
    free(node->children);
    free(node->sorted);
    free(node->wild);
    free(node->key);
    free(node->value);
    free(node->full);
}

void sld_rls_free(sld_rls_config_t *c) {
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_domains; i++) {
        sld__rls_node_free(&c->domains[i].root);
        free(c->domains[i].name);
        free(c->domains[i].file);
    }
    free(c->domains);
    for (size_t i = 0; i < c->n_limits; i++)
        sld__rls_limit_free(c->limits[i]);
    free(c->limits);
    for (size_t i = 0; i < c->n_overrides; i++)
        sl_policy_free(c->overrides[i].policy);
    free(c->overrides);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* One file's document into a new domain of L->cfg. */
static int load_document(loader_t *L) {
    const yaml_node_t *root = yaml_document_get_root_node(&L->doc);
    if (root != NULL && !is_null(root) && root->type != YAML_MAPPING_NODE)
        return fail_at(L, line_of(root), "expected a mapping with domain and descriptors, got %s",
                       type_name(root));
    static const char *const keys[] = {"domain", "descriptors", NULL};
    const yaml_node_t *v[2] = {NULL, NULL};
    int rc = is_null(root) ? SL_OK : get_fields(L, root, "the file", keys, v);
    const char *name;
    size_t len;
    if (rc == SL_OK)
        rc = get_text(L, v[0], "domain", &name, &len);
    if (rc != SL_OK)
        return rc;
    if (len == 0)
        return fail_at(L, line_of(v[0] ? v[0] : root), "config file cannot have empty domain");
    sld_rls_config_t *c = L->cfg;
    for (size_t i = 0; i < c->n_domains; i++)
        if (c->domains[i].name_len == len && !memcmp(c->domains[i].name, name, len))
            return fail_at(L, line_of(v[0]), "duplicate domain '%s' in config file (also in %s)",
                           c->domains[i].name, c->domains[i].file);
    rls_domain_t *grown = realloc(c->domains, (c->n_domains + 1) * sizeof *grown);
    if (grown == NULL)
        return oom(L, root);
    c->domains = grown;
    rls_domain_t *d = &c->domains[c->n_domains++];
    memset(d, 0, sizeof *d);
    d->name = dup_n(name, len);
    d->name_len = len;
    d->file = dup_n(L->file, strlen(L->file));
    if (!d->name || !d->file)
        return oom(L, root);
    L->kept = d->file;
    return load_level(L, &d->root, v[1], d->name, 1);
}

static int load_bytes(loader_t *L, const char *yaml, size_t len) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return oom(L, NULL);
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    int rc = SL_OK;
    if (!yaml_parser_load(&parser, &L->doc)) {
        rc = fail_at(L, parser.problem_mark.line + 1, "YAML syntax error: %s%s%s",
                     parser.problem ? parser.problem : "malformed",
                     parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    rc = load_document(L);
    yaml_document_delete(&L->doc);
    if (rc == SL_OK) {
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            rc = fail_at(L, parser.problem_mark.line + 1, "YAML syntax error: %s",
                         parser.problem ? parser.problem : "malformed");
        } else {
            const yaml_node_t *r = yaml_document_get_root_node(&next);
            if (r != NULL)
                rc = fail_at(L, line_of(r), "a second YAML document (---): a file holds one "
                                            "domain");
            yaml_document_delete(&next);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

static sld_rls_config_t *config_new(void) {
    sld_rls_config_t *c = calloc(1, sizeof *c);
    if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

static int by_domain(const void *a, const void *b) {
    const rls_domain_t *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int d = memcmp(x->name, y->name, n);
    return d ? d : x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int finish(loader_t *L, int rc, sld_rls_config_t **out) {
    if (rc != SL_OK) {
        sld_rls_free(L->cfg);
        return rc;
    }
    if (L->cfg->n_domains > 1)
        qsort(L->cfg->domains, L->cfg->n_domains, sizeof *L->cfg->domains, by_domain);
    *out = L->cfg;
    return SL_OK;
}

int sld_rls_load_buffer(const char *name, const char *yaml, size_t len, sld_rls_config_t **out,
                        char *err, size_t err_size) {
    loader_t L = {.file = name, .err = err, .err_size = err_size, .cfg = config_new()};
    if (L.cfg == NULL)
        return oom(&L, NULL);
    return finish(&L, load_bytes(&L, yaml, len), out);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool yaml_name(const char *n) {
    size_t len = strlen(n);
    return n[0] != '.' && ((len > 5 && !strcmp(n + len - 5, ".yaml")) ||
                           (len > 4 && !strcmp(n + len - 4, ".yml")));
}

/* The file's bytes (NUL-terminated, malloc'd) or NULL with L->err set. */
static char *read_file(loader_t *L, const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0) {
        snprintf(L->err, L->err_size, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return NULL;
    }
    const char *why = NULL;
    char *buf = NULL;
    size_t n = 0;
    if (st.st_size > (off_t)MAX_FILE_BYTES)
        why = "larger than 16 MiB";
    else if ((buf = malloc((size_t)st.st_size + 2)) == NULL)
        why = "out of memory";
    else if ((n = fread(buf, 1, (size_t)st.st_size + 1, f)) > (size_t)st.st_size || ferror(f))
        why = ferror(f) ? "read error" : "changed while it was read";
    fclose(f);
    if (why) {
        snprintf(L->err, L->err_size, "%s: %s", path, why);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int sld_rls_load_dir(const char *dir, sld_rls_config_t **out, char *err, size_t err_size) {
    char scratch[1];
    if (err == NULL || err_size == 0)
        err = scratch, err_size = sizeof scratch;
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, err_size, "%s: %s", dir, strerror(errno));
        return SL_EIO;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = SL_OK;
    struct dirent *e;
    while (rc == SL_OK && (e = readdir(d)) != NULL) {
        if (!yaml_name(e->d_name))
            continue;
        char **grown = n < MAX_FILES ? realloc(names, (n + 1) * sizeof *names) : NULL;
        if (grown == NULL || (grown[n] = dup_n(e->d_name, strlen(e->d_name))) == NULL) {
            snprintf(err, err_size, "%s: %s", dir,
                     n < MAX_FILES ? "out of memory" : "more than 4096 YAML files");
            rc = n < MAX_FILES ? SL_ENOMEM : SL_EINVAL;
            if (grown)
                names = grown;
            break;
        }
        names = grown;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    loader_t L = {.err = err, .err_size = err_size, .cfg = rc == SL_OK ? config_new() : NULL};
    if (rc == SL_OK && L.cfg == NULL) {
        snprintf(err, err_size, "%s: out of memory", dir);
        rc = SL_ENOMEM;
    }
    for (size_t i = 0; rc == SL_OK && i < n; i++) {
        size_t plen = strlen(dir) + 1 + strlen(names[i]) + 1;
        char *path = malloc(plen);
        if (path == NULL) {
            snprintf(err, err_size, "%s: out of memory", dir);
            rc = SL_ENOMEM;
            break;
        }
        snprintf(path, plen, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            free(path); /* a directory named x.yaml: not a file of the set */
            continue;
        }
        size_t len = 0;
        char *yaml = read_file(&L, path, &len);
        L.file = path;
        rc = yaml ? load_bytes(&L, yaml, len) : SL_EIO;
        free(yaml);
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (L.cfg == NULL)
        return rc;
    return finish(&L, rc, out);
}

size_t sld_rls_domain_count(const sld_rls_config_t *c) {
    return c ? c->n_domains : 0;
}

size_t sld_rls_limit_count(const sld_rls_config_t *c) {
    return c ? c->n_limits : 0;
}

const sld_rls_limit_t *sld_rls_limit_at(const sld_rls_config_t *c, size_t i) {
    return c && i < c->n_limits ? c->limits[i] : NULL;
}
