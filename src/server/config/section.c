/* section.c -- the configuration sections fronts register (see section.h):
 * the registry, the top-level schema with their keys, parsing and checking
 * them, the shared parsed settings, and the helpers a section's hooks
 * report and convert with.
 *
 * Not here: the built-in keys (schema.c, config.c), what any section means.
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

int sld_config_sections_set(const sld_config_section_t *const *defs, size_t n) {
    if (n > SLD_MAX_SECTIONS || (n && defs == NULL))
        return SL_EINVAL;
    for (size_t i = 0; i < n; i++)
        registered[i] = defs[i];
    nregistered = n;
    return SL_OK;
}

/* ---- the schema --------------------------------------------------------------------------- */

int sld__cfg_schema_top(cyaml_schema_value_t *top, cyaml_schema_field_t **fields) {
    const cyaml_schema_field_t *base = sld__cfg_schema.mapping.fields;
    size_t nbase = 0;
    while (base[nbase].key != NULL)
        nbase++;
    cyaml_schema_field_t *f = calloc(nbase + nregistered + 1, sizeof *f);
    if (f == NULL)
        return SL_ENOMEM;
    memcpy(f, base, nbase * sizeof *f);
    for (size_t i = 0; i < nregistered; i++) {
        f[nbase + i] = (cyaml_schema_field_t){
            .key = registered[i]->name,
            .value = *registered[i]->schema,
            .data_offset = offsetof(raw_config_t, sections) + i * sizeof(void *),
        };
        /* Optional, and an empty mapping ("gateway:" alone) reads as absent. */
        f[nbase + i].value.flags |= CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL | CYAML_FLAG_POINTER_NULL;
    }
    *top = sld__cfg_schema;
    top->mapping.fields = f;
    *fields = f;
    return SL_OK;
}

bool sld__cfg_sections_listen(const raw_config_t *raw) {
    for (size_t i = 0; i < nregistered; i++)
        if (raw->sections[i] != NULL && registered[i]->listens)
            return true;
    return false;
}

/* ---- parsed settings ------------------------------------------------------------------------- */

int sld__cfg_sections_parse(ctx_t *c, const raw_config_t *raw, sld_config_t *cfg) {
    for (size_t i = 0; i < nregistered; i++) {
        if (raw->sections[i] == NULL)
            continue;
        sld_config_part_t *part = calloc(1, sizeof *part);
        if (part == NULL)
            return sld__cfg_oom(c);
        atomic_init(&part->refs, 1);
        part->def = registered[i];
        cfg->sections[i] = part;
        int rc = registered[i]->parse(c, raw->sections[i], &part->value);
        if (rc != SL_OK)
            return c->failed ? rc : sld__cfg_report(c, 0, "%s: %s", registered[i]->name, sl_strerror(rc));
    }
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
    if (part->value && part->def->free)
        part->def->free(part->value);
    free(part);
}

void sld__cfg_sections_share(sld_config_t *cfg) {
    for (size_t i = 0; i < SLD_MAX_SECTIONS; i++)
        if (cfg->sections[i])
            atomic_fetch_add(&cfg->sections[i]->refs, 1);
}

void sld__cfg_sections_release(sld_config_t *cfg) {
    for (size_t i = 0; i < SLD_MAX_SECTIONS; i++) {
        sld_config_part_release(cfg->sections[i]);
        cfg->sections[i] = NULL;
    }
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

const sld_policy_t *sld_config_policy(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, name) == 0)
            return &cfg->policies[i];
    return NULL;
}
