/* gcra.c -- virtual scheduling: gcra, token_bucket and leaky_bucket.
 *
 * The three are one algorithm seen three ways. GCRA keeps a theoretical
 * arrival time TAT; a token bucket's deficit (capacity - tokens) and a leaky
 * bucket's level are both (TAT - now) times the rate. A request of cost c
 * passes iff max(TAT, now) + c*T - now <= tau, with T = period/rate and
 * tau = capacity*T. This file is that rule, exactly; the algorithms differ
 * only in how limit.c maps their parameters to capacity.
 *
 * Exactness: T = period/rate is rarely a whole microsecond, so time is counted
 * in units of 1/rate us. T is then `period` units and no division rounds.
 * The state is TAT as a whole microsecond `t` (rounded up, it doubles as the
 * moment the state has recovered) and `frac` = t*rate - TAT in units,
 * 0 <= frac < rate.
 *
 * Not here: parameter validation (limit.c), storage, clocks.
 */
#include "arith.h"
#include "limit.h"

/* TAT = now + debt/rate, stored as a whole microsecond and its fraction. */
static void set_debt(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, int64_t debt) {
    int64_t whole = sl__ceil_div(debt, (int64_t)l->rate);
    cell->expire_at = now + whole;
    cell->word = (uint64_t)(whole * (int64_t)l->rate - debt);
    if (debt > l->debt_max) /* only a reservation leaves this much */
        cell->word |= SL__HELD;
}

/* (TAT - now) in units. A TAT further ahead than debt_max (debt_hold for a
 * state holding reservations) means the clock went back: the state moves
 * back with it, keeping the most it can hold. */
static int64_t debt_at(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now) {
    if (cell->expire_at <= now)
        return 0;
    uint64_t word = cell->word & ~SL__HELD;
    int64_t most = (cell->word & SL__HELD) ? sl__max64(l->debt_max, l->debt_hold) : l->debt_max;
    uint64_t ahead = (uint64_t)cell->expire_at - (uint64_t)now;
    if (ahead <= (uint64_t)most / l->rate + 1) {
        uint64_t frac = word < l->rate ? word : l->rate - 1;
        sl__u128 debt = (sl__u128)ahead * l->rate - frac;
        if (debt <= (sl__u128)most)
            return (int64_t)debt;
    }
    set_debt(l, cell, now, l->debt_max);
    cell->dirty = true;
    return l->debt_max;
}

static uint64_t remaining_at(const sl__limit_t *l, int64_t debt) {
    return debt >= l->tau ? 0 : (uint64_t)((l->tau - debt) / l->period);
}

/* Units of debt to microseconds until it has drained, rounded up. */
static sl_usec_t drain_time(const sl__limit_t *l, int64_t debt) {
    return sl__ceil_div(debt, (int64_t)l->rate);
}

void sl__rate_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                     sl__verdict_t *v) {
    int64_t debt = debt_at(l, cell, now);
    v->remaining_now = remaining_at(l, debt);
    v->reset_now = drain_time(l, debt);
    v->delay = 0;
    if (cost > l->capacity) {
        v->allowed = false;
        v->retry_after = SL_NEVER;
        return;
    }
    /* cost <= capacity, so cost*period <= tau and debt + inc <= 3*tau: no overflow. */
    int64_t inc = (int64_t)cost * l->period;
    if (debt + inc <= l->tau) {
        v->allowed = true;
        v->retry_after = 0;
        v->remaining_charged = remaining_at(l, debt + inc);
        v->reset_charged = drain_time(l, debt + inc);
        if (l->shaper)
            v->delay = v->reset_now; /* it leaves once everything queued before it has */
    } else {
        v->allowed = false;
        v->retry_after = drain_time(l, debt + inc - l->tau);
        v->remaining_charged = v->remaining_now;
        v->reset_charged = v->reset_now;
    }
}

void sl__rate_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    int64_t debt = debt_at(l, cell, now);
    int64_t inc = cost > l->capacity ? l->debt_max : (int64_t)cost * l->period;
    /* Only count_denied takes debt past tau: tokens go negative down to
     * -capacity, so a client that keeps hammering stays out. Debt that
     * reservations hold is never cut back to that. */
    if (debt > l->debt_max)
        set_debt(l, cell, now, debt);
    else
        set_debt(l, cell, now, debt > l->debt_max - inc ? l->debt_max : debt + inc);
}

/* ---- reservations (sl_reserve) ------------------------------------------------ */

/* Until the request's place in the schedule: the moment debt + inc fits tau
 * (a shaper's request leaves its queue when the debt before it has drained). */
static sl_usec_t own_delay(const sl__limit_t *l, int64_t debt, int64_t inc) {
    if (l->shaper)
        return drain_time(l, debt);
    return debt + inc > l->tau ? drain_time(l, debt + inc - l->tau) : 0;
}

void sl__rate_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                      sl_usec_t max_wait, sl__verdict_t *v) {
    sl__rate_decide(l, cell, now, cost, v);
    if (v->allowed || cost > l->capacity)
        return;
    int64_t debt = debt_at(l, cell, now);
    int64_t inc = (int64_t)cost * l->period;
    sl_usec_t wait = max_wait < l->wait_max ? max_wait : l->wait_max;
    /* wait*rate <= 2^61 (wait_max), debt + inc <= debt_hold + tau: no overflow */
    int64_t over = debt + inc - l->tau - wait * (int64_t)l->rate;
    if (over > 0) {
        v->retry_after = drain_time(l, over); /* until this wait would be enough */
        return;
    }
    v->allowed = true;
    v->retry_after = 0;
    v->delay = own_delay(l, debt, inc);
    v->remaining_charged = 0;
    v->reset_charged = drain_time(l, debt + inc);
}

void sl__rate_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                             uint64_t cost) {
    int64_t debt = debt_at(l, cell, now);
    int64_t inc = (int64_t)cost * l->period;
    sl_usec_t common = at - now; /* <= wait_max, so common*rate <= 2^61 */
    if (common > own_delay(l, debt, inc) && common * (int64_t)l->rate > debt)
        debt = common * (int64_t)l->rate; /* it runs later than its place: charged from then */
    set_debt(l, cell, now, debt + inc);
}

bool sl__rate_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    /* the state is the one the reservation left: its debt is exact */
    uint64_t frac = cell->word & ~SL__HELD;
    sl_usec_t ahead = cell->expire_at - now;
    if (frac >= l->rate || ahead > SL_MAX_WAIT + l->debt_max / (int64_t)l->rate + 1)
        return false;
    int64_t debt = ahead * (int64_t)l->rate - (int64_t)frac;
    int64_t inc = (int64_t)cost * l->period;
    set_debt(l, cell, now, debt > inc ? debt - inc : 0);
    return true;
}
