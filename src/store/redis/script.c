/* script.c -- the calling convention of evaluate.lua: argument vectors for
 * one evaluation (or reset) of a policy on a key, or for a batch of
 * evaluations, and the reply read back into decisions and per-limit
 * reports.
 *
 * Keys: "sl:{<policy>\0<key>}" -- the hash tag is the policy and the key, so
 * keys spread over a Cluster. Elastic policies use "sl:{<policy>}\0<key>" and
 * the pool "sl:{<policy>}": one slot for the policy, which one script needs
 * to reach both. Policy names hold no NUL, so the layout is unambiguous.
 *
 * Limits go over as one binary argument, 41 bytes each (put_limit), in
 * the units the script computes in: rate-family time is scaled by
 * rate/g with g = gcd(rate, period) instead of by rate (every quantity of
 * gcra.c is a multiple of g, so dividing by it changes no decision and keeps
 * the numbers small enough for Lua's doubles).
 *
 * Not here: sending (client.c), connections and NOSCRIPT (connection.c).
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/arith.h"
#include "core/policy.h"
#include "store/redis/cluster.h"
#include "store/redis/script.h"

#define PREFIX "sl:"
#define LIMIT_BYTES 41
/* A batch request as the script reads it: limits argument, pool argument,
 * cost, flags, max_wait, not_before (evaluate.lua: '<I2I2I7BI4I4'). */
#define REQ_BYTES 20
/* Flag of a reservation (evaluate.lua: decide()). */
#define FLAG_RESERVE 8u
/* Lua's exact integers end at 2^53; the script clamps time to 2^52 (year
 * 2112) and needs every span of time it adds to it below 2^51. */
#define MAX_TIME (INT64_C(1) << 52)
#define MAX_SPAN (INT64_C(1) << 51)
#define MAX_UNITS (INT64_C(1) << 52)
/* Costs above this behave like it: no limit's capacity comes near. */
#define MAX_COST (UINT64_C(1) << 52)

enum { KIND_RATE = 0, KIND_FIXED = 1, KIND_SLIDE = 2, KIND_LOG = 3 };

/* The rate and period the script computes with (rate-family limits count
 * time in units of g/rate us, g = gcd(rate, period)), or a reason why Lua
 * cannot compute this limit exactly. */
static const char *scaled(const sl__limit_t *l, uint64_t *rate, uint64_t *period) {
    *rate = l->rate;
    *period = (uint64_t)l->period;
    if (l->period > MAX_SPAN)
        return "period is too long for the Redis store (at most 2^51 us)";
    if (l->family != SL__RATE)
        return NULL;
    uint64_t g = sl__gcd_u64(*rate, *period);
    *rate /= g;
    *period /= g;
    sl__u128 tau = (sl__u128)l->capacity * *period;
    sl__u128 dmax = l->count_denied ? 2 * tau : tau;
    if (*rate > (uint64_t)MAX_UNITS || dmax > (sl__u128)MAX_UNITS ||
        (dmax + *rate - 1) / *rate > (sl__u128)MAX_SPAN)
        return "capacity * period / gcd(limit, period) is too large for the Redis store "
               "(Lua computes exactly only below 2^53)";
    return NULL;
}

/* Redis runs nothing else while a script runs: a sliding window walks its
 * sub-windows in Lua (about 0.2 ms for 1,000), so their number is capped. */
#define SL__REDIS_MAX_PRECISION 256

static const char *limit_supported(const sl__limit_t *l) {
    uint64_t rate, period;
    if (l->family == SL__WINDOW && l->precision > SL__REDIS_MAX_PRECISION)
        return "a sliding_window of more than 256 sub-windows (precision) would hold Redis up "
               "on every call";
    return scaled(l, &rate, &period);
}

bool sl__redis_policy_supported(const sl_policy_t *p, const char **why) {
    const char *reason = NULL;
    if (strchr(p->name, '}'))
        reason = "a policy name with '}' would break the Redis Cluster hash tag";
    for (size_t i = 0; reason == NULL && i < p->nlimits; i++)
        reason = limit_supported(&p->limits[i]);
    if (reason == NULL && p->mode == SL_MODE_ELASTIC && p->pool)
        reason = limit_supported(&p->pool->limits[0]);
    if (reason && why)
        *why = reason;
    return reason == NULL;
}

