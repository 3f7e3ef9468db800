/* policy_config.c -- a policy in the configuration: its name, key
 * attributes, mode, limits, pool and tiers, each checked with the file's
 * messages. Every limit is compiled once by the library (sl_policy_new), one
 * limit more at a time, so that the library's own rules are enforced and a
 * failure points at the limit that caused it; the compiled policy is freed.
 * A key belongs to one tier of a policy, once.
 *
 * Not here: compiling policies for use (engine/policies.c), reading a policy
 * from JSON (policy_json.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/config/config.h"
#include "server/config/config_private.h"

static const char *const algorithm_list =
    "gcra, token_bucket, leaky_bucket, fixed_window, sliding_log, sliding_window";

/* The field a reason from sl_limit_validate() is about. */
static const char *reason_field(const char *why, const raw_limit_t *r) {
    if (strncmp(why, "burst", 5) == 0)
        return "burst";
    if (strncmp(why, "period", 6) == 0)
        return "period";
    if (strncmp(why, "precision", 9) == 0)
        return "precision";
    if (strncmp(why, "shaper", 6) == 0)
        return "shaper";
    if (strncmp(why, "capacity", 8) == 0)
        return r->burst ? "burst" : "limit";
    return "limit";
}

static int get_limit(ctx_t *c, const char *path, const raw_limit_t *r, sl_limit_t *out) {
    char p[PATH_BUF], b[SHOW_MAX + 8];
    sl_limit_t l;
    memset(&l, 0, sizeof l);
    if (sl_algorithm_parse(r->algorithm, &l.algorithm) != SL_OK)
        return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, "algorithm"),
                            "expected one of %s, got \"%s\"", algorithm_list,
                            sld__cfg_show(r->algorithm, b));
    int rc;
    if ((rc = sld__cfg_get_uint(c, sld__cfg_join(p, sizeof p, path, "limit"), r->limit, 1,
                                UINT64_MAX, &l.limit)))
        return rc;
    if ((rc = sld__cfg_get_duration(c, sld__cfg_join(p, sizeof p, path, "period"), r->period,
                                    INT64_MAX, &l.period)))
        return rc;
    if (l.period == 0)
        return sld__cfg_bad(c, p, "period must be longer than 0");
    bool rate = l.algorithm == SL_GCRA || l.algorithm == SL_TOKEN_BUCKET ||
                l.algorithm == SL_LEAKY_BUCKET;
    if (r->burst) {
        sld__cfg_join(p, sizeof p, path, "burst");
        if (!rate)
            return sld__cfg_bad(c, p, "burst applies to gcra, token_bucket and leaky_bucket only");
        if ((rc = sld__cfg_get_uint(c, p, r->burst, 0, UINT64_MAX - 1, &l.burst)))
            return rc;
    }
    if (r->precision) {
        sld__cfg_join(p, sizeof p, path, "precision");
        if (l.algorithm != SL_SLIDING_WINDOW)
            return sld__cfg_bad(c, p, "precision applies to sliding_window only");
        if ((rc = sld__cfg_get_u32(c, p, r->precision, 1, 65536, &l.precision)))
            return rc;
    }
    if (r->shaper) {
        sld__cfg_join(p, sizeof p, path, "shaper");
        if (l.algorithm != SL_LEAKY_BUCKET)
            return sld__cfg_bad(c, p, "shaper applies to leaky_bucket only");
        if ((rc = sld__cfg_get_bool(c, p, r->shaper, &l.shaper)))
            return rc;
    }
    if (r->count_denied &&
        (rc = sld__cfg_get_bool(c, sld__cfg_join(p, sizeof p, path, "count_denied"),
                                r->count_denied, &l.count_denied)))
        return rc;
    const char *why = NULL;
    if (sl_limit_validate(&l, &why) != SL_OK)
        return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, reason_field(why ? why : "", r)),
                            "%s", why ? why : "invalid limit");
    *out = l;
    return SL_OK;
}

/* The library's reason without "policy NAME: " and "limit N: ", which the
 * path in our message says already. */
