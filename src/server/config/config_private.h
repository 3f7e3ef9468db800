/* config_private.h -- the configuration loader's insides, shared by its
 * files (each one job):
 *   config.c         the whole file: reading it, defaults, the top-level and
 *                    store settings, sld_config_parse/load/free
 *   schema.c         libcyaml's schema: what keys exist and their shapes
 *   yaml_lines.c     libyaml passes: the syntax check, and the line of a path
 *   messages.c       the load's one error, "NAME:LINE: path: message", and
 *                    libcyaml's errors rewritten that way
 *   units.c          scalars: numbers, durations, sizes, names, addresses, CIDRs
 *   policy_config.c  policies, their limits and tiers; store failure names
 *   policy_json.c    one policy as JSON, for the admin API
 *   config_edit.c    copies of a configuration with one policy changed
 *   section.c        the sections fronts register (section.h), and the
 *                    top-level schema with their keys
 *   listen.c         the listen keys fronts register: listen:'s schema,
 *                    defaults, addresses and command-line overrides
 * Nothing outside src/server/config/ includes this; the contract is config.h.
 *
 * Every scalar is loaded as a string (the "raw" structs below), so that "60",
 * 60 and "1m" reach the same parser and every message can say what was
 * expected; an error names the node's path ("policies[0].limits[1].period")
 * and the messages module finds its line.
 */
#ifndef SL_SERVER_CONFIG_PRIVATE_H
#define SL_SERVER_CONFIG_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cyaml/cyaml.h>

/* config.h is the module's own header, included first by every file; not
 * included here, so the private part does not depend back on it. */
#ifndef SL_SERVER_CONFIG_H
#error "include server/config/config.h before config_private.h"
#endif

#define MAX_FILE_BYTES (16u << 20)   /* a configuration file, bytes */
#define MAX_DEPTH 64                 /* nesting of YAML collections */
#define MAX_POLICIES 4096
#define MAX_TIER_KEYS 100000         /* keys of one tier */
#define MAX_TRUSTED_PROXIES 1024
#define MAX_NAME 64                  /* policy and tier names */
#define MAX_TOKEN 4096               /* a secret (admin token, password), bytes */
#define MIN_TOKEN 16
#define MAX_PATH_BYTES 4096          /* snapshot path */
#define MAX_HEADER_NAME 256
#define PATH_BUF 8192                /* a node's path, "policies[3].limits[1].period" */
#define SHOW_MAX 48                  /* characters of a bad value quoted in a message */

#define YEAR_USEC (INT64_C(365) * 86400 * SL_USEC_PER_SEC)

/* ---- raw form: what libcyaml loads, every scalar a string --------------- */

typedef struct raw_limit {
    char *algorithm, *limit, *period, *burst, *precision, *shaper, *count_denied;
} raw_limit_t;

typedef struct raw_tier {
    char *name;
    char **keys;
    unsigned keys_count;
    raw_limit_t *limits;
    unsigned limits_count;
} raw_tier_t;

typedef struct raw_policy {
    char *name;
    char **key;
    unsigned key_count;
    char *mode, *soft_percent;
    raw_limit_t *pool;
    raw_limit_t *limits;
    unsigned limits_count;
    raw_tier_t *tiers;
    unsigned tiers_count;
    char *on_store_failure;
    char *max_wait;
} raw_policy_t;

typedef struct raw_listen {
    char *addr[SLD_MAX_LISTENS];   /* by the index of the listen key (listen.c) */
} raw_listen_t;

typedef struct raw_limits {
    char *max_connections, *max_request_bytes, *max_key_bytes, *idle_timeout, *write_timeout;
} raw_limits_t;

typedef struct raw_breaker {
    char *failures, *cooldown;
} raw_breaker_t;

typedef struct raw_store {
    char *type, *max_memory, *shards;
    char *url, *sync, *sync_interval, *timeout, *clock, *on_store_failure, *nodes;
    raw_breaker_t *breaker;
} raw_store_t;

