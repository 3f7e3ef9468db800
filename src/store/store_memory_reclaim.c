/* store_memory_reclaim.c -- the memory store's reclamation and eviction
 * (see store_memory.c for the design): recovered states freed by sweeps,
 * room made for a state about to be placed (growth, a sweep first, or CLOCK
 * eviction at the cap) and for out-of-line bytes within max_memory (out of
 * other records, or of the table, which shrinks to make them).
 *
 * Not here: the tables themselves (store_memory.c), the sweep from a timer
 * (store_memory_bulk.c).
 */
#include "store_memory_private.h"

static uint32_t grown_cap(uint32_t cap) { return cap + (cap / 7 > 1 ? cap / 7 : 1); }

static bool pinned(const pins_t *p, uint64_t tag) {
    for (size_t i = 0; p && i < p->n; i++)
        if (ident(p->tags[i]) == ident(tag))
            return true;
    return false;
}

/* Frees recovered states from the cursor on, examining at most `budget`
 * slots (a removal counts: the next slot moves into its place and is looked
 * at again), or with budget 0 the whole table once. */
size_t sl__mem_reclaim(shard_t *sh, sl_usec_t now, uint32_t budget, const pins_t *pins) {
    uint32_t before = sh->count;
    uint32_t advanced = 0;
    for (uint64_t examined = 0; sh->count > 0 && advanced < sh->cap && (budget == 0 || examined < budget);
         examined++) {
        if (sh->sweep >= sh->cap)
            sh->sweep = 0;
        slot_t *s = &sh->slots[sh->sweep];
        if (s->tag && slot_expire(sh, s) <= now && !pinned(pins, s->tag)) {
            sl__mem_remove_at(sh, sh->sweep);
        } else {
            sh->sweep++;
            advanced++;
        }
    }
    sh->reclaimed += before - sh->count;
    return before - sh->count;
}

/* Which slots evict_one() may take: any, those that own an out-of-line
 * record, or (a class number) those whose block is of that slab class. */
#define ANY_SLOT (-2)
#define OUT_ONLY (-1)

static bool candidate(const slot_t *s, int64_t which) {
    if (which == ANY_SLOT)
        return true;
    if (which == OUT_ONLY)
        return owns_out(s);
    return (s->tag & SLOT_BLOCK) && (slot_ref(s) >> SLAB_CLASS_SHIFT) == (uint64_t)which;
}

/* CLOCK: the first slot found without its reference bit goes (clearing bits
 * on the way); recovered states go first and are not counted as evictions.
 * Only candidate() slots are looked at. */
static bool evict_one(shard_t *sh, sl_usec_t now, const pins_t *pins, int64_t which) {
    for (uint64_t scanned = 0; scanned <= 2 * (uint64_t)sh->cap; scanned++) {
        if (sh->hand >= sh->cap)
            sh->hand = 0;
        slot_t *s = &sh->slots[sh->hand];
        if (s->tag == 0 || pinned(pins, s->tag) || !candidate(s, which)) {
            sh->hand++;
            continue;
        }
        if (slot_expire(sh, s) <= now) {
            sl__mem_remove_at(sh, sh->hand);
            sh->reclaimed++;
            return true;
        }
        if (s->tag & SLOT_REF) {
            s->tag &= ~SLOT_REF;
            sh->hand++;
            continue;
        }
        sl__mem_remove_at(sh, sh->hand);
        sh->evictions++;
        return true;
    }
    return false;
}

/* Room for one more slot. Small tables just grow: a recovered state left in
 * place costs a key nothing when it comes back, where removing it and
 * inserting it again costs more than the decision. Large tables are swept
 * before they grow (the sweep is as costly as the growth it may spare), and
 * grow anyway unless the sweep freed a quarter, so that under steady churn
 * sweeps and re-inserts stay amortised. At the cap, CLOCK takes recovered
 * states first and evicts only when there are none on its way; its hand
 * starts at the home of `tag`, the state about to be placed, so that the
 * hole opens in the run the state goes into: a hand going round on its own
 * leaves every hole behind it while inserts land anywhere, and the rest of
 * the table fills up to runs of thousands of slots (50 us an insert). */
