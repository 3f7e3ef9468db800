/* rules.c -- policies kept in Redis, applied by every daemon (see rules.h).
 *
 * Runs on the main loop with a client of its own. A change is noticed by a
 * message on the channel (a plain hiredis subscriber connection to the
 * first node of the URL; none for Sentinel) or by the version key moving;
 * either way the whole hash is read and, when it differs from what was
 * last applied, the file's configuration overlaid with it is applied like a
 * reload. A rule that does not validate is skipped and logged, the others
 * apply.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <xxhash.h>

#include "server/base/log.h"
#include "server/engine/remote.h"
#include "server/engine/rules.h"
#include "server/daemon/runtime.h"
#include "store/redis/client.h"
#include "store/redis/url.h"

#define RULES_POLL_MS 500
#define RESUBSCRIBE_MS 1000

typedef struct rule {
    char *name;
    sld_policy_t *policy;  /* NULL: the file's policy of that name is removed */
} rule_t;

struct sld_rules {
    sld_daemon_t *d;
    uv_loop_t *loop;
    sl__redis_client_t *client;
    uv_timer_t poll;
    uv_timer_t resubscribe;
    redisAsyncContext *sub;
    const sl__redis_url_t *url;
    bool fetching;
    bool stopping;
    bool first_read;             /* the rules were read once (or Redis said no) */
    long long seen_version;      /* -1: read the rules at the next tick */
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
    sld_runtime_t *rt = NULL;
    if (sld_runtime_build(r->d, probe, 0, &rt, err, err_len) != SL_OK) {
        sld_config_free(probe);
        return false;
    }
    sld_runtime_free(rt); /* and probe with it */
    return true;
}

