/* store_memory_bulk.c -- the memory store's operations over the whole
 * store (see store_memory_private.h): statistics, the sweep from a timer,
 * snapshots saved and loaded. Each takes the shards' locks in turn (load
 * takes them all); none is on a decision's path.
 *
 * Not here: tables, reclamation and evaluation (store_memory.c), the file
 * format (snapshot.c).
 */
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "store_memory_private.h"

int sl__mem_stats(sl_store_t *s, sl_store_stats_t *out) {
    memory_store_t *m = (memory_store_t *)s;
    memset(out, 0, sizeof *out);
    out->max_memory = m->max_memory;
    out->bytes = m->fixed;
    for (uint32_t i = 0; i < m->nshards; i++) {
        shard_t *sh = &m->shards[i];
        shard_lock(m, sh);
        out->states += sh->count;
        out->bytes += sh->table_bytes + sh->block_bytes;
        out->evictions += sh->evictions;
        out->reclaimed += sh->reclaimed;
        shard_unlock_unchanged(m, sh); /* read only: copies stay good */
    }
    return SL_OK;
}

int sl__mem_sweep(sl_store_t *s, sl_usec_t now, size_t budget, size_t *reclaimed) {
    memory_store_t *m = (memory_store_t *)s;
    size_t freed = 0;
    for (uint32_t i = 0; i < m->nshards; i++) {
        shard_t *sh = &m->shards[i];
        pthread_mutex_lock(&sh->lock);
        /* A budgeted (background) sweep leaves small tables alone, for the
         * reason they grow without sweeping: their keys reuse recovered
         * states for nothing. */
        if (budget > 0 && sh->table_bytes < SWEEP_BEFORE_GROW_BYTES) {
            pthread_mutex_unlock(&sh->lock);
            continue;
        }
        uint32_t share = budget == 0 ? 0 : (uint32_t)sl__minu64(sh->cap, budget / m->nshards + 1);
        freed += sl__mem_reclaim(sh, now, share, NULL);
        /* A table left mostly empty by a burst gives its memory back. */
        if (sh->cap > MIN_CAP && (uint64_t)sh->count * 4 < sh->cap)
            sl__mem_resize(sh, sh->count * 2 > MIN_CAP ? sh->count * 2 : MIN_CAP);
        shard_changed(sh);
        pthread_mutex_unlock(&sh->lock);
    }
    if (reclaimed)
        *reclaimed = freed;
    return SL_OK;
}

int sl__mem_save(sl_store_t *s, const char *path, sl_usec_t now) {
    memory_store_t *m = (memory_store_t *)s;
    sl__snapshot_writer_t *w = NULL;
    int rc = sl__snapshot_begin(path, atomic_load(&m->seed), now, &w);
    for (uint32_t i = 0; rc == SL_OK && i < m->nshards; i++) {
        shard_t *sh = &m->shards[i];
        pthread_mutex_lock(&sh->lock);
        for (uint32_t k = 0; rc == SL_OK && k < sh->cap; k++) {
            const slot_t *slot = &sh->slots[k];
            if (slot->tag == 0 || slot_expire(sh, slot) <= now)
                continue;
            sl__block_t view;
            sl__record_t r = {ident(slot->tag) | SLOT_USED, slot_expire(sh, slot), slot_word(slot),
                              slot_block(sh, slot, &view)};
            rc = sl__snapshot_add(w, &r);
        }
        pthread_mutex_unlock(&sh->lock);
        if (rc == SL_OK) /* the disk is written outside the lock */
            rc = sl__snapshot_flush(w);
    }
    if (rc == SL_OK)
        return sl__snapshot_finish(w);
    if (w)
        sl__snapshot_abandon(w);
    return rc;
}

/* A block read from a snapshot (malloc'd) as slot s's own state: copied
 * into a slab record and freed; SL_EFULL (the slab's bounds) or
 * SL_ENOMEM: s and b unchanged. */
static int adopt_block(shard_t *sh, slot_t *s, sl__block_t *b, sl_usec_t expire_at) {
    uint64_t ref;
    int rc = sl__slab_alloc(&sh->slab, &sh->block_bytes, b->kind, b->cap, &ref);
    if (rc != SL_OK)
        return rc;
    drop_out(sh, s);
    sl__block_t own;
    unsigned hb;
    uint64_t place = sl__slab_view(&sh->slab, ref, &own, &hb);
    memcpy(own.data, b->data, sl__block_data_bytes(b->kind, b->cap));
    own.head = b->head;
    own.count = b->count;
    free(b);
    s->tag |= SLOT_BLOCK;
    s->v = V_OUT | sl__slab_store(place, hb, &own, expire_at);
    return SL_OK;
}