int sl__mem_make_room(const memory_store_t *m, shard_t *sh, sl_usec_t now, const pins_t *pins,
                      uint64_t tag) {
    if (!over_load(sh->count + 1, sh->cap))
        return SL_OK;
    uint32_t want = grown_cap(sh->cap);
    if (m->budget == 0 || sl__mem_table_cost(sl__mem_page_fit(want)) + sh->block_bytes <= m->budget) {
        if (sh->table_bytes < SWEEP_BEFORE_GROW_BYTES)
            return sl__mem_resize(sh, want);
        size_t freed = sl__mem_reclaim(sh, now, 0, pins);
        return freed < sh->cap / 4 ? sl__mem_resize(sh, want) : SL_OK;
    }
    sh->hand = home_of(tag, sh->cap);
    while (over_load(sh->count + 1, sh->cap))
        if (!evict_one(sh, now, pins, ANY_SLOT))
            return SL_EFULL;
    return SL_OK;
}

static bool bytes_fit(const memory_store_t *m, const shard_t *sh, size_t extra) {
    return sh->table_bytes + sh->block_bytes + extra <= m->budget;
}

/* The capacity one growth step below cap (at least a page less once the
 * table is in whole pages, which page_fit would round back up). */
static uint32_t shrunk_cap(uint32_t cap) {
    uint32_t want = cap - (cap / 8 > 1 ? cap / 8 : 1);
    if (sl__mem_page_fit(want) >= cap)
        want = cap - (uint32_t)(PAGE_BYTES / sizeof(slot_t));
    return want < MIN_CAP ? MIN_CAP : want;
}

/* Makes bytes for out-of-line records out of the table: plain CLOCK (pins
 * respected) until the states left fit a table one growth step smaller,
 * then the table shrinks to it. Stops as soon as `extra` fits (an evicted
 * slot may have owned a record). At MIN_CAP only records can go. */
static int shrink_table(const memory_store_t *m, shard_t *sh, size_t extra, sl_usec_t now,
                        const pins_t *pins) {
    if (sh->cap <= MIN_CAP)
        return evict_one(sh, now, pins, OUT_ONLY) ? SL_OK : SL_EFULL;
    uint32_t want = shrunk_cap(sh->cap);
    while (over_load(sh->count + 1, want)) {
        if (!evict_one(sh, now, pins, ANY_SLOT))
            return SL_EFULL;
        if (bytes_fit(m, sh, extra))
            return SL_OK;
    }
    /* Homes are in hash order at any size: the hand keeps its place, so
     * that the next shrink goes on where this one stopped rather than
     * evict again the states just past slot 0. */
    uint32_t hand = sh->hand, cap = sh->cap;
    int rc = sl__mem_resize(sh, want);
    if (rc == SL_OK)
        sh->hand = (uint32_t)((uint64_t)hand * sh->cap / cap);
    return rc;
}

/* Room for `extra` more bytes of wide records within max_memory. Slots
 * and records share the shard's budget, and a table full of packed states
 * leaves less than a growth step over, so records alone cannot make room:
 * the table gives up room (shrink_table). A wide record's bytes go
 * straight to the table, so that wide states are evicted by CLOCK like any
 * other and not by each other while they are in use. */
int sl__mem_make_bytes(const memory_store_t *m, shard_t *sh, size_t extra, sl_usec_t now,
                       const pins_t *pins) {
    if (m->budget == 0)
        return SL_OK;
    while (!bytes_fit(m, sh, extra)) {
        int rc = shrink_table(m, sh, extra, now, pins);
        if (rc != SL_OK)
            return rc;
    }
    return SL_OK;
}

/* Room for one more block record of (kind, cap). Its cost is asked again
 * after every eviction, since an eviction may free a record of the class
 * (then the new one costs nothing) or release a chunk. A record of the
 * same class is the eviction that surely helps, so CLOCK looks for one
 * first; then for any record (a slab's bytes come back when a chunk
 * empties); then the table gives up room. */
int sl__mem_make_record(const memory_store_t *m, shard_t *sh, uint32_t kind, uint32_t cap,
                        sl_usec_t now, const pins_t *pins) {
    for (;;) {
        size_t cost = sl__slab_cost(&sh->slab, kind, cap);
        if (cost == SIZE_MAX)
            return SL_EFULL;
        if (m->budget == 0 || bytes_fit(m, sh, cost))
            return SL_OK;
        uint32_t k = sl__slab_class_of(&sh->slab, kind, cap);
        if (k != SLAB_NIL && evict_one(sh, now, pins, k))
            continue;
        if (evict_one(sh, now, pins, OUT_ONLY))
            continue;
        int rc = shrink_table(m, sh, cost, now, pins);
        if (rc != SL_OK)
            return rc;
    }
}
