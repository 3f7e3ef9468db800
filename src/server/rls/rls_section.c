/* rls_section.c -- the rls: section (see rls_section.h): its schema, the
 * load of the directory it names, and --rls-config.
 *
 * Not here: reading the directory (rls_load.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/rls/rls_section.h"

typedef struct raw_rls {
    char *config_dir;
    char *response_headers;
} raw_rls_t;

static const cyaml_schema_field_t rls_fields[] = {
    SLD_CFG_STR("config_dir", SLD_CFG_OPT, raw_rls_t, config_dir),
    SLD_CFG_STR("response_headers", SLD_CFG_OPT, raw_rls_t, response_headers),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t rls_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_rls_t, rls_fields),
};

static const char *override_dir;

void sld_rls_section_override(const char *dir) {
    override_dir = dir;
}

const char *sld_rls_section_overridden(void) {
    return override_dir;
}

const char *sld_rls_section_yaml(char *buf, size_t size) {
    if (override_dir == NULL)
        return NULL;
    int n = snprintf(buf, size, "\nrls:\n  config_dir: '");
    if (n < 0 || (size_t)n >= size)
        return NULL;
    size_t at = (size_t)n;
    /* single-quoted: only ' is doubled; a line break cannot be written */
    for (const char *p = override_dir; *p; p++) {
        size_t need = *p == '\'' ? 2 : 1;
        if (*p == '\n' || *p == '\r' || at + need + 3 > size)
            return NULL;
        if (*p == '\'')
            buf[at++] = '\'';
        buf[at++] = *p;
    }
    memcpy(buf + at, "'\n", 3);
    return buf;
}

static void rls_free(void *value) {
    sld_rls_settings_t *s = value;
    if (s == NULL)
        return;
    sld_rls_free(s->rules);
    free(s->config_dir);
    free(s);
}

static int rls_parse(sld_config_ctx_t *c, const void *raw, void **out) {
    const raw_rls_t *r = raw;
    sld_rls_settings_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return sld_config_oom(c);
    *out = s; /* freed with the section, even when incomplete */
    static const char *const modes[] = {"both", "ietf", "x-ratelimit", "off"};
    const char *h = r->response_headers;
    size_t m = 0;
    while (h && m < sizeof modes / sizeof *modes && strcmp(h, modes[m]) != 0)
        m++;
    if (m == sizeof modes / sizeof *modes)
        return sld_config_bad(c, "rls.response_headers", "'%s' is not one of ietf, x-ratelimit, both, off", h);
    s->response_headers = (sld_rls_headers_t)(h ? m : 0);
    const char *dir = override_dir ? override_dir : r->config_dir;
    const char *path = override_dir ? "rls.config_dir (--rls-config)" : "rls.config_dir";
    if (dir == NULL || dir[0] == '\0')
        return sld_config_bad(c, "rls", "config_dir: is required (the directory of Envoy "
                                        "ratelimit's YAML files)");
    if ((s->config_dir = sld_config_dup(c, dir)) == NULL)
        return SL_ENOMEM;
    char err[1024];
    int rc = sld_rls_load_dir(dir, &s->rules, err, sizeof err);
    if (rc != SL_OK)
        return sld_config_bad(c, path, "%s", err);
    return SL_OK;
}

const sld_config_section_t sld_rls_section = {
    .name = "rls",
    .schema = &rls_schema,
    .listens = false,
    .parse = rls_parse,
    .check = NULL,
    .free = rls_free,
};

/* The file's bytes, NUL-terminated; NULL with err set. */
static char *read_all(const char *path, size_t *len, char *err, size_t err_len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    while (f) {
        if (n == cap) {
            char *grown = cap < (64u << 20) ? realloc(buf, cap ? cap * 2 : 16384) : NULL;
            if (grown == NULL)
                break;
            buf = grown;
            cap = cap ? cap * 2 : 16384;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            bool ok = !ferror(f);
            fclose(f);
            f = NULL;
            if (ok) {
                buf[n] = '\0';
                *len = n;
                return buf;
            }
        }
    }
    snprintf(err, err_len, "%s: cannot read it again to add --rls-config's section", path);
    if (f)
        fclose(f);
    free(buf);
    return NULL;
}

int sld_rls_config_load(const char *path, const char *name, const char *text, size_t len,
                        sld_config_t **out, char *err, size_t err_len) {
    int rc = path ? sld_config_load(path, out, err, err_len)
                  : sld_config_parse(name, text, len, out, err, err_len);
    if (rc != SL_OK || override_dir == NULL || sld_config_value(*out, &sld_rls_section))
        return rc;
    sld_config_free(*out);
    *out = NULL;
    char extra[4200];
    if (sld_rls_section_yaml(extra, sizeof extra) == NULL) {
        snprintf(err, err_len, "--rls-config: a directory name of at most 4096 bytes, on one line");
        return SL_EINVAL;
    }
    char *file = path ? read_all(path, &len, err, err_len) : NULL;
    if (path && file == NULL)
        return SL_EIO;
    const char *base = path ? file : text;
    size_t add = strlen(extra);
    char *joined = malloc(len + add);
    if (joined == NULL) {
        free(file);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    memcpy(joined, base, len);
    memcpy(joined + len, extra, add);
    free(file);
    rc = sld_config_parse(path ? path : name, joined, len + add, out, err, err_len);
    free(joined);
    return rc;
}

sld_rls_headers_t sld_rls_response_headers(const sld_config_t *cfg) {
    const sld_rls_settings_t *s = sld_config_value(cfg, &sld_rls_section);
    return s ? s->response_headers : SLD_RLS_HEADERS_BOTH;
}

sld_rls_config_t *sld_rls_rules(const sld_config_t *cfg) {
    const sld_rls_settings_t *s = sld_config_value(cfg, &sld_rls_section);
    return s ? s->rules : NULL;
}
