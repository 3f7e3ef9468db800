/* config.c -- sluiced's configuration loader: YAML bytes in, a validated,
 * immutable sld_config_t out, or one "FILE:LINE: message" and nothing.
 *
 * Three steps over the same bytes:
 *   1. a libyaml event pass checks the syntax and what libcyaml would accept
 *      silently or report without a line: a second document, aliases,
 *      non-scalar mapping keys, NUL bytes in scalars, nesting depth;
 *   2. libcyaml loads the text into "raw" structs whose every scalar is a
 *      string, following the schema below: unknown keys, missing keys,
 *      duplicate keys and wrong shapes are its errors, which we capture from
 *      its log and rewrite with the path and line of the offending node;
 *   3. every value is converted and checked here (units, bounds, names,
 *      CIDRs, addresses), and each policy is compiled once by the library
 *      (sl_policy_new) so that its own rules are enforced, then freed.
 * An error in step 2 or 3 names a path ("policies[0].limits[1].period"); one
 * more libyaml pass finds the line of that path.
 *
 * Scalars are loaded as strings so that "60", 60 and "1m" reach the same
 * parser and so that every message can say what was expected.
 *
 * Not here: compiling the policies for use (the daemon does that), applying
 * or reloading a configuration, or anything with sockets or threads.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cyaml/cyaml.h>
#include <yaml.h>

#include "server/base/buf.h"
#include "server/base/cidr.h"
#include "server/config/config.h"
#include "server/config/config_snapshot.h"
#include "core/arith.h"

#define MAX_FILE_BYTES (16u << 20)   /* a configuration file, bytes */
#define MAX_DEPTH 64                 /* nesting of YAML collections */
#define MAX_POLICIES 4096
#define MAX_TIER_KEYS 100000         /* keys of one tier */
#define MAX_TRUSTED_PROXIES 1024
#define MAX_NAME 64                  /* policy and tier names */
#define MAX_TOKEN 4096               /* admin token, bytes */
#define MIN_TOKEN 16
#define MAX_PATH_BYTES 4096          /* snapshot path */
#define MAX_HEADER_NAME 256
#define PATH_BUF 8192                /* a node's path, "policies[3].limits[1].period" */
#define SHOW_MAX 48                  /* characters of a bad value quoted in a message */

#define DEFAULT_RESP "127.0.0.1:6390"
#define DEFAULT_HTTP "127.0.0.1:8090"
#define DEFAULT_USER_HEADER "Authorization"
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
} raw_policy_t;

typedef struct raw_listen {
    char *resp, *http;
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
    char *ipv6_prefix, *user_header, *admin_token, *auth_deny_status;
    raw_policy_t *policies;
    unsigned policies_count;
} raw_config_t;

/* ---- schema ------------------------------------------------------------- */

#define OPT CYAML_FLAG_OPTIONAL
/* Mappings and lists may be written empty ("store:" with every line
 * commented out): that reads as absent. */
#define NULLABLE CYAML_FLAG_POINTER_NULL
#define STR(key, flags, type, member)                                                   \
    CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER | (flags), type, member, 0,          \
                           CYAML_UNLIMITED)

static const cyaml_schema_value_t string_entry = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t limit_fields[] = {
    STR("algorithm", 0, raw_limit_t, algorithm),
    STR("limit", 0, raw_limit_t, limit),
    STR("period", 0, raw_limit_t, period),
    STR("burst", OPT, raw_limit_t, burst),
    STR("precision", OPT, raw_limit_t, precision),
    STR("shaper", OPT, raw_limit_t, shaper),
    STR("count_denied", OPT, raw_limit_t, count_denied),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t limit_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_limit_t, limit_fields),
};

static const cyaml_schema_field_t tier_fields[] = {
    STR("name", 0, raw_tier_t, name),
    CYAML_FIELD_SEQUENCE("keys", NULLABLE | OPT, raw_tier_t, keys, &string_entry, 0,
                         MAX_TIER_KEYS),
    CYAML_FIELD_SEQUENCE("limits", NULLABLE, raw_tier_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t tier_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_tier_t, tier_fields),
};

static const cyaml_schema_field_t policy_fields[] = {
    STR("name", OPT, raw_policy_t, name),  /* required: get_policy() says so, or names it */
    CYAML_FIELD_SEQUENCE("key", NULLABLE | OPT, raw_policy_t, key, &string_entry, 0,
                         SLD_MAX_KEY_ATTRS),
    STR("mode", OPT, raw_policy_t, mode),
    STR("soft_percent", OPT, raw_policy_t, soft_percent),
    CYAML_FIELD_MAPPING_PTR("pool", NULLABLE | OPT, raw_policy_t, pool, limit_fields),
    CYAML_FIELD_SEQUENCE("limits", NULLABLE, raw_policy_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_SEQUENCE("tiers", NULLABLE | OPT, raw_policy_t, tiers, &tier_entry, 0,
                         SLD_MAX_TIERS),
    STR("on_store_failure", OPT, raw_policy_t, on_store_failure),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t policy_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_policy_t, policy_fields),
};

