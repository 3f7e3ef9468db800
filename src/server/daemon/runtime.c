/* runtime.c -- building, swapping and retiring runtimes (see runtime.h).
 *
 * Not here: reading files (config.c), signals (sluiced.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/log.h"
#include "server/engine/remote.h"
#include "server/daemon/runtime.h"

typedef struct check_ctx {
    char *err;
    size_t err_len;
} check_ctx_t;

static int check_remote(void *ctx, const sl_policy_t *p) {
    check_ctx_t *c = ctx;
    const char *why = NULL;
    if (sld_remote_supports(p, &why))
        return 0;
    snprintf(c->err, c->err_len, "policy %s cannot be evaluated in Redis: %s",
             sl_policy_name(p), why ? why : "unsupported");
    return SL_ERANGE;
}

struct sld_retired {
    sld_runtime_t *rt;
    uint64_t until;  /* free once every worker has seen this generation */
    struct sld_retired *next;
};

static pthread_mutex_t apply_lock = PTHREAD_MUTEX_INITIALIZER;

int sld_runtime_build(sld_daemon_t *d, sld_config_t *cfg, uint64_t generation, sld_runtime_t **out,
                      char *err, size_t err_len) {
    sld_runtime_t *rt = calloc(1, sizeof *rt);
    if (rt == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    int rc = sld_policies_build(cfg, d->metrics, &rt->policies, err, err_len);
    check_ctx_t check = {err, err_len};
    if (rc == SL_OK && cfg->store_url && (rc = sld_policies_each(rt->policies, check_remote, &check)))
        sld_policies_free(rt->policies);
    if (rc == SL_OK && cfg->ntrusted_proxies > 0 &&
        (rc = sld_cidrs_parse(cfg->trusted_proxies, cfg->ntrusted_proxies, &rt->trusted, err,
                              err_len)) != SL_OK)
        sld_policies_free(rt->policies);
    if (rc != SL_OK) {
        free(rt);
        return rc;
    }
    rt->cfg = cfg;
    rt->generation = generation;
    *out = rt;
    return SL_OK;
}

void sld_runtime_free(sld_runtime_t *rt) {
    if (rt == NULL)
        return;
    sld_policies_free(rt->policies);
    sld_cidrs_free(rt->trusted);
    sld_config_free(rt->cfg);
    free(rt);
}

/* Settings a running daemon cannot change: they keep their running values. */
static void keep_fixed_settings(const sld_config_t *old, sld_config_t *next) {
    bool moved = false;
    for (size_t i = 0; i < SLD_MAX_LISTENS; i++)
        moved |= strcmp(old->listen[i], next->listen[i]) != 0;
    if (moved || old->threads != next->threads || old->max_memory != next->max_memory ||
        old->shards != next->shards || old->max_request_bytes != next->max_request_bytes ||
        (old->store_url == NULL) != (next->store_url == NULL) ||
        (old->store_url && strcmp(old->store_url, next->store_url) != 0) ||
        old->store_write_back != next->store_write_back || old->store_timeout != next->store_timeout ||
        old->store_clock_local != next->store_clock_local)
        sld_warn("listen addresses, threads, store settings and max_request_bytes need a restart; "
                 "they keep their running values");
    memcpy(next->listen, old->listen, sizeof next->listen);
    next->threads = old->threads;
    next->max_memory = old->max_memory;
    next->shards = old->shards;
    next->max_request_bytes = old->max_request_bytes;
    char *url = next->store_url;
    next->store_url = old->store_url ? strdup(old->store_url) : NULL;
    free(url);
    next->store_write_back = old->store_write_back;
    next->store_timeout = old->store_timeout;
    next->store_clock_local = old->store_clock_local;
    next->store_sync_interval = old->store_sync_interval;
    next->breaker_failures = old->breaker_failures;
    next->breaker_cooldown = old->breaker_cooldown;
}

/* Swaps cfg in; apply_lock held (and released here). */
static int apply_locked(sld_daemon_t *d, sld_config_t *cfg, const char *why, char *err,
                        size_t err_len, uint64_t *generation) {
    const sld_runtime_t *old = sld_runtime(d);
    keep_fixed_settings(old->cfg, cfg);
    sld_runtime_t *rt = NULL;
    int rc = sld_runtime_build(d, cfg, old->generation + 1, &rt, err, err_len);
    struct sld_retired *r = rc == SL_OK ? malloc(sizeof *r) : NULL;
    if (rc == SL_OK && r == NULL) {
        sld_runtime_free(rt);
        snprintf(err, err_len, "out of memory");
        rc = SL_ENOMEM;
        cfg = NULL; /* freed with rt */
    }
    if (rc != SL_OK) {
        pthread_mutex_unlock(&apply_lock);
        sld_config_free(cfg);
        return rc;
    }
    atomic_store_explicit(&d->runtime, rt, memory_order_release);
    *r = (struct sld_retired){(sld_runtime_t *)old, rt->generation, d->retired};
    d->retired = r;
    if (generation)
        *generation = rt->generation;
    pthread_mutex_unlock(&apply_lock);
    if (d->workers.wake)
        d->workers.wake(d->workers.ctx);
    sld_info("%s: %zu policies, generation %llu", why, rt->cfg->npolicies,
             (unsigned long long)rt->generation);
    return SL_OK;
}

int sld_runtime_apply(sld_daemon_t *d, sld_config_t *cfg, const char *why, char *err,
                      size_t err_len, uint64_t *generation) {
    pthread_mutex_lock(&apply_lock);
    return apply_locked(d, cfg, why, err, err_len, generation);
}

int sld_runtime_edit(sld_daemon_t *d, const sld_policy_t *put, const char *remove, const char *why,
                     char *err, size_t err_len, uint64_t *generation) {
    pthread_mutex_lock(&apply_lock);
    const sld_config_t *now = sld_runtime(d)->cfg;
    bool found = remove == NULL;
    for (size_t i = 0; !found && i < now->npolicies; i++)
        found = strcmp(now->policies[i].name, remove) == 0;
    if (!found || (remove && put == NULL && now->npolicies == 1)) {
        pthread_mutex_unlock(&apply_lock);
        snprintf(err, err_len, found ? "'%s' is the only policy: a configuration needs one"
                                     : "no policy named '%s'", remove);
        return found ? SL_EINVAL : SL_ENOENT;
    }
    sld_config_t *cfg = sld_config_edit(now, put, remove);
    if (cfg == NULL) {
        pthread_mutex_unlock(&apply_lock);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    return apply_locked(d, cfg, why, err, err_len, generation);
}

int sld_runtime_reload(sld_daemon_t *d, char *err, size_t err_len, uint64_t *generation) {
    if (d->load_config == NULL) {
        snprintf(err, err_len, "running on the built-in default configuration: no file to reload");
        sld_warn("reload: %s", err);
        return SL_ENOCONFIG;
    }
    sld_config_t *cfg = NULL;
    char why[512];
    int rc = d->load_config(d->config_path, &cfg, err, err_len);
    if (rc == SL_OK) {
        snprintf(why, sizeof why, "reloaded %s", d->reload_label ? d->reload_label : "");
        rc = sld_runtime_apply(d, cfg, why, err, err_len, generation);
    }
    if (rc != SL_OK) {
        atomic_fetch_add(&d->stats.reload_failures, 1);
        sld_error("reload failed, the running configuration stays: %s", err);
        return rc;
    }
    atomic_fetch_add(&d->stats.reloads, 1);
    return SL_OK;
}

void sld_runtime_collect(sld_daemon_t *d) {
    pthread_mutex_lock(&apply_lock);
    for (struct sld_retired **p = &d->retired; *p;) {
        if (d->workers.quiescent && d->workers.quiescent(d->workers.ctx, (*p)->until) &&
            atomic_load(&(*p)->rt->pins) == 0) {
            struct sld_retired *r = *p;
            *p = r->next;
            sld_runtime_free(r->rt);
            free(r);
        } else {
            p = &(*p)->next;
        }
    }
    pthread_mutex_unlock(&apply_lock);
}

void sld_runtime_shutdown(sld_daemon_t *d) {
    pthread_mutex_lock(&apply_lock);
    for (struct sld_retired *r = d->retired, *next; r; r = next) {
        next = r->next;
        sld_runtime_free(r->rt);
        free(r);
    }
    d->retired = NULL;
    sld_runtime_free((sld_runtime_t *)sld_runtime(d));
    atomic_store(&d->runtime, NULL);
    pthread_mutex_unlock(&apply_lock);
}