static const char *bare_reason(const char *why, const char *name) {
    size_t n = strlen(name);
    if (strncmp(why, "policy ", 7) == 0 && strncmp(why + 7, name, n) == 0 &&
        strncmp(why + 7 + n, ": ", 2) == 0)
        why += 7 + n + 2;
    if (strncmp(why, "limit ", 6) == 0 && isdigit((unsigned char)why[6])) {
        const char *after = why + 6;
        while (isdigit((unsigned char)*after))
            after++;
        if (strncmp(after, ": ", 2) == 0)
            why = after + 2;
    }
    return why;
}

/* Compiles limits[0..n) as the library will, growing one limit at a time so
 * that a failure points at the limit that caused it. */
static int compile_check(ctx_t *c, const char *path, bool indexed, const sld_policy_t *pol,
                         const sl_limit_t *limits, size_t n) {
    char p[PATH_BUF], why[SLD_MAX_ERROR];
    for (size_t i = 1; i <= n; i++) {
        sl_policy_config_t pc = {.name = pol->name, .limits = limits, .nlimits = i,
                                 .mode = pol->mode, .soft_percent = pol->soft_percent,
                                 .pool = pol->pool};
        sl_policy_t *compiled = NULL;
        why[0] = '\0';
        int rc = sl_policy_new(&pc, &compiled, why, sizeof why);
        if (rc == SL_ENOMEM)
            return sld__cfg_oom(c);
        if (rc != SL_OK) {
            const char *reason = bare_reason(why, pol->name);
            /* valid alone, too large once the soft tolerance is added */
            bool soft = pol->mode == SL_MODE_SOFT && sl_limit_validate(&limits[i - 1], NULL) == 0;
            return sld__cfg_bad(c, indexed ? sld__cfg_entry(p, sizeof p, path, i - 1) : path,
                                "%s%s", reason[0] ? reason : sl_strerror(rc),
                                soft ? " once soft_percent is added" : "");
        }
        sl_policy_free(compiled);
    }
    return SL_OK;
}

static int get_limits(ctx_t *c, const char *path, const raw_limit_t *raw, unsigned n,
                      sl_limit_t *out, size_t *nout) {
    char p[PATH_BUF];
    if (n == 0)
        return sld__cfg_bad(c, path, "needs at least one limit, like {algorithm: gcra, limit: 10, "
                            "period: 1s}");
    for (unsigned i = 0; i < n; i++) {
        int rc = get_limit(c, sld__cfg_entry(p, sizeof p, path, i), &raw[i], &out[i]);
        if (rc)
            return rc;
    }
    *nout = n;
    return SL_OK;
}

static int get_key_attrs(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol) {
    static const char *const plain[] = {"key", "user", "ip", "endpoint", "method", "route"};
    char p[PATH_BUF], b[SHOW_MAX + 8];
    if (r->key_count == 0) { /* absent, or written empty */
        pol->key_attrs[0] = sld__cfg_dup(c, "key");
        pol->nkey_attrs = 1;
        return pol->key_attrs[0] ? SL_OK : SL_ENOMEM;
    }
    for (unsigned i = 0; i < r->key_count; i++) {
        const char *a = r->key[i];
        bool ok = strncmp(a, "header:", 7) == 0 && sld__cfg_is_token(a + 7);
        for (size_t k = 0; !ok && k < sizeof plain / sizeof plain[0]; k++)
            ok = strcmp(a, plain[k]) == 0;
        sld__cfg_entry(p, sizeof p, path, i);
        if (!ok)
            return sld__cfg_bad(c, p,
                                "expected one of key, user, ip, endpoint, method, header:<Name>, route, "
                                "got \"%s\"",
                                sld__cfg_show(a, b));
        if (strcmp(a, "key") == 0 && r->key_count > 1)
            return sld__cfg_bad(c, p,
                                "\"key\" (the key the client gives) cannot be combined with other "
                                "attributes");
        for (unsigned k = 0; k < i; k++)
            if (strcasecmp(a, r->key[k]) == 0)
                return sld__cfg_bad(c, p, "\"%s\" is already in the key", sld__cfg_show(a, b));
        if ((pol->key_attrs[i] = sld__cfg_dup(c, a)) == NULL)
            return SL_ENOMEM;
        pol->nkey_attrs = i + 1;
    }
    return SL_OK;
}