typedef struct raw_config {
    raw_listen_t *listen;
    char *threads;
    raw_limits_t *limits;
    raw_store_t *store;
    char **trusted_proxies;
    unsigned trusted_proxies_count;
    char *ipv6_prefix, *user_header, *auth_deny_status;
    raw_policy_t *policies;
    unsigned policies_count;
    void *sections[SLD_MAX_SECTIONS]; /* the registered sections' raw forms (section.c) */
} raw_config_t;

/* ---- the load context ------------------------------------------------------ */

#define MAX_FRAMES 64

/* One line of libcyaml's backtrace: a collection being read. */
typedef struct frame {
    bool field;        /* "in mapping field 'name'": a mapping, at its key `name` */
    bool entry;        /* "in sequence entry 'N'": a list, N entries read */
    char name[128];    /* (neither: "in mapping", a mapping between keys) */
    unsigned long n;
} frame_t;

typedef struct sld_config_ctx {
    const char *name;  /* stands for the path in messages */
    const char *policy_name; /* one policy from the admin API: its name, from the path */
    const cyaml_schema_value_t *schema; /* the top level read, sections included; NULL:
                                           sld__cfg_schema */
    const char *yaml;
    size_t len;
    char *err;
    size_t err_len;
    bool failed;
    /* libcyaml's log, captured: its first error and the backtrace after it */
    char cy_msg[384];
    bool in_backtrace;
    frame_t frames[MAX_FRAMES]; /* innermost first, as logged */
    size_t nframes;
} ctx_t;

/* ---- messages.c: the load's one error ------------------------------------- */

/* Writes "NAME:LINE: message" (or "NAME: message" when line is 0) into the
 * context's buffer, once: later reports are dropped. Returns SL_EINVAL. */
