/* limit.c -- validation and compilation of limits; dispatch to the algorithms.
 *
 * Everything that can overflow is ruled out here, once, so that the
 * algorithms can do plain int64 arithmetic: periods up to 2^61 us, rates up
 * to 2^61, tolerance capacity*period up to 2^61 scaled units.
 *
 * Not here: the algorithms themselves (gcra.c, window.c, sliding_log.c).
 */
#include <string.h>

#include <xxhash.h>

#include "arith.h"
#include "limit.h"

#define SL__MAX_SCALED (INT64_C(1) << 61)

static const char *const algorithm_names[SL_ALGORITHM_COUNT] = {
    [SL_GCRA] = "gcra",
    [SL_TOKEN_BUCKET] = "token_bucket",
    [SL_LEAKY_BUCKET] = "leaky_bucket",
    [SL_FIXED_WINDOW] = "fixed_window",
    [SL_SLIDING_LOG] = "sliding_log",
    [SL_SLIDING_WINDOW] = "sliding_window",
};

const char *sl_algorithm_name(sl_algorithm_t a) {
    return (unsigned)a < SL_ALGORITHM_COUNT ? algorithm_names[a] : NULL;
}

int sl_algorithm_parse(const char *name, sl_algorithm_t *out) {
    for (int a = 0; name && a < SL_ALGORITHM_COUNT; a++) {
        if (strcmp(name, algorithm_names[a]) == 0) {
            *out = (sl_algorithm_t)a;
            return SL_OK;
        }
    }
    return SL_EINVAL;
}

static int fail(const char **why, const char *reason, int err) {
    if (why)
        *why = reason;
    return err;
}

/* value * (100 + percent) / 100, or 0 when it exceeds `max`. */
static uint64_t with_tolerance(uint64_t value, uint32_t percent, uint64_t max) {
    sl__u128 v = (sl__u128)value * (100 + percent) / 100;
    return v > max ? 0 : (uint64_t)v;
}

static uint64_t state_id(const sl__limit_t *l, uint64_t policy_id) {
    /* Only what shapes the state: unchanged limits keep their state across a
     * reload, changed ones start afresh instead of misreading old state. */
    uint64_t fields[6] = {(uint64_t)l->algorithm, l->rate, (uint64_t)l->period, l->capacity,
                          l->precision, (uint64_t)l->family};
    return XXH3_64bits_withSeed(fields, sizeof fields, policy_id);
}

int sl_limit_validate(const sl_limit_t *limit, const char **why) {
    sl__limit_t scratch;
    if (limit == NULL)
        return fail(why, "no limit", SL_EINVAL);
    return sl__limit_compile(limit, 0, 0, &scratch, why);
}