typedef struct tier_key {
    const char *key;
    unsigned tier, index;
} tier_key_t;

static int cmp_tier_key(const void *a, const void *b) {
    const tier_key_t *x = a, *y = b;
    int d = strcmp(x->key, y->key);
    if (d)
        return d;
    return x->tier != y->tier ? (x->tier < y->tier ? -1 : 1)
                              : (x->index < y->index ? -1 : x->index > y->index);
}

/* A key may be in one tier of a policy only, and once. */
static int check_tier_keys(ctx_t *c, const char *path, const raw_policy_t *r) {
    size_t total = 0;
    for (unsigned t = 0; t < r->tiers_count; t++)
        total += r->tiers[t].keys_count;
    if (total < 2)
        return SL_OK;
    tier_key_t *all = malloc(total * sizeof *all);
    if (all == NULL)
        return sld__cfg_oom(c);
    size_t n = 0;
    for (unsigned t = 0; t < r->tiers_count; t++)
        for (unsigned i = 0; i < r->tiers[t].keys_count; i++)
            all[n++] = (tier_key_t){r->tiers[t].keys[i], t, i};
    qsort(all, n, sizeof *all, cmp_tier_key);
    /* the duplicate that comes first in the file */
    const tier_key_t *dup = NULL, *first = NULL;
    for (size_t i = 1; i < n; i++) {
        /* sorted by key, then by place: all[i] is a key's second listing */
        bool second = strcmp(all[i].key, all[i - 1].key) == 0 &&
                      (i == 1 || strcmp(all[i].key, all[i - 2].key) != 0);
        if (second && (dup == NULL || all[i].tier < dup->tier ||
                       (all[i].tier == dup->tier && all[i].index < dup->index))) {
            dup = &all[i];
            first = &all[i - 1];
        }
    }
    int rc = SL_OK;
    if (dup) {
        char p[PATH_BUF], q[PATH_BUF], keys[PATH_BUF], b[SHOW_MAX + 8];
        sld__cfg_entry(q, sizeof q, sld__cfg_join(p, sizeof p, path, "tiers"), dup->tier);
        sld__cfg_entry(p, sizeof p, sld__cfg_join(keys, sizeof keys, q, "keys"), dup->index);
        if (first->tier == dup->tier)
            rc = sld__cfg_bad(c, p, "key \"%s\" is listed twice in tier %s",
                              sld__cfg_show(dup->key, b), r->tiers[dup->tier].name);
        else
            rc = sld__cfg_bad(c, p,
                              "key \"%s\" is already in tier %s: a key belongs to one tier only",
                              sld__cfg_show(dup->key, b), r->tiers[first->tier].name);
    }
    free(all);
    return rc;
}

/* max_wait: only for limits that can hold a place (the policy's and its
 * tiers'), so that forward-auth never answers every request with an error. */
static int get_max_wait(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol) {
    char p[256];
    int rc;
    if (r->max_wait == NULL)
        return 0;
    const char *at = sld__cfg_join(p, sizeof p, path, "max_wait");
    if ((rc = sld__cfg_get_duration(c, at, r->max_wait, SL_MAX_WAIT, &pol->max_wait)))
        return rc;
    for (size_t t = 0; t <= pol->ntiers && pol->max_wait > 0; t++) {
        const sl_limit_t *l = t == 0 ? pol->limits : pol->tiers[t - 1].limits;
        size_t n = t == 0 ? pol->nlimits : pol->tiers[t - 1].nlimits;
        for (size_t i = 0; i < n; i++)
            if (l[i].algorithm == SL_SLIDING_WINDOW || l[i].algorithm == SL_SLIDING_LOG)
                return sld__cfg_bad(c, at,
                                    "max_wait needs limits that can hold a place: %s cannot wait "
                                    "(use gcra, token_bucket, leaky_bucket or fixed_window)",
                                    sl_algorithm_name(l[i].algorithm));
    }
    return 0;
}

