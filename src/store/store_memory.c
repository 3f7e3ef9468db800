/* store_memory.c -- the embedded store: a sharded Robin Hood hash table.
 *
 * Every (policy, limit, key) state is one 16-byte slot {tag, v}: v packs
 * the state's expire_at and word (store_memory_private.h), or points at them
 * out of line when they do not fit. The key itself is not kept: the tag is a
 * seeded 64-bit hash of it (XXH3, random seed per process, so collisions
 * cannot be precomputed), which is what lets a state cost ~19 bytes all-in.
 * expire_at is when the state has recovered; past it the slot is garbage,
 * whatever the algorithm, so reclamation never needs the limit's parameters.
 * Blocks (sliding_log rings, sub-window counters) are records of expire_at
 * and entries in the shard's slab; v holds the record's place and a ring's
 * head and count, and a decision sees the block as a view (eval_t).
 *
 * Layout of a tag: bits 0-2 flags (used, CLOCK reference, owns a block),
 * bits 3-18 the key's shard selector (shared by all limits of the key, so one
 * lock covers a policy evaluation and a snapshot record finds its shard
 * again), the rest the per-limit hash. The home slot is taken from the high
 * bits with a multiply (any table size works, growth steps of 1/7).
 *
 * Tables: linear probing with Robin Hood displacement and backward-shift
 * deletion (no tombstones), between 81% and 92% full, so a state costs 17 to
 * 20 bytes at any size (tables of a page or more are mmapped and rounded up
 * to whole pages). A recovered state stays in place until its room is
 * wanted (a key coming back reuses it for nothing): a full sweep
 * precedes every growth, the CLOCK hand frees them under the cap, and
 * sl_store_sweep() frees them (and shrinks emptied tables) from a timer.
 * With max_memory, each shard gets an equal share of what the headers leave
 * (every allocation counted as the allocator rounds it: mem_cost.h); when it
 * is used up, recovered states go first, then CLOCK eviction (counted).
 *
 * Its insides (slots, shards, the store) are in store_memory_private.h,
 * where its tables come from in store_memory_table.h;
 * blocks' records in store_memory_slab.c; reclamation and eviction in
 * store_memory_reclaim.c; the operations over the whole store (statistics,
 * sweep, snapshots) in store_memory_bulk.c; decisions that find their
 * shard's lock taken are run by its holder (store_memory_combine.c); a
 * denial is decided again from the deciding thread's copy while its shard
 * is unchanged (store_memory_memo.c); write-back's shares are in
 * store_memory_share.c.
 *
 * Not here: what a state means (core), the file format (snapshot.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../core/arith.h"
#include "../core/policy.h"
#include "../core/refund.h"
#include "mem_cost.h"
#include "store.h"
#include "journal.h"
#include "store_memory_private.h"
#include "store_memory_table.h"

/* ---- slots ---------------------------------------------------------------------- */

static int64_t find(const shard_t *sh, uint64_t tag) {
    uint64_t id = ident(tag);
    uint32_t i = home_of(tag, sh->cap);
    for (uint32_t d = 0;; d++) {
        const slot_t *s = &sh->slots[i];
        if (s->tag == 0)
            return -1;
        if (ident(s->tag) == id)
            return i;
        if (dist_of(sh, i) < d)
            return -1;
        if (++i == sh->cap)
            i = 0;
    }
}

/* Inserts a slot whose tag is absent; the table has room. */
static void place(shard_t *sh, slot_t item) {
    uint32_t i = home_of(item.tag, sh->cap);
    for (uint32_t d = 0;; d++) {
        slot_t *s = &sh->slots[i];
        if (s->tag == 0) {
            *s = item;
            break;
        }
        uint32_t sd = dist_of(sh, i);
        if (sd < d) {
            slot_t t = *s;
            *s = item;
            item = t;
            d = sd;
        }
        if (++i == sh->cap)
            i = 0;
    }
    sh->count++;
    sh->moves++;
}

/* Frees slot i and shifts the run after it back one place. */
static void remove_at(shard_t *sh, uint32_t i) {
    drop_out(sh, &sh->slots[i]);
    for (;;) {
        uint32_t j = i + 1 == sh->cap ? 0 : i + 1;
        if (sh->slots[j].tag == 0 || dist_of(sh, j) == 0)
            break;
        sh->slots[i] = sh->slots[j];
        i = j;
    }
    memset(&sh->slots[i], 0, sizeof sh->slots[i]);
    sh->count--;
    sh->moves++;
}

