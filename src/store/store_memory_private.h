/* store_memory_private.h -- the memory store's insides, shared by its
 * files: store_memory.c (tables, evaluation: the hot path),
 * store_memory_slab.c (blocks' records), store_memory_batch.c (batches),
 * store_memory_reclaim.c (reclamation and eviction) and store_memory_bulk.c
 * (operations over the whole store: statistics, the sweep, snapshots saved
 * and loaded). See store_memory.c for the design.
 *
 * The slot helpers (packing a state, its out-of-line records) are static
 * inline here; the table operations stay static in store_memory.c (inlined
 * into the evaluation) and reach the other files through the out-of-line
 * sl__mem_* wrappers below.
 *
 * Not a public interface: src/store/ only.
 */
#ifndef SL_STORE_MEMORY_PRIVATE_H
#define SL_STORE_MEMORY_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "../core/arith.h"
#include "../core/limit.h"
#include "journal.h"
#include "mem_cost.h"
#include "store.h"
#include "store_memory_slab.h"

#define SLOT_USED UINT64_C(1)
#define SLOT_REF UINT64_C(2)
#define SLOT_BLOCK UINT64_C(4)
#define SLOT_FLAGS UINT64_C(7)
#define SHARD_SHIFT 3
#define SHARD_BITS UINT64_C(0xffff)
#define MAX_SHARDS 65536u
#define DEFAULT_SHARDS 256u
#define MIN_CAP 16u
#define PAGE_BYTES SL__PAGE_BYTES
/* Below this a shard's table grows without sweeping first: recovered
 * states stay for their keys to reuse (64 MiB over 256 shards). */
#define SWEEP_BEFORE_GROW_BYTES (256u * 1024u)

/* A state in 16 bytes: the tag, and `v`, which holds expire_at and the word
 * packed (below) or, with V_OUT, points at them out of line. */
typedef struct slot {
    uint64_t tag;  /* 0 = empty */
    uint64_t v;    /* packed state, or V_OUT | the out-of-line record */
} slot_t;

/* v, packed: bits 17-62 expire_at - the shard's epoch (46 bits, 2.2
 * years), bits 0-16 the word: below 2^16 as is, or with bit 16 set two
 * 32-bit halves below 2^8 each (a sliding_window's two counters). Any state
 * outside that (a word of a large limit, a reservation's SL__HELD, an
 * expire_at before the epoch or 2.2 years past it) goes out of line, as
 * exact as ever; v == V_OUT alone is the zero state {0, 0}. */
#define V_OUT (UINT64_C(1) << 63)
#define V_CODE_BITS 17
#define V_CODE_MASK ((UINT64_C(1) << V_CODE_BITS) - 1)
#define V_PAIR (UINT64_C(1) << 16)
#define V_OFF_LIMIT (INT64_C(1) << 46)
/* How far before the first state placed in an empty shard its epoch lies:
 * a clock stepping back further than that stores out of line. */
#define EPOCH_BACK (INT64_C(1) << 36)

/* Out of line, a wide state: {expire_at, word}, 16 bytes from malloc. A
 * slot with SLOT_BLOCK has a block instead: v is V_OUT | its record's ref
 * in the shard's slab (store_memory_slab.h), which holds expire_at and the
 * entries, while the ref holds the ring's head and count. */
typedef struct sl__ext {
    sl_usec_t expire_at;
    uint64_t word;
} sl__ext_t;

/* A decision published for the shard lock's holder to run
 * (store_memory_combine.c). */
typedef struct sl__mem_req {
    struct sl__mem_req *next;
    int (*run)(void *ctx);  /* the decision, run under the shard's lock */
    void *ctx;
    int rc;
    _Atomic uint32_t done;
} sl__mem_req_t;

typedef struct shard {
    _Alignas(64) pthread_mutex_t lock;
    /* Requests waiting for the lock's holder, newest first: in the lock's
     * cache line, which the holder has in hand anyway. */
    _Atomic(sl__mem_req_t *) pending;
    slot_t *slots;
    uint32_t cap, count;
    /* slots and cap as last published, for prefetching without the lock:
     * possibly stale, only ever used as a cache hint. */
    _Atomic uintptr_t hint_slots;
    _Atomic uint32_t hint_cap;
    sl_usec_t epoch;       /* packed expiries count from here (chosen when empty) */
    uint32_t sweep, hand;  /* incremental sweep cursor; CLOCK hand */
    uint64_t moves;        /* bumped whenever slots change place */
    /* Changes of the shard since a thread last kept a denial of one of its
     * keys (store_memory_memo.c): bumped, under the lock, by the first
     * change after memo_out was set. Read without the lock. */
    _Atomic uint64_t gen;
    bool memo_out;         /* a denial has been kept at the current gen */
    size_t table_bytes;    /* what the table costs (mem_cost.h) */
    size_t block_bytes;    /* wide records and the slab */
    sl__slab_t slab;       /* blocks' records */
    uint64_t evictions, reclaimed;
} shard_t;