static int get_tiers(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol,
                     uint32_t max_key_bytes) {
    char p[PATH_BUF], q[PATH_BUF], b[SHOW_MAX + 8];
    int rc;
    if (r->tiers_count == 0)
        return SL_OK;
    if ((pol->tiers = calloc(r->tiers_count, sizeof *pol->tiers)) == NULL)
        return sld__cfg_oom(c);
    for (unsigned t = 0; t < r->tiers_count; t++) {
        const raw_tier_t *rt = &r->tiers[t];
        sld_tier_t *tier = &pol->tiers[t];
        pol->ntiers = t + 1;
        sld__cfg_entry(p, sizeof p, sld__cfg_join(q, sizeof q, path, "tiers"), t);
        if ((rc = sld__cfg_get_name(c, sld__cfg_join(q, sizeof q, p, "name"), rt->name,
                                    &tier->name)))
            return rc;
        for (unsigned k = 0; k < t; k++)
            if (strcmp(pol->tiers[k].name, tier->name) == 0)
                return sld__cfg_bad(c, q, "tier name \"%s\" is already used in this policy",
                                    tier->name);
        /* the daemon names a tier's counters "<policy>/<tier>" */
        if (strlen(pol->name) + 1 + strlen(tier->name) > SL_MAX_POLICY_NAME)
            return sld__cfg_bad(c, q,
                                "policy and tier names together must be at most %d characters",
                                SL_MAX_POLICY_NAME - 1);
        if ((rc = get_limits(c, sld__cfg_join(q, sizeof q, p, "limits"), rt->limits,
                             rt->limits_count, tier->limits, &tier->nlimits)))
            return rc;
        if ((rc = compile_check(c, q, true, pol, tier->limits, tier->nlimits)))
            return rc;
        if (rt->keys_count && (tier->keys = calloc(rt->keys_count, sizeof *tier->keys)) == NULL)
            return sld__cfg_oom(c);
        for (unsigned i = 0; i < rt->keys_count; i++) {
            size_t n = strlen(rt->keys[i]);
            if (n == 0 || n > max_key_bytes) {
                char at[PATH_BUF];
                sld__cfg_entry(at, sizeof at, sld__cfg_join(q, sizeof q, p, "keys"), i);
                return sld__cfg_bad(c, at,
                                    "a key must be 1 to %u bytes (limits.max_key_bytes), got "
                                    "\"%s\"",
                                    (unsigned)max_key_bytes, sld__cfg_show(rt->keys[i], b));
            }
            if ((tier->keys[i] = sld__cfg_dup(c, rt->keys[i])) == NULL)
                return SL_ENOMEM;
            tier->nkeys = i + 1;
        }
    }
    return check_tier_keys(c, path, r);
}

static const char *const failure_names[] = {
    [SLD_FAIL_DEFAULT] = "default",
    [SLD_FAIL_OPEN] = "open",
    [SLD_FAIL_CLOSED] = "closed",
    [SLD_FAIL_LOCAL] = "local",
};

