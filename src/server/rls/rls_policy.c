/* rls_policy.c -- a descriptor's rate_limit as a libsluice policy: the
 * reference's units, the policy's stable name, sluice's extensions
 * (algorithm, burst, precision, mode, soft_percent), and the cache of
 * policies for limits that requests bring themselves.
 *
 * Not here: reading the YAML (rls_load.c), matching (rls_match.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/rls/rls_private.h"

static const struct {
    const char *name;
    sl_usec_t seconds;
} units[] = {
    [SLD_RLS_SECOND] = {"second", 1},
    [SLD_RLS_MINUTE] = {"minute", 60},
    [SLD_RLS_HOUR] = {"hour", 3600},
    [SLD_RLS_DAY] = {"day", 86400},
    [SLD_RLS_MONTH] = {"month", 86400 * 30},
    [SLD_RLS_YEAR] = {"year", 86400 * 365},
    [SLD_RLS_WEEK] = {"week", 86400 * 7},
};

const char *sld_rls_unit_name(sld_rls_unit_t unit) {
    if ((unsigned)unit >= sizeof units / sizeof units[0])
        return NULL;
    return units[unit].name;
}

sl_usec_t sld_rls_unit_usec(sld_rls_unit_t unit) {
    if ((unsigned)unit >= sizeof units / sizeof units[0])
        return 0;
    return units[unit].seconds * SL_USEC_PER_SEC;
}

/* A policy name holds SL_MAX_POLICY_NAME bytes; a longer stat name keeps its
 * start and a hash of the whole, so the name stays stable and distinct. */
int sld__rls_policy_name(char *buf, size_t size, const char *stat_name) {
    size_t len = strlen(stat_name);
    if (len + 4 <= SL_MAX_POLICY_NAME)
        return snprintf(buf, size, "rls:%s", stat_name) < (int)size ? 0 : -1;
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a 64 */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)stat_name[i]) * UINT64_C(1099511628211);
    int prefix = SL_MAX_POLICY_NAME - 4 - 1 - 16;
    return snprintf(buf, size, "rls:%.*s~%016" PRIx64, prefix, stat_name, h) < (int)size ? 0
                                                                                        : -1;
}

static int get_u64(const char *text, uint64_t max, uint64_t *out) {
    if (text == NULL || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static int bad(const char **field, const char *name, char *why, size_t why_size,
               const char *msg) {
    *field = name;
    snprintf(why, why_size, "%s", msg);
    return SL_EINVAL;
}

int sld__rls_compile(sld_rls_limit_t *l, const rls_ext_t *ext, const char **field, char *why,
                     size_t why_size) {
    *field = NULL;
    sl_limit_t lim = {.algorithm = SL_FIXED_WINDOW};
    sl_policy_config_t cfg = {.limits = &lim, .nlimits = 1, .mode = SL_MODE_HARD};
    if (ext->algorithm && sl_algorithm_parse(ext->algorithm, &lim.algorithm) != SL_OK)
        return bad(field, "algorithm", why, why_size,
                   "algorithm: expected one of gcra, token_bucket, leaky_bucket, fixed_window, "
                   "sliding_log, sliding_window");
    uint64_t v;
    if (ext->burst) {
        if (get_u64(ext->burst, UINT64_MAX, &v))
            return bad(field, "burst", why, why_size, "burst: expected a whole number");
        lim.burst = v;
    }
    if (ext->precision) {
        if (get_u64(ext->precision, 65536, &v) || v == 0)
            return bad(field, "precision", why, why_size,
                       "precision: expected a whole number from 1 to 65536");
        lim.precision = (uint32_t)v;
    }
    if (ext->mode) {
        if (sl_mode_parse(ext->mode, &cfg.mode) != SL_OK || cfg.mode == SL_MODE_ELASTIC)
            return bad(field, "mode", why, why_size, "mode: expected one of hard, soft, shadow");
        if (l->shadow_mode && cfg.mode != SL_MODE_SHADOW)
            return bad(field, "mode", why, why_size,
                       "mode: only shadow goes with the descriptor's shadow_mode: true");
        if (cfg.mode == SL_MODE_SHADOW)
            l->shadow_mode = true;
    } else if (l->shadow_mode) {
        cfg.mode = SL_MODE_SHADOW;
    }
    if (ext->soft_percent) {
        if (cfg.mode != SL_MODE_SOFT)
            return bad(field, "soft_percent", why, why_size,
                       "soft_percent applies to mode: soft only");
        if (get_u64(ext->soft_percent, 1000, &v) || v == 0)
            return bad(field, "soft_percent", why, why_size,
                       "soft_percent: expected a whole number from 1 to 1000");
        cfg.soft_percent = (uint32_t)v;
    } else if (cfg.mode == SL_MODE_SOFT) {
        return bad(field, "mode", why, why_size, "mode: soft needs soft_percent");
    }
    if (l->unlimited || l->requests_per_unit == 0)
        return SL_OK; /* nothing to count: no policy (rls.h) */

    lim.limit = l->requests_per_unit;
    lim.period = sld_rls_unit_usec(l->unit);
    const char *reason = NULL;
    int rc = sl_limit_validate(&lim, &reason);
    if (rc != SL_OK) {
        *field = ext->burst ? "burst" : ext->precision ? "precision" : "algorithm";
        snprintf(why, why_size, "%s", reason ? reason : "invalid limit");
        return rc;
    }
    char name[SL_MAX_POLICY_NAME + 1];
    if (sld__rls_policy_name(name, sizeof name, l->stat_name) != 0)
        return bad(field, NULL, why, why_size, "policy name does not fit");
    cfg.name = name;
    sl_policy_t *p = NULL;
    rc = sl_policy_new(&cfg, &p, why, why_size);
    if (rc != SL_OK)
        return rc;
    l->policy = p;
    return SL_OK;
}

const sl_policy_t *sld_rls_override_policy(sld_rls_config_t *c, uint32_t rpu,
                                           sld_rls_unit_t unit) {
    if (c == NULL || rpu == 0 || sld_rls_unit_usec(unit) == 0)
        return NULL;
    const sl_policy_t *found = NULL;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_overrides; i++)
        if (c->overrides[i].rpu == rpu && c->overrides[i].unit == unit) {
            found = c->overrides[i].policy;
            break;
        }
    if (found == NULL && c->n_overrides < SLD_RLS_MAX_OVERRIDES) {
        if (c->overrides == NULL)
            c->overrides = calloc(SLD_RLS_MAX_OVERRIDES, sizeof *c->overrides);
        char name[64];
        snprintf(name, sizeof name, "rls:override:%" PRIu32 "/%s", rpu, sld_rls_unit_name(unit));
        sl_limit_t lim = {.algorithm = SL_FIXED_WINDOW, .limit = rpu,
                          .period = sld_rls_unit_usec(unit)};
        sl_policy_config_t cfg = {.name = name, .limits = &lim, .nlimits = 1};
        sl_policy_t *p = NULL;
        if (c->overrides && sl_policy_new(&cfg, &p, NULL, 0) == SL_OK) {
            c->overrides[c->n_overrides++] = (rls_override_t){rpu, unit, p};
            found = p;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}
