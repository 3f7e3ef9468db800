/* sliding_log.c -- the exact sliding window: a log of admitted requests.
 *
 * A request of cost c passes iff the cost admitted in (now - period, now]
 * plus c is at most the limit. The log is a ring of timestamps, one per unit
 * of cost, oldest first, in an out-of-line block. Only admitted requests are
 * logged (denied ones too with count_denied), so it never holds more than
 * `limit` entries: with count_denied the oldest give way, which keeps the
 * count in the window exactly min(true count, limit).
 *
 * Timestamps: periods up to 2^31 us (~35 min) keep them modulo 2^32 (4 bytes
 * each). That is exact: every entry still in the ring is less than 2*period
 * old when read (entries older than period are dropped at each access, and a
 * log whose newest entry is older than period is discarded whole), so the
 * age now - entry computed modulo 2^32 is the true age. Longer periods keep
 * whole 64-bit timestamps. The newest entry is expire_at - period.
 *
 * Not here: the ring's allocation (the store, through sl__log_need()).
 */
#include <string.h>

#include "arith.h"
#include "limit.h"

static uint64_t entry_at(const sl__block_t *b, uint32_t i) {
    uint32_t pos = b->head + i;
    if (pos >= b->cap)
        pos -= b->cap;
    if (b->kind == SL__BLOCK_LOG32)
        return b->data[pos];
    uint64_t t;
    memcpy(&t, &b->data[2 * (size_t)pos], sizeof t);
    return t;
}

static void entry_put(sl__block_t *b, uint32_t pos, sl_usec_t t) {
    if (b->kind == SL__BLOCK_LOG32) {
        b->data[pos] = (uint32_t)t; /* modulo 2^32 */
    } else {
        uint64_t u = (uint64_t)t;
        memcpy(&b->data[2 * (size_t)pos], &u, sizeof u);
    }
}

/* Age of the i-th oldest entry at now. */
static sl_usec_t age_of(const sl__block_t *b, uint32_t i, sl_usec_t now) {
    uint64_t e = entry_at(b, i);
    if (b->kind == SL__BLOCK_LOG32)
        return (uint32_t)((uint32_t)now - (uint32_t)e);
    return (uint64_t)now >= e ? now - (sl_usec_t)e : 0;
}

/* Moves every entry back by delta (the clock went back by that much). */
static void shift_back(sl__block_t *b, sl_usec_t delta) {
    for (uint32_t i = 0; i < b->count; i++) {
        uint32_t pos = b->head + i;
        if (pos >= b->cap)
            pos -= b->cap;
        entry_put(b, pos, (sl_usec_t)(entry_at(b, i) - (uint64_t)delta));
    }
}

/* The log as of now: the count of live entries, after dropping those that
 * have left the window (or everything, if the whole log has). A newest entry
 * later than now means the clock went back: the log moves back with it. */
static uint32_t tidy(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now) {
    sl__block_t *b = cell->block;
    if (b == NULL)
        return 0;
    if (cell->expire_at <= now) {
        b->head = 0;
        b->count = 0;
        return 0;
    }
    sl_usec_t newest = cell->expire_at - l->period;
    if (newest > now) {
        shift_back(b, newest - now);
        cell->expire_at = now + l->period;
        cell->dirty = true;
    }
    while (b->count > 0 && age_of(b, 0, now) >= l->period) {
        b->head = b->head + 1 == b->cap ? 0 : b->head + 1;
        b->count--;
    }
    return b->count;
}

void sl__log_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                    sl__verdict_t *v) {
    uint64_t count = tidy(l, cell, now);
    v->remaining_now = sl__sat_sub_u64(l->capacity, count);
    v->reset_now = count > 0 ? cell->expire_at - now : 0;
    v->delay = 0;
    if (cost <= l->capacity && count <= l->capacity - cost) {
        v->allowed = true;
        v->retry_after = 0;
        v->remaining_charged = l->capacity - count - cost;
        v->reset_charged = cost > 0 ? l->period : v->reset_now; /* newest entry is now */
        return;
    }
    v->allowed = false;
    v->remaining_charged = v->remaining_now;
    v->reset_charged = v->reset_now;
    if (cost > l->capacity) {
        v->retry_after = SL_NEVER;
    } else {
        /* The (count + cost - capacity) oldest entries must leave first. */
        uint32_t k = (uint32_t)(count + cost - l->capacity - 1);
        v->retry_after = l->period - age_of(cell->block, k, now);
    }
}

static uint32_t grown_cap(uint64_t want, uint64_t limit) {
    uint64_t cap = 4;
    while (cap < want)
        cap *= 2;
    return (uint32_t)sl__minu64(cap, limit);
}

uint32_t sl__log_need(const sl__limit_t *l, const sl__cell_t *cell, uint64_t cost) {
    uint64_t count = cell->block ? cell->block->count : 0;
    uint64_t want = sl__minu64(sl__sat_add_u64(count, cost), l->capacity);
    if (want == 0 || (cell->block && cell->block->cap >= want))
        return 0;
    return grown_cap(want, l->capacity);
}

void sl__log_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    tidy(l, cell, now);
    sl__block_t *b = cell->block;
    if (b == NULL || cost == 0)
        return;
    uint64_t push = sl__minu64(sl__minu64(cost, l->capacity), b->cap);
    while (b->count > 0 && (b->count + push > b->cap || b->count + push > l->capacity)) {
        /* count_denied past the limit: the oldest entries give way */
        b->head = b->head + 1 == b->cap ? 0 : b->head + 1;
        b->count--;
    }
    for (uint64_t i = 0; i < push; i++) {
        uint32_t pos = b->head + b->count;
        if (pos >= b->cap)
            pos -= b->cap;
        entry_put(b, pos, now);
        b->count++;
    }
    cell->expire_at = now + l->period;
}

bool sl__log_valid(const sl__limit_t *l, const sl__cell_t *cell) {
    const sl__block_t *b = cell->block;
    if (b == NULL || b->count == 0)
        return true;
    /* as commit leaves it: oldest first, all within a period of the newest,
     * which is expire_at - period */
    sl_usec_t newest = cell->expire_at - l->period;
    if (newest < 0)
        return false;
    sl_usec_t last = l->period;
    for (uint32_t i = 0; i < b->count; i++) {
        sl_usec_t age = age_of(b, i, newest);
        if (b->kind == SL__BLOCK_LOG64 && entry_at(b, i) > (uint64_t)newest)
            return false;
        if (age >= l->period || age > last)
            return false;
        last = age;
    }
    return last == 0;
}
