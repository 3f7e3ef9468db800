/* observe_config.c -- the observe: section (see observe_config.h). */
#include <stdlib.h>
#include <string.h>

#include "server/daemon/observe_config.h"

typedef struct raw_observe {
    char *heavy_hitters;
    char *keys;
    char *counters;
    char *sample_above;
} raw_observe_t;

static const cyaml_schema_field_t observe_fields[] = {
    SLD_CFG_STR("heavy_hitters", SLD_CFG_OPT, raw_observe_t, heavy_hitters),
    SLD_CFG_STR("keys", SLD_CFG_OPT, raw_observe_t, keys),
    SLD_CFG_STR("counters", SLD_CFG_OPT, raw_observe_t, counters),
    SLD_CFG_STR("sample_above", SLD_CFG_OPT, raw_observe_t, sample_above),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t observe_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_observe_t, observe_fields),
};

/* Off unless asked (bench/README.md has what on costs); on, a worker
 * samples past SLD_HH_SAMPLE_ABOVE_DEFAULT decisions a second. */
static const sld_observe_settings_t defaults = {
    .heavy_hitters = false,
    .hh = {.counters = SLD_HH_COUNTERS_DEFAULT, .keys = SLD_HH_SHOW, .sample_above = SLD_HH_SAMPLE_ABOVE_DEFAULT}};

static int observe_parse(sld_config_ctx_t *c, const void *raw, void **out) {
    const raw_observe_t *r = raw;
    sld_observe_settings_t *s = malloc(sizeof *s);
    if (s == NULL)
        return sld_config_oom(c);
    *s = defaults;
    *out = s;
    char shown[64];
    if (r->heavy_hitters) {
        if (strcmp(r->heavy_hitters, "on") == 0)
            s->heavy_hitters = true;
        else if (strcmp(r->heavy_hitters, "off") == 0)
            s->heavy_hitters = false;
        else
            return sld_config_bad(c, "observe.heavy_hitters", "expected on or off, not %s",
                                  sld_config_show(r->heavy_hitters, shown));
    }
    if (r->keys) {
        static const char *const names[] = {"show", "hash", "hide"};
        size_t i = 0;
        while (i < 3 && strcmp(r->keys, names[i]) != 0)
            i++;
        if (i == 3)
            return sld_config_bad(c, "observe.keys", "expected show, hash or hide, not %s",
                                  sld_config_show(r->keys, shown));
        s->hh.keys = (sld_hh_keys_t)i;
    }
    int rc = SL_OK;
    if (r->counters)
        rc = sld_config_get_u32(c, "observe.counters", r->counters, 8, SLD_HH_COUNTERS_MAX, &s->hh.counters);
    if (rc == SL_OK && r->sample_above)
        rc = sld_config_get_u32(c, "observe.sample_above", r->sample_above, 0, 100000000, &s->hh.sample_above);
    return rc;
}

const sld_config_section_t sld_observe_section = {
    .name = "observe",
    .kind = SLD_SECTION_MAPPING,
    .schema = &observe_schema,
    .parse = observe_parse,
    .free = free,
};

sld_observe_settings_t sld_observe_settings(const sld_config_t *cfg) {
    const sld_observe_settings_t *s = sld_config_value(cfg, &sld_observe_section);
    return s ? *s : defaults;
}
