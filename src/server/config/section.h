/* section.h -- the configuration fronts register, as h2o's handler +
 * configurator pairs: config/ reads the file with what they registered and
 * never names a front. A front registers
 *   - its listen key (sld_config_listen_t): "resp" is listen.resp, with its
 *     default address (or none: off unless given) and the command-line
 *     option that overrides it (--resp);
 *   - its top-level sections (sld_config_section_t): a mapping with a
 *     libcyaml schema (every scalar a string) and hooks that turn it into
 *     the front's own settings ("gateway:"), or a secret, one scalar read by
 *     config/'s secret rules ("requirepass:", "admin_token:").
 *
 * Whoever wires the daemon (daemon/wiring.c, sld_daemon_config_register)
 * sets both tables once, before the first load; every load after that (the
 * start, SIGHUP reloads, --check-config) reads them. Unknown keys inside a
 * section or under listen:, missing keys and wrong shapes get the file's
 * usual "FILE:LINE: path: message"; a section's own checks report the same
 * way through sld_config_bad() and the helpers below, by the path of the
 * node ("gateway.routes[0].excess").
 *
 * The parsed settings live in sld_config_t: listen addresses by
 * registration index (sld_config_t.listen), sections' values opaque to
 * config/; a mapping's value is shared (not copied) by the copies the admin
 * API makes and freed with the last one, a secret is copied with them.
 * The older top-level keys (store:, limits:, ...) stay where they are.
 *
 * Not here: what a section means (its front), the rest of the file (config.c).
 */
#ifndef SL_SERVER_CONFIG_SECTION_H
#define SL_SERVER_CONFIG_SECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cyaml/cyaml.h>

#include "server/config/config.h"

/* The schema's building blocks, the same for config/'s own keys and every
 * section's: optional fields; mappings and lists that may be written empty
 * ("store:" with every line commented out), which read as absent; strings
 * held by pointer; a list of strings. */
#define SLD_CFG_OPT CYAML_FLAG_OPTIONAL
#define SLD_CFG_NULLABLE CYAML_FLAG_POINTER_NULL
#define SLD_CFG_STR(key, flags, type, member)                                           \
    CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER | (flags), type, member, 0,          \
                           CYAML_UNLIMITED)
extern const cyaml_schema_value_t sld_config_string_entry;



/* The load in progress, as a section's hooks see it. */
typedef struct sld_config_ctx sld_config_ctx_t;

/* ---- listen keys -------------------------------------------------------------------------- */

/* A front's key under listen: (and its command-line option). Its value is
 * an IP address and a port ("127.0.0.1:6390", "[::1]:0"; port 0 = any free
 * port; never a host name), or "off" / "" for a front that does not listen. */
typedef struct sld_config_listen {
    const char *name;        /* the key: "resp" is listen.resp */
    const char *fallback;    /* the address when the file and the option give none;
                                NULL: off unless given */
    const char *option;      /* the option that overrides the file: "--resp" */
    const char *help;        /* its line in sluiced --help, after "--resp HOST:PORT|off " */
} sld_config_listen_t;

/* The listen keys every later load reads, in the order listen: lists them
 * (kept, not copied; at most SLD_MAX_LISTENS). Call before any load and
 * before the command line is read, from one thread; n 0 clears them.
 * SL_EINVAL when too many, a name or an option is given twice, or an
 * option does not start with "--" (the table is left as it was). */
int sld_config_listens_set(const sld_config_listen_t *const *defs, size_t n);

/* The registered listen keys: the i-th, or NULL past the last. */
const sld_config_listen_t *sld_config_listen_def(size_t i);

/* cfg's address for listen key `name`: "" when that front does not listen,
 * NULL when no front registered the name. Valid as long as cfg is. */
const char *sld_config_listen(const sld_config_t *cfg, const char *name);

/* Sets listen key i of cfg from its command-line option (text as the file
 * takes it); SL_EINVAL and "command line: --resp: message" when bad. */
int sld_config_listen_override(sld_config_t *cfg, size_t i, const char *text, char *err,
                               size_t err_len);

/* Whether anything would answer: a listen key that is on, or a section of
 * a front with its own listener (sld_config_section_t.listens). */
bool sld_config_serves(const sld_config_t *cfg);

/* The listen keys' names for a message: "resp and http" ("a, b and c");
 * returns the number of keys. */
size_t sld_config_listen_names(char *buf, size_t size);

/* ---- sections ------------------------------------------------------------------------------ */