typedef struct memory_store {
    sl_store_t base;
    shard_t *shards;
    uint32_t nshards;
    _Atomic uint64_t seed;
    uint64_t serial;  /* this store among all of the process's: names its memos */
    size_t max_memory;
    size_t fixed;   /* this header and the shard headers (locks included), as allocated */
    size_t budget;  /* per shard: tables and blocks; 0 = unbounded */
    sl__journal_fn journal;  /* write-back: told what was charged */
    sl__unsynced_fn unsynced;
    void *journal_ctx;
    /* Groups held right now by any thread (group.h), apart from the fields
     * every decision reads: bumped twice per transaction. While it is 0 a
     * decision does not look at its thread's held shards. */
    char pad_[64];
    _Atomic uint32_t groups;
} memory_store_t;

/* ---- decisions kept by each thread (store_memory_memo.c) ------------------------ */

/* Every critical section that may change what a kept denial read (a
 * charge, a slot placed, moved or freed, a reference bit cleared, a load)
 * calls this before it unlocks (one over several shards, for all of them
 * before it unlocks any); one that changed nothing does not. */
static inline void shard_changed(shard_t *sh) {
    if (sh->memo_out) {
        sh->memo_out = false;
        atomic_fetch_add_explicit(&sh->gen, 1, memory_order_seq_cst);
    }
}

/* Limits of a policy whose decisions a thread may keep (most have one
 * or two). */
#define SL__MEMO_LIMITS 2
/* Kept per thread, direct-mapped: a few hot keys at once. */
#define SL__MEMO_SLOTS 8u

typedef struct sl__memo {
    uint64_t serial; /* the store's; 0: empty */
    uint64_t gen;
    uint32_t n;
    uint64_t tags[SL__MEMO_LIMITS];
    sl_usec_t expire_at[SL__MEMO_LIMITS];
    uint64_t word[SL__MEMO_LIMITS];
} sl__memo_t;

/* The default TLS model: linked into an executable (sluiced) the access is
 * relaxed to an offset from the thread pointer; libsluice.so stays loadable
 * by dlopen, which initial-exec TLS may not be. */
extern _Thread_local sl__memo_t sl__memos[SL__MEMO_SLOTS];

/* In a thread's memos, the place for the states of the key whose first
 * tag is tag: bits 3-18 choose the shard, so the place comes from above
 * them. */
static inline sl__memo_t *sl__memo_in(sl__memo_t *memos, uint64_t tag) {
    return &memos[(tag >> 20) & (SL__MEMO_SLOTS - 1)];
}

static inline sl__memo_t *sl__memo_of(uint64_t tag) { return sl__memo_in(sl__memos, tag); }

/* Whether the thread whose memos these are may hold states of store m for
 * the key (inline, so that a key with none costs a compare; a loop takes
 * sl__memos once, as finding a thread's variable may cost a call). */
static inline bool sl__memo_maybe_in(sl__memo_t *memos, const memory_store_t *m, uint64_t tag) {
    const sl__memo_t *me = sl__memo_in(memos, tag);
    return me->tags[0] == tag && me->serial == m->serial;
}

static inline bool sl__memo_maybe(const memory_store_t *m, uint64_t tag) {
    return sl__memo_maybe_in(sl__memos, m, tag);
}

/* The calling thread's memos, found by a call (a loop's one: the compiler
 * would find the variable again on every turn, saving its registers
 * around a possible call each time). */
sl__memo_t *sl__mem_memos(void);

/* Whether decisions under p may be kept: not write-back (its journal and
 * shares are state the shard does not hold), no blocks (a block's ring is
 * tidied by reading it), at most SL__MEMO_LIMITS limits. */
bool sl__mem_memo_fits(const sl_policy_t *p);

