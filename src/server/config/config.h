/* config.h -- sluiced's configuration: one YAML file, read with libcyaml.
 *
 * Loading reads and validates the whole file into an immutable sld_config_t:
 * every error is reported as "FILE:LINE: what was expected" (the first error
 * stops the load, and nothing is returned). Defaults are filled in for
 * everything optional. The daemon compiles the policies (policies.c) and
 * applies the rest; this module knows nothing of sockets or threads.
 */
#ifndef SL_SERVER_CONFIG_H
#define SL_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/config/config_snapshot.h"
#include "sluice.h"

#define SLD_MAX_ADDR 256       /* "host:port", "[v6]:port" */
#define SLD_MAX_TIERS 64
#define SLD_MAX_KEY_ATTRS 8
#define SLD_MAX_ERROR 512      /* size of error buffers given to the loader */
#define SLD_MAX_SECTIONS 8     /* sections registered by fronts (section.h) */
#define SLD_MAX_LISTENS 4      /* listen keys registered by fronts (section.h) */

/* A group of keys with limits of their own ("premium users get more"). */
typedef struct sld_tier {
    char *name;                      /* [A-Za-z0-9_.-]{1,64}, unique in its policy */
    char **keys;                     /* exact keys that belong to the tier */
    size_t nkeys;
    sl_limit_t limits[SL_MAX_LIMITS];
    size_t nlimits;                  /* >= 1 */
} sld_tier_t;

/* What a policy's decisions become while the shared store cannot answer. */
typedef enum sld_store_failure {
    SLD_FAIL_DEFAULT = 0,  /* a policy's: the store's setting */
    SLD_FAIL_OPEN,         /* admit (availability before the limit) */
    SLD_FAIL_CLOSED,       /* deny (the limit before availability) */
    SLD_FAIL_LOCAL         /* decide in this daemon's memory, each limit / store.nodes */
} sld_store_failure_t;

typedef struct sld_policy {
    char *name;                      /* [A-Za-z0-9_.-]{1,64}, unique */
    sl_mode_t mode;                  /* default hard */
    uint32_t soft_percent;           /* mode soft: 1..1000 */
    sl_limit_t limits[SL_MAX_LIMITS];
    size_t nlimits;                  /* >= 1 */
    bool has_pool;                   /* mode elastic: required */
    sl_limit_t pool;
    char *key_attrs[SLD_MAX_KEY_ATTRS]; /* how the HTTP front builds the key:
                                           "user", "ip", "endpoint", "method",
                                           "header:<Name>"; default {"key"} =
                                           the key given by the client */
    size_t nkey_attrs;
    sld_tier_t *tiers;
    size_t ntiers;
    sld_store_failure_t on_store_failure; /* default: store.on_store_failure */
    sl_usec_t max_wait;              /* forward-auth without wait=: how long a request
                                        may wait for its place (0: not at all) */
} sld_policy_t;