/* ---- tables --------------------------------------------------------------------- */

static void publish(shard_t *sh) {
    atomic_store_explicit(&sh->hint_slots, (uintptr_t)sh->slots, memory_order_relaxed);
    atomic_store_explicit(&sh->hint_cap, sh->cap, memory_order_relaxed);
}

static int resize(shard_t *sh, uint32_t cap) {
    cap = page_fit(cap);
    slot_t *fresh = table_alloc(cap);
    if (fresh == NULL)
        return SL_ENOMEM;
    slot_t *old = sh->slots;
    uint32_t old_cap = sh->cap;
    sh->slots = fresh;
    sh->cap = cap;
    sh->count = 0;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].tag)
            place(sh, old[i]);
    table_free(old, old_cap);
    publish(sh);
    sh->table_bytes = table_cost(cap);
    sh->sweep = sh->hand = 0;
    return SL_OK;
}

/* ---- evaluation ---------------------------------------------------------------- */

typedef struct eval {
    const memory_store_t *m;
    shard_t *sh;
    const sl_policy_t *p;
    sl_usec_t now;
    uint64_t tags[SL_MAX_LIMITS];
    int64_t at[SL_MAX_LIMITS];  /* slot index found, -1 = none */
    uint64_t moves;             /* sh->moves when `at` was taken */
    pins_t pins;
    sl__block_t views[SL_MAX_LIMITS]; /* the cells' blocks, views into the slab */
    uint64_t places[SL_MAX_LIMITS];   /* their records' places, and */
    unsigned hbs[SL_MAX_LIMITS];      /* ... where count starts (sl__slab_view) */
} eval_t;

/* Limit i's block (view b) back into slot s: head and count, and with
 * `expire` its record's expire_at. */
static inline void put_block(const eval_t *e, size_t i, slot_t *s, const sl__block_t *b, bool expire,
                             sl_usec_t at) {
    s->v = V_OUT | (expire ? sl__slab_store(e->places[i], e->hbs[i], b, at)
                           : sl__slab_ref(e->places[i], e->hbs[i], b));
}

static int64_t locate(const eval_t *e, size_t i) {
    return e->sh->moves == e->moves ? e->at[i] : find(e->sh, e->tags[i]);
}

/* Limit i's block in slot s, as a view (out of line, a leaf: no registers to save). */
__attribute__((noinline)) static sl__block_t *load_block(eval_t *e, size_t i, const slot_t *s) {
    sl__block_t *b = &e->views[i];
    e->places[i] = sl__slab_view(&e->sh->slab, slot_ref(s), b, &e->hbs[i]);
    return b;
}

/* load_cell() of limit i, whose slot s holds its state in a wide record
 * or is the zero state. Out of line so that the packed path stays short. */
__attribute__((noinline)) static sl__cell_t load_out(eval_t *e, slot_t *s, const sl__limit_t *l) {
    sl__cell_t c = {0, 0, NULL};
    sl_usec_t expire_at = slot_expire(e->sh, s);
    if (sl__limit_block_kind(l) != SL__BLOCK_NONE && expire_at > e->now) {
        drop_out(e->sh, s);
        return c;
    }
    c.expire_at = expire_at;
    c.word = slot_word(s);
    return c;
}

/* Reads a cell from slot `at` (or a fresh one). A state of the wrong shape
 * (possible only from a forged snapshot) is discarded. */
static inline sl__cell_t load_cell(eval_t *e, size_t i) {
    sl__cell_t c = {0, 0, NULL};
    if (e->at[i] < 0)
        return c;
    slot_t *s = &e->sh->slots[e->at[i]];
    s->tag |= SLOT_REF;
    const sl__limit_t *l = &e->p->limits[i];
    if (!(s->v & V_OUT)) { /* packed: the common case */
        c.expire_at = e->sh->epoch + (sl_usec_t)(s->v >> V_CODE_BITS);
        if (sl__limit_block_kind(l) != SL__BLOCK_NONE && c.expire_at > e->now) {
            drop_out(e->sh, s);
            return (sl__cell_t){0, 0, NULL};
        }
        c.word = slot_word(s);
        return c;
    }
    if (s->tag & SLOT_BLOCK) {
        sl__block_t *b = load_block(e, i, s);
        if (!sl__limit_block_fits(l, b)) {
            drop_out(e->sh, s);
            return c;
        }
        memcpy(&c.expire_at, (const char *)b->data - SLAB_EXPIRE_BYTES, sizeof c.expire_at);
        c.block = b;
        return c;
    }
    return load_out(e, s, l);
}

