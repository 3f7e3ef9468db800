/* config_edit.c -- copies of a configuration for the admin API: a deep copy
 * with one policy replaced, added or left out (sld_config_edit). The copy
 * owns everything in it and is freed with sld_config_free().
 *
 * Not here: checking the policy put in (policy_json.c did), or applying the
 * copy (the daemon's runtime swap).
 */
#include <stdlib.h>
#include <string.h>

#include "server/config/config.h"
#include "server/config/config_private.h"

static char *dup_or_null(const char *s, bool *ok) {
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        *ok = false;
    return d;
}

/* A deep copy of src into dst (zeroed); false on allocation failure, with
 * whatever was copied left for sld_config_free(). */
static bool copy_policy(sld_policy_t *dst, const sld_policy_t *src) {
    bool ok = true;
    *dst = *src;
    dst->name = dup_or_null(src->name, &ok);
    for (size_t i = 0; i < SLD_MAX_KEY_ATTRS; i++)
        dst->key_attrs[i] = dup_or_null(src->key_attrs[i], &ok);
    dst->tiers = NULL;
    dst->ntiers = 0;
    if (src->ntiers == 0)
        return ok;
    dst->tiers = calloc(src->ntiers, sizeof *dst->tiers);
    if (dst->tiers == NULL)
        return false;
    for (size_t t = 0; t < src->ntiers; t++) {
        sld_tier_t *d = &dst->tiers[t];
        const sld_tier_t *from = &src->tiers[t];
        *d = *from;
        d->name = dup_or_null(from->name, &ok);
        d->keys = NULL;
        d->nkeys = 0;
        dst->ntiers = t + 1;
        if (from->nkeys == 0)
            continue;
        if ((d->keys = calloc(from->nkeys, sizeof *d->keys)) == NULL)
            return false;
        for (size_t k = 0; k < from->nkeys; k++, d->nkeys++)
            d->keys[k] = dup_or_null(from->keys[k], &ok);
    }
    return ok;
}

sld_config_t *sld_config_edit(const sld_config_t *cfg, const sld_policy_t *put,
                              const char *remove) {
    sld_config_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    bool ok = true;
    *c = *cfg;
    c->policies = NULL;
    c->npolicies = 0;
    c->trusted_proxies = NULL;
    c->ntrusted_proxies = 0;
    c->source = dup_or_null(cfg->source, &ok);
    c->snapshot_path = dup_or_null(cfg->snapshot_path, &ok);
    c->store_url = dup_or_null(cfg->store_url, &ok);
    c->user_header = dup_or_null(cfg->user_header, &ok);
    if (!sld__cfg_sections_share(c))
        ok = false;
    if (cfg->ntrusted_proxies &&
        (c->trusted_proxies = calloc(cfg->ntrusted_proxies, sizeof(char *))) == NULL)
        ok = false;
    for (size_t i = 0; ok && i < cfg->ntrusted_proxies; i++, c->ntrusted_proxies++)
        c->trusted_proxies[i] = dup_or_null(cfg->trusted_proxies[i], &ok);
    if (ok && (c->policies = calloc(cfg->npolicies + 1, sizeof *c->policies)) == NULL)
        ok = false;
    bool replaced = false;
    for (size_t i = 0; ok && i < cfg->npolicies; i++) {
        const sld_policy_t *src = &cfg->policies[i];
        if (remove && strcmp(src->name, remove) == 0)
            continue;
        if (put && strcmp(src->name, put->name) == 0) {
            src = put;
            replaced = true;
        }
        ok = copy_policy(&c->policies[c->npolicies++], src);
    }
    if (ok && put && !replaced)
        ok = copy_policy(&c->policies[c->npolicies++], put);
    if (!ok) {
        sld_config_free(c);
        return NULL;
    }
    return c;
}