/* Decides (p, tags) at now from this thread's kept copy of its states when
 * the shard has not changed since and the decision changes nothing (a
 * denial, a peek); false: decide under the lock. Not for a thread holding
 * the shard in a group. */
bool sl__mem_memo_decide(const memory_store_t *m, shard_t *sh, const sl_policy_t *p,
                         const uint64_t *tags, sl_usec_t now, uint64_t cost, bool peek,
                         sl_decision_t *out, sl_limit_report_t *limits);

/* Keeps, for this thread, the states a decision that changed nothing read
 * from sh at gen (the lock was held; the caller set sh->memo_out). */
void sl__mem_memo_keep(const memory_store_t *m, const sl_policy_t *p, const uint64_t *tags,
                       const sl__cell_t *cells, uint64_t gen);

/* Decisions this thread took from its kept states (tests, benchmarks). */
uint64_t sl__mem_memo_hits(void);

/* ---- write-back shares (store_memory_share.c) ------------------------------------ */

/* Write-back: the mask of limits this daemon's unsynced charges of the key
 * would take past its share (*retry: when they may be synced). */
uint32_t sl__mem_share_check(const memory_store_t *m, const sl_policy_t *p, const void *key,
                             size_t key_len, uint64_t cost, sl_usec_t *retry);
/* out (and limits) turned into the denial of the limits in `over`. */
void sl__mem_deny_for_share(const sl_policy_t *p, uint32_t over, sl_usec_t retry,
                            sl_decision_t *out, sl_limit_report_t *limits);

/* ---- groups (store_memory_group.c) ---------------------------------------------- */

/* What the calling thread holds of a group: shards idx[0..n), ascending,
 * or every shard (all), of store m (NULL: none). */
typedef struct held {
    const memory_store_t *m;
    uint32_t *idx;
    uint32_t n;
    bool all;
} held_t;

extern _Thread_local held_t sl__mem_held;

/* Whether the calling thread holds shard i of m in a group. */
bool sl__mem_holds(const memory_store_t *m, uint32_t i);

/* A shard's lock, unless the calling thread holds it in a group already. */
static inline bool shard_held(const memory_store_t *m, const shard_t *sh) {
    return atomic_load_explicit(&m->groups, memory_order_relaxed) != 0 &&
           sl__mem_holds(m, (uint32_t)(sh - m->shards));
}

static inline void shard_lock(const memory_store_t *m, shard_t *sh) {
    if (!shard_held(m, sh))
        pthread_mutex_lock(&sh->lock);
}

static inline void shard_unlock(const memory_store_t *m, shard_t *sh) {
    shard_changed(sh);
    if (!shard_held(m, sh))
        pthread_mutex_unlock(&sh->lock);
}

/* shard_unlock() after a critical section that only read. */
static inline void shard_unlock_unchanged(const memory_store_t *m, shard_t *sh) {
    if (!shard_held(m, sh))
        pthread_mutex_unlock(&sh->lock);
}

int sl__mem_group_begin(sl_store_t *s, const sl__group_key_t *keys, size_t n, bool all);
void sl__mem_group_end(sl_store_t *s);
/* The shard of key under p (store_memory.c). */
uint32_t sl__mem_shard_of_key(const memory_store_t *m, const sl_policy_t *p, const void *key,
                              size_t key_len);

/* Requests one holder of a shard's lock decides at most before it lets go
 * (for others' published requests, or a run of its own batch), so that an
 * endless stream does not keep the rest out. */
#define SL__SERVE_LIMIT 64u

/* Runs r under sh's lock, found taken: by its holder (flat combining) or,
 * failing that, by this thread; r->rc. Not for a thread holding sh in a
 * group. */
int sl__mem_combine(shard_t *sh, sl__mem_req_t *r);
/* Unlocks sh, having served the requests published on it. */
void sl__mem_release(shard_t *sh);

/* Unlocks sh after a decision: serving who published meanwhile, or all
 * along with `serve` (a write-back decision took the lock plainly). */
static inline void shard_unlock_decided(shard_t *sh, bool serve) {
    if (serve || atomic_load_explicit(&sh->pending, memory_order_relaxed) != NULL)
        sl__mem_release(sh);
    else
        pthread_mutex_unlock(&sh->lock);
}

/* ---- slots ---------------------------------------------------------------------- */

static inline uint64_t ident(uint64_t tag) { return tag & ~SLOT_FLAGS; }

