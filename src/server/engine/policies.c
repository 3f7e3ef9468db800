/* policies.c -- the table of compiled policies and tiers (see policies.h).
 *
 * Lookups by policy name and by tier key go through small open-addressing
 * tables of XXH3 hashes, built once; a miss costs a hash and a compare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/policy.h"
#include "server/engine/policies.h"

typedef struct entry {
    uint64_t hash;
    const char *name;   /* policy name or tier key, owned by the config */
    size_t len;
    uint32_t index;     /* policy index, or tier index */
    uint32_t policy;    /* for tier keys: the policy they belong to */
} entry_t;

typedef struct table {
    entry_t *slots;     /* power-of-two size, at most half full; hash 0 = empty */
    size_t mask;
} table_t;

typedef struct compiled {
    sl_policy_t *policy;
    sl_policy_t **tiers;  /* one per configured tier */
    /* on_store_failure local with store.nodes > 1: the same with every
     * limit divided by the nodes (NULL otherwise: the policy itself) */
    sl_policy_t *local;
    sl_policy_t **local_tiers;
    uint32_t slot;        /* metrics */
} compiled_t;

struct sld_policies {
    const sld_config_t *cfg;
    compiled_t *compiled;
    table_t names;
    table_t tier_keys;
};

static uint64_t hash_of(const void *p, size_t n) {
    uint64_t h = XXH3_64bits(p, n);
    return h ? h : 1;
}

static int table_init(table_t *t, size_t entries) {
    size_t size = 8;
    while (size < entries * 2)
        size *= 2;
    t->slots = calloc(size, sizeof *t->slots);
    t->mask = size - 1;
    return t->slots ? SL_OK : SL_ENOMEM;
}

static const entry_t *table_find(const table_t *t, const void *name, size_t len, uint32_t policy,
                                 bool by_policy) {
    uint64_t h = hash_of(name, len) ^ (by_policy ? policy * UINT64_C(0x9e3779b97f4a7c15) : 0);
    h = h ? h : 1;
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        const entry_t *e = &t->slots[i];
        if (e->hash == 0)
            return NULL;
        if (e->hash == h && e->len == len && memcmp(e->name, name, len) == 0 &&
            (!by_policy || e->policy == policy))
            return e;
    }
}

static void table_put(table_t *t, const char *name, size_t len, uint32_t index, uint32_t policy,
                      bool by_policy) {
    uint64_t h = hash_of(name, len) ^ (by_policy ? policy * UINT64_C(0x9e3779b97f4a7c15) : 0);
    h = h ? h : 1;
    size_t i = h & t->mask;
    while (t->slots[i].hash != 0)
        i = (i + 1) & t->mask;
    t->slots[i] = (entry_t){h, name, len, index, policy};
}

/* One node's share of a shared limit: never more than limit / nodes. */
static sl_limit_t share(sl_limit_t l, uint32_t nodes) {
    l.limit = l.limit / nodes ? l.limit / nodes : 1;
    if (l.burst)
        l.burst = l.burst / nodes;
    return l;
}

static int compile_one(const char *name, const sl_limit_t *limits, size_t n, const sld_policy_t *p,
                       uint32_t nodes, sl_policy_t **out, char *err, size_t err_len) {
    sl_limit_t shares[SL_MAX_LIMITS];
    for (size_t i = 0; i < n && i < SL_MAX_LIMITS; i++)
        shares[i] = share(limits[i], nodes);
    sl_policy_config_t pc = {.name = name, .limits = nodes > 1 ? shares : limits, .nlimits = n,
                             .mode = p->mode, .soft_percent = p->soft_percent};
    if (p->has_pool)
        pc.pool = nodes > 1 ? share(p->pool, nodes) : p->pool;
    return sl_policy_new(&pc, out, err, err_len);
}

