/* policy.h -- compiled policies and their all-or-nothing evaluation.
 *
 * A policy is a name, up to SL_MAX_LIMITS compiled limits and a mode. Its
 * evaluation takes one cell per limit from a store, decides every limit,
 * charges all of them or none, and reduces the verdicts to one decision
 * (the most restrictive values). Pure: the store does the locking and the
 * allocation, through the prepare callback.
 */
#ifndef SL_CORE_POLICY_H
#define SL_CORE_POLICY_H

#include "limit.h"
#include "sluice.h"

struct sl_policy {
    char name[SL_MAX_POLICY_NAME + 1];
    uint64_t id;                        /* hash of the name: seeds key hashes */
    sl_mode_t mode;
    uint32_t soft_percent;
    size_t nlimits;
    sl_limit_t config[SL_MAX_LIMITS];   /* as given, for sl_policy_limit() */
    sl__limit_t limits[SL_MAX_LIMITS];
    struct sl_policy *pool;             /* SL_MODE_ELASTIC: one shared limit, hard */
    bool is_pool;                       /* this is another policy's pool (same name) */
    bool write_back;                    /* decided locally, charges journaled for a
                                           shared store (sl__policy_write_back) */
    uint32_t nodes;                     /* write-back: daemons sharing the state */
    uint64_t share[SL_MAX_LIMITS];      /* write-back: see sl__policy_share() */
};

/* Makes p a write-back policy shared by `nodes` daemons syncing every
 * `interval`, before any use: its charges are journaled by the memory
 * store, and its rate limits keep up to `nodes` times their usual debt, so
 * that what several daemons admitted between two syncs is paid back
 * instead of forgiven when their charges meet in the shared state. Applies
 * to the elastic pool too. */
void sl__policy_write_back(sl_policy_t *p, uint32_t nodes, sl_usec_t interval);

/* Write-back: the most a daemon may charge limit i of a key before its
 * charges are synced (UINT64_MAX with one node): its part of the capacity
 * plus what the limit refills over two sync intervals, ceil(capacity /
 * nodes) + ceil(rate x 2 x interval / period), so that daemons deciding on
 * the same stale state cannot together spend much more than one capacity,
 * while one daemon alone still passes the whole rate. */
uint64_t sl__policy_share(const sl_policy_t *p, size_t i);

/* Called for every limit about to be charged, before any is: the store makes
 * room for the state and, when block_cap > 0, gives the cell a block of that
 * capacity (moving the old content over). A non-zero return aborts the
 * evaluation with nothing charged. */
typedef int (*sl__prepare_fn)(void *ctx, size_t i, sl__cell_t *cell, uint32_t block_cap);

/* Decides a request of `cost` at `now` over cells[0..nlimits). Unless peek,
 * charges every limit when all pass, or only count_denied limits when one
 * does not. *charged gets the mask of cells that changed and must be
 * written back (charged, or rebased after the clock went back), *costed
 * (may be NULL) the mask of those charged `cost`. limits, when not NULL,
 * gets one report per limit. */
int sl__policy_evaluate(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, uint64_t cost,
                        bool peek, sl__prepare_fn prepare, void *ctx, uint32_t *charged,
                        uint32_t *costed, sl_decision_t *out, sl_limit_report_t *limits);

/* sl__policy_evaluate for a reservation (sl_reserve): each limit reserves
 * within max_wait (sl__limit_reserve); when all pass, every limit is charged
 * for the largest delay (sl__limit_reserve_commit) and out->delay is that.
 * max_wait 0 or cost 0 is a plain evaluation. SL_ENOWAIT when a limit
 * cannot reserve (sliding_window, sliding_log) and max_wait > 0; nothing is
 * decided then. not_before (0 <= not_before <= max_wait): the request runs
 * no earlier than that (another policy's place, all or nothing across
 * policies), so its delay is at least that and it is charged then. peek:
 * decided, nothing charged. held (may be NULL): what a place held for
 * later left, to give it back by (refund.h); at 0 when none was. */
/* What a reservation left, to give it back by (refund.h): when the
 * request runs (at, the store's clock; 0: nothing held) and where each
 * limit's state ended right after the charge. */
typedef struct sl__held {
    sl_usec_t at;
    sl_usec_t exp[SL_MAX_LIMITS];
} sl__held_t;

/* What a reservation within max_wait, not before not_before, is refused
 * before any state is looked at: SL_ERANGE (out of range), SL_ENOWAIT (a
 * limit of p cannot hold places: wait_max 0), else SL_OK. */
int sl__policy_reservable(const sl_policy_t *p, sl_usec_t max_wait, sl_usec_t not_before);

int sl__policy_reserve(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl_usec_t not_before, bool peek, sl__prepare_fn prepare,
                       void *ctx, uint32_t *charged, sl_decision_t *out, sl_limit_report_t *limits,
                       sl__held_t *held);

/* Charges costs[i] to every limit i whatever it decides (cost 0: none),
 * as count_denied charges a denied request: how charges a daemon already
 * admitted are merged into a shared state. `since` (0: now) is when the
 * first of them was made: rate limits take them from then, as the daemon
 * that made them did (taken at now, charges spread over a sync interval
 * would cost the key that interval's refill); the counted algorithms take
 * them at now, since an earlier instant would look like a clock going back
 * to a state another daemon has moved on. prepare as for evaluation. */
int sl__policy_force(const sl_policy_t *p, sl__cell_t *cells, sl_usec_t now, sl_usec_t since,
                     const uint64_t *costs, sl__prepare_fn prepare, void *ctx);

#endif