/* Writes {expire_at, word} as slot s's inline state (s owns no block). */
static int set_state(shard_t *sh, slot_t *s, sl_usec_t expire_at, uint64_t word) {
    uint64_t v;
    if (slot_pack(sh, expire_at, word, &v)) {
        drop_out(sh, s);
        s->v = v;
        return SL_OK;
    }
    if (set_wide(sh, s, expire_at, word, NULL))
        return SL_OK;
    sl__ext_t *ext = malloc(sizeof *ext);
    if (ext == NULL)
        return SL_ENOMEM;
    install_ext(sh, s, ext, expire_at, word);
    return SL_OK;
}

/* A snapshot lists each shard's states in table order, that is in hash
 * order: inserted one by one into a table that grows as they come, they
 * would all crowd into its first slots (quadratic). Each table is sized for
 * what is coming first, so their homes spread over the final table. */
static void presize(memory_store_t *m, const sl__snapshot_t *snap) {
    uint32_t *incoming = calloc(m->nshards, sizeof *incoming);
    if (incoming == NULL)
        return; /* only slower */
    for (size_t i = 0; i < snap->count; i++)
        incoming[shard_of(m, snap->records[i].tag)]++;
    for (uint32_t i = 0; i < m->nshards; i++) {
        shard_t *sh = &m->shards[i];
        uint64_t want = ((uint64_t)sh->count + incoming[i]) * 25 / 23 + 1;
        if (incoming[i] == 0 || want <= sh->cap || want > UINT32_MAX)
            continue;
        if (m->budget == 0 || sl__mem_table_cost(sl__mem_page_fit((uint32_t)want)) + sh->block_bytes <= m->budget)
            sl__mem_resize(sh, (uint32_t)want);
    }
    free(incoming);
}

int sl__mem_load(sl_store_t *s, const char *path, sl_usec_t now, size_t *loaded) {
    memory_store_t *m = (memory_store_t *)s;
    sl__snapshot_t snap;
    int rc = sl__snapshot_read(path, now, &snap);
    if (rc != SL_OK)
        return rc;
    for (uint32_t i = 0; i < m->nshards; i++)
        pthread_mutex_lock(&m->shards[i].lock);
    bool empty = true;
    for (uint32_t i = 0; i < m->nshards; i++)
        empty = empty && m->shards[i].count == 0;
    if (!empty && snap.seed != atomic_load(&m->seed)) {
        rc = SL_ESEED;
    } else {
        atomic_store(&m->seed, snap.seed);
        presize(m, &snap);
        for (size_t i = 0; rc == SL_OK && i < snap.count; i++) {
            sl__record_t *r = &snap.records[i];
            shard_t *sh = &m->shards[shard_of(m, r->tag)];
            int64_t at = sl__mem_find(sh, r->tag);
            if (at >= 0)
                sl__mem_remove_at(sh, (uint32_t)at);
            rc = sl__mem_make_room(m, sh, now, NULL, r->tag);
            if (rc != SL_OK)
                break;
            if (sh->count == 0) /* nothing is packed against the old epoch */
                sh->epoch = epoch_for(now);
            uint64_t v;
            if (r->block)
                rc = sl__mem_make_record(m, sh, r->block->kind, r->block->cap, now, NULL);
            else if (!slot_pack(sh, r->expire_at, r->word, &v))
                rc = sl__mem_make_bytes(m, sh, EXT_COST, now, NULL);
            if (rc != SL_OK)
                break;
            slot_t slot = {ident(r->tag) | SLOT_USED, V_OUT};
            if (r->block) {
                rc = adopt_block(sh, &slot, r->block, r->expire_at);
                if (rc == SL_OK)
                    r->block = NULL;
            } else {
                rc = set_state(sh, &slot, r->expire_at, r->word);
            }
            if (rc != SL_OK)
                break;
            sl__mem_place(sh, slot);
        }
    }
    /* every shard's copies dropped before any shard is unlocked: a thread
     * that sees the load in one shard must not decide from an older copy
     * in another */
    for (uint32_t i = 0; i < m->nshards; i++)
        shard_changed(&m->shards[i]);
    for (uint32_t i = m->nshards; i-- > 0;)
        pthread_mutex_unlock(&m->shards[i].lock);
    if (loaded)
        *loaded = rc == SL_OK ? snap.count : 0;
    sl__snapshot_release(&snap);
    return rc;
}