static int prepare(void *ctx, size_t i, sl__cell_t *cell, uint32_t block_cap) {
    eval_t *e = ctx;
    shard_t *sh = e->sh;
    int64_t at = locate(e, i);
    if (at < 0) { /* a placeholder that has already recovered: harmless if we stop here */
        int rc = sl__mem_make_room(e->m, sh, e->now, &e->pins, e->tags[i]);
        if (rc != SL_OK)
            return rc;
        if (sh->count == 0) /* nothing is packed against the old epoch */
            sh->epoch = epoch_for(e->now);
        place(sh, (slot_t){e->tags[i] | SLOT_REF, V_OUT});
    }
    if (block_cap == 0)
        return SL_OK;
    /* The old record frees bytes only if it was its chunk's last: the whole
     * new record must fit. */
    uint32_t kind = sl__limit_block_kind(&e->p->limits[i]);
    int rc = sl__mem_make_record(e->m, sh, kind, block_cap, e->now, &e->pins);
    uint64_t ref;
    if (rc == SL_OK)
        rc = sl__slab_alloc(&sh->slab, &sh->block_bytes, kind, block_cap, &ref);
    if (rc != SL_OK)
        return rc;
    sl__block_t old = cell->block ? *cell->block : (sl__block_t){0, 0, 0, 0, NULL}, *b = &e->views[i];
    e->places[i] = sl__slab_view(&sh->slab, ref, b, &e->hbs[i]);
    slot_t *s = &sh->slots[locate(e, i)]; /* eviction may have moved it */
    if (cell->block)
        sl__block_move(&old, b);
    sl_usec_t was = slot_expire(sh, s); /* until the charge writes its own */
    drop_out(sh, s); /* the old block, if any */
    s->tag |= SLOT_BLOCK;
    put_block(e, i, s, b, true, was);
    cell->block = &e->views[i];
    return SL_OK;
}

static uint64_t key_hash(const memory_store_t *m, const sl_policy_t *p, const void *key,
                         size_t len) {
    return XXH3_64bits_withSeed(key, len, atomic_load_explicit(&m->seed, memory_order_relaxed) ^ p->id);
}

/* The tags and shard of (p, key); the lock is the caller's to take. */
static void begin_hashed(memory_store_t *m, const sl_policy_t *p, uint64_t h, sl_usec_t now, eval_t *e) {
    e->m = m;
    e->p = p;
    e->now = now;
    for (size_t i = 0; i < p->nlimits; i++)
        e->tags[i] = make_tag(h, p->limits[i].id);
    e->pins.tags = e->tags;
    e->pins.n = p->nlimits;
    e->sh = &m->shards[shard_of(m, e->tags[0])];
}

static void begin(memory_store_t *m, const sl_policy_t *p, const void *key, size_t key_len,
                  sl_usec_t now, eval_t *e) {
    begin_hashed(m, p, key_hash(m, p, key, key_len), now, e);
}

/* Finds every limit's slot, under the shard lock. */
static void locate_all(eval_t *e) {
    for (size_t i = 0; i < e->p->nlimits; i++)
        e->at[i] = find(e->sh, e->tags[i]);
    e->moves = e->sh->moves;
}

/* Whether charged limit i's state needs a wide record it does not have. */
static bool needs_ext(const eval_t *e, const sl__cell_t *c, size_t i) {
    uint64_t v;
    if (c->block || slot_pack(e->sh, c->expire_at, c->word, &v))
        return false;
    const slot_t *s = &e->sh->slots[locate(e, i)];
    return !owns_ext(s);
}

/* What store_charged() overwrote before it gave up on its fast path. */
typedef struct undo {
    uint32_t done;  /* limits written */
    uint64_t v[SL_MAX_LIMITS];
} undo_t;

