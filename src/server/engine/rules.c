/* rules.c -- policies kept in Redis, applied by every daemon (see rules.h).
 *
 * Runs on the main loop. The feed (store/redis/rules_feed.c) notices a
 * change and reads the whole hash; when it differs from what was last
 * applied, the file's configuration overlaid with it is applied like a
 * reload, through the runtime hooks the daemon gave. A rule that does not
 * validate is skipped and logged, the others apply.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "server/base/log.h"
#include "server/engine/rules.h"
#include "store/redis/rules_feed.h"

#define RULES_POLL_MS 500

typedef struct rule {
    char *name;
    sld_policy_t *policy;  /* NULL: the file's policy of that name is removed */
} rule_t;

struct sld_rules {
    sld_runtime_hooks_t rt;      /* the configuration in force, and applying one */
    sl__redis_rules_feed_t *feed;
    uint64_t applied_hash;       /* of the hash last applied, 0 = none */
    pthread_mutex_t lock;        /* base and rules: reloads come from other threads */
    sld_config_t *base;          /* the file's configuration, as last loaded */
    rule_t *rules;
    size_t nrules;
    _Atomic uint64_t version, applied, invalid, errors;
};

/* ---- merging ------------------------------------------------------------------------------ */

static void free_rules(rule_t *rules, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(rules[i].name);
        sld_config_policy_free(rules[i].policy);
    }
    free(rules);
}

static bool has_policy(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, name) == 0)
            return true;
    return false;
}

/* base overlaid with rules, as a new configuration (lock held). */
static sld_config_t *merge(const sld_config_t *base, const rule_t *rules, size_t n) {
    sld_config_t *cfg = sld_config_edit(base, NULL, NULL);
    for (size_t i = 0; cfg && i < n; i++) {
        sld_config_t *next;
        if (rules[i].policy)
            next = sld_config_edit(cfg, rules[i].policy, NULL);
        else if (has_policy(cfg, rules[i].name) && cfg->npolicies > 1)
            next = sld_config_edit(cfg, NULL, rules[i].name);
        else
            continue;
        sld_config_free(cfg);
        cfg = next;
    }
    return cfg;
}