int sl__limit_compile(const sl_limit_t *in, uint32_t soft_percent, uint64_t policy_id,
                      sl__limit_t *out, const char **why) {
    sl__limit_t l;
    memset(&l, 0, sizeof l);
    if ((unsigned)in->algorithm >= SL_ALGORITHM_COUNT)
        return fail(why, "unknown algorithm", SL_EINVAL);
    if (in->limit == 0)
        return fail(why, "limit must be at least 1", SL_EINVAL);
    if (in->period <= 0)
        return fail(why, "period must be at least 1 us", SL_EINVAL);
    if (in->period > SL__MAX_PERIOD)
        return fail(why, "period is too long (at most 2^61 us)", SL_ERANGE);
    if (soft_percent > 1000)
        return fail(why, "soft tolerance must be at most 1000 percent", SL_ERANGE);
    if (in->shaper && in->algorithm != SL_LEAKY_BUCKET)
        return fail(why, "shaper applies to leaky_bucket only", SL_EINVAL);
    if (in->precision != 0 && in->algorithm != SL_SLIDING_WINDOW)
        return fail(why, "precision applies to sliding_window only", SL_EINVAL);

    l.algorithm = in->algorithm;
    l.shaper = in->shaper;
    l.count_denied = in->count_denied;
    l.period = in->period;

    switch (in->algorithm) {
    case SL_GCRA:
    case SL_TOKEN_BUCKET:
    case SL_LEAKY_BUCKET:
        l.family = SL__RATE;
        if (in->algorithm == SL_GCRA)
            l.nominal = in->burst == UINT64_MAX ? 0 : in->burst + 1;
        else
            l.nominal = in->burst ? in->burst : in->limit;
        l.capacity = with_tolerance(l.nominal, soft_percent, SL__MAX_SCALED);
        l.rate = with_tolerance(in->limit, soft_percent, SL__MAX_SCALED);
        if (l.nominal == 0 || l.capacity == 0)
            return fail(why, "burst is too large", SL_ERANGE);
        if (l.rate == 0)
            return fail(why, "limit is too large (at most 2^61)", SL_ERANGE);
        if ((sl__u128)l.capacity * (uint64_t)l.period > (sl__u128)SL__MAX_SCALED)
            return fail(why, "capacity * period is too large (at most 2^61)", SL_ERANGE);
        l.tau = (int64_t)l.capacity * l.period;
        l.debt_max = l.count_denied ? 2 * l.tau : l.tau;
        /* waits cost wait*rate units of debt: kept under 2^61 */
        l.wait_max = SL_MAX_WAIT < SL__MAX_SCALED / (int64_t)l.rate ? SL_MAX_WAIT
                                                                    : SL__MAX_SCALED / (int64_t)l.rate;
        l.debt_hold = l.tau + l.wait_max * (int64_t)l.rate;
        break;
    case SL_FIXED_WINDOW:
    case SL_SLIDING_WINDOW:
    case SL_SLIDING_LOG: {
        /* Counted algorithms: capacity is the limit, no burst. */
        bool log = in->algorithm == SL_SLIDING_LOG;
        uint64_t max = log ? SL__MAX_LOG_LIMIT : SL__MAX_WINDOW_LIMIT;
        l.family = log ? SL__LOG : SL__WINDOW;
        if (in->burst != 0)
            return fail(why, "burst applies to gcra, token_bucket and leaky_bucket only",
                        SL_EINVAL);
        l.nominal = in->limit;
        l.capacity = with_tolerance(in->limit, soft_percent, max);
        if (in->limit > max || l.capacity == 0)
            return fail(why,
                        log ? "sliding_log limit is too large (at most 2^20); use sliding_window"
                            : "limit of a window is too large (at most 2^32-1)",
                        SL_ERANGE);
        l.rate = l.capacity;
        if (in->algorithm == SL_SLIDING_WINDOW) {
            l.precision = in->precision ? in->precision : 1;
            if (l.precision > SL__MAX_PRECISION)
                return fail(why, "precision is too large (at most 65536)", SL_ERANGE);
            if (l.period % l.precision != 0)
                return fail(why, "period must be a multiple of precision", SL_EINVAL);
            l.sub = l.period / l.precision;
        } else if (!log) {
            l.wait_max = SL_MAX_WAIT;
        }
        break;
    }
    default:
        return fail(why, "unknown algorithm", SL_EINVAL);
    }
    l.id = state_id(&l, policy_id);
    *out = l;
    return SL_OK;
}

void sl__limit_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                      sl__verdict_t *v) {
    switch (l->family) {
    case SL__RATE:
        sl__rate_decide(l, cell, now, cost, v);
        break;
    case SL__WINDOW:
        sl__window_decide(l, cell, now, cost, v);
        break;
    case SL__LOG:
        sl__log_decide(l, cell, now, cost, v);
        break;
    }
}

void sl__limit_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    switch (l->family) {
    case SL__RATE:
        sl__rate_commit(l, cell, now, cost);
        break;
    case SL__WINDOW:
        sl__window_commit(l, cell, now, cost);
        break;
    case SL__LOG:
        sl__log_commit(l, cell, now, cost);
        break;
    }
}

