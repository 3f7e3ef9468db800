/* store_memory_memo.c -- denials a thread decides again without the lock.
 *
 * The attack case is one key that every worker decides for at once, nearly
 * always denied. A denial changes nothing, yet under the shard's lock each
 * one moves the lock's and the slot's cache lines between cores: two
 * threads made 0.66x the decisions of one, with flat combining. A thread
 * keeps the states that a decision which changed nothing read, with the
 * shard's generation at that moment; while the generation is the same,
 * nothing in the shard has changed since, so deciding again on the copy is
 * the decision the lock would give at that clock reading. If it would
 * charge (an admission, a counted denial, a rebase after the clock went
 * back), it is left to the lock. Only a read of the generation is shared:
 * its cache line stays in every core until something in the shard changes.
 *
 * Exactness rests on shard_changed() (store_memory_private.h): every
 * critical section that may change a kept state, move or free a slot, or
 * clear a reference bit calls it before it unlocks (for every shard it
 * holds before it unlocks any), and it bumps the generation when a denial
 * has been kept since the last bump. A reference bit the copy does
 * not set is no loss: the CLOCK hand that clears it bumps the generation,
 * so the key's next decision takes the lock and sets it again.
 *
 * Not here: the decision itself (core/policy.c), the locked path
 * (store_memory.c).
 */
#include <string.h>

#include "../core/policy.h"
#include "store_memory_private.h"

_Thread_local sl__memo_t sl__memos[SL__MEMO_SLOTS];
static _Thread_local uint64_t hits;

bool sl__mem_memo_fits(const sl_policy_t *p) {
    if (p->write_back || p->nlimits > SL__MEMO_LIMITS)
        return false;
    for (size_t i = 0; i < p->nlimits; i++)
        if (sl__limit_block_kind(&p->limits[i]) != SL__BLOCK_NONE)
            return false;
    return true;
}

/* The copy must not be charged: the lock decides what would be. */
static int refuse(void *ctx, size_t i, sl__cell_t *cell, uint32_t block_cap) {
    (void)ctx, (void)i, (void)cell, (void)block_cap;
    return SL_ENOTSUP;
}

bool sl__mem_memo_decide(const memory_store_t *m, shard_t *sh, const sl_policy_t *p,
                         const uint64_t *tags, sl_usec_t now, uint64_t cost, bool peek,
                         sl_decision_t *out, sl_limit_report_t *limits) {
    sl__memo_t *me = sl__memo_of(tags[0]);
    if (me->serial != m->serial || me->n != p->nlimits || p->write_back)
        return false;
    for (uint32_t i = 0; i < me->n; i++)
        if (me->tags[i] != tags[i])
            return false;
    if (me->gen != atomic_load_explicit(&sh->gen, memory_order_seq_cst)) {
        me->serial = 0;
        return false;
    }
    /* Tags name the limits' algorithms: a policy with blocks has no copy. */
    sl__cell_t cells[SL__MEMO_LIMITS];
    for (uint32_t i = 0; i < me->n; i++)
        cells[i] = (sl__cell_t){me->expire_at[i], me->word[i], NULL, false};
    /* decided aside: out and limits stay untouched when the lock decides */
    sl_decision_t d;
    sl_limit_report_t reports[SL__MEMO_LIMITS];
    uint32_t charged, costed;
    if (sl__policy_evaluate(p, cells, now, cost, peek, refuse, NULL, &charged, &costed, &d,
                            limits ? reports : NULL) != SL_OK ||
        charged != 0)
        return false;
    *out = d;
    if (limits)
        memcpy(limits, reports, me->n * sizeof reports[0]);
    hits++;
    return true;
}

void sl__mem_memo_keep(const memory_store_t *m, const sl_policy_t *p, const uint64_t *tags,
                       const sl__cell_t *cells, uint64_t gen) {
    sl__memo_t *me = sl__memo_of(tags[0]);
    me->serial = m->serial;
    me->gen = gen;
    me->n = (uint32_t)p->nlimits;
    for (size_t i = 0; i < p->nlimits; i++) {
        me->tags[i] = tags[i];
        me->expire_at[i] = cells[i].expire_at;
        me->word[i] = cells[i].word;
    }
}

uint64_t sl__mem_memo_hits(void) { return hits; }

sl__memo_t *sl__mem_memos(void) { return sl__memos; }