static inline uint32_t home_of(uint64_t tag, uint32_t cap) {
    return (uint32_t)(((sl__u128)(tag & ~SLOT_FLAGS) * cap) >> 64);
}

static inline uint32_t dist_of(const shard_t *sh, uint32_t i) {
    uint32_t h = home_of(sh->slots[i].tag, sh->cap);
    return i >= h ? i - h : i + sh->cap - h;
}

static inline uint32_t shard_of(const memory_store_t *m, uint64_t tag) {
    return (uint32_t)((tag >> SHARD_SHIFT) & (m->nshards - 1));
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static inline uint64_t make_tag(uint64_t key_hash, uint64_t limit_id) {
    uint64_t shard_sel = (key_hash >> 40) & SHARD_BITS;
    uint64_t t = mix64(key_hash ^ limit_id) & ~(SLOT_FLAGS | (SHARD_BITS << SHARD_SHIFT));
    return t | shard_sel << SHARD_SHIFT | SLOT_USED;
}

static inline sl__ext_t *slot_ext(const slot_t *s) {
    return (sl__ext_t *)(uintptr_t)(s->v & ~V_OUT);
}

/* The slab ref of a slot with SLOT_BLOCK. */
static inline uint64_t slot_ref(const slot_t *s) { return s->v & ~V_OUT; }

/* Slot s's block as a view into the slab (b), or NULL when it has none. */
static inline sl__block_t *slot_block(const shard_t *sh, const slot_t *s, sl__block_t *b) {
    unsigned hb;
    if (!(s->tag & SLOT_BLOCK))
        return NULL;
    sl__slab_view(&sh->slab, slot_ref(s), b, &hb);
    return b;
}

static inline sl_usec_t slot_expire(const shard_t *sh, const slot_t *s) {
    if (!(s->v & V_OUT))
        return sh->epoch + (sl_usec_t)(s->v >> V_CODE_BITS);
    if (s->tag & SLOT_BLOCK)
        return sl__slab_expire(&sh->slab, slot_ref(s));
    return (s->v & ~V_OUT) ? slot_ext(s)->expire_at : 0;
}

static inline uint64_t slot_word(const slot_t *s) {
    if (s->v & V_OUT)
        return (s->v & ~V_OUT) && !(s->tag & SLOT_BLOCK) ? slot_ext(s)->word : 0;
    uint64_t c = s->v & V_CODE_MASK;
    return (c & V_PAIR) ? (c & 0xff) | ((c >> 8) & 0xff) << 32 : c;
}

/* {expire_at, word} packed into a v, or false when it does not fit. */
static inline bool slot_pack(const shard_t *sh, sl_usec_t expire_at, uint64_t word, uint64_t *v) {
    uint64_t off = (uint64_t)expire_at - (uint64_t)sh->epoch; /* huge when before it */
    if (off >= (uint64_t)V_OFF_LIMIT)
        return false;
    uint64_t code;
    if (word < V_PAIR)
        code = word;
    else if ((word & ~UINT64_C(0x000000ff000000ff)) == 0)
        code = V_PAIR | (word & 0xff) | (word >> 32) << 8;
    else
        return false;
    *v = off << V_CODE_BITS | code;
    return true;
}

/* The epoch of a shard whose first state is placed at `now`. */
static inline sl_usec_t epoch_for(sl_usec_t now) { return now > EPOCH_BACK ? now - EPOCH_BACK : 0; }

/* ---- out-of-line records (wide states, blocks) ------------------------------- */

#define EXT_COST sl__heap_cost(sizeof(sl__ext_t))

/* Whether slot s owns a wide record (not a block). */
static inline bool owns_ext(const slot_t *s) {
    return !(s->tag & SLOT_BLOCK) && (s->v & V_OUT) && s->v != V_OUT;
}

/* Whether slot s owns an out-of-line record (a block's or a wide state's). */
static inline bool owns_out(const slot_t *s) { return (s->tag & SLOT_BLOCK) || owns_ext(s); }

/* Frees what the slot keeps out of line; it is left holding the zero state. */
static inline void drop_out(shard_t *sh, slot_t *s) {
    if (s->tag & SLOT_BLOCK) {
        sl__slab_free(&sh->slab, &sh->block_bytes, slot_ref(s));
    } else if (owns_ext(s)) {
        sh->block_bytes -= EXT_COST;
        free(slot_ext(s));
    }
    s->tag &= ~SLOT_BLOCK;
    s->v = V_OUT;
}


/* Makes ext (fresh, counted by the caller) slot s's state {expire_at, word}. */
static inline void install_ext(shard_t *sh, slot_t *s, sl__ext_t *ext, sl_usec_t expire_at, uint64_t word) {
    drop_out(sh, s);
    ext->expire_at = expire_at;
    ext->word = word;
    s->v = V_OUT | (uint64_t)(uintptr_t)ext;
    sh->block_bytes += EXT_COST;
}

/* Writes an inline state that slot_pack() cannot pack, when the slot has a
 * wide record already (true) or ext is given; false: neither. */
static inline bool set_wide(shard_t *sh, slot_t *s, sl_usec_t expire_at, uint64_t word, sl__ext_t *ext) {
    if (owns_ext(s)) {
        slot_ext(s)->expire_at = expire_at;
        slot_ext(s)->word = word;
        free(ext);
        return true;
    }
    if (ext == NULL)
        return false;
    install_ext(sh, s, ext, expire_at, word);
    return true;
}

/* ---- batches (store_memory_batch.c) -------------------------------------------- */

/* The seeded hash of (p, key) that tags and shards come from (store_memory.c). */
uint64_t sl__mem_key_hash(const memory_store_t *m, const sl_policy_t *p, const void *key,
                          size_t key_len);
/* One request decided, its hash h given (store_memory.c): under sh's lock
 * held by the caller, or with `combine` found taken (sl__mem_combine). */
int sl__mem_decide_hashed(memory_store_t *m, const sl_policy_t *p, uint64_t h, const sl_request_t *r,
                          sl_usec_t now, bool combine, sl_decision_t *out);
/* The store's evaluate_batch (store.h). */
int sl__mem_evaluate_batch(sl_store_t *s, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                           sl_usec_t now, sl_decision_t *out, size_t *done);

/* ---- for store_memory_bulk.c (store_memory.c, out of line) ------------------- */

int64_t sl__mem_find(const shard_t *sh, uint64_t tag);
void sl__mem_place(shard_t *sh, slot_t item);
void sl__mem_remove_at(shard_t *sh, uint32_t i);
int sl__mem_resize(shard_t *sh, uint32_t cap);
size_t sl__mem_table_cost(uint32_t cap);
uint32_t sl__mem_page_fit(uint32_t cap);

/* ---- reclamation and eviction (store_memory_reclaim.c) -------------------------- */

/* The slots of the key being evaluated: never reclaimed or evicted under it. */
typedef struct pins {
    const uint64_t *tags;
    size_t n;
} pins_t;

static inline bool over_load(uint32_t count, uint32_t cap) {
    return (uint64_t)count * 25 > (uint64_t)cap * 23; /* > 92% */
}

/* Frees recovered states (budget slots, 0 = all), none of pins (may be NULL). */
size_t sl__mem_reclaim(shard_t *sh, sl_usec_t now, uint32_t budget, const pins_t *pins);
/* Room for one more state, to be placed with `tag`. */
int sl__mem_make_room(const memory_store_t *m, shard_t *sh, sl_usec_t now, const pins_t *pins,
                      uint64_t tag);
/* Room for `extra` more bytes of wide records within max_memory; SL_EFULL
 * only when the table is at MIN_CAP and nothing unpinned is left to evict.
 * Slots may move (and the table be resized): locate again after it. */
int sl__mem_make_bytes(const memory_store_t *m, shard_t *sh, size_t extra, sl_usec_t now,
                       const pins_t *pins);
/* Room for one more block record of (kind, cap) within max_memory, as
 * sl__mem_make_bytes; SL_EFULL also past the slab's bounds. */
int sl__mem_make_record(const memory_store_t *m, shard_t *sh, uint32_t kind, uint32_t cap,
                        sl_usec_t now, const pins_t *pins);

/* ---- in store_memory_bulk.c (the store's ops table) ---------------------------- */

int sl__mem_stats(sl_store_t *s, sl_store_stats_t *out);
int sl__mem_sweep(sl_store_t *s, sl_usec_t now, size_t budget, size_t *reclaimed);
int sl__mem_save(sl_store_t *s, const char *path, sl_usec_t now);
int sl__mem_load(sl_store_t *s, const char *path, sl_usec_t now, size_t *loaded);

#endif