static const cyaml_schema_field_t listen_fields[] = {
    STR("resp", OPT, raw_listen_t, resp),
    STR("http", OPT, raw_listen_t, http),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t limits_fields[] = {
    STR("max_connections", OPT, raw_limits_t, max_connections),
    STR("max_request_bytes", OPT, raw_limits_t, max_request_bytes),
    STR("max_key_bytes", OPT, raw_limits_t, max_key_bytes),
    STR("idle_timeout", OPT, raw_limits_t, idle_timeout),
    STR("write_timeout", OPT, raw_limits_t, write_timeout),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t breaker_fields[] = {
    STR("failures", OPT, raw_breaker_t, failures),
    STR("cooldown", OPT, raw_breaker_t, cooldown),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t store_fields[] = {
    STR("type", OPT, raw_store_t, type),
    STR("url", OPT, raw_store_t, url),
    STR("sync", OPT, raw_store_t, sync),
    STR("sync_interval", OPT, raw_store_t, sync_interval),
    STR("timeout", OPT, raw_store_t, timeout),
    STR("clock", OPT, raw_store_t, clock),
    STR("on_store_failure", OPT, raw_store_t, on_store_failure),
    STR("nodes", OPT, raw_store_t, nodes),
    CYAML_FIELD_MAPPING_PTR("breaker", NULLABLE | OPT, raw_store_t, breaker, breaker_fields),
    STR("max_memory", OPT, raw_store_t, max_memory),
    STR("shards", OPT, raw_store_t, shards),
    /* off, on or a mapping: read by config_snapshot.c */
    CYAML_FIELD_IGNORE("snapshot", OPT),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t config_fields[] = {
    CYAML_FIELD_MAPPING_PTR("listen", NULLABLE | OPT, raw_config_t, listen, listen_fields),
    STR("threads", OPT, raw_config_t, threads),
    CYAML_FIELD_MAPPING_PTR("limits", NULLABLE | OPT, raw_config_t, limits, limits_fields),
    CYAML_FIELD_MAPPING_PTR("store", NULLABLE | OPT, raw_config_t, store, store_fields),
    CYAML_FIELD_SEQUENCE("trusted_proxies", NULLABLE | OPT, raw_config_t, trusted_proxies,
                         &string_entry, 0, MAX_TRUSTED_PROXIES),
    STR("ipv6_prefix", OPT, raw_config_t, ipv6_prefix),
    STR("user_header", OPT, raw_config_t, user_header),
    STR("admin_token", OPT, raw_config_t, admin_token),
    STR("auth_deny_status", OPT, raw_config_t, auth_deny_status),
    CYAML_FIELD_SEQUENCE("policies", NULLABLE, raw_config_t, policies, &policy_entry, 0,
                         MAX_POLICIES),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t config_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_config_t, config_fields),
};

/* ---- the load context and its one error ---------------------------------- */

#define MAX_FRAMES 64

/* One line of libcyaml's backtrace: a collection being read. */
typedef struct frame {
    bool field;        /* "in mapping field 'name'": a mapping, at its key `name` */
    bool entry;        /* "in sequence entry 'N'": a list, N entries read */
    char name[128];    /* (neither: "in mapping", a mapping between keys) */
    unsigned long n;
} frame_t;

typedef struct ctx {
    const char *name;  /* stands for the path in messages */
    const char *policy_name; /* one policy from the admin API: its name, from the path */
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

static size_t path_line(const ctx_t *c, const char *path, unsigned nth);

/* Writes "NAME:LINE: message" (or "NAME: message" when line is 0). */
static int vreport(ctx_t *c, size_t line, const char *fmt, va_list ap) {
    if (c->failed)
        return SL_EINVAL;
    c->failed = true;
    if (c->err == NULL || c->err_len == 0)
        return SL_EINVAL;
    int n = line ? snprintf(c->err, c->err_len, "%s:%zu: ", c->name, line)
                 : snprintf(c->err, c->err_len, "%s: ", c->name);
    if (n >= 0 && (size_t)n < c->err_len)
        vsnprintf(c->err + n, c->err_len - (size_t)n, fmt, ap);
    return SL_EINVAL;
}

static int report(ctx_t *c, size_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vreport(c, line, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(ctx_t *c) {
    report(c, 0, "out of memory");
    return SL_ENOMEM;
}

/* An error at the node `path`: "NAME:LINE: path: message". */
static int bad(ctx_t *c, const char *path, const char *fmt, ...) {
    if (c->failed || c->err == NULL || c->err_len == 0) {
        c->failed = true; /* nobody reads the message: spare the line search */
        return SL_EINVAL;
    }
    char msg[SLD_MAX_ERROR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return report(c, path_line(c, path, 1), "%s: %s", path, msg);
}

/* A value quoted for a message: printable, bounded ("got \"5 minutes\""). */
static const char *show(const char *text, char buf[SHOW_MAX + 8]) {
    size_t o = 0;
    for (size_t i = 0; text[i] && o < SHOW_MAX; i++) {
        unsigned char ch = (unsigned char)text[i];
        buf[o++] = ch >= 0x20 && ch < 0x7f && ch != '"' ? (char)ch : '?';
    }
    buf[o] = '\0';
    if (strlen(text) > SHOW_MAX)
        memcpy(buf + o, "...", 4);
    return buf;
}

/* Paths of nodes: "parent.child" and "parent[i]", cut to fit. */
static size_t put(char *buf, size_t size, size_t o, const char *s) {
    while (*s && o + 1 < size)
        buf[o++] = *s++;
    buf[o] = '\0';
    return o;
}

static char *join(char *buf, size_t size, const char *parent, const char *child) {
    size_t o = put(buf, size, 0, parent);
    put(buf, size, *parent ? put(buf, size, o, ".") : o, child);
    return buf;
}

static char *entry(char *buf, size_t size, const char *parent, size_t i) {
    char index[32];
    snprintf(index, sizeof index, "[%zu]", i);
    put(buf, size, put(buf, size, 0, parent), index);
    return buf;
}

/* ---- libyaml passes: checks before libcyaml, and the line of a path ------- */

typedef struct walk_frame {
    bool mapping;
    bool want_key;
    size_t index;      /* sequence: next entry */
    size_t path_len;   /* length of the collection's own path */
} walk_frame_t;

typedef struct walk {
    const char *target;   /* path to find, or NULL: only check */
    unsigned nth;         /* which occurrence of target */
    unsigned seen;
    size_t found;         /* line of the target, 0 until found */
    char path[PATH_BUF];
    size_t path_len;
    walk_frame_t frames[MAX_DEPTH];
    int depth;
    int docs;
    bool root_seen;
    bool root_null;       /* the document is "~", "null" or nothing */
    size_t err_line;      /* check mode: the first problem */
    char err_msg[256];
} walk_t;

static bool walk_fail(walk_t *w, size_t line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err_msg, sizeof w->err_msg, fmt, ap);
    va_end(ap);
    w->err_line = line ? line : 1;
    return false;
}

static void walk_append(walk_t *w, const char *fmt, const char *key, size_t index) {
    if (w->path_len >= sizeof w->path)
        return;
    int n = key ? snprintf(w->path + w->path_len, sizeof w->path - w->path_len, fmt, key)
                : snprintf(w->path + w->path_len, sizeof w->path - w->path_len, fmt, index);
    if (n < 0 || (size_t)n >= sizeof w->path - w->path_len)
        w->path_len = sizeof w->path; /* too long: matches nothing until popped */
    else
        w->path_len += (size_t)n;
}

/* The node at the current path starts at `line`. Returns true when found. */
static bool walk_record(walk_t *w, size_t line) {
    if (w->target == NULL || w->path_len >= sizeof w->path)
        return false;
    w->path[w->path_len] = '\0';
    if (strcmp(w->path, w->target) == 0 && ++w->seen == w->nth) {
        w->found = line;
        return true;
    }
    return false;
}

/* A node begins (scalar, mapping or sequence) where a value is expected. */
static bool walk_node(walk_t *w, size_t line) {
    if (w->depth == 0) {
        w->path_len = 0;
        return walk_record(w, line);
    }
    walk_frame_t *f = &w->frames[w->depth - 1];
    if (f->mapping)
        return false; /* recorded at its key */
    w->path_len = f->path_len;
    walk_append(w, "[%zu]", NULL, f->index);
    return walk_record(w, line);
}

/* A node ended: back to its parent's path. */
static void walk_done(walk_t *w) {
    if (w->depth == 0)
        return;
    walk_frame_t *f = &w->frames[w->depth - 1];
    w->path_len = f->path_len;
    if (f->mapping)
        f->want_key = true;
    else
        f->index++;
}

/* Walks every event. Check mode (no target): false with err_* set on the
 * first problem. Find mode: stops when the target is found. */
static bool walk_yaml(walk_t *w, const char *yaml, size_t len) {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool ok = true, done = false;
    if (!yaml_parser_initialize(&parser))
        return walk_fail(w, 0, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    while (ok && !done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            char started[64] = "";
            if (parser.context && parser.context_mark.line != parser.problem_mark.line)
                snprintf(started, sizeof started, " that started on line %zu",
                         parser.context_mark.line + 1);
            size_t at = parser.problem_mark.index;
            bool tab = at < len && yaml[at] == '\t';
            ok = walk_fail(w, parser.problem_mark.line + 1, "YAML syntax error: %s%s%s%s%s%s",
                           parser.problem ? parser.problem : "malformed",
                           tab ? " (a tab: YAML is indented with spaces only)" : "",
                           parser.context ? " (" : "", parser.context ? parser.context : "",
                           started, parser.context ? ")" : "");
            break;
        }
        size_t line = ev.start_mark.line + 1;
        walk_frame_t *top = w->depth ? &w->frames[w->depth - 1] : NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++w->docs > 1)
                ok = walk_fail(w, line, "a second YAML document (---): the file must hold "
                                        "exactly one");
            break;
        case YAML_ALIAS_EVENT:
            ok = walk_fail(w, line, "YAML aliases (*%s) are not supported: write the value out",
                           ev.data.alias.anchor ? (const char *)ev.data.alias.anchor : "");
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (strlen(v) != ev.data.scalar.length) {
                ok = walk_fail(w, line, "a NUL character in a value");
                break;
            }
            if (top == NULL && !w->root_seen) {
                w->root_seen = true;
                w->root_null = ev.data.scalar.length == 0 || strcmp(v, "~") == 0 ||
                               strcmp(v, "null") == 0;
                if (!w->root_null)
                    ok = walk_fail(w, line, "the top level must be a mapping of settings "
                                            "(listen:, policies:, ...), not a single value");
                break;
            }
            if (top && top->mapping && top->want_key) {
                w->path_len = top->path_len;
                char key[200];
                snprintf(key, sizeof key, "%s", v);
                walk_append(w, w->path_len ? ".%s" : "%s", key, 0);
                top->want_key = false;
                done = walk_record(w, line);
                break;
            }
            done = walk_node(w, line);
            walk_done(w);
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            bool mapping = ev.type == YAML_MAPPING_START_EVENT;
            if (top == NULL && !w->root_seen) {
                w->root_seen = true;
                if (!mapping) {
                    ok = walk_fail(w, line, "the top level must be a mapping of settings "
                                            "(listen:, policies:, ...), not a list");
                    break;
                }
            }
            if (top && top->mapping && top->want_key) {
                ok = walk_fail(w, line, "a mapping key must be a plain value, not a %s",
                               mapping ? "mapping" : "list");
                break;
            }
            if (w->depth == MAX_DEPTH) {
                ok = walk_fail(w, line, "nesting deeper than %d levels", MAX_DEPTH);
                break;
            }
            done = walk_node(w, line);
            w->frames[w->depth++] = (walk_frame_t){
                .mapping = mapping, .want_key = true, .path_len = w->path_len};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (w->depth > 0)
                w->depth--;
            walk_done(w);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return ok;
}

/* The line of the node at `path` (its key's line for a mapping value), the
 * nth time it occurs; else the line of the nearest ancestor found; 0 when
 * nothing is. */
static size_t path_line(const ctx_t *c, const char *path, unsigned nth) {
    char p[PATH_BUF];
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        walk_t *w = calloc(1, sizeof *w);
        if (w == NULL)
            return 0;
        w->target = p;
        w->nth = nth;
        walk_yaml(w, c->yaml, c->len);
        size_t line = w->found;
        free(w);
        if (line || p[0] == '\0')
            return line;
        /* drop the last ".key" or "[i]" and try the parent */
        char *dot = strrchr(p, '.'), *br = strrchr(p, '[');
        char *cut = dot > br ? dot : br;
        if (cut == NULL)
            cut = p;
        *cut = '\0';
        nth = 1;
    }
}

/* ---- libcyaml's errors, rewritten ---------------------------------------- */

static void cyaml_capture(cyaml_log_t level, void *ctx, const char *fmt, va_list args) {
    ctx_t *c = ctx;
    if (level < CYAML_LOG_ERROR)
        return;
    char line[384];
    vsnprintf(line, sizeof line, fmt, args);
    line[strcspn(line, "\n")] = '\0';
    const char *text = strncmp(line, "Load: ", 6) == 0 ? line + 6 : line;
    if (strcmp(text, "Backtrace:") == 0) {
        c->in_backtrace = true;
        return;
    }
    if (c->in_backtrace && strncmp(text, "  in ", 5) == 0) {
        if (c->nframes == MAX_FRAMES)
            return;
        frame_t *f = &c->frames[c->nframes++];
        memset(f, 0, sizeof *f);
        const char *q;
        if (strncmp(text, "  in mapping field '", 20) == 0) {
            f->field = true;
            q = text + 20;
            size_t n = strcspn(q, "'");
            if (n >= sizeof f->name)
                n = sizeof f->name - 1;
            memcpy(f->name, q, n);
        } else if (strncmp(text, "  in sequence entry '", 21) == 0) {
            f->entry = true;
            f->n = strtoul(text + 21, NULL, 10);
        }
        return;
    }
    if (c->cy_msg[0] == '\0' && !c->in_backtrace)
        snprintf(c->cy_msg, sizeof c->cy_msg, "%s", text);
}

/* Writes the path that the backtrace spells, its innermost `skip_inner`
 * frames left out (frames are logged innermost first), and returns the
 * schema found at that path (NULL if none). `excess`: the innermost entry
 * frame is about a list entry refused for being one too many. */
static const cyaml_schema_value_t *frames_path(const ctx_t *c, size_t skip_inner, bool excess,
                                               char *path, size_t size) {
    const cyaml_schema_value_t *s = &config_schema;
    path[0] = '\0';
    for (size_t k = c->nframes; k-- > skip_inner;) {
        const frame_t *f = &c->frames[k];
        size_t used = strlen(path);
        if (f->field) {
            snprintf(path + used, size - used, "%s%s", used ? "." : "", f->name);
            const cyaml_schema_value_t *next = NULL;
            if (s && s->type == CYAML_MAPPING)
                for (const cyaml_schema_field_t *fl = s->mapping.fields; fl && fl->key; fl++)
                    if (strcmp(fl->key, f->name) == 0)
                        next = &fl->value;
            s = next;
        } else if (f->entry) {
            /* N counts the entries read, the current one included, except
             * when the current one was refused for being one too many. */
            unsigned long i = excess && k == skip_inner ? f->n : (f->n ? f->n - 1 : 0);
            snprintf(path + used, size - used, "[%lu]", i);
            s = s && s->type == CYAML_SEQUENCE ? s->sequence.entry : NULL;
        }
    }
    return s;
}

static const char *what_event(const char *ev) {
    if (strncmp(ev, "SCALAR", 6) == 0)
        return "a single value";
    if (strncmp(ev, "SEQUENCE", 8) == 0)
        return "a list";
    if (strncmp(ev, "MAPPING", 7) == 0)
        return "a mapping";
    return "something else";
}

static const char *what_type(const char *type) {
    if (strncmp(type, "STRING", 6) == 0)
        return "a single value";
    if (strncmp(type, "SEQUENCE", 8) == 0)
        return "a list";
    if (strncmp(type, "MAPPING", 7) == 0)
        return "a mapping (key: value lines)";
    return "something else";
}

static void list_keys(const cyaml_schema_value_t *s, char *buf, size_t size) {
    buf[0] = '\0';
    if (s == NULL || s->type != CYAML_MAPPING)
        return;
    size_t used = 0;
    for (const cyaml_schema_field_t *f = s->mapping.fields; f && f->key; f++) {
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", f->key);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

/* "in policies[0]" or "at the top level" */
static const char *where(const char *path, char *buf, size_t size) {
    if (*path == '\0')
        return "at the top level";
    snprintf(buf, size, "in %s", path);
    return buf;
}

static int cyaml_error(ctx_t *c, cyaml_err_t e) {
    char path[PATH_BUF], at[PATH_BUF + 256], keys[512], show_buf[SHOW_MAX + 8], in[PATH_BUF + 8];
    const char *m = c->cy_msg;
    const char *arg;
    if (e == CYAML_ERR_OOM)
        return oom(c);
    if ((arg = strstr(m, "Unexpected key: ")) != NULL) {
        arg += 16;
        const cyaml_schema_value_t *s = frames_path(c, 1, false, path, sizeof path);
        list_keys(s, keys, sizeof keys);
        join(at, sizeof at, path, arg);
        return report(c, path_line(c, at, 1), "unknown key \"%s\" %s (expected one of %s)",
                      show(arg, show_buf), where(path, in, sizeof in), keys);
    }
    if ((arg = strstr(m, "Missing required mapping field: ")) != NULL) {
        arg += 32;
        frames_path(c, 1, false, path, sizeof path);
        return report(c, path_line(c, path, 1), "missing required key \"%s\" %s", arg,
                      where(path, in, sizeof in));
    }
    if ((arg = strstr(m, "Mapping field already seen: ")) != NULL) {
        arg += 28;
        frames_path(c, 1, false, path, sizeof path);
        join(at, sizeof at, path, arg);
        return report(c, path_line(c, at, 2), "duplicate key \"%s\" %s", arg,
                      where(path, in, sizeof in));
    }
    if (strncmp(m, "Expecting ", 10) == 0 && (arg = strstr(m, "got event: ")) != NULL) {
        frames_path(c, 0, false, path, sizeof path);
        return report(c, path_line(c, path, 1), "%s: expected %s, got %s",
                      *path ? path : "the top level",
                      what_type(m + 10), what_event(arg + 11));
    }
    if (strncmp(m, "Excessive entries", 17) == 0) {
        unsigned long max = strtoul(m + 19, NULL, 10);
        frames_path(c, 0, true, path, sizeof path);
        char list[PATH_BUF];
        snprintf(list, sizeof list, "%s", path);
        char *br = strrchr(list, '[');
        if (br)
            *br = '\0';
        return report(c, path_line(c, path, 1), "%s: too many entries (at most %lu)", list, max);
    }
    frames_path(c, 0, false, path, sizeof path);
    return report(c, path_line(c, path, 1), "%s: %s", *path ? path : "the top level",
                  m[0] ? m : cyaml_strerror(e));
}

/* ---- scalar parsers ------------------------------------------------------ */

typedef struct unit {
    const char *name;
    uint64_t scale;
} unit_t;

/* "<digits>[.<digits>]<unit>" into number * scale, exact, at most max. */
static int parse_scaled(const char *s, const unit_t *units, size_t nunits, uint64_t max,
                        uint64_t *out) {
    if (s == NULL || !isdigit((unsigned char)*s))
        return SL_EINVAL;
    uint64_t whole = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (whole > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            whole = whole * 10 + d;
    }
    uint64_t frac = 0;   /* the fraction's significant digits... */
    unsigned fdigits = 0; /* ...of which there are this many, trailing zeros cut */
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return SL_EINVAL;
        unsigned pos = 0, last = 0;
        uint64_t acc[20] = {0}; /* acc[k]: the first k digits */
        for (; isdigit((unsigned char)*s); s++) {
            pos++;
            if (*s != '0')
                last = pos;
            if (pos < 20)
                acc[pos] = acc[pos - 1] * 10 + (uint64_t)(*s - '0');
        }
        if (last > 18)
            return SL_EINVAL; /* finer than any unit can be exact */
        fdigits = last;
        frac = acc[last];
    }
    const unit_t *u = NULL;
    for (size_t i = 0; i < nunits; i++)
        if (strcmp(s, units[i].name) == 0)
            u = &units[i];
    if (u == NULL)
        return SL_EINVAL;
    if (overflow)
        return SL_ERANGE;
    uint64_t part = 0;
    if (fdigits) {
        uint64_t p10 = 1;
        for (unsigned i = 0; i < fdigits; i++)
            p10 *= 10;
        uint64_t g = sl__gcd_u64(u->scale, p10), d = p10 / g;
        if (frac % d != 0)
            return SL_EINVAL; /* not a whole number of the smallest unit */
        part = frac / d * (u->scale / g);
    }
    if (whole > (max - part) / u->scale)
        return SL_ERANGE;
    *out = whole * u->scale + part;
    return SL_OK;
}

static const unit_t duration_units[] = {
    {"", 1000000},        {"us", 1},        {"ms", 1000},          {"s", 1000000},
    {"m", 60000000},      {"h", 3600000000}, {"d", UINT64_C(86400000000)},
};

int sld_parse_duration(const char *text, sl_usec_t *out) {
    uint64_t v;
    int rc = parse_scaled(text, duration_units, sizeof duration_units / sizeof duration_units[0],
                          (uint64_t)INT64_MAX, &v);
    if (rc == SL_OK && out)
        *out = (sl_usec_t)v;
    return rc;
}

static const unit_t size_units[] = {
    {"", 1},
    {"B", 1},
    {"KB", 1000},
    {"kB", 1000},
    {"MB", 1000000},
    {"GB", 1000000000},
    {"TB", UINT64_C(1000000000000)},
    {"KiB", UINT64_C(1) << 10},
    {"MiB", UINT64_C(1) << 20},
    {"GiB", UINT64_C(1) << 30},
    {"TiB", UINT64_C(1) << 40},
};

int sld_parse_size(const char *text, uint64_t *out) {
    uint64_t v;
    int rc = parse_scaled(text, size_units, sizeof size_units / sizeof size_units[0], UINT64_MAX,
                          &v);
    if (rc == SL_OK && out)
        *out = v;
    return rc;
}

/* ---- typed getters: a raw string at `path` into a checked value ----------- */

static int get_uint(ctx_t *c, const char *path, const char *text, uint64_t min, uint64_t max,
                    uint64_t *out) {
    char b[SHOW_MAX + 8];
    uint64_t v = 0;
    bool ok = text && isdigit((unsigned char)*text), big = false;
    for (const char *s = text; ok && *s; s++) {
        if (!isdigit((unsigned char)*s)) {
            ok = false;
        } else if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) {
            big = true;
        } else {
            v = v * 10 + (uint64_t)(*s - '0');
        }
    }
    char range[64];
    if (max >= UINT64_MAX - 1)
        snprintf(range, sizeof range, "of at least %llu", (unsigned long long)min);
    else
        snprintf(range, sizeof range, "from %llu to %llu", (unsigned long long)min,
                 (unsigned long long)max);
    if (!ok)
        return bad(c, path, "expected a whole number %s, got \"%s\"", range, show(text, b));
    if (big || v < min || v > max)
        return bad(c, path, "%s is out of range: expected a whole number %s", show(text, b),
                   range);
    *out = v;
    return SL_OK;
}

static int get_u32(ctx_t *c, const char *path, const char *text, uint32_t min, uint32_t max,
                   uint32_t *out) {
    uint64_t v;
    int rc = get_uint(c, path, text, min, max, &v);
    if (rc == SL_OK)
        *out = (uint32_t)v;
    return rc;
}

static int get_duration(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                        sl_usec_t *out) {
    char b[SHOW_MAX + 8];
    sl_usec_t v;
    int rc = sld_parse_duration(text, &v);
    if (rc == SL_EINVAL)
        return bad(c, path, "expected a duration like 500ms, 2s, 1m, 1.5h or 7d%s, got \"%s\"",
                   text[0] == '-' ? " (never negative)" : "", show(text, b));
    if (rc != SL_OK || v > max)
        return bad(c, path, "%s is too long (at most %lld days)", show(text, b),
                   (long long)(max / (86400 * SL_USEC_PER_SEC)));
    *out = v;
    return SL_OK;
}

/* A duration of at least a millisecond: the store's timers count in ms. */
static int get_duration_ms(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                           sl_usec_t *out) {
    int rc = get_duration(c, path, text, max, out);
    if (rc == SL_OK && *out < 1000)
        return bad(c, path, "must be at least 1ms");
    return rc;
}

static int get_size(ctx_t *c, const char *path, const char *text, uint64_t *out) {
    char b[SHOW_MAX + 8];
    int rc = sld_parse_size(text, out);
    if (rc == SL_EINVAL)
        return bad(c, path, "expected a size like 4096, 64KiB, 1MiB or 2GB%s, got \"%s\"",
                   text[0] == '-' ? " (never negative)" : "", show(text, b));
    if (rc != SL_OK)
        return bad(c, path, "%s is too large", show(text, b));
    return SL_OK;
}

static int get_bool(ctx_t *c, const char *path, const char *text, bool *out) {
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    char b[SHOW_MAX + 8];
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(text, yes[i]) == 0 || (text[0] == toupper((unsigned char)yes[i][0]) &&
                                          strcmp(text + 1, yes[i] + 1) == 0)) {
            *out = true;
            return SL_OK;
        }
        if (strcmp(text, no[i]) == 0 || (text[0] == toupper((unsigned char)no[i][0]) &&
                                         strcmp(text + 1, no[i] + 1) == 0)) {
            *out = false;
            return SL_OK;
        }
    }
    return bad(c, path, "expected true or false, got \"%s\"", show(text, b));
}

static char *dup_or_fail(ctx_t *c, const char *s) {
    char *d = strdup(s);
    if (d == NULL)
        oom(c);
    return d;
}

/* [A-Za-z0-9_.-]{1,64} */
static int get_name(ctx_t *c, const char *path, const char *text, char **out) {
    char b[SHOW_MAX + 8];
    size_t n = strlen(text);
    bool ok = n >= 1 && n <= MAX_NAME;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)text[i]) || strchr("_.-", text[i]) != NULL;
    if (!ok)
        return bad(c, path, "expected a name of 1 to %d letters, digits, '_', '.' or '-', got "
                            "\"%s\"", MAX_NAME, show(text, b));
    return (*out = dup_or_fail(c, text)) ? SL_OK : SL_ENOMEM;
}

/* An HTTP field name: RFC 9110 token. */
static bool is_token(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > MAX_HEADER_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("!#$%&'*+-.^_`|~", s[i]) == NULL)
            return false;
    return true;
}