typedef struct sld_config {
    char *source;                    /* the file's path, or "(embedded default)" */
    char listen[SLD_MAX_LISTENS][SLD_MAX_ADDR]; /* the fronts' addresses, by the index of
                                        their listen key (section.h: read them with
                                        sld_config_listen()); port 0 = any free port;
                                        "" = that front is off */
    uint32_t threads;                /* 0 = one per online core */

    uint32_t max_connections;        /* default 10000 */
    uint32_t max_request_bytes;      /* one command or HTTP request; default 1 MiB */
    uint32_t max_key_bytes;          /* default 1024 */
    sl_usec_t idle_timeout;          /* 0 = never; default 300 s */
    sl_usec_t write_timeout;         /* writes without progress this long close; 0 = never;
                                        default idle_timeout */

    char *store_url;                 /* store.url: NULL = the memory store (store.type memory);
                                        redis://, sentinel://, redis-cluster:// */
    bool store_write_back;           /* store.sync: strict (default) or write_back */
    sl_usec_t store_sync_interval;   /* store.sync_interval; default 10 ms */
    sl_usec_t store_timeout;         /* store.timeout: one Redis call; default 200 ms */
    bool store_clock_local;          /* store.clock: server (default, Redis TIME) or local */
    sld_store_failure_t on_store_failure; /* store.on_store_failure; default local */
    uint32_t store_nodes;            /* store.nodes: daemons sharing the store, for local
                                        fallback; default 1 */
    uint32_t breaker_failures;       /* store.breaker.failures; default 5 */
    sl_usec_t breaker_cooldown;      /* store.breaker.cooldown; default 1 s */

    uint64_t max_memory;             /* store.max_memory, bytes; 0 = unbounded (default) */
    uint32_t shards;                 /* store.shards; 0 = library default */
    sld_snapshot_mode_t snapshot_mode; /* store.snapshot: absent, off, on */
    char *snapshot_path;             /* store.snapshot.path as written (NULL: not given); once
                                        sld_snapshot_resolve() ran, the absolute path, NULL =
                                        no snapshots */
    const char *snapshot_origin;     /* static: where snapshot_path comes from (resolved) */
    sl_usec_t snapshot_interval;     /* store.snapshot.interval; 0 = only at shutdown; default 60 s */

    char **trusted_proxies;          /* CIDRs, as written ("10.0.0.0/8", "::1/128"); validated */
    size_t ntrusted_proxies;
    uint32_t ipv6_prefix;            /* key IPv6 clients by this prefix; default 64 */
    char *user_header;               /* HTTP header naming the user; default "Authorization" */
    uint32_t auth_deny_status;       /* forward-auth's answer to a denied request: 401, 403,
                                        429 (default) or 503 */

    sld_policy_t *policies;
    size_t npolicies;                /* >= 1 */

    struct sld_config_part *sections[SLD_MAX_SECTIONS]; /* the registered sections the file
                                        has, by registration index; NULL = absent (section.h) */
} sld_config_t;

/* Reads and validates `path`. On error returns a negative sl_error_t (SL_EIO:
 * unreadable; SL_EINVAL: invalid) and writes "PATH:LINE: message" (LINE when
 * known) into err[0..err_len). */
int sld_config_load(const char *path, sld_config_t **out, char *err, size_t err_len);

/* The same from a buffer; `name` stands for the path in messages. */
int sld_config_parse(const char *name, const char *yaml, size_t len, sld_config_t **out,
                     char *err, size_t err_len);

void sld_config_free(sld_config_t *config);

/* A front's listen address given outside the file (--resp, --http), read
 * with the file's rule: an IP address and a port, never a host name, or
 * "off" / "" for a front that does not listen (out is then ""). SL_OK with
 * the address in out, or SL_EINVAL and "command line: OPTION: message". */
int sld_config_listen_option(const char *option, const char *text, char out[SLD_MAX_ADDR], char *err,
                             size_t err_len);

/* A deep copy of cfg in which the policy named put->name is replaced by a
 * copy of put (or put is appended), and the policy named `remove` (if not
 * NULL) is left out. NULL when out of memory. For the admin API. */
sld_config_t *sld_config_edit(const sld_config_t *cfg, const sld_policy_t *put, const char *remove);

/* Parses one policy, written as in the file but in JSON, and validates it
 * with the file's rules, tier keys against max_key_bytes; `name` is its name
 * (the body may give it too, the same). Errors as sld_config_parse(), lines
 * counted in the body ("request body:1: limits[0].limit: ..."). */
int sld_config_parse_policy(const char *name, const char *json, size_t len, uint32_t max_key_bytes,
                            sld_policy_t **out, char *err, size_t err_len);
void sld_config_policy_free(sld_policy_t *policy);

/* A duration as the file writes it and reads it back: whole seconds
 * ("60s"), else milliseconds ("200ms"), else microseconds. */
const char *sld_config_duration_text(sl_usec_t us, char *buf, size_t n);

/* "open", "closed", "local" -> SLD_FAIL_*; SL_EINVAL otherwise. */
int sld_store_failure_parse(const char *text, sld_store_failure_t *out);
const char *sld_store_failure_name(sld_store_failure_t f);

/* Parses "250ms", "2s", "1.5m", "1h", "7d", "100us" (a bare number = seconds)
 * into microseconds; SL_EINVAL if malformed, SL_ERANGE if too large. */
int sld_parse_duration(const char *text, sl_usec_t *out);

/* Parses "512", "64KiB", "1MiB", "2GiB", "1GB" (SI and IEC) into bytes. */
int sld_parse_size(const char *text, uint64_t *out);

#endif
