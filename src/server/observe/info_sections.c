/* info_sections.c -- a snapshot as INFO's sections (see info_sections.h). */
#include <string.h>
#include <strings.h>

#include "server/observe/info_sections.h"

unsigned sld_info_sections(const char *const *names, const size_t *lens, size_t n) {
    if (n == 0)
        return SLD_INFO_ALL;
    unsigned mask = 0;
    for (size_t i = 0; i < n; i++) {
        if ((lens[i] == 3 && strncasecmp(names[i], "all", 3) == 0) ||
            (lens[i] == 10 && strncasecmp(names[i], "everything", 10) == 0) ||
            (lens[i] == 7 && strncasecmp(names[i], "default", 7) == 0))
            return SLD_INFO_ALL;
        for (int k = 0; k < SLD_SECTIONS; k++) {
            const char *name = sld_section_names[k];
            size_t len = strlen(name);
            if (lens[i] == len && strncasecmp(names[i], name, len) == 0)
                mask |= 1u << k;
        }
    }
    return mask;
}

static void text(sld_buf_t *out, const char *v) {
    for (const char *c = v; *c; c++) {
        char ch = *c == ',' ? ';' : *c == '\r' || *c == '\n' ? ' ' : *c;
        sld_buf_append(out, &ch, 1);
    }
}

static void value(const sld_stat_t *r, const sld_snapshot_t *s, sld_buf_t *out) {
    const char *at = (const char *)s + r->offset;
    switch (r->kind) {
    case SLD_V_U64: sld_buf_append_u64(out, *(const uint64_t *)at); break;
    case SLD_V_I64: sld_buf_append_i64(out, *(const int64_t *)at); break;
    case SLD_V_BOOL: sld_buf_append_u64(out, *(const bool *)at); break;
    case SLD_V_USEC: sld_buf_append_i64(out, *(const sl_usec_t *)at / SL_USEC_PER_SEC); break;
    case SLD_V_DOUBLE: sld_buf_printf(out, "%.3f", *(const double *)at); break;
    case SLD_V_TEXT: text(out, *(const char *const *)at); break;
    case SLD_V_CHARS: text(out, at); break;
    case SLD_V_KEYSPACE:
        sld_buf_printf(out, "keys=%llu,expires=%llu,avg_ttl=0", (unsigned long long)*(const uint64_t *)at,
                       (unsigned long long)*(const uint64_t *)at);
        break;
    }
}

void sld_info_render(const sld_snapshot_t *s, unsigned mask, sld_buf_t *out) {
    bool first = true;
    for (int sec = 0; sec < SLD_SECTIONS; sec++) {
        if (!(mask & (1u << sec)))
            continue;
        bool titled = false;
        for (size_t i = 0; i < sld_stat_count; i++) {
            const sld_stat_t *r = &sld_stat_table[i];
            if ((int)r->section != sec || r->info == NULL || !sld_stat_shows(r, s))
                continue;
            if (!titled) {
                sld_buf_printf(out, "%s# %s\r\n", first ? "" : "\r\n", sld_section_titles[sec]);
                titled = true;
                first = false;
            }
            sld_buf_printf(out, "%s:", r->info);
            value(r, s, out);
            sld_buf_append_lit(out, "\r\n");
        }
    }
}
