/* http_ratelimit.c -- the rate limit header fields (see http_ratelimit.h).
 *
 * Seconds are rounded up, so a client that waits that long is admitted.
 * Why q and w are what they are, by algorithm (with L the limit per period
 * P, and each limit's reset t the time until it is as if the key were new):
 *   - fixed_window, sliding_log: q = L, w = P. Nothing is counted longer
 *     than a period, and no more than L at once.
 *   - sliding_window with N sub-windows (precision, 1 by default): the
 *     estimate still weighs a request up to one sub-window after a period,
 *     so the window is w = P + P/N (2P for the two-window estimate), q = L.
 *   - gcra, token_bucket, leaky_bucket: the bucket holds C (gcra: burst + 1;
 *     the buckets: burst, or L), refilled at L per P. q = max(L, C): r is
 *     never above C. w = q * P / L, the time q takes at that rate, so q/w is
 *     still the rate; or, when it is longer, the time a full debt takes to
 *     drain (count_denied lets it grow to twice C; a soft tolerance rounds
 *     both C and L).
 * r never exceeds q and t never exceeds w, in every state: the reports' r
 * is at most the nominal capacity and their t at most that longest drain.
 * On a denial, an item's t is never earlier than the time its own limit
 * would admit the request; Retry-After is the whole policy's.
 */
#include "server/http/http_ratelimit.h"

__extension__ typedef unsigned __int128 u128;

static int64_t secs_up(sl_usec_t us) {
    return us <= 0 ? 0 : us / SL_USEC_PER_SEC + (us % SL_USEC_PER_SEC != 0);
}

/* value scaled by the soft tolerance, as the library compiles it. */
static u128 tolerated(uint64_t value, uint32_t soft_percent) {
    return (u128)value * (100 + soft_percent) / 100;
}

void sld_http_limit_quota(const sl_limit_t *l, uint32_t soft_percent, uint64_t *q, int64_t *w) {
    u128 span = (u128)l->period; /* the longest it can take to be full again, us */
    uint64_t quota = l->limit;
    switch (l->algorithm) {
    case SL_GCRA:
    case SL_TOKEN_BUCKET:
    case SL_LEAKY_BUCKET: {
        uint64_t cap = l->algorithm == SL_GCRA ? l->burst + 1 : l->burst ? l->burst : l->limit;
        u128 rate = tolerated(l->limit, soft_percent);
        u128 debt = tolerated(cap, soft_percent) * (uint64_t)l->period * (l->count_denied ? 2u : 1u);
        u128 drain = rate ? (debt + rate - 1) / rate : debt;
        if (cap > quota) {
            quota = cap;
            u128 earn = ((u128)cap * (uint64_t)l->period + l->limit - 1) / l->limit;
            span = earn > span ? earn : span;
        }
        span = drain > span ? drain : span;
        break;
    }
    case SL_SLIDING_WINDOW:
        span += (uint64_t)l->period / (l->precision ? l->precision : 1);
        break;
    default: /* fixed_window, sliding_log */
        break;
    }
    sl_usec_t us = span > (u128)INT64_MAX ? INT64_MAX : (sl_usec_t)span;
    *q = quota;
    *w = secs_up(us) > 0 ? secs_up(us) : 1;
}

static void item_name(sld_buf_t *b, const char *policy, size_t i, size_t n) {
    sld_buf_append_lit(b, "\"");
    sld_buf_append_str(b, policy);
    if (n > 1) {
        sld_buf_append_lit(b, "-");
        sld_buf_append_u64(b, i + 1);
    }
    sld_buf_append_lit(b, "\"");
}

/* A header whose value is a number (the hot path: no printf). */
static void number_header(sld_http_reply_t *r, sld_http_header_id_t id, int64_t v) {
    size_t off = sld_http_header_begin(r);
    sld_buf_append_i64(&r->values, v);
    sld_http_header_end(r, id, off);
}

void sld_http_rate_headers(sld_http_reply_t *r, const char *name, const sl_policy_t *p, uint32_t soft_percent,
                           const sl_decision_t *dec, const sl_limit_report_t *lr) {
    size_t n = sl_policy_limit_count(p);
    int64_t retry = !dec->allowed && dec->retry_after != SL_NEVER ? secs_up(dec->retry_after) : -1;
    if (retry == 0) /* denied now: come back no sooner than in a second */
        retry = 1;
    size_t off = sld_http_header_begin(r);
    for (size_t i = 0; i < n; i++) {
        uint64_t q;
        int64_t w;
        sld_http_limit_quota(sl_policy_limit(p, i), soft_percent, &q, &w);
        if (i > 0)
            sld_buf_append(&r->values, ", ", 2);
        item_name(&r->values, name, i, n);
        sld_buf_append_lit(&r->values, ";q=");
        sld_buf_append_u64(&r->values, q);
        sld_buf_append_lit(&r->values, ";w=");
        sld_buf_append_i64(&r->values, w);
    }
    sld_http_header_end(r, SLD_H_RATELIMIT_POLICY, off);
    off = sld_http_header_begin(r);
    for (size_t i = 0; i < n; i++) {
        int64_t t = secs_up(lr[i].reset_after);
        if (!lr[i].allowed && lr[i].retry_after != SL_NEVER) {
            int64_t own = secs_up(lr[i].retry_after);
            t = own > t ? own : t;
            t = t > 0 ? t : 1;
        }
        if (i > 0)
            sld_buf_append(&r->values, ", ", 2);
        item_name(&r->values, name, i, n);
        sld_buf_append_lit(&r->values, ";r=");
        sld_buf_append_u64(&r->values, lr[i].remaining);
        sld_buf_append_lit(&r->values, ";t=");
        sld_buf_append_i64(&r->values, t);
    }
    sld_http_header_end(r, SLD_H_RATELIMIT, off);
    int64_t reset = secs_up(dec->reset_after);
    number_header(r, SLD_H_X_RATELIMIT_LIMIT, dec->limit > INT64_MAX ? INT64_MAX : (int64_t)dec->limit);
    number_header(r, SLD_H_X_RATELIMIT_REMAINING, dec->remaining > INT64_MAX ? INT64_MAX : (int64_t)dec->remaining);
    number_header(r, SLD_H_X_RATELIMIT_RESET, reset > retry ? reset : retry);
    if (retry > 0)
        number_header(r, SLD_H_RETRY_AFTER, retry);
}
