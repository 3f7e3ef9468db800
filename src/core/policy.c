/* policy.c -- compiling policies and evaluating them all-or-nothing.
 *
 * Modes act here: soft by the tolerance compiled into every limit's
 * capacity, shadow by turning a deny into a limited allow. Elastic needs a
 * second state (the pool) and so is finished by the limiter.
 *
 * Not here: where cells come from (the stores), keys, clocks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "arith.h"
#include "policy.h"

#define SL__POOL_SEED UINT64_C(0x9e3779b97f4a7c15)

static const char *const mode_names[] = {
    [SL_MODE_HARD] = "hard",
    [SL_MODE_SOFT] = "soft",
    [SL_MODE_SHADOW] = "shadow",
    [SL_MODE_ELASTIC] = "elastic",
};

const char *sl_mode_name(sl_mode_t m) { return (unsigned)m <= SL_MODE_ELASTIC ? mode_names[m] : NULL; }

int sl_mode_parse(const char *name, sl_mode_t *out) {
    for (int m = 0; name && m <= SL_MODE_ELASTIC; m++) {
        if (strcmp(name, mode_names[m]) == 0) {
            *out = (sl_mode_t)m;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

static int explain(char *why, size_t why_len, int err, const char *fmt, ...) {
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return err;
}

static int compile(const sl_policy_config_t *cfg, sl_policy_t *p, char *why, size_t why_len) {
    size_t name_len = cfg->name ? strlen(cfg->name) : 0;
    if (name_len == 0 || name_len > SL_MAX_POLICY_NAME)
        return explain(why, why_len, SL_EINVAL, "policy name must be 1 to %d bytes",
                       SL_MAX_POLICY_NAME);
    if (cfg->nlimits == 0 || cfg->nlimits > SL_MAX_LIMITS || cfg->limits == NULL)
        return explain(why, why_len, SL_EINVAL, "policy %s: needs 1 to %d limits", cfg->name,
                       SL_MAX_LIMITS);
    if ((unsigned)cfg->mode > SL_MODE_ELASTIC)
        return explain(why, why_len, SL_EINVAL, "policy %s: unknown mode", cfg->name);
    bool soft = cfg->mode == SL_MODE_SOFT;
    if (!soft && cfg->soft_percent != 0)
        return explain(why, why_len, SL_EINVAL, "policy %s: soft_percent needs mode soft",
                       cfg->name);
    if (cfg->mode != SL_MODE_ELASTIC && cfg->pool.limit != 0)
        return explain(why, why_len, SL_EINVAL, "policy %s: a pool needs mode elastic", cfg->name);

    memcpy(p->name, cfg->name, name_len + 1);
    p->id = XXH3_64bits(cfg->name, name_len);
    p->mode = cfg->mode;
    p->soft_percent = cfg->soft_percent;
    p->nlimits = cfg->nlimits;
    for (size_t i = 0; i < cfg->nlimits; i++) {
        const char *reason = NULL;
        p->config[i] = cfg->limits[i];
        int rc = sl__limit_compile(&cfg->limits[i], soft ? cfg->soft_percent : 0, p->id,
                                   &p->limits[i], &reason);
        if (rc != SL_OK)
            return explain(why, why_len, rc, "policy %s: limit %zu: %s", cfg->name, i + 1, reason);
        for (size_t k = 0; k < i; k++)
            if (p->limits[k].id == p->limits[i].id)
                return explain(why, why_len, SL_EINVAL,
                               "policy %s: limits %zu and %zu are the same", cfg->name, k + 1,
                               i + 1);
    }
    return SL_OK;
}

int sl_policy_new(const sl_policy_config_t *cfg, sl_policy_t **out, char *why, size_t why_len) {
    if (cfg == NULL || out == NULL)
        return explain(why, why_len, SL_EINVAL, "no policy");
    sl_policy_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return explain(why, why_len, SL_ENOMEM, "out of memory");
    int rc = compile(cfg, p, why, why_len);
    if (rc == SL_OK && cfg->mode == SL_MODE_ELASTIC) {
        sl_policy_t *pool = calloc(1, sizeof *pool);
        if (pool == NULL) {
            rc = explain(why, why_len, SL_ENOMEM, "out of memory");
        } else {
            sl_policy_config_t pc = {.name = cfg->name, .limits = &cfg->pool, .nlimits = 1};
            rc = compile(&pc, pool, why, why_len);
            if (rc != SL_OK && cfg->pool.limit == 0)
                rc = explain(why, why_len, SL_EINVAL, "policy %s: mode elastic needs a pool",
                             cfg->name);
            /* A state of its own, apart from any key's. */
            pool->id = XXH3_64bits_withSeed(cfg->name, strlen(cfg->name), SL__POOL_SEED);
            pool->limits[0].id ^= SL__POOL_SEED;
            pool->is_pool = true;
            p->pool = pool;
        }
    }
    if (rc != SL_OK) {
        sl_policy_free(p);
        return rc;
    }
    *out = p;
    return SL_OK;
}

