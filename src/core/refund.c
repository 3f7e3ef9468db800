/* refund.c -- giving back a reservation (see refund.h). Pure: cells in,
 * cells out, as gcra.c and window.c. */
#include "arith.h"
#include "refund.h"

static bool rate_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    /* the state is the one the reservation left: its debt is exact */
    uint64_t frac = cell->word & ~SL__HELD;
    sl_usec_t ahead = cell->expire_at - now;
    if (frac >= l->rate || ahead > SL_MAX_WAIT + l->debt_max / (int64_t)l->rate + 1)
        return false;
    int64_t debt = ahead * (int64_t)l->rate - (int64_t)frac;
    int64_t inc = (int64_t)cost * l->period;
    debt = debt > inc ? debt - inc : 0;
    int64_t whole = sl__ceil_div(debt, (int64_t)l->rate);
    cell->expire_at = now + whole;
    cell->word = (uint64_t)(whole * (int64_t)l->rate - debt);
    if (debt > l->debt_max) /* still holding places: gcra.c's set_debt */
        cell->word |= SL__HELD;
    return true;
}

static bool fixed_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t at, uint64_t cost) {
    sl_usec_t end_at = (at / l->period + 1) * l->period;
    uint64_t count = cell->word & ~SL__HELD;
    if (cell->expire_at != end_at || count < cost)
        return false;
    cell->word = (count - cost) | (cell->word & SL__HELD);
    return true;
}

bool sl__limit_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at, sl_usec_t exp,
                      uint64_t cost) {
    if (now >= at || cost == 0 || cost > l->capacity || cell->expire_at <= now)
        return false; /* its moment came: it ran, as far as the limit knows */
    if (l->family == SL__RATE)
        return cell->expire_at == exp && rate_refund(l, cell, now, cost);
    if (l->family == SL__WINDOW && l->precision == 0)
        return fixed_refund(l, cell, at, cost);
    return false;
}

uint32_t sl__policy_refund(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, const sl__held_t *held,
                           uint64_t cost) {
    uint32_t changed = 0;
    for (size_t i = 0; i < p->nlimits && held->at > 0; i++)
        if (sl__limit_refund(&p->limits[i], &cells[i], now, held->at, held->exp[i], cost))
            changed |= 1u << i;
    return changed;
}
