/* listen.c -- the listen keys fronts register (see section.h): the table,
 * listen:'s schema built from it, each key's default, reading listen: with
 * the file's rules, the command-line overrides and the addresses by name.
 *
 * Not here: which fronts exist (they register; daemon/wiring.c lists
 * them), opening sockets (net/listener.c).
 */
#include <stdio.h>
#include <string.h>

#include "server/config/config.h"
#include "server/config/config_private.h"
#include "server/config/section.h"

static const sld_config_listen_t *registered[SLD_MAX_LISTENS];
static size_t nregistered;

/* Read by schema.c's listen: field; all zero (CYAML_FIELD_END) past the
 * registered keys. */
cyaml_schema_field_t sld__cfg_listen_fields[SLD_MAX_LISTENS + 1];

int sld_config_listens_set(const sld_config_listen_t *const *defs, size_t n) {
    if (n > SLD_MAX_LISTENS || (n && defs == NULL))
        return SL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (defs[i] == NULL || defs[i]->name == NULL || defs[i]->option == NULL ||
            strncmp(defs[i]->option, "--", 2) != 0 || defs[i]->option[2] == '\0')
            return SL_EINVAL;
        for (size_t k = 0; k < i; k++)
            if (strcmp(defs[i]->name, defs[k]->name) == 0 ||
                strcmp(defs[i]->option, defs[k]->option) == 0)
                return SL_EINVAL;
    }
    memset(sld__cfg_listen_fields, 0, sizeof sld__cfg_listen_fields);
    for (size_t i = 0; i < n; i++) {
        registered[i] = defs[i];
        /* as SLD_CFG_STR(name, SLD_CFG_OPT, raw_listen_t, addr[i]) */
        sld__cfg_listen_fields[i] = (cyaml_schema_field_t){
            .key = defs[i]->name,
            .data_offset = offsetof(raw_listen_t, addr) + i * sizeof(char *),
            .value = {CYAML_VALUE_STRING(CYAML_FLAG_POINTER | SLD_CFG_OPT, char *, 0,
                                         CYAML_UNLIMITED)},
        };
    }
    nregistered = n;
    return SL_OK;
}

const sld_config_listen_t *sld_config_listen_def(size_t i) {
    return i < nregistered ? registered[i] : NULL;
}

static int index_of(const char *name) {
    for (size_t i = 0; name && i < nregistered; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return (int)i;
    return -1;
}

const char *sld_config_listen(const sld_config_t *cfg, const char *name) {
    int i = index_of(name);
    return cfg && i >= 0 ? cfg->listen[i] : NULL;
}

size_t sld_config_listen_names(char *buf, size_t size) {
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < nregistered && used < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == nregistered ? " and " : ", ";
        int n = snprintf(buf + used, size - used, "%s%s", sep, registered[i]->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return nregistered;
}

void sld__cfg_listen_defaults(sld_config_t *cfg) {
    for (size_t i = 0; i < nregistered; i++)
        snprintf(cfg->listen[i], sizeof cfg->listen[i], "%s",
                 registered[i]->fallback ? registered[i]->fallback : "");
}

bool sld__cfg_listen_any(const sld_config_t *cfg) {
    for (size_t i = 0; i < nregistered; i++)
        if (cfg->listen[i][0] != '\0')
            return true;
    return false;
}

int sld__cfg_listen_parse(ctx_t *c, const raw_config_t *r, sld_config_t *cfg) {
    char p[PATH_BUF];
    /* A front with a listener of its own (the gateway) is enough: without
     * listen:, the others stay closed beside it. */
    bool section_front = sld__cfg_sections_listen(r);
    if (section_front && r->listen == NULL)
        for (size_t i = 0; i < nregistered; i++)
            cfg->listen[i][0] = '\0';
    for (size_t i = 0; r->listen && i < nregistered; i++) {
        int rc = sld__cfg_get_front(c, sld__cfg_join(p, sizeof p, "listen", registered[i]->name),
                                    r->listen->addr[i], cfg->listen[i]);
        if (rc != SL_OK)
            return rc;
    }
    if (!section_front && nregistered && !sld__cfg_listen_any(cfg)) {
        char names[256];
        size_t n = sld_config_listen_names(names, sizeof names);
        return sld__cfg_bad(c, "listen", "turns off %s (%s): nothing would answer",
                            n == 2 ? "both fronts" : n == 1 ? "the only front" : "every front",
                            names);
    }
    return SL_OK;
}

int sld_config_listen_override(sld_config_t *cfg, size_t i, const char *text, char *err,
                               size_t err_len) {
    if (cfg == NULL || i >= nregistered || text == NULL) {
        if (err && err_len)
            snprintf(err, err_len, "command line: no such listen option");
        return SL_EINVAL;
    }
    return sld_config_listen_option(registered[i]->option, text, cfg->listen[i], err, err_len);
}