typedef enum sld_config_kind {
    SLD_SECTION_MAPPING = 0, /* a mapping: schema, parse, check, free */
    SLD_SECTION_SECRET       /* one scalar, a secret (units.c's secret rules): a literal,
                                or "env:NAME" read at load; its value is the string */
} sld_config_kind_t;

typedef struct sld_config_section {
    const char *name;                    /* the top-level key: "gateway" */
    sld_config_kind_t kind;
    /* SLD_SECTION_SECRET: what the secret is, in messages ("a password"). */
    const char *secret;
    /* SLD_SECTION_MAPPING: a mapping held by pointer:
     * CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_type, fields); config/
     * makes it optional and allows it empty. */
    const cyaml_schema_value_t *schema;
    /* A front with its own listener: a file that has this section and no
     * listen: key opens none of the listen keys' default addresses. */
    bool listens;
    /* SLD_SECTION_MAPPING: raw (what libcyaml loaded) into *out: SL_OK, or
     * the error reported through sld_config_bad() and the like (returned
     * as is). */
    int (*parse)(sld_config_ctx_t *c, const void *raw, void **out);
    /* After the whole file is read: the section against the rest (its
     * policies, ...). NULL: nothing to check. */
    int (*check)(sld_config_ctx_t *c, const void *value, const sld_config_t *cfg);
    void (*free)(void *value);   /* SLD_SECTION_MAPPING */
} sld_config_section_t;

/* The sections every later load reads (kept, not copied: static tables;
 * at most SLD_MAX_SECTIONS; names must not be a built-in key). Secrets are
 * read, and listed in messages, after the built-in scalar keys and before
 * policies:; mappings after policies:, each kind in the order given. Call
 * before any load, from one thread; n 0 clears them. SL_EINVAL when too
 * many or a name is given twice (the table is left as it was). */
int sld_config_sections_set(const sld_config_section_t *const *defs, size_t n);

/* The parsed settings of section `name` in cfg, or NULL when the file did
 * not have it. Valid as long as cfg is. */
const void *sld_config_section(const sld_config_t *cfg, const char *name);

/* The same by the registered definition (a pointer comparison per
 * section: for lookups on every request). */
const void *sld_config_value(const sld_config_t *cfg, const sld_config_section_t *def);

/* Settings held beyond the configuration they came with (a front reads
 * them at start and keeps them while reloads replace the configuration). */
typedef struct sld_config_part sld_config_part_t;
sld_config_part_t *sld_config_section_hold(const sld_config_t *cfg, const char *name);
const void *sld_config_part_value(const sld_config_part_t *part);
void sld_config_part_release(sld_config_part_t *part);

/* ---- for a section's hooks: messages and values with the file's rules -------------------- */

/* "NAME:LINE: path: message" (the line of the node at path); SL_EINVAL. */
int sld_config_bad(sld_config_ctx_t *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "out of memory"; SL_ENOMEM. */
int sld_config_oom(sld_config_ctx_t *c);
/* A value quoted for a message, printable and bounded (buf of 64 bytes). */
const char *sld_config_show(const char *text, char buf[64]);
/* Paths: "parent.child" and "parent[i]" into buf[0..size). */
char *sld_config_join(char *buf, size_t size, const char *parent, const char *child);
char *sld_config_entry(char *buf, size_t size, const char *parent, size_t i);
int sld_config_get_u32(sld_config_ctx_t *c, const char *path, const char *text, uint32_t min,
                       uint32_t max, uint32_t *out);
/* A duration of at least a millisecond, at most max. */
int sld_config_get_duration_ms(sld_config_ctx_t *c, const char *path, const char *text,
                               sl_usec_t max, sl_usec_t *out);
/* [A-Za-z0-9_.-]{1,64}, copied. */
int sld_config_get_name(sld_config_ctx_t *c, const char *path, const char *text, char **out);
/* "a.b.c.d:port" or "[v6]:port". */
int sld_config_get_listen(sld_config_ctx_t *c, const char *path, const char *text,
                          char out[SLD_MAX_ADDR]);
/* strdup(), reporting out of memory. */
char *sld_config_dup(sld_config_ctx_t *c, const char *s);
/* The text being read, for a section with a node libcyaml cannot describe
 * (a scalar or a list: the section reads that node itself). */
const char *sld_config_source(sld_config_ctx_t *c, size_t *len);
/* The policy named `name` in cfg, or NULL. */
const sld_policy_t *sld_config_policy(const sld_config_t *cfg, const char *name);

#endif