/* ---- argument vectors ----------------------------------------------------------- */

static void put_le(unsigned char *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

/* One limit as the script reads it (parse_limit in evaluate.lua); NULL, or
 * why the script cannot compute it. */
static const char *put_limit(unsigned char *out, const sl__limit_t *l) {
    unsigned kind = l->family == SL__RATE     ? KIND_RATE
                    : l->family == SL__LOG    ? KIND_LOG
                    : l->precision == 0       ? KIND_FIXED
                                              : KIND_SLIDE;
    uint64_t rate, period;
    const char *why = scaled(l, &rate, &period);
    out[0] = (unsigned char)(kind | (l->shaper ? 16u : 0u) | (l->count_denied ? 32u : 0u));
    put_le(out + 1, l->nominal, 7);
    put_le(out + 8, l->capacity, 7);
    put_le(out + 15, rate, 7);
    put_le(out + 22, period, 7);
    put_le(out + 29, l->precision, 4);
    put_le(out + 33, l->id, 8);
    return why;
}

/* Room for `n` bytes of arguments: the inline buffer, or one heap block sized
 * once by the caller before the first allocation. */
static char *take(sl__redis_call_t *c, size_t n) {
    char *base = c->heap ? c->heap : c->inline_buf;
    char *at = base + c->used;
    c->used += n;
    return at;
}

static int reserve(sl__redis_call_t *c, size_t total) {
    /* Not the argument arrays: push() fills them in order. */
    c->argc = 0;
    c->key = NULL;
    c->key_len = 0;
    c->heap = NULL;
    c->used = 0;
    if (total > sizeof c->inline_buf) {
        c->heap = malloc(total);
        if (c->heap == NULL)
            return SL_ENOMEM;
    }
    return SL_OK;
}

static void push(sl__redis_call_t *c, const char *s, size_t len) {
    c->argv[c->argc] = s;
    c->argvlen[c->argc] = len;
    c->argc++;
}

static void push_str(sl__redis_call_t *c, const char *s) {
    size_t len = strlen(s);
    char *at = take(c, len + 1);
    memcpy(at, s, len + 1);
    push(c, at, len);
}

static void push_u64(sl__redis_call_t *c, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char *at = take(c, (size_t)n);
    for (int i = 0; i < n; i++)
        at[i] = tmp[n - 1 - i];
    push(c, at, (size_t)n);
}

static size_t key_bytes(const sl_policy_t *p, size_t key_len) {
    return sizeof PREFIX - 1 + 3 + strlen(p->name) + key_len;
}

/* The key's state; the tag is the policy alone for elastic policies. */
static void push_key(sl__redis_call_t *c, const sl_policy_t *p, const void *key, size_t key_len) {
    size_t name_len = strlen(p->name), n = key_bytes(p, key_len);
    char *at = take(c, n), *w = at;
    bool elastic = p->mode == SL_MODE_ELASTIC;
    memcpy(w, PREFIX "{", sizeof PREFIX);
    w += sizeof PREFIX;
    memcpy(w, p->name, name_len);
    w += name_len;
    if (elastic)
        *w++ = '}';
    *w++ = '\0';
    if (key_len)
        memcpy(w, key, key_len);
    w += key_len;
    if (!elastic)
        *w++ = '}';
    push(c, at, n);
    c->key = at;
    c->key_len = n;
}

static void push_pool_key(sl__redis_call_t *c, const sl_policy_t *p) {
    size_t name_len = strlen(p->name), n = sizeof PREFIX + name_len + 1;
    char *at = take(c, n);
    memcpy(at, PREFIX "{", sizeof PREFIX);
    memcpy(at + sizeof PREFIX, p->name, name_len);
    at[n - 1] = '}';
    push(c, at, n);
}

static unsigned flags_of(const sl_policy_t *p, bool peek) {
    bool elastic = p->mode == SL_MODE_ELASTIC && p->pool != NULL;
    return (peek ? 1u : 0u) | (p->mode == SL_MODE_SHADOW ? 2u : 0u) | (elastic ? 4u : 0u);
}

/* The limits of p as one argument (and its pool's as a second); whether
 * evaluate.lua computes them all exactly. */
static bool push_limits(sl__redis_call_t *c, const sl_policy_t *p) {
    bool ok = strchr(p->name, '}') == NULL;
    unsigned char *blob = (unsigned char *)take(c, LIMIT_BYTES * p->nlimits);
    for (size_t i = 0; i < p->nlimits; i++)
        ok &= put_limit(blob + LIMIT_BYTES * i, &p->limits[i]) == NULL;
    push(c, (const char *)blob, LIMIT_BYTES * p->nlimits);
    if (p->mode == SL_MODE_ELASTIC && p->pool) {
        unsigned char *pool = (unsigned char *)take(c, LIMIT_BYTES);
        ok &= put_limit(pool, &p->pool->limits[0]) == NULL;
        push(c, (const char *)pool, LIMIT_BYTES);
    }
    return ok;
}

/* Whether a reservation's waits are ones the script reads: the script
 * holds at most SL_MAX_WAIT, which fits the batch's 4 bytes. */
static bool waits_ok(sl_usec_t max_wait, sl_usec_t not_before) {
    return max_wait >= 0 && max_wait <= SL_MAX_WAIT && not_before >= 0 && not_before <= max_wait;
}

/* max_wait > 0: a reservation (flag 8, ARGV[6] and ARGV[7]). */
static int build_one(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                     sl_usec_t now, bool peek, sl_usec_t max_wait, sl_usec_t not_before,
                     sl__redis_call_t *call) {
    if (p == NULL || call == NULL || (key == NULL && key_len > 0) || !waits_ok(max_wait, not_before))
        return SL_EINVAL;
    bool elastic = p->mode == SL_MODE_ELASTIC && p->pool != NULL;
    size_t total = 48 + 4 * 24 + 2 * key_bytes(p, key_len) + LIMIT_BYTES * (p->nlimits + 1);
    int rc = reserve(call, total);
    if (rc != SL_OK)
        return rc;
    push_str(call, "EVALSHA");
    push(call, sl__redis_evaluate_lua_sha1, 40);
    push_str(call, elastic ? "2" : "1");
    push_key(call, p, key, key_len);
    if (elastic)
        push_pool_key(call, p);
    if (now == SL__REDIS_SERVER_TIME) {
        push(call, "", 0);
    } else {
        now = now < 0 ? 0 : now > MAX_TIME ? MAX_TIME : now;
        push_u64(call, (uint64_t)now);
    }
    push_u64(call, cost < MAX_COST ? cost : MAX_COST);
    push_u64(call, flags_of(p, peek) | (max_wait > 0 ? FLAG_RESERVE : 0u));
    /* Checking support here costs nothing more: the scaling is needed anyway. */
    bool unsupported = !push_limits(call, p);
    if (max_wait > 0) {
        if (!elastic)
            push(call, "", 0);
        push_u64(call, (uint64_t)max_wait);
        push_u64(call, (uint64_t)not_before);
    }
    if (unsupported) {
        sl__redis_call_free(call);
        return SL_EINVAL;
    }
    return SL_OK;
}

int sl__redis_build_evaluate(const sl_policy_t *p, const void *key, size_t key_len,
                             uint64_t cost, sl_usec_t now, bool peek, sl__redis_call_t *call) {
    return build_one(p, key, key_len, cost, now, peek, 0, 0, call);
}

int sl__redis_build_reserve(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                            sl_usec_t now, sl_usec_t max_wait, sl_usec_t not_before, bool peek,
                            sl__redis_call_t *call) {
    return build_one(p, key, key_len, cost, now, peek, max_wait, not_before, call);
}

/* Batch: EVALSHA sha nkeys <each request's key, then its pool key when
 * elastic> now "b" <requests, REQ_BYTES each> <per distinct policy: its
 * limits, then its pool's when elastic>. */
int sl__redis_build_evaluate_batch(const sl__redis_eval_req_t *reqs, size_t n, sl_usec_t now,
                                   sl__redis_call_t *call) {
    if (reqs == NULL || call == NULL || n == 0 || n > SL__REDIS_MAX_BATCH)
        return SL_EINVAL;
    const sl_policy_t *pol[SL__REDIS_MAX_BATCH];
    unsigned char which[SL__REDIS_MAX_BATCH];
    size_t npol = 0, nkeys = 0, total = 64 + 3 * 24 + REQ_BYTES * n;
    for (size_t i = 0; i < n; i++) {
        const sl_policy_t *p = reqs[i].p;
        if (p == NULL || (reqs[i].key == NULL && reqs[i].key_len > 0) ||
            !waits_ok(reqs[i].max_wait, reqs[i].not_before))
            return SL_EINVAL;
        size_t j = 0;
        while (j < npol && pol[j] != p)
            j++;
        if (j == npol) {
            pol[npol++] = p;
            total += LIMIT_BYTES * (p->nlimits + 1);
        }
        which[i] = (unsigned char)j;
        bool elastic = p->mode == SL_MODE_ELASTIC && p->pool != NULL;
        nkeys += elastic ? 2 : 1;
        total += 2 * key_bytes(p, reqs[i].key_len);
    }
    int rc = reserve(call, total);
    if (rc != SL_OK)
        return rc;
    push_str(call, "EVALSHA");
    push(call, sl__redis_evaluate_lua_sha1, 40);
    push_u64(call, nkeys);
    const char *first = NULL;
    size_t first_len = 0;
    for (size_t i = 0; i < n; i++) {
        push_key(call, reqs[i].p, reqs[i].key, reqs[i].key_len);
        if (i == 0) {
            first = call->key;
            first_len = call->key_len;
        }
        if (flags_of(reqs[i].p, false) & 4u)
            push_pool_key(call, reqs[i].p);
    }
    call->key = first;
    call->key_len = first_len;
    if (now == SL__REDIS_SERVER_TIME) {
        push(call, "", 0);
    } else {
        now = now < 0 ? 0 : now > MAX_TIME ? MAX_TIME : now;
        push_u64(call, (uint64_t)now);
    }
    push(call, "b", 1);
    unsigned char *rq = (unsigned char *)take(call, REQ_BYTES * n);
    push(call, (const char *)rq, REQ_BYTES * n);
    /* Lua's ARGV index of each policy's limits: ARGV[4] is the first. */
    unsigned at[SL__REDIS_MAX_BATCH];
    bool ok = true;
    for (size_t j = 0; j < npol; j++) {
        at[j] = (unsigned)(call->argc - 2 - (int)nkeys);
        ok &= push_limits(call, pol[j]);
    }
    for (size_t i = 0; i < n; i++) {
        const sl_policy_t *p = reqs[i].p;
        unsigned flags = flags_of(p, reqs[i].peek) | (reqs[i].max_wait > 0 ? FLAG_RESERVE : 0u);
        unsigned a = at[which[i]];
        put_le(rq + REQ_BYTES * i, a, 2);
        put_le(rq + REQ_BYTES * i + 2, flags & 4u ? a + 1 : 0, 2);
        put_le(rq + REQ_BYTES * i + 4, reqs[i].cost < MAX_COST ? reqs[i].cost : MAX_COST, 7);
        rq[REQ_BYTES * i + 11] = (unsigned char)flags;
        put_le(rq + REQ_BYTES * i + 12, reqs[i].max_wait > 0 ? (uint64_t)reqs[i].max_wait : 0, 4);
        put_le(rq + REQ_BYTES * i + 16, reqs[i].max_wait > 0 ? (uint64_t)reqs[i].not_before : 0, 4);
    }
    if (!ok) {
        sl__redis_call_free(call);
        return SL_EINVAL;
    }
    return SL_OK;
}

/* Refund: EVALSHA sha 1 <key> now "r" <limits> <cost, at, each limit's
 * exp: I7 each>. The pool of an elastic policy is not touched: a place
 * is held by the key's own limits (a borrowed request never waits). */
int sl__redis_build_refund(const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                           sl_usec_t now, const sl__held_t *held, sl__redis_call_t *call) {
    if (p == NULL || call == NULL || held == NULL || held->at <= 0 || held->at > MAX_TIME ||
        (key == NULL && key_len > 0))
        return SL_EINVAL;
    for (size_t i = 0; i < p->nlimits; i++)
        if (held->exp[i] < 0 || held->exp[i] > 2 * MAX_TIME)
            return SL_EINVAL;
    size_t total = 48 + 24 + 2 + key_bytes(p, key_len) + LIMIT_BYTES * p->nlimits + 7 * (2 + p->nlimits);
    int rc = reserve(call, total);
    if (rc != SL_OK)
        return rc;
    push_str(call, "EVALSHA");
    push(call, sl__redis_evaluate_lua_sha1, 40);
    push_str(call, "1");
    push_key(call, p, key, key_len);
    if (now == SL__REDIS_SERVER_TIME) {
        push(call, "", 0);
    } else {
        now = now < 0 ? 0 : now > MAX_TIME ? MAX_TIME : now;
        push_u64(call, (uint64_t)now);
    }
    push(call, "r", 1);
    bool ok = strchr(p->name, '}') == NULL;
    unsigned char *blob = (unsigned char *)take(call, LIMIT_BYTES * p->nlimits);
    for (size_t i = 0; i < p->nlimits; i++)
        ok &= put_limit(blob + LIMIT_BYTES * i, &p->limits[i]) == NULL;
    push(call, (const char *)blob, LIMIT_BYTES * p->nlimits);
    unsigned char *h = (unsigned char *)take(call, 7 * (2 + p->nlimits));
    put_le(h, cost < MAX_COST ? cost : MAX_COST, 7);
    put_le(h + 7, (uint64_t)held->at, 7);
    for (size_t i = 0; i < p->nlimits; i++)
        put_le(h + 14 + 7 * i, (uint64_t)held->exp[i], 7);
    push(call, (const char *)h, 7 * (2 + p->nlimits));
    if (!ok) {
        sl__redis_call_free(call);
        return SL_EINVAL;
    }
    return SL_OK;
}

unsigned sl__redis_slot_of(const sl_policy_t *p, const void *key, size_t key_len) {
    sl__redis_call_t c;
    if (sl__redis_build_reset(p, key, key_len, &c) != SL_OK)
        return 0; /* a bad argument or no memory: the build that follows fails too */
    unsigned slot = sl__redis_key_slot(c.key, c.key_len);
    sl__redis_call_free(&c);
    return slot;
}

int sl__redis_build_reset(const sl_policy_t *p, const void *key, size_t key_len,
                          sl__redis_call_t *call) {
    if (p == NULL || call == NULL || (key == NULL && key_len > 0))
        return SL_EINVAL;
    int rc = reserve(call, 8 + key_bytes(p, key_len));
    if (rc != SL_OK)
        return rc;
    push_str(call, "DEL");
    push_key(call, p, key, key_len);
    return SL_OK;
}

void sl__redis_call_free(sl__redis_call_t *call) {
    if (call == NULL)
        return;
    free(call->heap);
    call->heap = NULL;
    call->argc = 0;
    call->used = 0;
}

/* ---- the reply ------------------------------------------------------------------- */

static int bad(const char **why, const char *reason) {
    if (why)
        *why = reason;
    return SL_EINVAL;
}

/* Element i as a non-negative integer, or -1 ("never") where allowed. */
static bool read_int(const redisReply *r, size_t i, bool never_ok, long long *out) {
    const redisReply *e = r->element[i];
    if (e == NULL || e->type != REDIS_REPLY_INTEGER)
        return false;
    if (e->integer < 0 && !(never_ok && e->integer == -1))
        return false;
    *out = e->integer;
    return true;
}

static sl_usec_t as_time(long long v) { return v == -1 ? SL_NEVER : (sl_usec_t)v; }

int sl__redis_parse_evaluate(const sl_policy_t *p, const struct redisReply *r, sl_decision_t *out,
                             sl_limit_report_t *limits, const char **why) {
    if (r == NULL)
        return bad(why, "no reply");
    if (r->type == REDIS_REPLY_ERROR)
        return bad(why, "the script failed (error reply)");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 8 + 5 * p->nlimits)
        return bad(why, "not a reply of evaluate.lua for this policy");
    long long v[8];
    for (size_t i = 0; i < 8; i++) {
        bool signed_ok = i == 5 || i == 7; /* retry_after: never; limit_index: the pool */
        if (!read_int(r, i, signed_ok, &v[i]))
            return bad(why, "a decision field is not a valid integer");
    }
    if (v[0] > 1 || v[1] > 1 || v[7] >= (long long)p->nlimits)
        return bad(why, "a decision field is out of range");
    long long w[SL_MAX_LIMITS][5];
    for (size_t i = 0; i < p->nlimits; i++) {
        for (size_t k = 0; k < 5; k++)
            if (!read_int(r, 8 + 5 * i + k, k == 4, &w[i][k]))
                return bad(why, "a limit's report is not a valid integer");
        if (w[i][0] > 1)
            return bad(why, "a limit's report is out of range");
    }
    out->allowed = v[0];
    out->limited = v[1];
    out->limit = (uint64_t)v[2];
    out->remaining = (uint64_t)v[3];
    out->reset_after = v[4];
    out->retry_after = as_time(v[5]);
    out->delay = v[6];
    out->limit_index = (int)v[7];
    for (size_t i = 0; limits && i < p->nlimits; i++) {
        limits[i].allowed = w[i][0];
        limits[i].limit = (uint64_t)w[i][1];
        limits[i].remaining = (uint64_t)w[i][2];
        limits[i].reset_after = w[i][3];
        limits[i].retry_after = as_time(w[i][4]);
    }
    return SL_OK;
}

