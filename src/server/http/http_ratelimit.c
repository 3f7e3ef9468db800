/* http_ratelimit.c -- the rate limit header fields (see http_ratelimit.h).
 *
 * Seconds are rounded up, so a client that waits that long is admitted;
 * on a 429, no reset is announced earlier than Retry-After.
 */
#include "server/http/http_ratelimit.h"

static int64_t secs_up(sl_usec_t us) {
    return us <= 0 ? 0 : us / SL_USEC_PER_SEC + (us % SL_USEC_PER_SEC != 0);
}

void sld_http_limit_quota(const sl_limit_t *l, uint32_t soft_percent, uint64_t *q, int64_t *w) {
    (void)soft_percent;
    *q = l->limit;
    *w = secs_up(l->period);
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
        if (t < retry)
            t = retry;
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