/* store_charged() for states that do not all pack, or whose slots hold
 * out-of-line records: each state that needs a wide record and has none
 * gets it first (within max_memory), so that a failure leaves every inline
 * state as it was (those the fast path wrote are put back from u). A
 * block's content is charged in place before this runs and cannot be put
 * back: on failure its expire_at is still written, so that it matches the
 * content (the request is refused, yet counted by that limit: the safe
 * side), never an older expiry that would let the content be reclaimed
 * while it is live. After max_memory's mend this fails only when the key's
 * own states do not fit beside a minimal table, or on ENOMEM. */
__attribute__((noinline)) static int store_wide(const eval_t *e, const sl__cell_t *cells, size_t n,
                                                uint32_t charged, const undo_t *u) {
    shard_t *sh = e->sh;
    sl__ext_t *spare[SL_MAX_LIMITS] = {0};
    size_t need = 0;
    uint64_t v;
    for (size_t i = 0; i < n; i++)
        if ((charged & (1u << i)) && needs_ext(e, &cells[i], i))
            need++;
    int rc = need ? sl__mem_make_bytes(e->m, sh, need * EXT_COST, e->now, &e->pins) : SL_OK;
    for (size_t i = 0; rc == SL_OK && need && i < n; i++) {
        if ((charged & (1u << i)) && needs_ext(e, &cells[i], i)) {
            spare[i] = malloc(sizeof(sl__ext_t));
            rc = spare[i] ? SL_OK : SL_ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!(charged & (1u << i)))
            continue;
        slot_t *slot = &sh->slots[locate(e, i)];
        if (rc != SL_OK) {
            free(spare[i]);
            if (cells[i].block)
                put_block(e, i, slot, cells[i].block, true, cells[i].expire_at);
            else if (u->done & (1u << i))
                slot->v = u->v[i];
        } else if (cells[i].block) {
            put_block(e, i, slot, cells[i].block, true, cells[i].expire_at);
        } else if (slot_pack(sh, cells[i].expire_at, cells[i].word, &v)) {
            drop_out(sh, slot);
            slot->v = v;
        } else {
            set_wide(sh, slot, cells[i].expire_at, cells[i].word, spare[i]);
        }
    }
    return rc;
}

/* The head and count of the blocks of the limits in `mask` back into
 * their slots, charged or not: deciding tidies a ring in place, and the
 * next decision must see it tidied, as it sees the rest of the block. */
static void keep_views(const eval_t *e, const sl__cell_t *cells, size_t n, uint32_t mask) {
    for (size_t i = 0; i < n; i++)
        if (cells[i].block && (mask & (1u << i)))
            put_block(e, i, &e->sh->slots[locate(e, i)], cells[i].block, false, 0);
}

/* store_charged() for policies of several limits. */
__attribute__((noinline)) static int store_many(const eval_t *e, const sl__cell_t *cells, size_t n,
                                                uint32_t charged) {
    shard_t *sh = e->sh;
    undo_t u;
    u.done = 0;
    keep_views(e, cells, n, ~charged);
    for (size_t i = 0; i < n; i++) {
        if (!(charged & (1u << i)))
            continue;
        slot_t *slot = &sh->slots[locate(e, i)];
        uint64_t v;
        if (cells[i].block) {
            put_block(e, i, slot, cells[i].block, true, cells[i].expire_at);
        } else if (!owns_out(slot) && slot_pack(sh, cells[i].expire_at, cells[i].word, &v)) {
            u.v[i] = slot->v;
            slot->v = v;
        } else {
            return store_wide(e, cells, n, charged, &u);
        }
        u.done |= 1u << i;
    }
    return SL_OK;
}

/* The charged limits' states back into their slots (a block's content is
 * in place: its expire_at goes to its record, head and count to its
 * slot), and the other blocks' head and count. */
static inline int store_charged(const eval_t *e, const sl__cell_t *cells, size_t n, uint32_t charged) {
    if (n != 1)
        return store_many(e, cells, n, charged);
    /* most policies: nothing to put back if it fails */
    shard_t *sh = e->sh;
    if (!charged) {
        if (cells[0].block)
            put_block(e, 0, &sh->slots[locate(e, 0)], cells[0].block, false, 0);
        return SL_OK;
    }
    slot_t *slot = &sh->slots[locate(e, 0)];
    uint64_t v;
    if (cells[0].block) {
        put_block(e, 0, slot, cells[0].block, true, cells[0].expire_at);
    } else if (!owns_out(slot) && slot_pack(sh, cells[0].expire_at, cells[0].word, &v)) {
        slot->v = v;
    } else {
        undo_t u;
        u.done = 0;
        return store_wide(e, cells, n, charged, &u);
    }
    return SL_OK;
}

