/* store_memory_private.h -- the memory store's insides, shared by its two
 * files: store_memory.c (tables, reclamation, evaluation: the hot path) and
 * store_memory_bulk.c (operations over the whole store: statistics, the
 * sweep, snapshots saved and loaded). See store_memory.c for the design.
 *
 * The slot helpers are static inline here, as they were in store_memory.c;
 * the table operations stay static there (inlined into the evaluation as
 * before) and reach the bulk file through the out-of-line sl__mem_*
 * wrappers below.
 *
 * Not a public interface: src/store/ only.
 */
#ifndef SL_STORE_MEMORY_PRIVATE_H
#define SL_STORE_MEMORY_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/arith.h"
#include "../core/limit.h"
#include "journal.h"
#include "store.h"

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

typedef struct slot {
    uint64_t tag;         /* 0 = empty */
    sl_usec_t expire_at;  /* recovered at and after this instant */
    uint64_t word;        /* inline state, or the sl__block_t pointer */
} slot_t;

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
    uint32_t sweep, hand;  /* incremental sweep cursor; CLOCK hand */
    uint64_t moves;        /* bumped whenever slots change place */
    size_t table_bytes;    /* what the table costs (mem_cost.h) */
    size_t block_bytes;
    uint64_t evictions, reclaimed;
} shard_t;

typedef struct memory_store {
    sl_store_t base;
    shard_t *shards;
    uint32_t nshards;
    _Atomic uint64_t seed;
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
    if (!shard_held(m, sh))
        pthread_mutex_unlock(&sh->lock);
}

int sl__mem_group_begin(sl_store_t *s, const sl__group_key_t *keys, size_t n, bool all);
void sl__mem_group_end(sl_store_t *s);
/* The shard of key under p (store_memory.c). */
uint32_t sl__mem_shard_of_key(const memory_store_t *m, const sl_policy_t *p, const void *key,
                              size_t key_len);

/* Runs r under sh's lock, found taken: by its holder (flat combining) or,
 * failing that, by this thread; r->rc. Not for a thread holding sh in a
 * group. */
int sl__mem_combine(shard_t *sh, sl__mem_req_t *r);
/* Unlocks sh, having served the requests published on it. */
void sl__mem_release(shard_t *sh);

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

static inline sl__block_t *slot_block(const slot_t *s) {
    return (s->tag & SLOT_BLOCK) ? (sl__block_t *)(uintptr_t)s->word : NULL;
}

/* ---- for store_memory_bulk.c (store_memory.c, out of line) ------------------- */

int64_t sl__mem_find(const shard_t *sh, uint64_t tag);
void sl__mem_place(shard_t *sh, slot_t item);
void sl__mem_remove_at(shard_t *sh, uint32_t i);
int sl__mem_resize(shard_t *sh, uint32_t cap);
size_t sl__mem_table_cost(uint32_t cap);
uint32_t sl__mem_page_fit(uint32_t cap);
size_t sl__mem_block_cost(const sl__block_t *b);
/* Frees recovered states (budget slots, 0 = all); none is pinned. */
size_t sl__mem_reclaim(shard_t *sh, sl_usec_t now, uint32_t budget);
/* Room for one more state / `extra` more bytes of blocks, nothing pinned. */
int sl__mem_make_room(const memory_store_t *m, shard_t *sh, sl_usec_t now, uint64_t tag);
int sl__mem_make_bytes(const memory_store_t *m, shard_t *sh, size_t extra, sl_usec_t now);

/* ---- in store_memory_bulk.c (the store's ops table) ---------------------------- */

int sl__mem_stats(sl_store_t *s, sl_store_stats_t *out);
int sl__mem_sweep(sl_store_t *s, sl_usec_t now, size_t budget, size_t *reclaimed);
int sl__mem_save(sl_store_t *s, const char *path, sl_usec_t now);
int sl__mem_load(sl_store_t *s, const char *path, sl_usec_t now, size_t *loaded);

#endif