int sld__cfg_report(ctx_t *c, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reports "out of memory"; returns SL_ENOMEM. */
int sld__cfg_oom(ctx_t *c);
/* An error at the node `path`: "NAME:LINE: path: message". Returns SL_EINVAL. */
int sld__cfg_bad(ctx_t *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A value quoted for a message: printable, bounded ("got \"5 minutes\""). */
const char *sld__cfg_show(const char *text, char buf[SHOW_MAX + 8]);
/* Paths of nodes: "parent.child" and "parent[i]", cut to fit buf[0..size). */
char *sld__cfg_join(char *buf, size_t size, const char *parent, const char *child);
char *sld__cfg_entry(char *buf, size_t size, const char *parent, size_t i);
/* "in policies[0]" or "at the top level" */
const char *sld__cfg_where(const char *path, char *buf, size_t size);
/* libcyaml's log function: keeps its first error and the backtrace. */
void sld__cfg_cyaml_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args);
/* Reports libcyaml's error e, from what its log said, with path and line. */
int sld__cfg_cyaml_error(ctx_t *c, cyaml_err_t e);

/* ---- yaml_lines.c: libyaml passes ----------------------------------------- */

/* The syntax, and what libcyaml would accept silently or report without a
 * line: a second document, aliases, non-scalar mapping keys, NUL bytes in
 * scalars, nesting depth. Reports the first problem; *empty: the document
 * is nothing, "~" or "null". */
int sld__cfg_yaml_check(ctx_t *c, bool *empty);
/* The line of the node at `path` (its key's line for a mapping value), the
 * nth time it occurs; else the line of the nearest ancestor found; 0 when
 * nothing is. */
size_t sld__cfg_path_line(const ctx_t *c, const char *path, unsigned nth);

/* ---- schema.c ------------------------------------------------------------- */

/* A raw_config_t: the built-in keys, listen: with the registered listen
 * keys (listen.c), no sections. */
extern const cyaml_schema_value_t sld__cfg_schema;
/* The built-in key the registered secrets go before: after the scalars, so
 * the keys are listed (and read) in the order they always were. Named, not
 * counted, so adding a built-in key cannot move the secrets silently. */
#define SLD_CFG_SECRETS_BEFORE "auth_deny_status"

/* ---- section.c: the sections fronts register --------------------------------- */

/* The top-level schema: sld__cfg_schema's keys and the registered
 * sections', built when they were set. */
const cyaml_schema_value_t *sld__cfg_schema_top(void);
/* Whether the file has a section of a front with its own listener. */
bool sld__cfg_sections_listen(const raw_config_t *raw);
/* Parses the sections present in raw into cfg: the secrets, or the
 * mappings. */
int sld__cfg_sections_parse(ctx_t *c, const raw_config_t *raw, sld_config_t *cfg, bool secrets);
/* Checks each section present against the whole of cfg. */
int sld__cfg_sections_check(ctx_t *c, sld_config_t *cfg);
/* cfg was copied field by field from another: its mappings are shared, its
 * secrets copied. false when out of memory (cfg then frees as it is). */
bool sld__cfg_sections_share(sld_config_t *cfg);
void sld__cfg_sections_release(sld_config_t *cfg);

/* ---- listen.c: the listen keys fronts register --------------------------------- */

/* listen:'s fields, one per registered key, then CYAML_FIELD_END. */
extern cyaml_schema_field_t sld__cfg_listen_fields[SLD_MAX_LISTENS + 1];
/* Each listen key's default address (or "") into cfg. */
void sld__cfg_listen_defaults(sld_config_t *cfg);
/* Whether a listen key of cfg is on. */
bool sld__cfg_listen_any(const sld_config_t *cfg);
/* listen: into cfg; a listening section and no listen: closes the
 * defaults; nothing answering is refused. */
int sld__cfg_listen_parse(ctx_t *c, const raw_config_t *raw, sld_config_t *cfg);

/* ---- units.c: a raw string at `path` into a checked value ------------------ */

int sld__cfg_get_uint(ctx_t *c, const char *path, const char *text, uint64_t min, uint64_t max,
                      uint64_t *out);
int sld__cfg_get_u32(ctx_t *c, const char *path, const char *text, uint32_t min, uint32_t max,
                     uint32_t *out);
int sld__cfg_get_duration(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                          sl_usec_t *out);
/* A duration of at least a millisecond: the store's timers count in ms. */
int sld__cfg_get_duration_ms(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                             sl_usec_t *out);
int sld__cfg_get_size(ctx_t *c, const char *path, const char *text, uint64_t *out);
/* true/yes/on, false/no/off, lower case or capitalised */
int sld__cfg_get_bool(ctx_t *c, const char *path, const char *text, bool *out);
/* strdup(), reporting out of memory */
char *sld__cfg_dup(ctx_t *c, const char *s);
/* [A-Za-z0-9_.-]{1,64}, copied */
int sld__cfg_get_name(ctx_t *c, const char *path, const char *text, char **out);
/* An HTTP field name: RFC 9110 token, at most MAX_HEADER_NAME bytes. */
bool sld__cfg_is_token(const char *s);
/* "a.b.c.d:port" or "[v6]:port", an IP literal (no name lookup). */
int sld__cfg_get_listen(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]);
/* The same, or "off" / "" for a front that does not listen (out ""); NULL
 * text leaves out as it is. */
int sld__cfg_get_front(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]);
/* A secret: a literal of 16 to 4096 printable ASCII characters without
 * spaces, or "env:NAME" read from the environment now; `what` names it in
 * messages ("a password"), which never quote it. *out is a copy. */
int sld__cfg_get_secret(ctx_t *c, const char *path, const char *what, const char *text,
                        char **out);
/* "addr/prefix" with no host bits set beyond the prefix. */
int sld__cfg_check_cidr(ctx_t *c, const char *path, const char *text);

/* ---- policy_config.c -------------------------------------------------------- */

/* "open", "closed" or "local" at `path`. */
int sld__cfg_get_failure(ctx_t *c, const char *path, const char *text, sld_store_failure_t *out);
/* One policy, its limits and tiers (tier keys at most max_key_bytes). */
int sld__cfg_get_policy(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol,
                        uint32_t max_key_bytes);
/* Frees what a policy owns, not the policy itself. */
void sld__cfg_policy_free_fields(sld_policy_t *p);

/* ---- config.c ------------------------------------------------------------- */

/* Loads a whole document; policy_name (not NULL) is the name of its one
 * policy, given by the admin API's path. */
int sld__cfg_parse(const char *name, const char *policy_name, const char *yaml, size_t len,
                   sld_config_t **out, char *err, size_t err_len);

#endif