sld_config_t *sld_rules_overlay(sld_rules_t *r, sld_config_t *cfg) {
    if (r == NULL)
        return cfg;
    sld_config_t *copy = sld_config_edit(cfg, NULL, NULL);
    pthread_mutex_lock(&r->lock);
    if (copy) {
        sld_config_free(r->base);
        r->base = copy;
    }
    sld_config_t *merged = r->nrules ? merge(cfg, r->rules, r->nrules) : cfg;
    pthread_mutex_unlock(&r->lock);
    if (merged != cfg)
        sld_config_free(cfg);
    return merged;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Whether the file's configuration with this one rule on top would run:
 * a rule the daemon cannot apply (one Redis cannot evaluate, say) must not
 * keep the others, or any later reload, from applying. */
static bool applicable(sld_rules_t *r, const rule_t *rule, char *err, size_t err_len) {
    pthread_mutex_lock(&r->lock);
    sld_config_t *probe = r->base ? merge(r->base, rule, 1) : NULL;
    pthread_mutex_unlock(&r->lock);
    if (probe == NULL)
        return true; /* nothing to check against yet; applying will tell */
    return r->rt.check(r->rt.ctx, probe, err, err_len) == SL_OK;
}

/* The hash as the feed read it (name -> JSON). */
static void on_rules(void *arg, const sl__redis_field_t *fields, size_t n, long long version) {
    sld_rules_t *r = arg;
    /* the hash as read, order-independent: unchanged rules change nothing */
    uint64_t h = 1;
    for (size_t i = 0; i < n; i++)
        h += XXH3_64bits_withSeed(fields[i].value, fields[i].value_len,
                                  XXH3_64bits(fields[i].name, fields[i].name_len)) | 1;
    if (h == r->applied_hash)
        return;
    const sld_config_t *now = r->rt.config(r->rt.current(r->rt.ctx));
    size_t kept = 0;
    rule_t *rules = calloc(n ? n : 1, sizeof *rules);
    if (rules == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        const sl__redis_field_t *f = &fields[i];
        char err[SLD_MAX_ERROR] = "";
        rule_t *rule = &rules[kept];
        if ((rule->name = strndup(f->name, f->name_len)) == NULL)
            continue;
        if (f->value_len == 0) { /* a file policy removed */
            kept++;
            continue;
        }
        if (sld_config_parse_policy(rule->name, f->value, f->value_len, now->max_key_bytes, &rule->policy,
                                    err, sizeof err) != SL_OK || !applicable(r, rule, err, sizeof err)) {
            atomic_fetch_add(&r->invalid, 1);
            sld_error("rules: policy %s in Redis (%s) is not valid, skipped: %s", rule->name,
                      SL__REDIS_RULES_KEY, err);
            sld_config_policy_free(rule->policy);
            rule->policy = NULL;
            free(rule->name);
            rule->name = NULL;
            continue;
        }
        kept++;
    }
    pthread_mutex_lock(&r->lock);
    sld_config_t *cfg = r->base ? merge(r->base, rules, kept) : NULL;
    free_rules(r->rules, r->nrules);
    r->rules = rules;
    r->nrules = kept;
    pthread_mutex_unlock(&r->lock);
    if (cfg == NULL)
        return;
    char err[SLD_MAX_ERROR] = "", why[128];
    snprintf(why, sizeof why, "rules from Redis (%zu, version %lld)", kept, version);
    if (r->rt.apply(r->rt.ctx, cfg, why, err, sizeof err) != SL_OK) {
        atomic_fetch_add(&r->invalid, 1);
        sld_error("rules: the policies in Redis cannot be applied, the running ones stay: %s", err);
    } else {
        atomic_fetch_add(&r->applied, 1);
    }
    r->applied_hash = h;
    atomic_store(&r->version, (uint64_t)(version > 0 ? version : 0));
}

static void on_failed(void *arg) {
    sld_rules_t *r = arg;
    atomic_fetch_add(&r->errors, 1);
}

static void on_published(void *arg, const char *name, size_t len) {
    (void)arg;
    sld_debug("rules: change published (%.*s)", (int)len, name);
}

bool sld_rules_read_once(const sld_rules_t *r) { return sl__redis_rules_feed_read_once(r->feed); }

/* ---- life ------------------------------------------------------------------------------------ */

int sld_rules_start(const sld_runtime_hooks_t *rt, const sld_remote_t *remote, uv_loop_t *loop,
                    sld_rules_t **out) {
    sld_rules_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return SL_ENOMEM;
    r->rt = *rt;
    r->applied_hash = 1; /* what an empty hash sums to: nothing to apply */
    pthread_mutex_init(&r->lock, NULL);
    r->base = sld_config_edit(rt->config(rt->current(rt->ctx)), NULL, NULL);
    sl__redis_rules_hooks_t hooks = {.arg = r, .rules = on_rules, .failed = on_failed,
                                     .published = on_published};
    if (r->base == NULL || sl__redis_rules_feed_new(loop, sld_remote_url(remote), sld_remote_options(remote),
                                                    RULES_POLL_MS, &hooks, &r->feed) != 0) {
        sld_config_free(r->base);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return SL_ENOMEM;
    }
    *out = r;
    return SL_OK;
}

void sld_rules_stop(sld_rules_t *r) {
    if (r == NULL)
        return;
    sl__redis_rules_feed_stop(r->feed);
}

void sld_rules_free(sld_rules_t *r) {
    if (r == NULL)
        return;
    sl__redis_rules_feed_free(r->feed);
    free_rules(r->rules, r->nrules);
    sld_config_free(r->base);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void sld_rules_stats(sld_rules_t *r, sld_rules_stats_t *out) {
    out->version = atomic_load(&r->version);
    out->applied = atomic_load(&r->applied);
    out->invalid = atomic_load(&r->invalid);
    out->errors = atomic_load(&r->errors);
}