/* "a.b.c.d:port" or "[v6]:port", an IP literal (no name lookup). */
static int get_listen(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]) {
    char b[SHOW_MAX + 8], host[64];
    const char *port;
    int family;
    size_t n = strlen(text);
    if (n >= SLD_MAX_ADDR)
        goto bad_form;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - text - 1) >= sizeof host)
            goto bad_form;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        port = close + 2;
        family = AF_INET6;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof host)
            goto bad_form;
        if (memchr(text, ':', (size_t)(colon - text)) != NULL)
            return bad(c, path, "an IPv6 address needs brackets, like [::1]:6390, got \"%s\"",
                       show(text, b));
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        port = colon + 1;
        family = AF_INET;
    }
    unsigned char addr[16];
    if (inet_pton(family, host, addr) != 1)
        return bad(c, path, "\"%s\" is not an IP%s address (host names are not resolved)",
                   show(host, b), family == AF_INET6 ? "v6" : "v4");
    size_t pn = strlen(port);
    bool ok = pn >= 1 && pn <= 5;
    unsigned long p = 0;
    for (size_t i = 0; ok && i < pn; i++) {
        ok = isdigit((unsigned char)port[i]);
        p = p * 10 + (unsigned long)(port[i] - '0');
    }
    if (!ok || p > 65535)
        return bad(c, path, "port must be a number from 0 to 65535, got \"%s\"", show(port, b));
    memcpy(out, text, n + 1);
    return SL_OK;
