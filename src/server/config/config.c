/* config.c -- sluiced's configuration loader: YAML bytes in, a validated,
 * immutable sld_config_t out, or one "FILE:LINE: message" and nothing.
 *
 * Three steps over the same bytes:
 *   1. a libyaml event pass checks the syntax and what libcyaml would accept
 *      silently or report without a line (yaml_lines.c);
 *   2. libcyaml loads the text into "raw" structs whose every scalar is a
 *      string, following the schema (schema.c): unknown keys, missing keys,
 *      duplicate keys and wrong shapes are its errors, which messages.c
 *      rewrites with the path and line of the offending node;
 *   3. every value is converted and checked: the top level and the store
 *      here, scalars by units.c, policies and tiers by policy_config.c, the
 *      keys fronts registered by listen.c and section.c.
 * An error in step 2 or 3 names a path ("policies[0].limits[1].period");
 * one more libyaml pass finds the line of that path. This file also reads
 * the file, fills the defaults and frees a configuration.
 *
 * Not here: compiling the policies for use (the daemon does that), applying
 * or reloading a configuration, or anything with sockets or threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cyaml/cyaml.h>

#include "server/config/config.h"
#include "server/config/config_private.h"
#include "server/config/config_snapshot.h"

#define DEFAULT_USER_HEADER "Authorization"

/* The store's URL: its scheme here, the rest when the client parses it
 * (sluiced checks it before it serves, so --check-config catches it too). */
static int get_store_url(ctx_t *c, const char *text, char **out) {
    static const char *const schemes[] = {"redis://", "sentinel://", "redis-cluster://"};
    char b[SHOW_MAX + 8];
    for (size_t i = 0; i < 3; i++)
        if (strncmp(text, schemes[i], strlen(schemes[i])) == 0 && strlen(text) <= MAX_PATH_BYTES)
            return (*out = sld__cfg_dup(c, text)) ? SL_OK : SL_ENOMEM;
    if (strncmp(text, "rediss://", 9) == 0)
        return sld__cfg_bad(c, "store.url",
                            "TLS (rediss://) is not supported; use redis:// on a trusted "
                            "network or a TLS tunnel");
    return sld__cfg_bad(c, "store.url",
                        "expected redis://host:port, sentinel://host:port,.../master or "
                        "redis-cluster://host:port,..., got \"%s\"",
                        sld__cfg_show(text, b));
}

static int get_snapshot(ctx_t *c, sld_config_t *cfg) {
    sld_snapshot_setting_t s;
    char msg[SLD_MAX_ERROR];
    size_t line = 0;
    int rc = sld_snapshot_setting_read(c->yaml, c->len, &s, &line, msg, sizeof msg);
    if (rc == SL_ENOMEM)
        return sld__cfg_oom(c);
    if (rc != SL_OK)
        return sld__cfg_report(c, line, "%s", msg);
    cfg->snapshot_mode = s.mode;
    if (s.path && (s.path[0] == '\0' || strlen(s.path) >= MAX_PATH_BYTES))
        rc = sld__cfg_bad(c, "store.snapshot.path", "expected a file path of 1 to %d bytes",
                          MAX_PATH_BYTES - 1);
    if (rc == SL_OK && s.interval)
        rc = sld__cfg_get_duration(c, "store.snapshot.interval", s.interval, YEAR_USEC,
                                   &cfg->snapshot_interval);
    if (rc == SL_OK) {
        cfg->snapshot_path = s.path;
        s.path = NULL;
    }
    sld_snapshot_setting_free(&s);
    return rc;
}

