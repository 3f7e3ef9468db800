/* section.c -- the configuration sections fronts register (see section.h):
 * the registry, the top-level schema with their keys, parsing and checking
 * them, the parsed settings (mappings shared by copies, secrets copied),
 * and the helpers a section's hooks report and convert with.
 *
 * Not here: the built-in keys (schema.c, config.c), the listen keys
 * (listen.c), what any section means.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config/config.h"
#include "server/config/config_private.h"
#include "server/config/section.h"

struct sld_config_part {
    _Atomic uint32_t refs;               /* configurations and holders sharing it */
    const sld_config_section_t *def;
    void *value;
};

static const sld_config_section_t *registered[SLD_MAX_SECTIONS];
static size_t nregistered;

/* The top level, built when the sections are set: the built-in keys with
 * the secrets among them (before SLD_CFG_SECRETS_BEFORE), then the mappings. */
#define MAX_TOP_FIELDS 40
static cyaml_schema_field_t top_fields[MAX_TOP_FIELDS + SLD_MAX_SECTIONS + 1];
static cyaml_schema_value_t top_schema;
static bool top_built;

static bool is_builtin(const char *name) {
    for (const cyaml_schema_field_t *f = sld__cfg_schema.mapping.fields; f->key; f++)
        if (strcmp(f->key, name) == 0)
            return true;
    return false;
}

static cyaml_schema_field_t section_field(size_t i) {
    const sld_config_section_t *def = registered[i];
    cyaml_schema_field_t f = {.key = def->name,
                              .data_offset = offsetof(raw_config_t, sections) + i * sizeof(void *)};
    if (def->kind == SLD_SECTION_SECRET) {
        /* as SLD_CFG_STR(name, SLD_CFG_OPT, ...): "requirepass:" alone is
         * an empty secret, refused as too short, never no password */
        f.value = (cyaml_schema_value_t){CYAML_VALUE_STRING(CYAML_FLAG_POINTER | SLD_CFG_OPT,
                                                            char *, 0, CYAML_UNLIMITED)};
    } else {
        f.value = *def->schema;
        /* Optional, and an empty mapping ("gateway:" alone) reads as absent. */
        f.value.flags |= CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL | CYAML_FLAG_POINTER_NULL;
    }
    return f;
}

static void build_top(void) {
    const cyaml_schema_field_t *base = sld__cfg_schema.mapping.fields;
    size_t n = 0;
    for (size_t b = 0; base[b].key; b++) {
        if (strcmp(base[b].key, SLD_CFG_SECRETS_BEFORE) == 0)
            for (size_t i = 0; i < nregistered; i++)
                if (registered[i]->kind == SLD_SECTION_SECRET)
                    top_fields[n++] = section_field(i);
        top_fields[n++] = base[b];
    }
    for (size_t i = 0; i < nregistered; i++)
        if (registered[i]->kind != SLD_SECTION_SECRET)
            top_fields[n++] = section_field(i);
    top_fields[n] = (cyaml_schema_field_t)CYAML_FIELD_END;
    top_schema = sld__cfg_schema;
    top_schema.mapping.fields = top_fields;
    top_built = true;
}

int sld_config_sections_set(const sld_config_section_t *const *defs, size_t n) {
    size_t nbase = 0;
    while (sld__cfg_schema.mapping.fields[nbase].key)
        nbase++;
    if (n > SLD_MAX_SECTIONS || (n && defs == NULL) || nbase > MAX_TOP_FIELDS)
        return SL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const sld_config_section_t *d = defs[i];
        if (d == NULL || d->name == NULL || is_builtin(d->name))
            return SL_EINVAL;
        if (d->kind == SLD_SECTION_SECRET ? d->secret == NULL : d->schema == NULL || d->parse == NULL)
            return SL_EINVAL;
        for (size_t k = 0; k < i; k++)
            if (strcmp(d->name, defs[k]->name) == 0)
                return SL_EINVAL;
    }
    for (size_t i = 0; i < n; i++)
        registered[i] = defs[i];
    nregistered = n;
    build_top();
    return SL_OK;
}

/* ---- the schema --------------------------------------------------------------------------- */

const cyaml_schema_value_t *sld__cfg_schema_top(void) {
    /* nothing registered yet: the built-in keys alone (no build, so loads
     * on several threads never write it) */
    return top_built ? &top_schema : &sld__cfg_schema;
}

bool sld__cfg_sections_listen(const raw_config_t *raw) {
    for (size_t i = 0; i < nregistered; i++)
        if (raw->sections[i] != NULL && registered[i]->listens)
            return true;
    return false;
}

bool sld_config_serves(const sld_config_t *cfg) {
    if (cfg == NULL)
        return false;
    for (size_t i = 0; i < SLD_MAX_SECTIONS; i++)
        if (cfg->sections[i] && cfg->sections[i]->def->listens)
            return true;
    return sld__cfg_listen_any(cfg);
}

/* ---- parsed settings ------------------------------------------------------------------------- */

static void value_free(const sld_config_section_t *def, void *value) {
    if (def->kind == SLD_SECTION_SECRET)
        free(value);
    else if (value && def->free)
        def->free(value);
}