void sl_policy_free(sl_policy_t *p) {
    if (p == NULL)
        return;
    free(p->pool);
    free(p);
}

const char *sl_policy_name(const sl_policy_t *p) { return p->name; }
sl_mode_t sl_policy_mode(const sl_policy_t *p) { return p->mode; }
size_t sl_policy_limit_count(const sl_policy_t *p) { return p->nlimits; }

const sl_limit_t *sl_policy_limit(const sl_policy_t *p, size_t i) {
    return i < p->nlimits ? &p->config[i] : NULL;
}

/* The most restrictive values over all limits: fewest remaining, latest
 * reset; when denied, the deny that lasts longest decides. */
static void report(const sl_policy_t *p, const sl__verdict_t *v, bool all, bool peek,
                   sl_decision_t *out) {
    bool after = all && !peek;
    bool tolerated = false;
    uint64_t remaining = UINT64_MAX;
    sl_usec_t reset = 0, retry = -1, delay = 0;
    int by_remaining = 0, by_retry = -1;
    for (size_t i = 0; i < p->nlimits; i++) {
        const sl__limit_t *l = &p->limits[i];
        uint64_t tolerance = l->capacity - l->nominal;
        uint64_t rem = after ? v[i].remaining_charged : v[i].remaining_now;
        if (v[i].allowed && v[i].remaining_charged < tolerance)
            tolerated = true;
        rem = sl__sat_sub_u64(rem, tolerance);
        if (rem < remaining) {
            remaining = rem;
            by_remaining = (int)i;
        }
        reset = sl__max64(reset, after ? v[i].reset_charged : v[i].reset_now);
        delay = sl__max64(delay, v[i].delay);
        if (!v[i].allowed && v[i].retry_after > retry) {
            retry = v[i].retry_after;
            by_retry = (int)i;
        }
    }
    int by = all ? by_remaining : by_retry;
    out->allowed = all;
    out->limited = !all || tolerated;
    out->limit = p->limits[by].nominal;
    out->remaining = remaining;
    out->reset_after = reset;
    out->retry_after = all ? 0 : retry;
    out->delay = all ? delay : 0;
    out->limit_index = by;
    if (p->mode == SL_MODE_SHADOW && !all) {
        out->allowed = true;
        out->retry_after = 0;
    }
}

/* Each limit as reported: after this request when it was charged, as it
 * is otherwise; the soft tolerance stays hidden, as in the decision. */
static void report_limits(const sl_policy_t *p, const sl__verdict_t *v, bool after,
                          sl_limit_report_t *limits) {
    for (size_t i = 0; i < p->nlimits; i++) {
        const sl__limit_t *l = &p->limits[i];
        limits[i].allowed = v[i].allowed;
        limits[i].limit = l->nominal;
        limits[i].remaining = sl__sat_sub_u64(after ? v[i].remaining_charged : v[i].remaining_now,
                                              l->capacity - l->nominal);
        limits[i].reset_after = after ? v[i].reset_charged : v[i].reset_now;
        limits[i].retry_after = v[i].allowed ? 0 : v[i].retry_after;
    }
}

/* sl__policy_evaluate for a policy of one limit, which is most of them:
 * the same steps in the same order, without the four loops and masks over
 * limits (about a fifth of a cached decision's instructions). */