/* One decision's arguments, for whichever thread runs it (combining). */
typedef struct decision {
    memory_store_t *m;
    eval_t e;
    const void *key;
    size_t key_len;
    uint64_t cost;
    bool peek;
    sl_usec_t max_wait;
    sl_usec_t not_before;
    sl_decision_t *out;
    sl_limit_report_t *limits;
    sl__held_t *held;
    bool keep;  /* changed nothing: the deciding thread keeps cells at gen */
    uint64_t gen;
    sl__cell_t cells[SL__MEMO_LIMITS];
} decision_t;

/* One decision, the shard's lock held: an evaluation (max_wait < 0) or a
 * reservation within max_wait, whose places held for later the write-back
 * journal and shares know nothing of (mem_reserve refuses write-back). */
static int decide_locked(void *ctx) {
    decision_t *d = ctx;
    memory_store_t *m = d->m;
    eval_t *e = &d->e;
    const sl_policy_t *p = e->p;
    sl_usec_t now = e->now;
    sl__cell_t cells[SL_MAX_LIMITS];
    locate_all(e);
    for (size_t i = 0; i < p->nlimits; i++)
        cells[i] = load_cell(e, i);
    uint32_t charged = 0, costed = 0, over_share = 0;
    int rc;
    if (d->max_wait >= 0) {
        rc = sl__policy_reserve(p, cells, now, d->cost, d->max_wait, d->not_before, d->peek, prepare, e,
                                &charged, d->out, d->limits, d->held);
    } else {
        sl_usec_t share_retry = 0;
        if (p->write_back && !d->peek && d->cost > 0 && p->mode != SL_MODE_SHADOW && m->unsynced)
            over_share = sl__mem_share_check(m, p, d->key, d->key_len, d->cost, &share_retry);
        rc = sl__policy_evaluate(p, cells, now, d->cost, d->peek || over_share, prepare, e,
                                 &charged, &costed, d->out, d->limits);
        if (rc == SL_OK && over_share && d->out->allowed)
            sl__mem_deny_for_share(p, over_share, share_retry, d->out, d->limits);
    }
    if (rc == SL_OK && charged == 0 && e->sh->moves == e->moves && d->max_wait < 0 &&
        sl__mem_memo_fits(p)) { /* nothing changed, and no block was read */
        d->keep = true;
        d->gen = atomic_load_explicit(&e->sh->gen, memory_order_relaxed);
        if (!e->sh->memo_out) /* the line every reader polls: written on change only */
            e->sh->memo_out = true;
        memcpy(d->cells, cells, p->nlimits * sizeof cells[0]);
        return rc;
    }
    shard_changed(e->sh);
    if (rc == SL_OK)
        rc = store_charged(e, cells, p->nlimits, charged);
    else
        keep_views(e, cells, p->nlimits, ~UINT32_C(0));
    if (rc == SL_OK && costed && p->write_back && m->journal)
        m->journal(m->journal_ctx, p, d->key, d->key_len, costed, d->cost, now);
    return rc;
}

/* A decision's arguments; begin() or begin_hashed() fills d->e. */
static void decision_init(decision_t *d, memory_store_t *m, const void *key, size_t key_len, uint64_t cost,
                          bool peek, sl_usec_t max_wait, sl_usec_t not_before, sl_decision_t *out,
                          sl_limit_report_t *limits, sl__held_t *held) {
    d->m = m; /* not zeroed: begin() and locate_all() fill what is read */
    d->key = key;
    d->key_len = key_len;
    d->cost = cost;
    d->peek = peek;
    d->max_wait = max_wait;
    d->not_before = not_before;
    d->held = held;
    d->out = out;
    d->limits = limits;
    d->keep = false;
}

/* rc, once the deciding thread has kept what a decision that changed
 * nothing read (a group's decisions are not kept). */
static int decided(const decision_t *d, int rc) {
    if (d->keep && !shard_held(d->m, d->e.sh))
        sl__mem_memo_keep(d->m, d->e.p, d->e.tags, d->cells, d->gen);
    return rc;
}