static int get_store(ctx_t *c, const raw_store_t *s, sld_config_t *cfg) {
    char b[SHOW_MAX + 8];
    int rc;
    bool redis = false;
    if (s->type && strcmp(s->type, "redis") == 0)
        redis = true;
    else if (s->type && strcmp(s->type, "memory") != 0)
        return sld__cfg_bad(c, "store.type", "expected memory or redis, got \"%s\"",
                            sld__cfg_show(s->type, b));
    if (redis && s->url == NULL)
        return sld__cfg_bad(c, "store.type",
                            "type redis needs store.url, like redis://127.0.0.1:6379");
    if (!redis && s->url)
        return sld__cfg_bad(c, "store.url", "a url applies to type: redis only");
    if (s->url && (rc = get_store_url(c, s->url, &cfg->store_url)))
        return rc;
    if (s->sync) {
        if (strcmp(s->sync, "strict") == 0)
            cfg->store_write_back = false;
        else if (strcmp(s->sync, "write_back") == 0)
            cfg->store_write_back = true;
        else
            return sld__cfg_bad(c, "store.sync", "expected strict or write_back, got \"%s\"",
                                sld__cfg_show(s->sync, b));
    }
    if (s->sync_interval &&
        (rc = sld__cfg_get_duration_ms(c, "store.sync_interval", s->sync_interval,
                                       60 * SL_USEC_PER_SEC, &cfg->store_sync_interval)))
        return rc;
    if (s->timeout && (rc = sld__cfg_get_duration_ms(c, "store.timeout", s->timeout,
                                                     60 * SL_USEC_PER_SEC, &cfg->store_timeout)))
        return rc;
    if (s->clock) {
        if (strcmp(s->clock, "server") == 0)
            cfg->store_clock_local = false;
        else if (strcmp(s->clock, "local") == 0)
            cfg->store_clock_local = true;
        else
            return sld__cfg_bad(c, "store.clock",
                                "expected server (Redis TIME) or local, got \"%s\"",
                                sld__cfg_show(s->clock, b));
    }
    if (s->on_store_failure &&
        (rc = sld__cfg_get_failure(c, "store.on_store_failure", s->on_store_failure,
                                   &cfg->on_store_failure)))
        return rc;
    if (s->nodes &&
        (rc = sld__cfg_get_u32(c, "store.nodes", s->nodes, 1, 10000, &cfg->store_nodes)))
        return rc;
    if (s->breaker && s->breaker->failures &&
        (rc = sld__cfg_get_u32(c, "store.breaker.failures", s->breaker->failures, 1, 1000000,
                               &cfg->breaker_failures)))
        return rc;
    if (s->breaker && s->breaker->cooldown &&
        (rc = sld__cfg_get_duration_ms(c, "store.breaker.cooldown", s->breaker->cooldown,
                                       3600 * SL_USEC_PER_SEC, &cfg->breaker_cooldown)))
        return rc;
    if (s->max_memory) {
        if ((rc = sld__cfg_get_size(c, "store.max_memory", s->max_memory, &cfg->max_memory)))
            return rc;
        if (cfg->max_memory != 0 && cfg->max_memory < (UINT64_C(1) << 20))
            return sld__cfg_bad(c, "store.max_memory", "must be 0 (unbounded) or at least 1MiB");
#if SIZE_MAX < UINT64_MAX
        if (cfg->max_memory > SIZE_MAX)
            return sld__cfg_bad(c, "store.max_memory", "is more than this machine can address");
#endif
    }
    if (s->shards) {
        if ((rc = sld__cfg_get_u32(c, "store.shards", s->shards, 0, 65536, &cfg->shards)))
            return rc;
        if (cfg->shards & (cfg->shards - 1))
            return sld__cfg_bad(c, "store.shards", "must be 0 (default) or a power of two, got %u",
                                (unsigned)cfg->shards);
    }
    return get_snapshot(c, cfg);
}