static int evaluate_one(const sl_policy_t *p, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                        bool peek, sl__prepare_fn prepare, void *ctx, uint32_t *charged,
                        uint32_t *costed, sl_decision_t *out, sl_limit_report_t *limits) {
    const sl__limit_t *l = &p->limits[0];
    sl__verdict_t v;
    *charged = 0;
    if (costed)
        *costed = 0;
    sl__limit_decide(l, cell, now, cost, &v);
    bool all = v.allowed;
    uint32_t mask = !peek && cost > 0 && (all || l->count_denied) ? 1u : 0u;
    if (mask) {
        int rc = prepare(ctx, 0, cell, sl__limit_block_need(l, cell, cost));
        if (rc != SL_OK)
            return rc;
        sl__limit_commit(l, cell, now, cost);
        if (!all) /* a counted deny moved the state: report it as it now is */
            sl__limit_decide(l, cell, now, cost, &v);
    }
    if (costed)
        *costed = mask;
    *charged = mask | (cell->dirty ? 1u : 0u);
    report(p, &v, all, peek, out);
    if (limits)
        report_limits(p, &v, all && !peek, limits);
    return SL_OK;
}

int sl__policy_evaluate(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, uint64_t cost,
                        bool peek, sl__prepare_fn prepare, void *ctx, uint32_t *charged,
                        uint32_t *costed, sl_decision_t *out, sl_limit_report_t *limits) {
    if (p->nlimits == 1)
        return evaluate_one(p, cells, now, cost, peek, prepare, ctx, charged, costed, out, limits);
    sl__verdict_t v[SL_MAX_LIMITS];
    bool all = true;
    *charged = 0;
    if (costed)
        *costed = 0;
    for (size_t i = 0; i < p->nlimits; i++) {
        sl__limit_decide(&p->limits[i], &cells[i], now, cost, &v[i]);
        all = all && v[i].allowed;
    }
    uint32_t mask = 0;
    if (!peek && cost > 0)
        for (size_t i = 0; i < p->nlimits; i++)
            if (all || p->limits[i].count_denied)
                mask |= 1u << i;
    for (size_t i = 0; i < p->nlimits; i++) {
        if (!(mask & (1u << i)))
            continue;
        int rc = prepare(ctx, i, &cells[i], sl__limit_block_need(&p->limits[i], &cells[i], cost));
        if (rc != SL_OK)
            return rc;
    }
    for (size_t i = 0; i < p->nlimits; i++) {
        if (!(mask & (1u << i)))
            continue;
        sl__limit_commit(&p->limits[i], &cells[i], now, cost);
        if (!all) /* a counted deny moved the state: report it as it now is */
            sl__limit_decide(&p->limits[i], &cells[i], now, cost, &v[i]);
    }
    if (costed)
        *costed = mask;
    for (size_t i = 0; i < p->nlimits; i++)
        if (cells[i].dirty)
            mask |= 1u << i;
    *charged = mask;
    report(p, v, all, peek, out);
    if (limits)
        report_limits(p, v, all && !peek, limits);
    return SL_OK;
}

int sl__policy_reservable(const sl_policy_t *p, sl_usec_t max_wait, sl_usec_t not_before) {
    if (max_wait < 0 || max_wait > SL_MAX_WAIT || not_before < 0 || not_before > max_wait)
        return SL_ERANGE;
    for (size_t i = 0; i < p->nlimits && max_wait > 0; i++)
        if (p->limits[i].wait_max == 0)
            return SL_ENOWAIT;
    return SL_OK;
}