bad_form:
    return bad(c, path, "expected an address like 127.0.0.1:6390 or [::1]:6390, got \"%s\"",
               show(text, b));
}

/* "addr/prefix" with no host bits set beyond the prefix (base/cidr.c
 * parses it; the messages are the file's). */
static int check_cidr(ctx_t *c, const char *path, const char *text) {
    char b[SHOW_MAX + 8], host[64];
    sld_cidr_t cidr;
    sld_cidr_error_t why;
    if (sld_cidr_parse(text, &cidr, &why) == SL_OK)
        return SL_OK;
    /* a "host" of 64 bytes or more was never read as an address */
    if (why.fault == SLD_CIDR_NO_PREFIX || why.host_len >= sizeof host)
        return bad(c, path, "expected a CIDR like 10.0.0.0/8 or ::1/128 (one address is "
                            "a.b.c.d/32), got \"%s\"", show(text, b));
    switch (why.fault) {
    case SLD_CIDR_BAD_ADDRESS:
        memcpy(host, text, why.host_len);
        host[why.host_len] = '\0';
        return bad(c, path, "\"%s\" is not an IP%s address", show(host, b),
                   why.v6 ? "v6" : "v4");
    case SLD_CIDR_BAD_PREFIX:
        return bad(c, path, "prefix length must be a number from 0 to %u, got \"%s\"",
                   why.max_bits, show(why.prefix, b));
    default:
        return bad(c, path, "%s has bits set after the first %u: did you mean %s/%u?",
                   show(text, b), why.bits, why.network, why.bits);
    }
}

