/* section.h -- configuration sections that their fronts register, as h2o's
 * handler + configurator pairs: a front says which top-level key it owns,
 * the shape of its mapping (a libcyaml schema, every scalar a string) and
 * how to turn that into its own settings; config/ reads the file with them
 * and never names a front.
 *
 * Whoever wires the daemon (sluiced.c) sets the sections once, before the
 * first load; every load after that (the start, SIGHUP reloads,
 * --check-config) reads them. Unknown keys inside a section, missing keys and
 * wrong shapes get the file's usual "FILE:LINE: path: message"; a section's
 * own checks report the same way through sld_config_bad() and the helpers
 * below, by the path of the node ("gateway.routes[0].excess").
 *
 * The parsed settings live in sld_config_t, opaque to config/, shared (not
 * copied) by the copies the admin API makes, and freed with the last one.
 * New fronts add their settings this way; the older top-level keys (listen:,
 * store:, ...) stay where they are.
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

typedef struct sld_config_section {
    const char *name;                    /* the top-level key: "gateway" */
    /* A mapping held by pointer: CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER,
     * raw_type, fields); config/ makes it optional and allows it empty. */
    const cyaml_schema_value_t *schema;
    /* A front with its own listener: a file that has this section and no
     * listen: key does not open the default RESP and HTTP listeners. */
    bool listens;
    /* raw (what libcyaml loaded) into *out: SL_OK, or the error reported
     * through sld_config_bad() and the like (returned as is). */
    int (*parse)(sld_config_ctx_t *c, const void *raw, void **out);
    /* After the whole file is read: the section against the rest (its
     * policies, ...). NULL: nothing to check. */
    int (*check)(sld_config_ctx_t *c, const void *value, const sld_config_t *cfg);
    void (*free)(void *value);
} sld_config_section_t;

/* The sections every later load reads (kept, not copied: static tables;
 * at most SLD_MAX_SECTIONS; names must not be a built-in key). Call before
 * any load, from one thread; n 0 clears them. SL_EINVAL when too many. */
int sld_config_sections_set(const sld_config_section_t *const *defs, size_t n);

/* The parsed settings of section `name` in cfg, or NULL when the file did
 * not have it. Valid as long as cfg is. */
const void *sld_config_section(const sld_config_t *cfg, const char *name);

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
/* The policy named `name` in cfg, or NULL. */
const sld_policy_t *sld_config_policy(const sld_config_t *cfg, const char *name);

#endif