static void on_rules(void *arg, sl__redis_status_t status, const redisReply *reply) {
    sld_rules_t *r = arg;
    r->fetching = false;
    r->first_read = true;
    if (r->stopping)
        return;
    if (status != SL__REDIS_OK || reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
        reply->elements % 2 != 0 || reply->elements / 2 > 4096) {
        atomic_fetch_add(&r->errors, 1);
        r->seen_version = -1; /* try again at the next tick */
        return;
    }
    /* the hash as read, order-independent: unchanged rules change nothing */
    uint64_t h = 1;
    for (size_t i = 0; i < reply->elements; i += 2) {
        const redisReply *k = reply->element[i], *v = reply->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            atomic_fetch_add(&r->errors, 1);
            return;
        }
        h += XXH3_64bits_withSeed(v->str, v->len, XXH3_64bits(k->str, k->len)) | 1;
    }
    if (h == r->applied_hash)
        return;
    const sld_config_t *now = sld_runtime(r->d)->cfg;
    size_t n = reply->elements / 2, kept = 0;
    rule_t *rules = calloc(n ? n : 1, sizeof *rules);
    if (rules == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = reply->element[2 * i], *v = reply->element[2 * i + 1];
        char err[SLD_MAX_ERROR] = "";
        rule_t *rule = &rules[kept];
        if ((rule->name = strndup(k->str, k->len)) == NULL)
            continue;
        if (v->len == 0) { /* a file policy removed */
            kept++;
            continue;
        }
        if (sld_config_parse_policy(rule->name, v->str, v->len, now->max_key_bytes, &rule->policy, err,
                                    sizeof err) != SL_OK || !applicable(r, rule, err, sizeof err)) {
            atomic_fetch_add(&r->invalid, 1);
            sld_error("rules: policy %s in Redis (%s) is not valid, skipped: %s", rule->name, SLD_RULES_KEY,
                      err);
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
    snprintf(why, sizeof why, "rules from Redis (%zu, version %lld)", kept, r->seen_version);
    if (sld_runtime_apply(r->d, cfg, why, err, sizeof err, NULL) != SL_OK) {
        atomic_fetch_add(&r->invalid, 1);
        sld_error("rules: the policies in Redis cannot be applied, the running ones stay: %s", err);
    } else {
        atomic_fetch_add(&r->applied, 1);
    }
    r->applied_hash = h;
    atomic_store(&r->version, (uint64_t)(r->seen_version > 0 ? r->seen_version : 0));
}

static void fetch(sld_rules_t *r) {
    static const char *const argv[] = {"HGETALL", SLD_RULES_KEY};
    static const size_t argvlen[] = {7, sizeof SLD_RULES_KEY - 1};
    if (r->fetching || r->stopping)
        return;
    if (sl__redis_client_send(r->client, SLD_RULES_KEY, sizeof SLD_RULES_KEY - 1, 2, argv, argvlen, NULL,
                              0, on_rules, r) == 0)
        r->fetching = true;
}

static void on_version(void *arg, sl__redis_status_t status, const redisReply *reply) {
    sld_rules_t *r = arg;
    r->fetching = false;
    if (r->stopping)
        return;
    if (status != SL__REDIS_OK || reply == NULL ||
        (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
        atomic_fetch_add(&r->errors, 1);
        r->first_read = true; /* Redis cannot say now: start on the file's */
        return;
    }
    long long v = reply->type == REDIS_REPLY_NIL ? 0 : strtoll(reply->str, NULL, 10);
    if (v == r->seen_version)
        return;
    r->seen_version = v;
    fetch(r);
}

static void on_poll(uv_timer_t *t) {
    static const char *const argv[] = {"GET", SLD_RULES_VERSION_KEY};
    static const size_t argvlen[] = {3, sizeof SLD_RULES_VERSION_KEY - 1};
    sld_rules_t *r = t->data;
    if (r->fetching || r->stopping)
        return;
    if (sl__redis_client_send(r->client, SLD_RULES_VERSION_KEY, sizeof SLD_RULES_VERSION_KEY - 1, 2, argv,
                              argvlen, NULL, 0, on_version, r) == 0)
        r->fetching = true;
    else
        r->first_read = true;
}

bool sld_rules_read_once(const sld_rules_t *r) { return r->first_read; }

/* ---- the subscriber --------------------------------------------------------------------------- */

static void subscribe(sld_rules_t *r);

static void on_resubscribe(uv_timer_t *t) { subscribe(t->data); }

static void on_message(redisAsyncContext *ac, void *reply_, void *arg) {
    (void)ac;
    sld_rules_t *r = arg;
    redisReply *reply = reply_;
    if (reply == NULL || r->stopping)
        return;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 && reply->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(reply->element[0]->str, "message") == 0) {
        sld_debug("rules: change published (%.*s)", (int)reply->element[2]->len, reply->element[2]->str);
        r->seen_version = -1; /* whatever the version says: read now */
        if (!r->fetching)
            fetch(r);
    }
}

static void on_sub_disconnect(const redisAsyncContext *ac, int status) {
    (void)status;
    sld_rules_t *r = ac->data;
    r->sub = NULL;
    if (!r->stopping)
        uv_timer_start(&r->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
}

static void on_sub_connect(const redisAsyncContext *ac, int status) {
    sld_rules_t *r = ac->data;
    if (status != REDIS_OK) {
        r->sub = NULL; /* hiredis frees it */
        if (!r->stopping)
            uv_timer_start(&r->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
    }
}

static void subscribe(sld_rules_t *r) {
    if (r->stopping || r->sub)
        return;
    const sl__redis_addr_t *a = &r->url->nodes[0];
    redisAsyncContext *ac = redisAsyncConnect(a->host, a->port);
    if (ac == NULL || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        uv_timer_start(&r->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
        return;
    }
    ac->data = r;
    redisLibuvAttach(ac, r->loop);
    redisAsyncSetConnectCallback(ac, on_sub_connect);
    redisAsyncSetDisconnectCallback(ac, on_sub_disconnect);
    if (r->url->has_password) {
        if (r->url->has_user)
            redisAsyncCommand(ac, NULL, NULL, "AUTH %b %b", r->url->user, r->url->user_len, r->url->password,
                              r->url->password_len);
        else
            redisAsyncCommand(ac, NULL, NULL, "AUTH %b", r->url->password, r->url->password_len);
    }
    redisAsyncCommand(ac, on_message, r, "SUBSCRIBE " SLD_RULES_CHANNEL);
    r->sub = ac;
}

/* ---- life ------------------------------------------------------------------------------------ */

int sld_rules_start(sld_daemon_t *d, uv_loop_t *loop, sld_rules_t **out) {
    sld_rules_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return SL_ENOMEM;
    r->d = d;
    r->loop = loop;
    r->url = sld_remote_url(d->remote);
    r->seen_version = -1;
    r->applied_hash = 1; /* what an empty hash sums to: nothing to apply */
    pthread_mutex_init(&r->lock, NULL);
    r->base = sld_config_edit(sld_runtime(d)->cfg, NULL, NULL);
    if (r->base == NULL || sl__redis_client_new(loop, r->url, sld_remote_options(d->remote), &r->client) != 0) {
        sld_config_free(r->base);
        free(r);
        return SL_ENOMEM;
    }
    uv_timer_init(loop, &r->poll);
    uv_timer_init(loop, &r->resubscribe);
    r->poll.data = r->resubscribe.data = r;
    uv_timer_start(&r->poll, on_poll, 0, RULES_POLL_MS);
    /* a Sentinel URL names sentinels, not the master: the version poll serves */
    if (r->url->kind != SL__REDIS_SENTINEL)
        subscribe(r);
    *out = r;
    return SL_OK;
}

static void on_client_closed(void *arg) { (void)arg; }

void sld_rules_stop(sld_rules_t *r) {
    if (r == NULL)
        return;
    r->stopping = true;
    uv_timer_stop(&r->poll);
    uv_timer_stop(&r->resubscribe);
    uv_close((uv_handle_t *)&r->poll, NULL);
    uv_close((uv_handle_t *)&r->resubscribe, NULL);
    if (r->sub) {
        redisAsyncContext *ac = r->sub;
        r->sub = NULL;
        ac->data = r;
        redisAsyncFree(ac);
    }
    sl__redis_client_close(r->client, on_client_closed, r);
}

void sld_rules_free(sld_rules_t *r) {
    if (r == NULL)
        return;
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