static int get_config(ctx_t *c, const raw_config_t *r, sld_config_t *cfg) {
    char p[PATH_BUF], b[SHOW_MAX + 8];
    int rc;
    if ((rc = sld__cfg_listen_parse(c, r, cfg)))
        return rc;
    if (r->threads && (rc = sld__cfg_get_u32(c, "threads", r->threads, 0, 256, &cfg->threads)))
        return rc;
    if (r->limits) {
        const raw_limits_t *l = r->limits;
        uint64_t size;
        if (l->max_connections &&
            (rc = sld__cfg_get_u32(c, "limits.max_connections", l->max_connections, 1, 1000000,
                                   &cfg->max_connections)))
            return rc;
        if (l->max_request_bytes) {
            if ((rc =
                     sld__cfg_get_size(c, "limits.max_request_bytes", l->max_request_bytes, &size)))
                return rc;
            if (size < 1024 || size > (UINT64_C(512) << 20))
                return sld__cfg_bad(c, "limits.max_request_bytes",
                                    "%s is out of range (1KiB to 512MiB)",
                                    sld__cfg_show(l->max_request_bytes, b));
            cfg->max_request_bytes = (uint32_t)size;
        }
        if (l->max_key_bytes && (rc = sld__cfg_get_u32(c, "limits.max_key_bytes", l->max_key_bytes,
                                                       1, 65536, &cfg->max_key_bytes)))
            return rc;
        if (l->idle_timeout &&
            (rc = sld__cfg_get_duration(c, "limits.idle_timeout", l->idle_timeout, YEAR_USEC,
                                        &cfg->idle_timeout)))
            return rc;
        if (l->write_timeout &&
            (rc = sld__cfg_get_duration(c, "limits.write_timeout", l->write_timeout, YEAR_USEC,
                                        &cfg->write_timeout)))
            return rc;
    }
    if (cfg->write_timeout < 0) /* not given: as idle_timeout */
        cfg->write_timeout = cfg->idle_timeout;
    if (r->store && (rc = get_store(c, r->store, cfg)))
        return rc;
    if (r->trusted_proxies_count) {
        cfg->trusted_proxies = calloc(r->trusted_proxies_count, sizeof *cfg->trusted_proxies);
        if (cfg->trusted_proxies == NULL)
            return sld__cfg_oom(c);
        for (unsigned i = 0; i < r->trusted_proxies_count; i++) {
            if ((rc = sld__cfg_check_cidr(c, sld__cfg_entry(p, sizeof p, "trusted_proxies", i),
                                          r->trusted_proxies[i])))
                return rc;
            if ((cfg->trusted_proxies[i] = sld__cfg_dup(c, r->trusted_proxies[i])) == NULL)
                return SL_ENOMEM;
            cfg->ntrusted_proxies = i + 1;
        }
    }
    if (r->ipv6_prefix && (rc = sld__cfg_get_u32(c, "ipv6_prefix", r->ipv6_prefix, 1, 128,
                                                 &cfg->ipv6_prefix)))
        return rc;
    if (r->auth_deny_status) {
        if ((rc = sld__cfg_get_u32(c, "auth_deny_status", r->auth_deny_status, 100, 599,
                                   &cfg->auth_deny_status)))
            return rc;
        uint32_t st = cfg->auth_deny_status;
        if (st != 401 && st != 403 && st != 429 && st != 503)
            return sld__cfg_bad(c, "auth_deny_status", "expected one of 401, 403, 429, 503, got %u",
                                st);
    }
    if (r->user_header) {
        if (!sld__cfg_is_token(r->user_header))
            return sld__cfg_bad(c, "user_header",
                                "expected an HTTP header name like X-User-Id, got "
                                "\"%s\"",
                                sld__cfg_show(r->user_header, b));
        free(cfg->user_header);
        if ((cfg->user_header = sld__cfg_dup(c, r->user_header)) == NULL)
            return SL_ENOMEM;
    }
    if ((rc = sld__cfg_sections_parse(c, r, cfg, true)))
        return rc;

    if (r->policies_count == 0)
        return sld__cfg_bad(c, "policies", "at least one policy is needed");
    if ((cfg->policies = calloc(r->policies_count, sizeof *cfg->policies)) == NULL)
        return sld__cfg_oom(c);
    for (unsigned i = 0; i < r->policies_count; i++) {
        cfg->npolicies = i + 1;
        if ((rc = sld__cfg_get_policy(c, sld__cfg_entry(p, sizeof p, "policies", i),
                                      &r->policies[i], &cfg->policies[i], cfg->max_key_bytes)))
            return rc;
    }
    /* names are unique: sorted copies would be faster, but a duplicate must
     * point at its second use and there are at most MAX_POLICIES */
    for (size_t i = 1; i < cfg->npolicies; i++)
        for (size_t k = 0; k < i; k++)
            if (strcmp(cfg->policies[i].name, cfg->policies[k].name) == 0) {
                char first[64];
                snprintf(first, sizeof first, "policies[%zu].name", k);
                snprintf(p, sizeof p, "policies[%zu].name", i);
                return sld__cfg_bad(c, p, "policy name \"%s\" is already used (line %zu)",
                                    cfg->policies[i].name, sld__cfg_path_line(c, first, 1));
            }
    if ((rc = sld__cfg_sections_parse(c, r, cfg, false)))
        return rc;
    return sld__cfg_sections_check(c, cfg);
}

static sld_config_t *config_defaults(ctx_t *c) {
    sld_config_t *cfg = calloc(1, sizeof *cfg);
    if (cfg == NULL)
        return NULL;
    sld__cfg_listen_defaults(cfg);
    cfg->max_connections = 10000;
    cfg->max_request_bytes = 1u << 20;
    cfg->max_key_bytes = 1024;
    cfg->idle_timeout = 300 * SL_USEC_PER_SEC;
    cfg->write_timeout = -1;
    cfg->snapshot_interval = 60 * SL_USEC_PER_SEC;
    cfg->ipv6_prefix = 64;
    cfg->auth_deny_status = 429;
    cfg->store_sync_interval = 10 * 1000;
    cfg->store_timeout = 200 * 1000;
    cfg->on_store_failure = SLD_FAIL_LOCAL;
    cfg->store_nodes = 1;
    cfg->breaker_failures = 5;
    cfg->breaker_cooldown = SL_USEC_PER_SEC;
    cfg->source = strdup(c->name);
    cfg->user_header = strdup(DEFAULT_USER_HEADER);
    if (cfg->source == NULL || cfg->user_header == NULL) {
        sld_config_free(cfg);
        return NULL;
    }
    return cfg;
}