/* A batch reply is one string: per request a status byte, then for 1
 * (decided) the decision and one report per limit, little-endian: */
#define REPLY_DECISION 40 /* allowed 1, limited 1, limit 7, remaining 7, reset 7, retry 8
                           * (signed, -1 never), delay 7, limit_index 2 (signed) */
#define REPLY_REPORT 30   /* allowed 1, limit 7, remaining 7, reset 7, retry 8 (signed) */
#define REPLY_HELD 7      /* status 2: when it runs, then each limit's state's end, 7 each */
/* Status 3 to 6 (3, + 1 allowed, + 2 limited): a one-limit decision whose
 * report is the decision: remaining 7, reset 7, wait 8 (signed: allowed,
 * the delay; denied, the retry, -1 never). */
#define REPLY_COMPACT 22

static uint64_t get_le(const unsigned char *in, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | in[i];
    return v;
}

/* A retry_after: -1 (never) or a time. */
static bool get_retry(const unsigned char *in, sl_usec_t *out) {
    int64_t v = (int64_t)get_le(in, 8);
    if (v < -1)
        return false;
    *out = v == -1 ? SL_NEVER : v;
    return true;
}

/* One decision of a reply, d pointing at its fields. */
static int decode_decision(const sl_policy_t *p, const unsigned char *d, sl_decision_t *out,
                           sl_limit_report_t *limits, const char **why) {
    sl_decision_t v;
    int index = (int16_t)get_le(d + 38, 2);
    if (d[0] > 1 || d[1] > 1 || index < -1 || index >= (int)p->nlimits ||
        !get_retry(d + 23, &v.retry_after))
        return bad(why, "a decision field is out of range");
    v.allowed = d[0];
    v.limited = d[1];
    v.limit = get_le(d + 2, 7);
    v.remaining = get_le(d + 9, 7);
    v.reset_after = (sl_usec_t)get_le(d + 16, 7);
    v.delay = (sl_usec_t)get_le(d + 31, 7);
    v.limit_index = index;
    for (size_t k = 0; k < p->nlimits; k++) {
        const unsigned char *e = d + REPLY_DECISION + REPLY_REPORT * k;
        sl_usec_t retry;
        if (e[0] > 1 || !get_retry(e + 22, &retry))
            return bad(why, "a limit's report is out of range");
        if (limits) {
            limits[k].allowed = e[0];
            limits[k].limit = get_le(e + 1, 7);
            limits[k].remaining = get_le(e + 8, 7);
            limits[k].reset_after = (sl_usec_t)get_le(e + 15, 7);
            limits[k].retry_after = retry;
        }
    }
    *out = v;
    return SL_OK;
}