/* ---- policies ------------------------------------------------------------ */

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
        return bad(c, join(p, sizeof p, path, "algorithm"), "expected one of %s, got \"%s\"",
                   algorithm_list, show(r->algorithm, b));
    int rc;
    if ((rc = get_uint(c, join(p, sizeof p, path, "limit"), r->limit, 1, UINT64_MAX, &l.limit)))
        return rc;
    if ((rc = get_duration(c, join(p, sizeof p, path, "period"), r->period, INT64_MAX,
                           &l.period)))
        return rc;
    if (l.period == 0)
        return bad(c, p, "period must be longer than 0");
    bool rate = l.algorithm == SL_GCRA || l.algorithm == SL_TOKEN_BUCKET ||
                l.algorithm == SL_LEAKY_BUCKET;
    if (r->burst) {
        join(p, sizeof p, path, "burst");
        if (!rate)
            return bad(c, p, "burst applies to gcra, token_bucket and leaky_bucket only");
        if ((rc = get_uint(c, p, r->burst, 0, UINT64_MAX - 1, &l.burst)))
            return rc;
    }
    if (r->precision) {
        join(p, sizeof p, path, "precision");
        if (l.algorithm != SL_SLIDING_WINDOW)
            return bad(c, p, "precision applies to sliding_window only");
        if ((rc = get_u32(c, p, r->precision, 1, 65536, &l.precision)))
            return rc;
    }
    if (r->shaper) {
        join(p, sizeof p, path, "shaper");
        if (l.algorithm != SL_LEAKY_BUCKET)
            return bad(c, p, "shaper applies to leaky_bucket only");
        if ((rc = get_bool(c, p, r->shaper, &l.shaper)))
            return rc;
    }
    if (r->count_denied &&
        (rc = get_bool(c, join(p, sizeof p, path, "count_denied"), r->count_denied,
                       &l.count_denied)))
        return rc;
    const char *why = NULL;
    if (sl_limit_validate(&l, &why) != SL_OK)
        return bad(c, join(p, sizeof p, path, reason_field(why ? why : "", r)), "%s",
                   why ? why : "invalid limit");
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
            return oom(c);
        if (rc != SL_OK) {
            const char *reason = bare_reason(why, pol->name);
            /* valid alone, too large once the soft tolerance is added */
            bool soft = pol->mode == SL_MODE_SOFT && sl_limit_validate(&limits[i - 1], NULL) == 0;
            return bad(c, indexed ? entry(p, sizeof p, path, i - 1) : path, "%s%s",
                       reason[0] ? reason : sl_strerror(rc),
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
        return bad(c, path, "needs at least one limit, like {algorithm: gcra, limit: 10, "
                            "period: 1s}");
    for (unsigned i = 0; i < n; i++) {
        int rc = get_limit(c, entry(p, sizeof p, path, i), &raw[i], &out[i]);
        if (rc)
            return rc;
    }
    *nout = n;
    return SL_OK;
}

static int get_key_attrs(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol) {
    static const char *const plain[] = {"key", "user", "ip", "endpoint", "method"};
    char p[PATH_BUF], b[SHOW_MAX + 8];
    if (r->key_count == 0) { /* absent, or written empty */
        pol->key_attrs[0] = dup_or_fail(c, "key");
        pol->nkey_attrs = 1;
        return pol->key_attrs[0] ? SL_OK : SL_ENOMEM;
    }
    for (unsigned i = 0; i < r->key_count; i++) {
        const char *a = r->key[i];
        bool ok = strncmp(a, "header:", 7) == 0 && is_token(a + 7);
        for (size_t k = 0; !ok && k < sizeof plain / sizeof plain[0]; k++)
            ok = strcmp(a, plain[k]) == 0;
        entry(p, sizeof p, path, i);
        if (!ok)
            return bad(c, p, "expected one of key, user, ip, endpoint, method, header:<Name>, "
                             "got \"%s\"", show(a, b));
        if (strcmp(a, "key") == 0 && r->key_count > 1)
            return bad(c, p, "\"key\" (the key the client gives) cannot be combined with other "
                             "attributes");
        for (unsigned k = 0; k < i; k++)
            if (strcasecmp(a, r->key[k]) == 0)
                return bad(c, p, "\"%s\" is already in the key", show(a, b));
        if ((pol->key_attrs[i] = dup_or_fail(c, a)) == NULL)
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
        return oom(c);
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
        entry(q, sizeof q, join(p, sizeof p, path, "tiers"), dup->tier);
        entry(p, sizeof p, join(keys, sizeof keys, q, "keys"), dup->index);
        if (first->tier == dup->tier)
            rc = bad(c, p, "key \"%s\" is listed twice in tier %s", show(dup->key, b),
                     r->tiers[dup->tier].name);
        else
            rc = bad(c, p, "key \"%s\" is already in tier %s: a key belongs to one tier only",
                     show(dup->key, b), r->tiers[first->tier].name);
    }
    free(all);
    return rc;
}

static int get_tiers(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol,
                     uint32_t max_key_bytes) {
    char p[PATH_BUF], q[PATH_BUF], b[SHOW_MAX + 8];
    int rc;
    if (r->tiers_count == 0)
        return SL_OK;
    if ((pol->tiers = calloc(r->tiers_count, sizeof *pol->tiers)) == NULL)
        return oom(c);
    for (unsigned t = 0; t < r->tiers_count; t++) {
        const raw_tier_t *rt = &r->tiers[t];
        sld_tier_t *tier = &pol->tiers[t];
        pol->ntiers = t + 1;
        entry(p, sizeof p, join(q, sizeof q, path, "tiers"), t);
        if ((rc = get_name(c, join(q, sizeof q, p, "name"), rt->name, &tier->name)))
            return rc;
        for (unsigned k = 0; k < t; k++)
            if (strcmp(pol->tiers[k].name, tier->name) == 0)
                return bad(c, q, "tier name \"%s\" is already used in this policy",
                           tier->name);
        /* the daemon names a tier's counters "<policy>/<tier>" */
        if (strlen(pol->name) + 1 + strlen(tier->name) > SL_MAX_POLICY_NAME)
            return bad(c, q, "policy and tier names together must be at most %d characters",
                       SL_MAX_POLICY_NAME - 1);
        if ((rc = get_limits(c, join(q, sizeof q, p, "limits"), rt->limits, rt->limits_count,
                             tier->limits, &tier->nlimits)))
            return rc;
        if ((rc = compile_check(c, q, true, pol, tier->limits, tier->nlimits)))
            return rc;
        if (rt->keys_count && (tier->keys = calloc(rt->keys_count, sizeof *tier->keys)) == NULL)
            return oom(c);
        for (unsigned i = 0; i < rt->keys_count; i++) {
            size_t n = strlen(rt->keys[i]);
            if (n == 0 || n > max_key_bytes) {
                char at[PATH_BUF];
                entry(at, sizeof at, join(q, sizeof q, p, "keys"), i);
                return bad(c, at, "a key must be 1 to %u bytes (limits.max_key_bytes), got "
                                 "\"%s\"", (unsigned)max_key_bytes, show(rt->keys[i], b));
            }
            if ((tier->keys[i] = dup_or_fail(c, rt->keys[i])) == NULL)
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

static int get_failure(ctx_t *c, const char *path, const char *text, sld_store_failure_t *out) {
    char b[SHOW_MAX + 8];
    if (sld_store_failure_parse(text, out) != SL_OK)
        return bad(c, path, "expected open, closed or local, got \"%s\"", show(text, b));
    return SL_OK;
}

static int get_policy(ctx_t *c, const char *path, const raw_policy_t *r, sld_policy_t *pol,
                      uint32_t max_key_bytes) {
    char p[PATH_BUF], b[SHOW_MAX + 8], in[PATH_BUF + 8];
    int rc;
    const char *name = r->name ? r->name : c->policy_name;
    if (name == NULL)
        return report(c, path_line(c, path, 1), "missing required key \"name\" %s",
                      where(path, in, sizeof in));
    if (r->name && c->policy_name && strcmp(r->name, c->policy_name) != 0)
        return bad(c, join(p, sizeof p, path, "name"), "\"%s\" is not the name in the path, \"%s\"",
                   show(r->name, b), c->policy_name);
    if ((rc = get_name(c, join(p, sizeof p, path, "name"), name, &pol->name)))
        return rc;
    if ((rc = get_key_attrs(c, join(p, sizeof p, path, "key"), r, pol)))
        return rc;
    pol->mode = SL_MODE_HARD;
    if (r->mode && sl_mode_parse(r->mode, &pol->mode) != SL_OK)
        return bad(c, join(p, sizeof p, path, "mode"),
                   "expected one of hard, soft, shadow, elastic, got \"%s\"", show(r->mode, b));
    if (r->soft_percent) {
        if (pol->mode != SL_MODE_SOFT)
            return bad(c, join(p, sizeof p, path, "soft_percent"),
                       "soft_percent applies to mode: soft only");
        if ((rc = get_u32(c, join(p, sizeof p, path, "soft_percent"), r->soft_percent, 1, 1000,
                          &pol->soft_percent)))
            return rc;
    } else if (pol->mode == SL_MODE_SOFT) {
        return bad(c, join(p, sizeof p, path, "mode"),
                   "mode soft needs soft_percent (1 to 1000): how far over the limits to admit");
    }
    if (r->pool) {
        if (pol->mode != SL_MODE_ELASTIC)
            return bad(c, join(p, sizeof p, path, "pool"), "a pool applies to mode: elastic only");
        if ((rc = get_limit(c, join(p, sizeof p, path, "pool"), r->pool, &pol->pool)))
            return rc;
        pol->has_pool = true;
    } else if (pol->mode == SL_MODE_ELASTIC) {
        return bad(c, join(p, sizeof p, path, "mode"),
                   "mode elastic needs a pool, like pool: {algorithm: token_bucket, limit: 1000, "
                   "period: 1s}");
    }
    if ((rc = get_limits(c, join(p, sizeof p, path, "limits"), r->limits, r->limits_count,
                         pol->limits, &pol->nlimits)))
        return rc;
    if (pol->has_pool) {
        /* the pool on its own first, so that its errors point at it */
        sld_policy_t alone = *pol;
        alone.mode = SL_MODE_HARD;
        memset(&alone.pool, 0, sizeof alone.pool);
        if ((rc = compile_check(c, join(p, sizeof p, path, "pool"), false, &alone, &pol->pool, 1)))
            return rc;
    }
    if ((rc = compile_check(c, join(p, sizeof p, path, "limits"), true, pol, pol->limits, pol->nlimits)))
        return rc;
    if (r->on_store_failure &&
        (rc = get_failure(c, join(p, sizeof p, path, "on_store_failure"), r->on_store_failure,
                          &pol->on_store_failure)))
        return rc;
    return get_tiers(c, path, r, pol, max_key_bytes);
}

/* ---- the whole file -------------------------------------------------------- */

static int get_admin_token(ctx_t *c, const char *text, char **out) {
    const char *token = text;
    if (strncmp(text, "env:", 4) == 0) {
        const char *var = text + 4;
        bool ok = var[0] != '\0' && !isdigit((unsigned char)var[0]);
        for (const char *s = var; ok && *s; s++)
            ok = isalnum((unsigned char)*s) || *s == '_';
        char b[SHOW_MAX + 8];
        if (!ok)
            return bad(c, "admin_token", "\"%s\" is not an environment variable name",
                       show(var, b));
        token = getenv(var);
        if (token == NULL)
            return bad(c, "admin_token", "environment variable %s is not set", var);
        if (token[0] == '\0')
            return bad(c, "admin_token", "environment variable %s is empty", var);
    }
    /* never quote the token itself in a message */
    size_t n = strlen(token);
    if (n < MIN_TOKEN)
        return bad(c, "admin_token", "a token needs at least %d characters (this one has %zu)",
                   MIN_TOKEN, n);
    if (n > MAX_TOKEN)
        return bad(c, "admin_token", "a token has at most %d characters", MAX_TOKEN);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] <= 0x20 || (unsigned char)token[i] >= 0x7f)
            return bad(c, "admin_token", "a token is printable ASCII without spaces");
    return (*out = dup_or_fail(c, token)) ? SL_OK : SL_ENOMEM;
}

/* The store's URL: its scheme here, the rest when the client parses it
 * (sluiced checks it before it serves, so --check-config catches it too). */
static int get_store_url(ctx_t *c, const char *text, char **out) {
    static const char *const schemes[] = {"redis://", "sentinel://", "redis-cluster://"};
    char b[SHOW_MAX + 8];
    for (size_t i = 0; i < 3; i++)
        if (strncmp(text, schemes[i], strlen(schemes[i])) == 0 && strlen(text) <= MAX_PATH_BYTES)
            return (*out = dup_or_fail(c, text)) ? SL_OK : SL_ENOMEM;
    if (strncmp(text, "rediss://", 9) == 0)
        return bad(c, "store.url", "TLS (rediss://) is not supported; use redis:// on a trusted "
                                   "network or a TLS tunnel");
    return bad(c, "store.url", "expected redis://host:port, sentinel://host:port,.../master or "
                               "redis-cluster://host:port,..., got \"%s\"", show(text, b));
}

static int get_snapshot(ctx_t *c, sld_config_t *cfg) {
    sld_snapshot_setting_t s;
    char msg[SLD_MAX_ERROR];
    size_t line = 0;
    int rc = sld_snapshot_setting_read(c->yaml, c->len, &s, &line, msg, sizeof msg);
    if (rc == SL_ENOMEM)
        return oom(c);
    if (rc != SL_OK)
        return report(c, line, "%s", msg);
    cfg->snapshot_mode = s.mode;
    if (s.path && (s.path[0] == '\0' || strlen(s.path) >= MAX_PATH_BYTES))
        rc = bad(c, "store.snapshot.path", "expected a file path of 1 to %d bytes",
                 MAX_PATH_BYTES - 1);
    if (rc == SL_OK && s.interval)
        rc = get_duration(c, "store.snapshot.interval", s.interval, YEAR_USEC, &cfg->snapshot_interval);
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
        return bad(c, "store.type", "expected memory or redis, got \"%s\"", show(s->type, b));
    if (redis && s->url == NULL)
        return bad(c, "store.type", "type redis needs store.url, like redis://127.0.0.1:6379");
    if (!redis && s->url)
        return bad(c, "store.url", "a url applies to type: redis only");
    if (s->url && (rc = get_store_url(c, s->url, &cfg->store_url)))
        return rc;
    if (s->sync) {
        if (strcmp(s->sync, "strict") == 0)
            cfg->store_write_back = false;
        else if (strcmp(s->sync, "write_back") == 0)
            cfg->store_write_back = true;
        else
            return bad(c, "store.sync", "expected strict or write_back, got \"%s\"",
                       show(s->sync, b));
    }
    if (s->sync_interval && (rc = get_duration_ms(c, "store.sync_interval", s->sync_interval,
                                                   60 * SL_USEC_PER_SEC, &cfg->store_sync_interval)))
        return rc;
    if (s->timeout && (rc = get_duration_ms(c, "store.timeout", s->timeout, 60 * SL_USEC_PER_SEC,
                                            &cfg->store_timeout)))
        return rc;
    if (s->clock) {
        if (strcmp(s->clock, "server") == 0)
            cfg->store_clock_local = false;
        else if (strcmp(s->clock, "local") == 0)
            cfg->store_clock_local = true;
        else
            return bad(c, "store.clock", "expected server (Redis TIME) or local, got \"%s\"",
                       show(s->clock, b));
    }
    if (s->on_store_failure &&
        (rc = get_failure(c, "store.on_store_failure", s->on_store_failure, &cfg->on_store_failure)))
        return rc;
    if (s->nodes && (rc = get_u32(c, "store.nodes", s->nodes, 1, 10000, &cfg->store_nodes)))
        return rc;
    if (s->breaker && s->breaker->failures &&
        (rc = get_u32(c, "store.breaker.failures", s->breaker->failures, 1, 1000000,
                      &cfg->breaker_failures)))
        return rc;
    if (s->breaker && s->breaker->cooldown &&
        (rc = get_duration_ms(c, "store.breaker.cooldown", s->breaker->cooldown, 3600 * SL_USEC_PER_SEC,
                              &cfg->breaker_cooldown)))
        return rc;
    if (s->max_memory) {
        if ((rc = get_size(c, "store.max_memory", s->max_memory, &cfg->max_memory)))
            return rc;
        if (cfg->max_memory != 0 && cfg->max_memory < (UINT64_C(1) << 20))
            return bad(c, "store.max_memory", "must be 0 (unbounded) or at least 1MiB");
#if SIZE_MAX < UINT64_MAX
        if (cfg->max_memory > SIZE_MAX)
            return bad(c, "store.max_memory", "is more than this machine can address");
#endif
    }
    if (s->shards) {
        if ((rc = get_u32(c, "store.shards", s->shards, 0, 65536, &cfg->shards)))
            return rc;
        if (cfg->shards & (cfg->shards - 1))
            return bad(c, "store.shards", "must be 0 (default) or a power of two, got %u",
                       (unsigned)cfg->shards);
    }
    return get_snapshot(c, cfg);
}

/* A front's address, or "off" / "" for a front that does not listen. */
static int get_front(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]) {
    if (text == NULL)
        return SL_OK;
    if (text[0] == '\0' || strcmp(text, "off") == 0) {
        out[0] = '\0';
        return SL_OK;
    }
    return get_listen(c, path, text, out);
}

static int get_config(ctx_t *c, const raw_config_t *r, sld_config_t *cfg) {
    char p[PATH_BUF], b[SHOW_MAX + 8];
    int rc;
    if (r->listen && (rc = get_front(c, "listen.resp", r->listen->resp, cfg->resp_listen)))
        return rc;
    if (r->listen && (rc = get_front(c, "listen.http", r->listen->http, cfg->http_listen)))
        return rc;
    if (cfg->resp_listen[0] == '\0' && cfg->http_listen[0] == '\0')
        return bad(c, "listen", "turns off both fronts (resp and http): nothing would answer");
    if (r->threads && (rc = get_u32(c, "threads", r->threads, 0, 256, &cfg->threads)))
        return rc;
    if (r->limits) {
        const raw_limits_t *l = r->limits;
        uint64_t size;
        if (l->max_connections && (rc = get_u32(c, "limits.max_connections", l->max_connections,
                                                1, 1000000, &cfg->max_connections)))
            return rc;
        if (l->max_request_bytes) {
            if ((rc = get_size(c, "limits.max_request_bytes", l->max_request_bytes, &size)))
                return rc;
            if (size < 1024 || size > (UINT64_C(512) << 20))
                return bad(c, "limits.max_request_bytes", "%s is out of range (1KiB to 512MiB)",
                           show(l->max_request_bytes, b));
            cfg->max_request_bytes = (uint32_t)size;
        }
        if (l->max_key_bytes && (rc = get_u32(c, "limits.max_key_bytes", l->max_key_bytes, 1,
                                              65536, &cfg->max_key_bytes)))
            return rc;
        if (l->idle_timeout && (rc = get_duration(c, "limits.idle_timeout", l->idle_timeout,
                                                  YEAR_USEC, &cfg->idle_timeout)))
            return rc;
        if (l->write_timeout && (rc = get_duration(c, "limits.write_timeout", l->write_timeout,
                                                   YEAR_USEC, &cfg->write_timeout)))
            return rc;
    }
    if (cfg->write_timeout < 0) /* not given: as idle_timeout */
        cfg->write_timeout = cfg->idle_timeout;
    if (r->store && (rc = get_store(c, r->store, cfg)))
        return rc;
    if (r->trusted_proxies_count) {
        cfg->trusted_proxies = calloc(r->trusted_proxies_count, sizeof *cfg->trusted_proxies);
        if (cfg->trusted_proxies == NULL)
            return oom(c);
        for (unsigned i = 0; i < r->trusted_proxies_count; i++) {
            if ((rc = check_cidr(c, entry(p, sizeof p, "trusted_proxies", i),
                                 r->trusted_proxies[i])))
                return rc;
            if ((cfg->trusted_proxies[i] = dup_or_fail(c, r->trusted_proxies[i])) == NULL)
                return SL_ENOMEM;
            cfg->ntrusted_proxies = i + 1;
        }
    }
    if (r->ipv6_prefix && (rc = get_u32(c, "ipv6_prefix", r->ipv6_prefix, 1, 128,
                                        &cfg->ipv6_prefix)))
        return rc;
    if (r->auth_deny_status) {
        if ((rc = get_u32(c, "auth_deny_status", r->auth_deny_status, 100, 599, &cfg->auth_deny_status)))
            return rc;
        uint32_t st = cfg->auth_deny_status;
        if (st != 401 && st != 403 && st != 429 && st != 503)
            return bad(c, "auth_deny_status", "expected one of 401, 403, 429, 503, got %u", st);
    }
    if (r->user_header) {
        if (!is_token(r->user_header))
            return bad(c, "user_header", "expected an HTTP header name like X-User-Id, got "
                                         "\"%s\"", show(r->user_header, b));
        free(cfg->user_header);
        if ((cfg->user_header = dup_or_fail(c, r->user_header)) == NULL)
            return SL_ENOMEM;
    }
    if (r->admin_token && (rc = get_admin_token(c, r->admin_token, &cfg->admin_token)))
        return rc;

    if (r->policies_count == 0)
        return bad(c, "policies", "at least one policy is needed");
    if ((cfg->policies = calloc(r->policies_count, sizeof *cfg->policies)) == NULL)
        return oom(c);
    for (unsigned i = 0; i < r->policies_count; i++) {
        cfg->npolicies = i + 1;
        if ((rc = get_policy(c, entry(p, sizeof p, "policies", i), &r->policies[i],
                             &cfg->policies[i], cfg->max_key_bytes)))
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
                return bad(c, p, "policy name \"%s\" is already used (line %zu)",
                           cfg->policies[i].name, path_line(c, first, 1));
            }
    return SL_OK;
}

static sld_config_t *config_defaults(ctx_t *c) {
    sld_config_t *cfg = calloc(1, sizeof *cfg);
    if (cfg == NULL)
        return NULL;
    memcpy(cfg->resp_listen, DEFAULT_RESP, sizeof DEFAULT_RESP);
    memcpy(cfg->http_listen, DEFAULT_HTTP, sizeof DEFAULT_HTTP);
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

static int parse(const char *name, const char *policy_name, const char *yaml, size_t len,
                 sld_config_t **out, char *err, size_t err_len) {
    ctx_t c = {.name = name ? name : "(embedded default)", .policy_name = policy_name, .yaml = yaml,
               .len = len, .err = err, .err_len = err_len};
    if (err && err_len)
        err[0] = '\0';
    if (out == NULL || (yaml == NULL && len != 0))
        return report(&c, 0, "no configuration given");
    if (len > MAX_FILE_BYTES)
        return report(&c, 0, "the file is larger than %u MiB", MAX_FILE_BYTES >> 20);

    /* 1. syntax and what libcyaml cannot check */
    walk_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return oom(&c);
    bool ok = walk_yaml(w, yaml ? yaml : "", len);
    if (!ok)
        report(&c, w->err_line, "%s", w->err_msg);
    bool empty = !w->root_seen || w->root_null;
    free(w);
    if (!ok)
        return SL_EINVAL;

    /* 2. the schema */
    raw_config_t *raw = NULL;
    cyaml_config_t cy = {.log_fn = cyaml_capture, .log_ctx = &c, .mem_fn = cyaml_mem,
                         .log_level = CYAML_LOG_ERROR, .flags = CYAML_CFG_NO_ALIAS};
    cyaml_err_t e = empty ? CYAML_OK
                          : cyaml_load_data((const uint8_t *)yaml, len, &cy, &config_schema,
                                            (cyaml_data_t **)&raw, NULL);
    if (e != CYAML_OK) {
        cyaml_error(&c, e);
        return e == CYAML_ERR_OOM ? SL_ENOMEM : SL_EINVAL;
    }
    if (raw == NULL)
        return report(&c, 0, "the file is empty: at least a policies: list is needed");

    /* 3. values */
    sld_config_t *cfg = config_defaults(&c);
    int rc = cfg ? get_config(&c, raw, cfg) : oom(&c);
    cyaml_free(&cy, &config_schema, raw, 0);
    if (rc != SL_OK) {
        sld_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return SL_OK;
}

int sld_config_parse(const char *name, const char *yaml, size_t len, sld_config_t **out,
                     char *err, size_t err_len) {
    return parse(name, NULL, yaml, len, out, err, err_len);
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

static void free_policy(sld_policy_t *p) {
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

void sld_config_free(sld_config_t *config) {
    if (config == NULL)
        return;
    for (size_t i = 0; i < config->npolicies; i++)
        free_policy(&config->policies[i]);
    free(config->policies);
    for (size_t i = 0; i < config->ntrusted_proxies; i++)
        free(config->trusted_proxies[i]);
    free(config->trusted_proxies);
    free(config->source);
    free(config->snapshot_path);
    free(config->store_url);
    free(config->user_header);
    free(config->admin_token);
    free(config);
}

/* ---- copies, for the admin API ------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *ok) {
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        *ok = false;
    return d;
}

/* A deep copy of src into dst (zeroed); false on allocation failure, with
 * whatever was copied left for free_policy(). */
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

sld_config_t *sld_config_edit(const sld_config_t *cfg, const sld_policy_t *put, const char *remove) {
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
    c->admin_token = dup_or_null(cfg->admin_token, &ok);
    if (cfg->ntrusted_proxies && (c->trusted_proxies = calloc(cfg->ntrusted_proxies, sizeof(char *))) == NULL)
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

/* Messages about the wrapped document, told about the body instead: lines
 * counted from the body's first, "policies[0]." left out. */
static void unwrap_error(char *err, size_t err_len, long shift) {
    const char *prefix = "request body:";
    size_t pl = strlen(prefix);
    char out[SLD_MAX_ERROR], *o = out;
    size_t room = sizeof out;
    const char *m = err;
    if (strncmp(m, prefix, pl) == 0 && isdigit((unsigned char)m[pl])) {
        char *end;
        long line = strtol(m + pl, &end, 10) - shift;
        int n = snprintf(o, room, "request body:%ld", line > 0 ? line : 1);
        o += n;
        room -= (size_t)n;
        m = end;
    }
    while (*m && room > 1) {
        if (strncmp(m, "policies[0].", 12) == 0) {
            m += 12;
        } else if (strncmp(m, "in policies[0]", 14) == 0) {
            int n = snprintf(o, room, "in the policy");
            o += n < (int)room ? n : (int)room - 1;
            room -= n < (int)room ? (size_t)n : room - 1;
            m += 14;
        } else {
            *o++ = *m++;
            room--;
        }
    }
    *o = '\0';
    snprintf(err, err_len, "%s", out);
}

int sld_config_parse_policy(const char *name, const char *json, size_t len, uint32_t max_key_bytes,
                            sld_policy_t **out, char *err, size_t err_len) {
    /* The body is the policy as the file writes it, in JSON, which is YAML's
     * flow syntax: it goes through the very same loader and checks, in a
     * document with the running key size limit. The name comes from the
     * path; the body may repeat it. */
    size_t n = strlen(name);
    bool name_ok = n >= 1 && n <= 64;
    for (size_t k = 0; name_ok && k < n; k++)
        name_ok = isalnum((unsigned char)name[k]) || name[k] == '_' || name[k] == '.' || name[k] == '-';
    if (!name_ok) {
        snprintf(err, err_len, "policy name: expected 1 to 64 of A-Z a-z 0-9 _ . -");
        return SL_EINVAL;
    }
    size_t i = 0;
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n'))
        i++;
    if (i == len || json[i] != '{') {
        snprintf(err, err_len, "request body: expected a JSON object");
        return SL_EINVAL;
    }
    sld_buf_t doc = {0};
    sld_buf_printf(&doc, "limits: {max_key_bytes: %u}\npolicies:\n  - ", max_key_bytes);
    sld_buf_append(&doc, json + i, len - i);
    sld_buf_append(&doc, "\n", 1);
    if (doc.failed) {
        sld_buf_free(&doc);
        return SL_ENOMEM;
    }
    long shift = 2; /* the document's lines before the body's '{' ... */
    for (size_t k = 0; k < i; k++)
        shift -= json[k] == '\n'; /* ... less the body's own, which were dropped */
    sld_config_t *cfg = NULL;
    int rc = parse("request body", name, doc.data, doc.len, &cfg, err, err_len);
    sld_buf_free(&doc);
    if (rc != SL_OK) {
        if (err && err_len)
            unwrap_error(err, err_len, shift);
        return rc;
    }
    sld_policy_t *p = malloc(sizeof *p);
    if (p == NULL) {
        sld_config_free(cfg);
        return SL_ENOMEM;
    }
    *p = cfg->policies[0]; /* taken over: the config forgets it */
    cfg->npolicies = 0;
    sld_config_free(cfg);
    *out = p;
    return SL_OK;
}

void sld_config_policy_free(sld_policy_t *p) {
    if (p == NULL)
        return;
    free_policy(p);
    free(p);
}
