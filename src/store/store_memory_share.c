/* store_memory_share.c -- write-back's shares in the memory store's
 * decisions: a daemon that has spent its part of a limit is refused until
 * its charges are synced (core/policy.h, sl__policy_share).
 *
 * Not here: the journal itself (server/state), the decision (store_memory.c).
 */
#include "../core/arith.h"
#include "../core/policy.h"
#include "store_memory_private.h"

/* Write-back: the mask of limits this daemon's unsynced charges of the
 * key would take past its share. A key with nothing unsynced may always
 * try, so that a cost above the share is not refused forever. */
uint32_t sl__mem_share_check(const memory_store_t *m, const sl_policy_t *p, const void *key,
                             size_t key_len, uint64_t cost, sl_usec_t *retry) {
    uint64_t unsynced[SL_MAX_LIMITS] = {0};
    m->unsynced(m->journal_ctx, p, key, key_len, unsynced, retry);
    uint32_t over = 0;
    for (size_t i = 0; i < p->nlimits; i++)
        if (unsynced[i] > 0 && sl__sat_add_u64(unsynced[i], cost) > sl__policy_share(p, i))
            over |= 1u << i;
    return over;
}

/* An admission the limits would give, taken back: this daemon has spent
 * its share until its charges are synced. */
void sl__mem_deny_for_share(const sl_policy_t *p, uint32_t over, sl_usec_t retry,
                            sl_decision_t *out, sl_limit_report_t *limits) {
    out->allowed = false;
    out->limited = true;
    out->remaining = 0;
    out->retry_after = retry > 0 ? retry : 1;
    out->delay = 0;
    for (size_t i = 0; i < p->nlimits; i++) {
        if (!(over & (1u << i)))
            continue;
        if (out->limit_index < 0 || !(over & (1u << out->limit_index))) {
            out->limit_index = (int)i;
            out->limit = p->limits[i].nominal;
        }
        if (limits) {
            limits[i].allowed = false;
            limits[i].remaining = 0;
            limits[i].retry_after = out->retry_after;
        }
    }
}