int sl__policy_reserve(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl_usec_t not_before, bool peek, sl__prepare_fn prepare,
                       void *ctx, uint32_t *charged, sl_decision_t *out, sl_limit_report_t *limits,
                       sl__held_t *held) {
    if (held)
        held->at = 0;
    int refused = sl__policy_reservable(p, max_wait, not_before); /* callers checked the range */
    if (refused != SL_OK)
        return refused;
    if (max_wait <= 0 || cost == 0)
        return sl__policy_evaluate(p, cells, now, cost, peek, prepare, ctx, charged, NULL, out,
                                   limits);
    sl__verdict_t v[SL_MAX_LIMITS];
    bool all = true;
    sl_usec_t common = 0;
    for (size_t i = 0; i < p->nlimits; i++) {
        sl__limit_reserve(&p->limits[i], &cells[i], now, cost, max_wait, &v[i]);
        all = all && v[i].allowed;
        common = sl__max64(common, v[i].delay);
    }
    if (all)
        common = sl__max64(common, not_before);
    /* every limit must be able to hold the common moment (a limit of a
     * huge rate holds less than SL_MAX_WAIT) */
    for (size_t i = 0; all && i < p->nlimits; i++) {
        if (common > p->limits[i].wait_max) {
            all = false;
            v[i].allowed = false;
            v[i].retry_after = common - p->limits[i].wait_max;
        }
    }
    uint32_t mask = 0;
    for (size_t i = 0; i < p->nlimits && !peek; i++)
        if (all || p->limits[i].count_denied)
            mask |= 1u << i;
    for (size_t i = 0; i < p->nlimits; i++) {
        if (!(mask & (1u << i)))
            continue;
        int rc = prepare(ctx, i, &cells[i], 0); /* these limits keep no blocks */
        if (rc != SL_OK)
            return rc;
    }
    for (size_t i = 0; i < p->nlimits; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (all) {
            sl__limit_reserve_commit(&p->limits[i], &cells[i], now, now + common, cost);
        } else { /* a counted deny, as sl__policy_evaluate's */
            sl__limit_commit(&p->limits[i], &cells[i], now, cost);
            sl__limit_reserve(&p->limits[i], &cells[i], now, cost, max_wait, &v[i]);
        }
    }
    for (size_t i = 0; i < p->nlimits; i++)
        if (cells[i].dirty)
            mask |= 1u << i;
    *charged = mask;
    report(p, v, all, peek, out);
    if (all)
        out->delay = common;
    if (held && all && !peek && common > 0) {
        held->at = now + common;
        for (size_t i = 0; i < p->nlimits; i++)
            held->exp[i] = cells[i].expire_at;
    }
    if (limits)
        report_limits(p, v, all && !peek, limits);
    return SL_OK;
}

int sl__policy_force(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, sl_usec_t since,
                     const uint64_t *costs, sl__prepare_fn prepare, void *ctx) {
    for (size_t i = 0; i < p->nlimits; i++) {
        if (costs[i] == 0)
            continue;
        const sl__limit_t *l = &p->limits[i];
        sl_usec_t at = now;
        if (l->family == SL__RATE && since > 0 && since < now) {
            /* not so early that the state looks ahead of the clock by more
             * than its debt may be (debt_at() would rebase it) */
            sl_usec_t earliest = cells[i].expire_at - l->debt_max / (int64_t)l->rate;
            at = since > earliest ? since : earliest < now ? earliest : now;
        }
        sl__verdict_t v; /* only for the tidying commit expects decide to have done */
        sl__limit_decide(l, &cells[i], at, costs[i], &v);
        int rc = prepare(ctx, i, &cells[i], sl__limit_block_need(l, &cells[i], costs[i]));
        if (rc != SL_OK)
            return rc;
        sl__limit_commit(l, &cells[i], at, costs[i]);
    }
    return SL_OK;
}

/* Shared debt grows no further than this (or than the limit's own
 * debt_max, if larger): debt + a charge (<= tau <= 2^61) then stays inside
 * int64, and so does now + debt/rate (now <= 2^62). */
#define SL__MAX_SHARED_DEBT (INT64_C(1) << 61)

static void share_debt(sl_policy_t *p, uint32_t nodes, sl_usec_t interval) {
    p->write_back = true;
    p->nodes = nodes;
    for (size_t i = 0; i < p->nlimits; i++) {
        sl__limit_t *l = &p->limits[i];
        /* a part of the capacity, and all of what the limit refills over
         * two intervals, so that one daemon alone still passes the rate */
        sl__u128 refill = ((sl__u128)l->rate * (uint64_t)(2 * interval) + (uint64_t)l->period - 1) /
                          (uint64_t)l->period;
        sl__u128 share = ((sl__u128)l->capacity + nodes - 1) / (nodes ? nodes : 1) + refill;
        p->share[i] = nodes <= 1 || share > UINT64_MAX ? UINT64_MAX : (uint64_t)share;
        if (l->family != SL__RATE || nodes <= 1)
            continue;
        sl__u128 shared = (sl__u128)l->debt_max * nodes;
        l->debt_max = shared <= (sl__u128)SL__MAX_SHARED_DEBT ? (int64_t)shared
                                                               : sl__max64(l->debt_max, SL__MAX_SHARED_DEBT);
    }
}

void sl__policy_write_back(sl_policy_t *p, uint32_t nodes, sl_usec_t interval) {
    share_debt(p, nodes, interval < 0 ? 0 : interval);
    if (p->pool)
        share_debt(p->pool, nodes, interval < 0 ? 0 : interval);
}

uint64_t sl__policy_share(const sl_policy_t *p, size_t i) {
    return p->nodes <= 1 ? UINT64_MAX : p->share[i];
}