/* A compact decision (status 3 to 6, c at its status byte): its one
 * limit's report is the decision itself. */
static int decode_compact(const sl_policy_t *p, const unsigned char *c, sl_decision_t *out,
                          sl_limit_report_t *limits, const char **why) {
    unsigned bits = c[0] - 3u;
    bool allowed = bits & 1u;
    sl_usec_t wait;
    if (!get_retry(c + 15, &wait) || (allowed && wait == SL_NEVER))
        return bad(why, "a decision field is out of range");
    sl_decision_t v = {.allowed = allowed, .limited = (bits & 2u) != 0,
                       .limit = p->limits[0].nominal, .remaining = get_le(c + 1, 7),
                       .reset_after = (sl_usec_t)get_le(c + 8, 7),
                       .retry_after = allowed ? 0 : wait, .delay = allowed ? wait : 0, .limit_index = 0};
    if (limits)
        limits[0] = (sl_limit_report_t){.allowed = v.allowed, .limit = v.limit, .remaining = v.remaining,
                                        .reset_after = v.reset_after, .retry_after = v.retry_after};
    *out = v;
    return SL_OK;
}

int sl__redis_batch_offsets(const sl__redis_eval_req_t *reqs, size_t n, const struct redisReply *r,
                            size_t *offsets, const char **why) {
    if (reqs == NULL || n == 0 || n > SL__REDIS_MAX_BATCH)
        return bad(why, "no such batch");
    if (r == NULL)
        return bad(why, "no reply");
    if (r->type == REDIS_REPLY_ERROR)
        return bad(why, "the script failed (error reply)");
    if (r->type != REDIS_REPLY_STRING)
        return bad(why, "not a reply of evaluate.lua for a batch");
    const unsigned char *s = (const unsigned char *)r->str;
    size_t len = r->len, at = 0;
    for (size_t j = 0; j < n; j++) {
        size_t nl = reqs[j].p->nlimits;
        if (at >= len || s[at] > 6 || (s[at] > 2 && nl != 1))
            return bad(why, "not a reply of evaluate.lua for this batch");
        size_t size = s[at] == 0   ? 1
                      : s[at] == 1 ? 1 + REPLY_DECISION + REPLY_REPORT * nl
                      : s[at] == 2 ? 1 + REPLY_DECISION + REPLY_REPORT * nl + REPLY_HELD * (1 + nl)
                                   : 1 + REPLY_COMPACT;
        if (size > len - at)
            return bad(why, "a batch reply cut short");
        offsets[j] = at;
        at += size;
    }
    if (at != len)
        return bad(why, "not a reply of evaluate.lua for this batch");
    return SL_OK;
}