int sld_policies_build(const sld_config_t *cfg, sld_metrics_t *metrics, sld_policies_t **out,
                       char *err, size_t err_len) {
    sld_policies_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        return SL_ENOMEM;
    t->cfg = cfg;
    size_t nkeys = 0;
    for (size_t i = 0; i < cfg->npolicies; i++)
        for (size_t k = 0; k < cfg->policies[i].ntiers; k++)
            nkeys += cfg->policies[i].tiers[k].nkeys;
    /* write-back decides here already: no fallback of its own is needed */
    bool write_back = cfg->store_url != NULL && cfg->store_write_back;
    bool divide = cfg->store_url != NULL && cfg->store_nodes > 1 && !write_back;
    int rc = SL_ENOMEM;
    t->compiled = calloc(cfg->npolicies ? cfg->npolicies : 1, sizeof *t->compiled);
    if (t->compiled && table_init(&t->names, cfg->npolicies) == SL_OK &&
        table_init(&t->tier_keys, nkeys) == SL_OK)
        rc = SL_OK;
    for (size_t i = 0; rc == SL_OK && i < cfg->npolicies; i++) {
        const sld_policy_t *p = &cfg->policies[i];
        rc = compile_one(p->name, p->limits, p->nlimits, p, 1, &t->compiled[i].policy, err, err_len);
        if (rc == SL_OK && write_back)
            sl__policy_write_back(t->compiled[i].policy, cfg->store_nodes, cfg->store_sync_interval);
        if (rc == SL_OK && divide)
            rc = compile_one(p->name, p->limits, p->nlimits, p, cfg->store_nodes,
                             &t->compiled[i].local, err, err_len);
        if (rc != SL_OK)
            break;
        table_put(&t->names, p->name, strlen(p->name), (uint32_t)i, 0, false);
        t->compiled[i].slot = metrics ? sld_metrics_slot(metrics, p->name) : 0;
        t->compiled[i].tiers = calloc(p->ntiers ? p->ntiers : 1, sizeof(sl_policy_t *));
        t->compiled[i].local_tiers = calloc(p->ntiers ? p->ntiers : 1, sizeof(sl_policy_t *));
        if (t->compiled[i].tiers == NULL || t->compiled[i].local_tiers == NULL) {
            rc = SL_ENOMEM;
            break;
        }
        for (size_t k = 0; rc == SL_OK && k < p->ntiers; k++) {
            const sld_tier_t *tier = &p->tiers[k];
            char name[SL_MAX_POLICY_NAME + 1];
            snprintf(name, sizeof name, "%s/%s", p->name, tier->name);
            rc = compile_one(name, tier->limits, tier->nlimits, p, 1, &t->compiled[i].tiers[k], err,
                             err_len);
            if (rc == SL_OK && write_back)
                sl__policy_write_back(t->compiled[i].tiers[k], cfg->store_nodes, cfg->store_sync_interval);
            if (rc == SL_OK && divide)
                rc = compile_one(name, tier->limits, tier->nlimits, p, cfg->store_nodes,
                                 &t->compiled[i].local_tiers[k], err, err_len);
            for (size_t j = 0; rc == SL_OK && j < tier->nkeys; j++)
                table_put(&t->tier_keys, tier->keys[j], strlen(tier->keys[j]), (uint32_t)k,
                          (uint32_t)i, true);
        }
    }
    if (rc != SL_OK) {
        sld_policies_free(t);
        return rc;
    }
    *out = t;
    return SL_OK;
}

void sld_policies_free(sld_policies_t *t) {
    if (t == NULL)
        return;
    for (size_t i = 0; t->compiled && i < t->cfg->npolicies; i++) {
        sl_policy_free(t->compiled[i].policy);
        sl_policy_free(t->compiled[i].local);
        for (size_t k = 0; k < t->cfg->policies[i].ntiers; k++) {
            if (t->compiled[i].tiers)
                sl_policy_free(t->compiled[i].tiers[k]);
            if (t->compiled[i].local_tiers)
                sl_policy_free(t->compiled[i].local_tiers[k]);
        }
        free(t->compiled[i].tiers);
        free(t->compiled[i].local_tiers);
    }
    free(t->compiled);
    free(t->names.slots);
    free(t->tier_keys.slots);
    free(t);
}

const sl_policy_t *sld_policies_find(const sld_policies_t *t, const char *name, size_t name_len,
                                     const void *key, size_t key_len, const char **tier,
                                     size_t *index) {
    if (tier)
        *tier = NULL;
    const entry_t *p = table_find(&t->names, name, name_len, 0, false);
    if (p == NULL)
        return NULL;
    if (index)
        *index = p->index;
    const sld_policy_t *cfg = &t->cfg->policies[p->index];
    if (cfg->ntiers > 0) {
        const entry_t *k = table_find(&t->tier_keys, key, key_len, p->index, true);
        if (k != NULL) {
            if (tier)
                *tier = cfg->tiers[k->index].name;
            return t->compiled[p->index].tiers[k->index];
        }
    }
    return t->compiled[p->index].policy;
}

size_t sld_policies_count(const sld_policies_t *t) { return t->cfg->npolicies; }

const sld_policy_t *sld_policies_config(const sld_policies_t *t, size_t i) {
    return i < t->cfg->npolicies ? &t->cfg->policies[i] : NULL;
}

const sl_policy_t *sld_policies_compiled(const sld_policies_t *t, size_t i) {
    return i < t->cfg->npolicies ? t->compiled[i].policy : NULL;
}

uint32_t sld_policies_slot(const sld_policies_t *t, size_t i) {
    return i < t->cfg->npolicies ? t->compiled[i].slot : 0;
}

const sl_policy_t *sld_policies_fallback(const sld_policies_t *t, size_t i, const sl_policy_t *p,
                                         sld_store_failure_t *mode) {
    *mode = t->cfg->on_store_failure;
    if (i >= t->cfg->npolicies)
        return p;
    const compiled_t *c = &t->compiled[i];
    if (t->cfg->policies[i].on_store_failure != SLD_FAIL_DEFAULT)
        *mode = t->cfg->policies[i].on_store_failure;
    if (p == c->policy)
        return c->local ? c->local : p;
    for (size_t k = 0; k < t->cfg->policies[i].ntiers; k++)
        if (p == c->tiers[k])
            return c->local_tiers[k] ? c->local_tiers[k] : p;
    return p;
}

int sld_policies_each(const sld_policies_t *t, int (*fn)(void *ctx, const sl_policy_t *p),
                      void *ctx) {
    for (size_t i = 0; i < t->cfg->npolicies; i++) {
        int rc = fn(ctx, t->compiled[i].policy);
        for (size_t k = 0; rc == 0 && k < t->cfg->policies[i].ntiers; k++)
            rc = fn(ctx, t->compiled[i].tiers[k]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