/* A decision under its shard's lock. Threads deciding in the same shard at
 * once have theirs run by the lock's holder (store_memory_combine.c),
 * except write-back ones (the journal is the deciding thread's business)
 * and a thread that holds the shard in a group already. A decision that
 * would change nothing, on states this thread kept from such a decision
 * while the shard has not changed since, takes no lock
 * (store_memory_memo.c). */
static int mem_decide(memory_store_t *m, const sl_policy_t *p, const void *key, size_t key_len,
                      uint64_t cost, sl_usec_t now, bool peek, sl_usec_t max_wait,
                      sl_usec_t not_before, sl_decision_t *out, sl_limit_report_t *limits,
                      sl__held_t *held) {
    decision_t d;
    decision_init(&d, m, key, key_len, cost, peek, max_wait, not_before, out, limits, held);
    begin(m, p, key, key_len, now, &d.e);
    shard_t *sh = d.e.sh;
    int rc;
    if (shard_held(m, sh))
        return decide_locked(&d); /* a group's decisions are not kept */
    if (p->write_back) {
        pthread_mutex_lock(&sh->lock);
        rc = decide_locked(&d);
        shard_unlock_decided(sh, true); /* others' decisions published meanwhile */
    } else if (max_wait < 0 && sl__memo_maybe(m, d.e.tags[0]) &&
               sl__mem_memo_decide(m, sh, p, d.e.tags, now, cost, peek, out, limits)) {
        return SL_OK;
    } else if (pthread_mutex_trylock(&sh->lock) == 0) {
        rc = decide_locked(&d);
        shard_unlock_decided(sh, false);
    } else {
        sl__mem_req_t r = {.run = decide_locked, .ctx = &d};
        rc = sl__mem_combine(sh, &r);
    }
    return decided(&d, rc);
}

static int mem_evaluate(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                        uint64_t cost, sl_usec_t now, bool peek, sl_decision_t *out,
                        sl_limit_report_t *limits) {
    return mem_decide((memory_store_t *)s, p, key, key_len, cost, now, peek, -1, 0, out, limits, NULL);
}

/* A reservation. Not for write-back policies: the journal and the shares
 * count what was charged, not places held for later. */
static int mem_reserve(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                       uint64_t cost, sl_usec_t now, sl_usec_t max_wait, sl_usec_t not_before,
                       bool peek, sl_decision_t *out, sl_limit_report_t *limits, sl__held_t *held) {
    if (p->write_back)
        return SL_ENOTSUP;
    return mem_decide((memory_store_t *)s, p, key, key_len, cost, now, peek, max_wait, not_before,
                      out, limits, held);
}

/* A request of a batch (store_memory_batch.c), its key hashed already (h):
 * begin()'s work from h, then decide_locked() as mem_decide() runs it,
 * under the shard's lock held by the caller or, with `combine`, by the
 * thread that holds it now. */
int sl__mem_decide_hashed(memory_store_t *m, const sl_policy_t *p, uint64_t h, const sl_request_t *r,
                          sl_usec_t now, bool combine, sl_decision_t *out) {
    decision_t d;
    decision_init(&d, m, r->key ? r->key : "", r->key_len, r->cost, false, -1, 0, out, NULL, NULL);
    begin_hashed(m, p, h, now, &d.e);
    int rc;
    if (!combine) {
        rc = decide_locked(&d);
    } else {
        sl__mem_req_t req = {.run = decide_locked, .ctx = &d};
        rc = sl__mem_combine(d.e.sh, &req);
    }
    return decided(&d, rc);
}

/* A reservation given back (core/refund.h), under the shard's lock. */
static int mem_refund(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len, uint64_t cost,
                      sl_usec_t now, const sl__held_t *held) {
    memory_store_t *m = (memory_store_t *)s;
    if (p->write_back)
        return SL_ENOTSUP;
    eval_t e;
    begin(m, p, key, key_len, now, &e);
    shard_lock(m, e.sh);
    sl__cell_t cells[SL_MAX_LIMITS];
    locate_all(&e);
    for (size_t i = 0; i < p->nlimits; i++)
        cells[i] = load_cell(&e, i);
    uint32_t changed = sl__policy_refund(p, cells, now, held, cost);
    int rc = store_charged(&e, cells, p->nlimits, changed);
    shard_unlock(m, e.sh);
    return rc;
}

/* ---- write-back ------------------------------------------------------------------ */