int sld_store_failure_parse(const char *text, sld_store_failure_t *out) {
    for (int f = SLD_FAIL_OPEN; text && f <= SLD_FAIL_LOCAL; f++) {
        if (strcmp(text, failure_names[f]) == 0) {
            *out = (sld_store_failure_t)f;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

const char *sld_store_failure_name(sld_store_failure_t f) {
    return (unsigned)f <= SLD_FAIL_LOCAL ? failure_names[f] : "?";
}

int sld__cfg_get_failure(ctx_t *c, const char *path, const char *text, sld_store_failure_t *out) {
    char b[SHOW_MAX + 8];
    if (sld_store_failure_parse(text, out) != SL_OK)
        return sld__cfg_bad(c, path, "expected open, closed or local, got \"%s\"",
                            sld__cfg_show(text, b));
    return SL_OK;
}

int sld__cfg_get_policy(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol,
                        uint32_t max_key_bytes) {
    char p[PATH_BUF], b[SHOW_MAX + 8], in[PATH_BUF + 8];
    int rc;
    const char *name = r->name ? r->name : c->policy_name;
    if (name == NULL)
        return sld__cfg_report(c, sld__cfg_path_line(c, path, 1),
                               "missing required key \"name\" %s",
                               sld__cfg_where(path, in, sizeof in));
    if (r->name && c->policy_name && strcmp(r->name, c->policy_name) != 0)
        return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, "name"),
                            "\"%s\" is not the name in the path, \"%s\"", sld__cfg_show(r->name, b),
                            c->policy_name);
    if ((rc = sld__cfg_get_name(c, sld__cfg_join(p, sizeof p, path, "name"), name, &pol->name)))
        return rc;
    if ((rc = get_key_attrs(c, sld__cfg_join(p, sizeof p, path, "key"), r, pol)))
        return rc;
    pol->mode = SL_MODE_HARD;
    if (r->mode && sl_mode_parse(r->mode, &pol->mode) != SL_OK)
        return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, "mode"),
                            "expected one of hard, soft, shadow, elastic, got \"%s\"",
                            sld__cfg_show(r->mode, b));
    if (r->soft_percent) {
        if (pol->mode != SL_MODE_SOFT)
            return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, "soft_percent"),
                                "soft_percent applies to mode: soft only");
        if ((rc = sld__cfg_get_u32(c, sld__cfg_join(p, sizeof p, path, "soft_percent"),
                                   r->soft_percent, 1, 1000, &pol->soft_percent)))
            return rc;
    } else if (pol->mode == SL_MODE_SOFT) {
        return sld__cfg_bad(
            c, sld__cfg_join(p, sizeof p, path, "mode"),
            "mode soft needs soft_percent (1 to 1000): how far over the limits to admit");
    }
    if (r->pool) {
        if (pol->mode != SL_MODE_ELASTIC)
            return sld__cfg_bad(c, sld__cfg_join(p, sizeof p, path, "pool"),
                                "a pool applies to mode: elastic only");
        if ((rc = get_limit(c, sld__cfg_join(p, sizeof p, path, "pool"), r->pool, &pol->pool)))
            return rc;
        pol->has_pool = true;
    } else if (pol->mode == SL_MODE_ELASTIC) {
        return sld__cfg_bad(
            c, sld__cfg_join(p, sizeof p, path, "mode"),
            "mode elastic needs a pool, like pool: {algorithm: token_bucket, limit: 1000, "
            "period: 1s}");
    }
    if ((rc = get_limits(c, sld__cfg_join(p, sizeof p, path, "limits"), r->limits, r->limits_count,
                         pol->limits, &pol->nlimits)))
        return rc;
    if (pol->has_pool) {
        /* the pool on its own first, so that its errors point at it */
        sld_policy_t alone = *pol;
        alone.mode = SL_MODE_HARD;
        memset(&alone.pool, 0, sizeof alone.pool);
        if ((rc = compile_check(c, sld__cfg_join(p, sizeof p, path, "pool"), false, &alone,
                                &pol->pool, 1)))
            return rc;
    }
    if ((rc = compile_check(c, sld__cfg_join(p, sizeof p, path, "limits"), true, pol, pol->limits,
                            pol->nlimits)))
        return rc;
    if (r->on_store_failure &&
        (rc = sld__cfg_get_failure(c, sld__cfg_join(p, sizeof p, path, "on_store_failure"),
                                   r->on_store_failure, &pol->on_store_failure)))
        return rc;
    if ((rc = get_tiers(c, path, r, pol, max_key_bytes)))
        return rc;
    return get_max_wait(c, path, r, pol);
}

void sld__cfg_policy_free_fields(sld_policy_t *p) {
    free(p->name);
    for (size_t i = 0; i < SLD_MAX_KEY_ATTRS; i++)
        free(p->key_attrs[i]);
    for (size_t t = 0; t < p->ntiers; t++) {
        for (size_t k = 0; k < p->tiers[t].nkeys; k++)
            free(p->tiers[t].keys[k]);
        free(p->tiers[t].keys);
        free(p->tiers[t].name);
    }
    free(p->tiers);
}