void sl__limit_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl__verdict_t *v) {
    if (l->family == SL__RATE)
        sl__rate_reserve(l, cell, now, cost, max_wait, v);
    else if (l->family == SL__WINDOW && l->precision == 0)
        sl__fixed_reserve(l, cell, now, cost, max_wait, v);
    else
        sl__limit_decide(l, cell, now, cost, v);
}

void sl__limit_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                              uint64_t cost) {
    if (l->family == SL__RATE)
        sl__rate_reserve_commit(l, cell, now, at, cost);
    else if (l->family == SL__WINDOW && l->precision == 0)
        sl__fixed_reserve_commit(l, cell, now, at, cost);
    else
        sl__limit_commit(l, cell, now, cost);
}

uint32_t sl__limit_block_kind(const sl__limit_t *l) {
    if (l->family == SL__LOG)
        return l->period <= SL__LOG_NARROW_MAX_PERIOD ? SL__BLOCK_LOG32 : SL__BLOCK_LOG64;
    if (l->family == SL__WINDOW && l->precision > 1)
        return SL__BLOCK_COUNTERS;
    return SL__BLOCK_NONE;
}

uint32_t sl__limit_block_need(const sl__limit_t *l, const sl__cell_t *cell, uint64_t cost) {
    switch (sl__limit_block_kind(l)) {
    case SL__BLOCK_LOG32:
    case SL__BLOCK_LOG64:
        return sl__log_need(l, cell, cost);
    case SL__BLOCK_COUNTERS:
        return cell->block ? 0 : l->precision + 1;
    default:
        return 0;
    }
}

bool sl__limit_block_fits(const sl__limit_t *l, const sl__block_t *b) {
    uint32_t kind = sl__limit_block_kind(l);
    if (b->kind != kind)
        return false;
    return kind != SL__BLOCK_COUNTERS || b->cap == l->precision + 1;
}

bool sl__limit_cell_valid(const sl__limit_t *l, const sl__cell_t *cell) {
    if (cell->expire_at < 0 || cell->expire_at > SL__MAX_TIME + SL__MAX_PERIOD)
        return false;
    /* a sliding window's state ends on a sub-window boundary, precision + 1
     * sub-windows after the one it counts (window.c): the counters are
     * indexed by that arithmetic */
    if (l->algorithm == SL_SLIDING_WINDOW && cell->expire_at > 0 &&
        (cell->expire_at % l->sub != 0 || cell->expire_at / l->sub < (int64_t)l->precision + 1))
        return false;
    return l->family != SL__LOG || sl__log_valid(l, cell);
}

size_t sl__block_size(uint32_t kind, uint32_t cap) {
    return sizeof(sl__block_t) + sl__block_data_bytes(kind, cap);
}

void sl__block_init(sl__block_t *b, uint32_t kind, uint32_t cap) {
    memset(b, 0, sl__block_size(kind, cap));
    b->kind = kind;
    b->cap = cap;
    b->data = (uint32_t *)(b + 1);
}

void sl__block_move(const sl__block_t *from, sl__block_t *to) {
    if (from->kind == SL__BLOCK_COUNTERS) {
        memcpy(to->data, from->data, sizeof(uint32_t) * (from->cap < to->cap ? from->cap : to->cap));
        return;
    }
    uint32_t words = sl__block_words(from->kind);
    uint32_t n = from->count < to->cap ? from->count : to->cap;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pos = (from->head + i) % from->cap;
        memcpy(&to->data[(size_t)i * words], &from->data[(size_t)pos * words],
               sizeof(uint32_t) * words);
    }
    to->head = 0;
    to->count = n;
}

bool sl__block_valid(const sl__block_t *b) {
    if (b->kind < SL__BLOCK_LOG32 || b->kind > SL__BLOCK_COUNTERS)
        return false;
    if (b->cap == 0 || b->cap > SL__MAX_BLOCK_CAP || b->head >= b->cap || b->count > b->cap)
        return false;
    if (b->kind == SL__BLOCK_COUNTERS && (b->head != 0 || b->count != 0 || b->cap < 2))
        return false;
    return true;
}