void sl__memory_journal(sl_store_t *s, sl__journal_fn fn, sl__unsynced_fn unsynced, void *ctx) {
    memory_store_t *m = (memory_store_t *)s;
    m->journal = fn;
    m->unsynced = unsynced;
    m->journal_ctx = ctx;
}

/* Writes cell c as limit i's state: a fresh block holds a copy of c's. */
static int store_cell(eval_t *e, size_t i, const sl__cell_t *c) {
    if (locate(e, i) < 0 && c->expire_at <= e->now)
        return SL_OK; /* recovered: no slot is as good as one */
    /* the slot's own block, so that replacing it counts only the difference */
    locate_all(e);
    sl__cell_t fresh = load_cell(e, i);
    int rc = prepare(e, i, &fresh, c->block ? c->block->cap : 0);
    if (rc != SL_OK)
        return rc;
    if (c->block) {
        sl__block_move(c->block, fresh.block);
        put_block(e, i, &e->sh->slots[locate(e, i)], fresh.block, true, c->expire_at);
        return SL_OK;
    }
    sl__cell_t one[SL_MAX_LIMITS];
    memset(one, 0, (i + 1) * sizeof one[0]); /* the others have no block to keep */
    one[i] = *c;
    return store_charged(e, one, i + 1, 1u << i);
}

int sl__memory_import(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len,
                      sl__cell_t *cells, sl_usec_t now, sl__pending_fn pending, void *ctx) {
    if (s->ops->evaluate != mem_evaluate) {
        sl__cells_release(cells, p->nlimits);
        return SL_ENOTSUP;
    }
    memory_store_t *m = (memory_store_t *)s;
    eval_t e;
    begin(m, p, key, key_len, now, &e);
    shard_lock(m, e.sh);
    uint64_t costs[SL_MAX_LIMITS] = {0};
    sl_usec_t since = 0;
    if (pending)
        pending(ctx, p, key, key_len, costs, &since);
    int rc = sl__policy_force(p, cells, now, since, costs, sl__cells_prepare, (void *)p);
    locate_all(&e);
    for (size_t i = 0; rc == SL_OK && i < p->nlimits; i++)
        rc = store_cell(&e, i, &cells[i]);
    shard_unlock(m, e.sh);
    sl__cells_release(cells, p->nlimits);
    return rc;
}

/* Touches the key (hashing it) and its first limit's home slot, so that
 * the evaluation a few requests later finds both in cache. */
static void mem_prefetch(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len) {
    memory_store_t *m = (memory_store_t *)s;
    uint64_t tag = make_tag(key_hash(m, p, key, key_len), p->limits[0].id);
    shard_t *sh = &m->shards[shard_of(m, tag)];
    uintptr_t slots = atomic_load_explicit(&sh->hint_slots, memory_order_relaxed);
    uint32_t cap = atomic_load_explicit(&sh->hint_cap, memory_order_relaxed);
    __builtin_prefetch((const void *)(slots + (uintptr_t)home_of(tag, cap) * sizeof(slot_t)), 1);
}

static int mem_reset(sl_store_t *s, const sl_policy_t *p, const void *key, size_t key_len) {
    memory_store_t *m = (memory_store_t *)s;
    uint64_t h = key_hash(m, p, key, key_len);
    shard_t *sh = &m->shards[shard_of(m, make_tag(h, p->limits[0].id))];
    shard_lock(m, sh);
    for (size_t i = 0; i < p->nlimits; i++) {
        int64_t at = find(sh, make_tag(h, p->limits[i].id));
        if (at >= 0)
            remove_at(sh, (uint32_t)at);
    }
    shard_unlock(m, sh);
    return SL_OK;
}

/* ---- for store_memory_bulk.c: the table operations, out of line ----------------- */

int64_t sl__mem_find(const shard_t *sh, uint64_t tag) { return find(sh, tag); }
uint64_t sl__mem_key_hash(const memory_store_t *m, const sl_policy_t *p, const void *key,
                          size_t key_len) {
    return key_hash(m, p, key, key_len);
}
uint32_t sl__mem_shard_of_key(const memory_store_t *m, const sl_policy_t *p, const void *key,
                              size_t key_len) {
    return shard_of(m, make_tag(key_hash(m, p, key, key_len), p->limits[0].id));
}
void sl__mem_place(shard_t *sh, slot_t item) { place(sh, item); }
void sl__mem_remove_at(shard_t *sh, uint32_t i) { remove_at(sh, i); }
int sl__mem_resize(shard_t *sh, uint32_t cap) { return resize(sh, cap); }
size_t sl__mem_table_cost(uint32_t cap) { return table_cost(cap); }
uint32_t sl__mem_page_fit(uint32_t cap) { return page_fit(cap); }

