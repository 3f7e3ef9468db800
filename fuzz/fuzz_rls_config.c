/* fuzz_rls_config.c -- libFuzzer target for Envoy ratelimit's configuration
 * (server/rls/rls_load.c) and the descriptor matcher (rls_match.c).
 *
 * The input is one YAML file of the directory: sld_rls_load_buffer() must
 * return SL_OK or an error with a "fuzz.yaml:LINE: " message, never crash,
 * leak or read out of bounds. When it loads, descriptors cut from the
 * input's last bytes are matched in every domain: a limit found must belong
 * to that domain, its counter key and stat name must fit or report 0 at
 * every buffer size, and replaces over every limit must only clear entries.
 * Build and run: make fuzz (clang, ASan + UBSan, under CTest).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/rls/rls.h"

static void check_match(sld_rls_config_t *c, const char *domain, size_t dl,
                        const sld_rls_entry_t *e, size_t n) {
    sld_rls_match_t m;
    const sld_rls_limit_t *l = sld_rls_lookup(c, domain, dl, e, n, &m);
    if (l != sld_rls_match(c, domain, dl, e, n))
        abort();
    if (l == NULL)
        return;
    if (strncmp(l->stat_name, domain, dl) != 0 || l->stat_name[dl] != '.' || m.n != n)
        abort();
    if (!l->unlimited && l->requests_per_unit > 0 && l->policy == NULL)
        abort();
    char buf[512];
    size_t full = sld_rls_match_key(buf, sizeof buf, &m, domain, dl, e, n);
    if (full > 0 && (sld_rls_match_key(buf, full - 1, &m, domain, dl, e, n) != 0 ||
                     sld_rls_match_key(buf, full, &m, domain, dl, e, n) != full))
        abort();
    size_t stat = sld_rls_stat(buf, sizeof buf, &m, domain, dl, e, n);
    if (stat > 0 && sld_rls_stat(buf, stat - 1, &m, domain, dl, e, n) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512] = "";
    sld_rls_config_t *c = NULL;
    int rc = sld_rls_load_buffer("fuzz.yaml", (const char *)data, size, &c, err, sizeof err);
    if (rc != SL_OK) {
        if (c != NULL || strncmp(err, "fuzz.yaml:", 10) != 0)
            abort();
        return 0;
    }
    /* descriptors from the tail: entries split on ',' and '=' */
    size_t tail = size < 96 ? size : 96;
    const char *t = (const char *)data + size - tail;
    sld_rls_entry_t e[SLD_RLS_MAX_DEPTH + 1];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= tail && n < SLD_RLS_MAX_DEPTH + 1; i++) {
        if (i < tail && t[i] != ',')
            continue;
        const char *eq = memchr(t + start, '=', i - start);
        size_t kl = eq ? (size_t)(eq - (t + start)) : i - start;
        e[n++] = (sld_rls_entry_t){t + start, kl, eq ? eq + 1 : "", eq ? i - start - kl - 1 : 0};
        start = i + 1;
    }
    size_t nl = sld_rls_limit_count(c);
    const sld_rls_limit_t **all = malloc((nl + 1) * sizeof *all);
    for (size_t i = 0; i < nl; i++) {
        const sld_rls_limit_t *l = sld_rls_limit_at(c, i);
        all[i] = l;
        /* the limit's domain is a prefix of its stat name ending before a
         * '.' (a domain may hold dots itself) */
        for (const char *p = strchr(l->stat_name, '.'); p; p = strchr(p + 1, '.')) {
            size_t dl = (size_t)(p - l->stat_name);
            if (sld_rls_has_domain(c, l->stat_name, dl))
                for (size_t k = 1; k <= n; k++)
                    check_match(c, l->stat_name, dl, e, k);
        }
    }
    if (all) {
        const sld_rls_limit_t **before = malloc((nl + 1) * sizeof *before);
        if (before) {
            memcpy(before, all, nl * sizeof *all);
            sld_rls_apply_replaces(all, nl);
            for (size_t i = 0; i < nl; i++)
                if (all[i] != NULL && all[i] != before[i])
                    abort();
            free(before);
        }
        free(all);
    }
    sld_rls_free(c);
    return 0;
}
