/* refund.c -- giving back a reservation (see refund.h): which limits can,
 * and the family's own step (gcra.c, window.c) for each. */
#include "refund.h"

/* Gives back `cost` reserved for the moment `at` from limit l's cell, whose
 * state ended at `exp` right after that reservation. Returns whether the
 * cell changed. */
static bool limit_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at, sl_usec_t exp,
                         uint64_t cost) {
    if (now >= at || cost == 0 || cost > l->capacity || cell->expire_at <= now)
        return false; /* its moment came: it ran, as far as the limit knows */
    if (l->family == SL__RATE)
        return cell->expire_at == exp && sl__rate_refund(l, cell, now, cost);
    if (l->family == SL__WINDOW && l->precision == 0)
        return sl__fixed_refund(l, cell, at, cost);
    return false;
}

uint32_t sl__policy_refund(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, const sl__held_t *held,
                           uint64_t cost) {
    uint32_t changed = 0;
    for (size_t i = 0; i < p->nlimits && held->at > 0; i++)
        if (limit_refund(&p->limits[i], &cells[i], now, held->at, held->exp[i], cost))
            changed |= 1u << i;
    return changed;
}