static void mem_destroy(sl_store_t *s) {
    memory_store_t *m = (memory_store_t *)s;
    for (uint32_t i = 0; i < m->nshards; i++) {
        shard_t *sh = &m->shards[i];
        for (uint32_t k = 0; sh->slots && k < sh->cap; k++)
            if (sh->slots[k].tag && owns_ext(&sh->slots[k]))
                free(slot_ext(&sh->slots[k]));
        sl__slab_destroy(&sh->slab);
        table_free(sh->slots, sh->cap);
        pthread_mutex_destroy(&sh->lock);
    }
    free(m->shards);
    free(m);
}

static const sl__store_ops_t memory_ops = {
    .name = "memory",
    .evaluate = mem_evaluate,
    .reserve = mem_reserve,
    .refund = mem_refund,
    .reset = mem_reset,
    .prefetch = mem_prefetch,
    .evaluate_batch = sl__mem_evaluate_batch,
    .stats = sl__mem_stats,
    .sweep = sl__mem_sweep,
    .save = sl__mem_save,
    .load = sl__mem_load,
    .destroy = mem_destroy,
    .group_begin = sl__mem_group_begin,
    .group_end = sl__mem_group_end,
};

static uint64_t random_seed(void) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)&seed);
    }
    return seed ? seed : 1;
}

int sl_store_memory_new(const sl_memory_options_t *opts, sl_store_t **out) {
    sl_memory_options_t o = {0, 0, 0};
    if (opts)
        o = *opts;
    if (out == NULL)
        return SL_EINVAL;
    uint32_t n = o.shards ? o.shards : DEFAULT_SHARDS;
    if (o.shards == 0 && o.max_memory) /* small caps: fewer, larger shards */
        while (n > 1 && o.max_memory / n < 4 * table_cost(MIN_CAP) * 8)
            n /= 2;
    if (n > MAX_SHARDS || (n & (n - 1)) != 0)
        return SL_EINVAL;
    size_t fixed = sl__heap_cost(sizeof(memory_store_t)) + sl__heap_cost(sizeof(shard_t) * n);
    if (o.max_memory && (o.max_memory < fixed || (o.max_memory - fixed) / n < 4 * table_cost(MIN_CAP)))
        return SL_ERANGE; /* not even a minimal table per shard */

    memory_store_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return SL_ENOMEM;
    static _Atomic uint64_t stores;
    m->serial = atomic_fetch_add(&stores, 1) + 1;
    m->base.ops = &memory_ops;
    m->nshards = n;
    m->max_memory = o.max_memory;
    m->fixed = fixed;
    m->budget = o.max_memory ? (o.max_memory - fixed) / n : 0;
    atomic_init(&m->seed, o.seed ? o.seed : random_seed());
    m->shards = aligned_alloc(64, sizeof(shard_t) * n);
    if (m->shards == NULL) {
        free(m);
        return SL_ENOMEM;
    }
    memset(m->shards, 0, sizeof(shard_t) * n);
    /* Critical sections are a few hundred nanoseconds: spin a little before
     * sleeping in the kernel (a hot key shared by threads). */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    for (uint32_t i = 0; i < n; i++) {
        shard_t *sh = &m->shards[i];
        pthread_mutex_init(&sh->lock, &attr);
        sh->slots = table_alloc(MIN_CAP);
        sh->cap = MIN_CAP;
        sh->table_bytes = table_cost(MIN_CAP);
        /* Under a cap, a class's last chunk is partly empty: chunks of at
         * most 1/32 of a shard's share keep that slack small. */
        sl__slab_init(&sh->slab, m->budget ? m->budget / 32 : SLAB_CHUNK_BYTES);
        publish(sh);
        if (sh->slots == NULL) {
            m->nshards = i + 1;
            pthread_mutexattr_destroy(&attr);
            mem_destroy(&m->base);
            return SL_ENOMEM;
        }
    }
    pthread_mutexattr_destroy(&attr);
    *out = &m->base;
    return SL_OK;
}