int sld__cfg_parse(const char *name, const char *policy_name, const char *yaml, size_t len,
                   sld_config_t **out, char *err, size_t err_len) {
    ctx_t c = {.name = name ? name : "(embedded default)", .policy_name = policy_name, .yaml = yaml,
               .len = len, .err = err, .err_len = err_len};
    if (err && err_len)
        err[0] = '\0';
    if (out == NULL || (yaml == NULL && len != 0))
        return sld__cfg_report(&c, 0, "no configuration given");
    if (len > MAX_FILE_BYTES)
        return sld__cfg_report(&c, 0, "the file is larger than %u MiB", MAX_FILE_BYTES >> 20);

    /* 1. syntax and what libcyaml cannot check */
    bool empty = false;
    int rc = sld__cfg_yaml_check(&c, &empty);
    if (rc != SL_OK)
        return rc;

    /* 2. the schema */
    raw_config_t *raw = NULL;
    const cyaml_schema_value_t *top = sld__cfg_schema_top();
    c.schema = top;
    cyaml_config_t cy = {.log_fn = sld__cfg_cyaml_log, .log_ctx = &c, .mem_fn = cyaml_mem,
                         .log_level = CYAML_LOG_ERROR, .flags = CYAML_CFG_NO_ALIAS};
    cyaml_err_t e = empty ? CYAML_OK
                          : cyaml_load_data((const uint8_t *)yaml, len, &cy, top,
                                            (cyaml_data_t **)&raw, NULL);
    if (e != CYAML_OK || raw == NULL) {
        if (e != CYAML_OK)
            sld__cfg_cyaml_error(&c, e);
        else
            sld__cfg_report(&c, 0, "the file is empty: at least a policies: list is needed");
        return e == CYAML_ERR_OOM ? SL_ENOMEM : SL_EINVAL;
    }

    /* 3. values */
    sld_config_t *cfg = config_defaults(&c);
    rc = cfg ? get_config(&c, raw, cfg) : sld__cfg_oom(&c);
    cyaml_free(&cy, top, raw, 0);
    if (rc != SL_OK) {
        sld_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return SL_OK;
}

int sld_config_parse(const char *name, const char *yaml, size_t len, sld_config_t **out,
                     char *err, size_t err_len) {
    return sld__cfg_parse(name, NULL, yaml, len, out, err, err_len);
}

int sld_config_listen_option(const char *option, const char *text, char out[SLD_MAX_ADDR], char *err,
                             size_t err_len) {
    ctx_t c = {.name = "command line", .yaml = "", .len = 0, .err = err, .err_len = err_len};
    return sld__cfg_get_front(&c, option, text, out);
}

int sld_config_load(const char *path, sld_config_t **out, char *err, size_t err_len) {
    if (err && err_len)
        err[0] = '\0';
    if (path == NULL || out == NULL) {
        if (err && err_len)
            snprintf(err, err_len, "no configuration file given");
        return SL_EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int saved = 0;
    if (fd < 0) {
        saved = errno;
    } else {
        for (;;) {
            if (len > MAX_FILE_BYTES) {
                saved = EFBIG;
                break;
            }
            if (len == cap) {
                size_t ncap = cap ? cap * 2 : 16384;
                char *nb = realloc(buf, ncap);
                if (nb == NULL) {
                    saved = ENOMEM;
                    break;
                }
                buf = nb, cap = ncap;
            }
            ssize_t n = read(fd, buf + len, cap - len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                saved = errno;
                break;
            }
            if (n == 0)
                break;
            len += (size_t)n;
        }
        close(fd);
    }
    if (saved) {
        free(buf);
        if (err && err_len) {
            if (saved == EFBIG)
                snprintf(err, err_len, "%s: the file is larger than %u MiB", path,
                         MAX_FILE_BYTES >> 20);
            else
                snprintf(err, err_len, "%s: cannot read: %s", path, strerror(saved));
        }
        return saved == ENOMEM ? SL_ENOMEM : SL_EIO;
    }
    int rc = sld_config_parse(path, buf ? buf : "", len, out, err, err_len);
    free(buf);
    return rc;
}

void sld_config_free(sld_config_t *config) {
    if (config == NULL)
        return;
    for (size_t i = 0; i < config->npolicies; i++)
        sld__cfg_policy_free_fields(&config->policies[i]);
    free(config->policies);
    for (size_t i = 0; i < config->ntrusted_proxies; i++)
        free(config->trusted_proxies[i]);
    free(config->trusted_proxies);
    free(config->source);
    free(config->snapshot_path);
    free(config->store_url);
    free(config->user_header);
    sld__cfg_sections_release(config);
    free(config);
}