int sld__cfg_sections_parse(ctx_t *c, const raw_config_t *raw, sld_config_t *cfg, bool secrets) {
    for (size_t i = 0; i < nregistered; i++) {
        const sld_config_section_t *def = registered[i];
        if (raw->sections[i] == NULL || (def->kind == SLD_SECTION_SECRET) != secrets)
            continue;
        sld_config_part_t *part = calloc(1, sizeof *part);
        if (part == NULL)
            return sld__cfg_oom(c);
        atomic_init(&part->refs, 1);
        part->def = def;
        cfg->sections[i] = part;
        char *secret = NULL;
        int rc = secrets ? sld__cfg_get_secret(c, def->name, def->secret, raw->sections[i], &secret)
                         : def->parse(c, raw->sections[i], &part->value);
        if (secrets)
            part->value = secret;
        if (rc != SL_OK)
            return c->failed ? rc : sld__cfg_report(c, 0, "%s: %s", def->name, sl_strerror(rc));
    }
    return SL_OK;
}

int sld__cfg_sections_check(ctx_t *c, sld_config_t *cfg) {
    for (size_t i = 0; i < nregistered; i++) {
        if (cfg->sections[i] == NULL || registered[i]->check == NULL)
            continue;
        int rc = registered[i]->check(c, cfg->sections[i]->value, cfg);
        if (rc != SL_OK)
            return c->failed ? rc : sld__cfg_report(c, 0, "%s: %s", registered[i]->name, sl_strerror(rc));
    }
    return SL_OK;
}

void sld_config_part_release(sld_config_part_t *part) {
    if (part == NULL || atomic_fetch_sub(&part->refs, 1) != 1)
        return;
    value_free(part->def, part->value);
    free(part);
}

bool sld__cfg_sections_share(sld_config_t *cfg) {
    bool ok = true;
    for (size_t i = 0; i < SLD_MAX_SECTIONS; i++) {
        sld_config_part_t *from = cfg->sections[i];
        if (from == NULL)
            continue;
        if (from->def->kind != SLD_SECTION_SECRET) {
            atomic_fetch_add(&from->refs, 1);
            continue;
        }
        /* a secret is copied, as the copy's other strings are */
        sld_config_part_t *part = calloc(1, sizeof *part);
        char *value = part ? strdup(from->value) : NULL;
        if (value == NULL) {
            free(part);
            cfg->sections[i] = NULL;
            ok = false;
            continue;
        }
        atomic_init(&part->refs, 1);
        part->def = from->def;
        part->value = value;
        cfg->sections[i] = part;
    }
    return ok;
}

void sld__cfg_sections_release(sld_config_t *cfg) {
    for (size_t i = 0; i < SLD_MAX_SECTIONS; i++) {
        sld_config_part_release(cfg->sections[i]);
        cfg->sections[i] = NULL;
    }
}

const void *sld_config_value(const sld_config_t *cfg, const sld_config_section_t *def) {
    for (size_t i = 0; cfg && i < nregistered; i++)
        if (registered[i] == def)
            return cfg->sections[i] && cfg->sections[i]->def == def ? cfg->sections[i]->value : NULL;
    return NULL;
}

static sld_config_part_t *find_part(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; cfg && i < SLD_MAX_SECTIONS; i++)
        if (cfg->sections[i] && strcmp(cfg->sections[i]->def->name, name) == 0)
            return cfg->sections[i];
    return NULL;
}

const void *sld_config_section(const sld_config_t *cfg, const char *name) {
    sld_config_part_t *part = find_part(cfg, name);
    return part ? part->value : NULL;
}

sld_config_part_t *sld_config_section_hold(const sld_config_t *cfg, const char *name) {
    sld_config_part_t *part = find_part(cfg, name);
    if (part)
        atomic_fetch_add(&part->refs, 1);
    return part;
}

const void *sld_config_part_value(const sld_config_part_t *part) { return part ? part->value : NULL; }

/* ---- helpers for the sections' hooks --------------------------------------------------------- */

int sld_config_bad(sld_config_ctx_t *c, const char *path, const char *fmt, ...) {
    char msg[SLD_MAX_ERROR];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sld__cfg_bad(c, path, "%s", msg);
}

int sld_config_oom(sld_config_ctx_t *c) { return sld__cfg_oom(c); }

const char *sld_config_show(const char *text, char buf[64]) { return sld__cfg_show(text, buf); }

char *sld_config_join(char *buf, size_t size, const char *parent, const char *child) {
    return sld__cfg_join(buf, size, parent, child);
}

char *sld_config_entry(char *buf, size_t size, const char *parent, size_t i) {
    return sld__cfg_entry(buf, size, parent, i);
}

int sld_config_get_u32(sld_config_ctx_t *c, const char *path, const char *text, uint32_t min,
                       uint32_t max, uint32_t *out) {
    return sld__cfg_get_u32(c, path, text, min, max, out);
}

int sld_config_get_duration_ms(sld_config_ctx_t *c, const char *path, const char *text,
                               sl_usec_t max, sl_usec_t *out) {
    return sld__cfg_get_duration_ms(c, path, text, max, out);
}

int sld_config_get_name(sld_config_ctx_t *c, const char *path, const char *text, char **out) {
    return sld__cfg_get_name(c, path, text, out);
}

int sld_config_get_listen(sld_config_ctx_t *c, const char *path, const char *text,
                          char out[SLD_MAX_ADDR]) {
    return sld__cfg_get_listen(c, path, text, out);
}

char *sld_config_dup(sld_config_ctx_t *c, const char *s) { return sld__cfg_dup(c, s); }

const char *sld_config_source(sld_config_ctx_t *c, size_t *len) {
    *len = c->len;
    return c->yaml ? c->yaml : "";
}

const sld_policy_t *sld_config_policy(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, name) == 0)
            return &cfg->policies[i];
    return NULL;
}
