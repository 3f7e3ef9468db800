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
#include <string.h>

#include "server/base/decimal.h"
#include "server/http/http_ratelimit.h"

__extension__ typedef unsigned __int128 u128;

static int64_t secs_up(sl_usec_t us) {
    return us <= 0 ? 0 : us / SL_USEC_PER_SEC + (us % SL_USEC_PER_SEC != 0);
}

/* value scaled by the soft tolerance, as the library compiles it. */
static u128 tolerated(uint64_t value, uint32_t soft_percent) {
    return soft_percent ? (u128)value * (100 + soft_percent) / 100 : value;
}

/* a / b rounded up (b > 0). In 64 bits when both fit, as they nearly
 * always do: a division of 128 bits is a library call, and this runs for
 * every limit of every answer. */
static u128 div_up(u128 a, u128 b) {
    if ((a >> 64) == 0 && (b >> 64) == 0)
        return (uint64_t)a / (uint64_t)b + ((uint64_t)a % (uint64_t)b != 0);
    return (a + b - 1) / b;
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
        u128 drain = rate ? div_up(debt, rate) : debt;
        if (cap > quota) {
            quota = cap;
            u128 earn = div_up((u128)cap * (uint64_t)l->period, l->limit);
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
    int64_t secs = secs_up(span > (u128)INT64_MAX ? INT64_MAX : (sl_usec_t)span);
    *q = quota;
    *w = secs > 0 ? secs : 1;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* The values are written straight into room reserved once for all of
 * them: literals of known length become plain stores, and there is no
 * call per piece. */

/* One item at most: the quoted name's quotes and "-N", two ";x=" and two
 * numbers, and the ", " before it. */
#define ITEM_ROOM (3 + SLD_DEC_MAX + 2 * (3 + SLD_DEC_MAX) + 2)


static char *item_name(char *p, const char *policy, size_t len, size_t i, size_t n) {
    *p++ = '"';
    memcpy(p, policy, len);
    p += len;
    if (n > 1) {
        *p++ = '-';
        p = sld_dec_u64(p, i + 1);
    }
    *p++ = '"';
    return p;
}

/* Ends the header whose value began at *off and ends at p; the next begins
 * where it ends. */
static void header_done(sld_http_reply_t *r, sld_http_header_id_t id, size_t *off, const char *p) {
    r->values.len = (size_t)(p - r->values.data);
    sld_http_header_end(r, id, *off);
    *off = r->values.len;
}

/* what the fields of n limits named after a name of name_len bytes take at most */
static size_t room_for(size_t n, size_t name_len) { return 2 * n * (name_len + ITEM_ROOM) + 4 * SLD_DEC_MAX; }

size_t sld_http_rate_headers_room(const sl_policy_t *p, size_t name_len) {
    return room_for(sl_policy_limit_count(p), name_len);
}

void sld_http_rate_headers(sld_http_reply_t *r, const char *name, const sl_policy_t *p, uint32_t soft_percent,
                           const sl_decision_t *dec, const sl_limit_report_t *lr) {
    size_t n = sl_policy_limit_count(p);
    size_t name_len = strlen(name);
    if (!sld_buf_reserve(&r->values, room_for(n, name_len)))
        return; /* values.failed: the answer becomes a 503 */
    int64_t retry = !dec->allowed && dec->retry_after != SL_NEVER ? secs_up(dec->retry_after) : -1;
    if (retry == 0) /* denied now: come back no sooner than in a second */
        retry = 1;
    size_t off = sld_http_header_begin(r);
    char *o = r->values.data + off;
    for (size_t i = 0; i < n; i++) {
        uint64_t q;
        int64_t w;
        sld_http_limit_quota(sl_policy_limit(p, i), soft_percent, &q, &w);
        if (i > 0)
            o = SLD_PUT_LIT(o, ", ");
        o = item_name(o, name, name_len, i, n);
        o = SLD_PUT_LIT(o, ";q=");
        o = sld_dec_u64(o, q);
        o = SLD_PUT_LIT(o, ";w=");
        o = sld_dec_i64(o, w);
    }
    header_done(r, SLD_H_RATELIMIT_POLICY, &off, o);
    for (size_t i = 0; i < n; i++) {
        int64_t t = secs_up(lr[i].reset_after);
        if (!lr[i].allowed && lr[i].retry_after != SL_NEVER) {
            int64_t own = secs_up(lr[i].retry_after);
            t = own > t ? own : t;
            t = t > 0 ? t : 1;
        }
        if (i > 0)
            o = SLD_PUT_LIT(o, ", ");
        o = item_name(o, name, name_len, i, n);
        o = SLD_PUT_LIT(o, ";r=");
        o = sld_dec_u64(o, lr[i].remaining);
        o = SLD_PUT_LIT(o, ";t=");
        o = sld_dec_i64(o, t);
    }
    header_done(r, SLD_H_RATELIMIT, &off, o);
    int64_t reset = secs_up(dec->reset_after);
    o = sld_dec_i64(o, dec->limit > INT64_MAX ? INT64_MAX : (int64_t)dec->limit);
    header_done(r, SLD_H_X_RATELIMIT_LIMIT, &off, o);
    o = sld_dec_i64(o, dec->remaining > INT64_MAX ? INT64_MAX : (int64_t)dec->remaining);
    header_done(r, SLD_H_X_RATELIMIT_REMAINING, &off, o);
    o = sld_dec_i64(o, reset > retry ? reset : retry);
    header_done(r, SLD_H_X_RATELIMIT_RESET, &off, o);
    if (retry > 0) {
        o = sld_dec_i64(o, retry);
        header_done(r, SLD_H_RETRY_AFTER, &off, o);
    }
}