int sl__redis_parse_evaluate_at(const sl__redis_eval_req_t *req, const struct redisReply *r,
                                size_t at, sl_decision_t *out, sl_limit_report_t *limits,
                                const char **why) {
    const unsigned char *s = (const unsigned char *)r->str;
    if (s[at] == 0)
        return bad(why, "the script failed for this request");
    if (s[at] > 2)
        return decode_compact(req->p, s + at, out, limits, why);
    return decode_decision(req->p, s + at + 1, out, limits, why);
}

void sl__redis_parse_held_at(const sl__redis_eval_req_t *req, const struct redisReply *r, size_t at,
                             sl__held_t *held) {
    const unsigned char *s = (const unsigned char *)r->str;
    held->at = 0;
    if (s[at] != 2)
        return;
    size_t nl = req->p->nlimits;
    const unsigned char *h = s + at + 1 + REPLY_DECISION + REPLY_REPORT * nl;
    held->at = (sl_usec_t)get_le(h, 7);
    for (size_t i = 0; i < nl; i++)
        held->exp[i] = (sl_usec_t)get_le(h + REPLY_HELD * (1 + i), 7);
}

int sl__redis_parse_evaluate_batch(const sl__redis_eval_req_t *reqs, size_t n,
                                   const struct redisReply *r, size_t i, sl_decision_t *out,
                                   sl_limit_report_t *limits, const char **why) {
    size_t offsets[SL__REDIS_MAX_BATCH];
    if (reqs == NULL || i >= n || n > SL__REDIS_MAX_BATCH)
        return bad(why, "no such request in the batch");
    /* The whole reply is checked, whichever decision is read: its length
     * must be what the statuses and the policies say. */
    int rc = sl__redis_batch_offsets(reqs, n, r, offsets, why);
    return rc == SL_OK ? sl__redis_parse_evaluate_at(&reqs[i], r, offsets[i], out, limits, why) : rc;
}
