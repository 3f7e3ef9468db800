/* journal.h -- what write-back mode needs from the library's stores: the journal of charges.
 *
 * In write-back mode a daemon decides in its memory store and shares the
 * state through Redis every sync interval: the memory store tells the
 * daemon what each decision charged (the journal's hooks, which
 * src/server/engine/charge_journal.c implements), and takes the merged
 * state back (import; src/server/engine/write_back.c syncs). States
 * travel between daemons in the form sl__cells_encode() writes: per limit
 * its id, when it recovers, its word and its block, so the merging is done
 * by the same code that decides, in C, and Redis only keeps bytes.
 *
 * Not here: the syncing (the daemon), Redis.
 */
#ifndef SL_STORE_JOURNAL_H
#define SL_STORE_JOURNAL_H

#include "../core/policy.h"

/* Called by the memory store, under the lock of the key's shard, after an
 * evaluation of a write-back policy (sl__policy_write_back) charged
 * something: `cost` went to every limit i in the mask `costed`, at `now`. */
typedef void (*sl__journal_fn)(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                               uint32_t costed, uint64_t cost, sl_usec_t now);

/* What the journal holds of (p, key) not yet merged into the shared state
 * (sent or not): unsynced[i] per limit, zeroed by the caller; *retry_after
 * gets how long until the next sync. Called under the key's shard lock
 * before a write-back policy charges anything: a limit whose unsynced
 * charges would pass sl__policy_share() denies until they are synced. */
typedef void (*sl__unsynced_fn)(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                                uint64_t *unsynced, sl_usec_t *retry_after);

/* Sets the memory store's journal (NULL: none). Call before any decision. */
void sl__memory_journal(sl_store_t *s, sl__journal_fn fn, sl__unsynced_fn unsynced, void *ctx);

/* The charges the journal holds for (p, key) that the state being imported
 * does not include yet: costs[i] per limit, zeroed by the caller, and when
 * the first was made (*since, 0 = unknown). Called under the key's shard
 * lock, so no evaluation of the key runs meanwhile: the journal may also
 * forget here what the imported state includes. */
typedef void (*sl__pending_fn)(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                               uint64_t *costs, sl_usec_t *since);

/* Replaces the state of (p, key) with cells[0..nlimits) (decoded by
 * sl__cells_decode: their blocks are taken over and freed), charged at
 * `now` with what pending() reports, all under the key's shard lock. */
int sl__memory_import(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                      sl__cell_t *cells, sl_usec_t now, sl__pending_fn pending, void *ctx);

/* ---- the shared form of a key's state ------------------------------------------------ */

/* Writes the live cells (not recovered at `now`) of p's limits into
 * buf[0..cap); returns the bytes needed, which may exceed cap (nothing
 * useful is written then). 0 means nothing is live. */
size_t sl__cells_encode(const sl_policy_t *p, const sl__cell_t *cells, sl_usec_t now, void *buf,
                        size_t cap);

/* Reads an encoded state into cells[0..nlimits): limits the bytes do not
 * mention start fresh, records of limits p does not have are skipped (the
 * policy changed). Blocks are malloc'd: release them with
 * sl__cells_release(). SL_ECORRUPT (cells all fresh) when the bytes are not
 * a state of this shape: they come from outside. */
int sl__cells_decode(const sl_policy_t *p, const void *buf, size_t len, sl__cell_t *cells);

void sl__cells_release(sl__cell_t *cells, size_t n);

/* An sl__prepare_fn for cells outside any store (ctx: the policy): gives
 * a cell a malloc'd block of block_cap, with the old one's content. */
int sl__cells_prepare(void *ctx, size_t i, sl__cell_t *cell, uint32_t block_cap);

/* The shared state after charging costs[i] to limit i (made from `since`
 * on, see sl__policy_force) at `now` on top of `shared` (encoded; empty: a
 * new key); live records of limits p does not have (another daemon's
 * configuration, during a rolling change) are carried through as they are: *out (malloc'd, NULL when nothing
 * is live) and *out_len; *recovered_at (may be NULL) gets when it will have
 * recovered. SL_ECORRUPT when `shared` was unreadable: *out then holds the
 * charges on a fresh state, usable as it is. */
int sl__cells_merge(const sl_policy_t *p, const void *shared, size_t shared_len,
                    const uint64_t *costs, sl_usec_t since, sl_usec_t now, unsigned char **out,
                    size_t *out_len, sl_usec_t *recovered_at);

/* When every live cell has recovered: max expire_at. */
sl_usec_t sl__cells_recovered_at(const sl_policy_t *p, const sl__cell_t *cells);

#endif
