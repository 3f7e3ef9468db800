/* store_memory_slab.h -- where the memory store keeps blocks (sliding_log
 * rings, sub-window counters): one slab per size class per shard.
 *
 * A block's record is its state's expire_at (8 bytes) and its entries,
 * nothing more: no allocator header, no rounding, no block header. The
 * block's kind and capacity are its class's (a class is one (kind, cap)
 * pair of the shard), and its head and count ride in the slot, beside the
 * record's place. That place, a "ref", is the slot's v without V_OUT:
 *
 *   bits 53-62  the class (up to 1,024 classes in use in a shard)
 *   bits hc-52  the record's number in its class: chunk << shift | index
 *   bits 0-hc   head (hb bits) and count (hc - hb bits) of a ring; a
 *               counters block has neither (hc = 0)
 *
 * With 4-byte entries a ring of 500 costs 2,008 bytes where malloc took
 * 2,032 for the same ring with its header. Records live in chunks of up to
 * 64 KiB (chunk j holds 2^min(j, shift) records, so that a class's first
 * records cost little), from malloc; a chunk whose records are all free
 * goes back at once, a class with none left frees everything it had. Every
 * allocation is added to or taken from the caller's byte count as the
 * allocator rounds it (mem_cost.h), for max_memory.
 *
 * Bounds: a class numbers its records in 53 - hc bits (hc = 19 for a ring
 * of 500: 2^34 records; 41 for the largest ring, 2^20 entries: 4,096 such
 * rings per shard), and a shard has 1,024 classes in use at most; past
 * either, sl__slab_cost() says SIZE_MAX and the caller fails the decision
 * with SL_EFULL.
 *
 * Not thread-safe: a shard's slab is used under the shard's lock. Not
 * here: what to evict when the bytes are not there (store_memory_reclaim.c).
 */
#ifndef SL_STORE_MEMORY_SLAB_H
#define SL_STORE_MEMORY_SLAB_H

#include <stdint.h>
#include <string.h>

#include "../core/limit.h"

#define SLAB_CLASS_SHIFT 53
#define SLAB_MAX_CLASSES 1024u
#define SLAB_LOW ((UINT64_C(1) << SLAB_CLASS_SHIFT) - 1)
#define SLAB_CHUNK_BYTES (64u * 1024u)
#define SLAB_NIL UINT32_MAX
#define SLAB_EXPIRE_BYTES sizeof(sl_usec_t)

typedef struct sl__slab_chunk {
    char *mem;           /* its records; NULL: released */
    uint32_t live;       /* records in use */
    uint16_t free;       /* first freed record (its first bytes hold the next), UINT16_MAX: none */
    uint16_t fresh;      /* records from here on were never used */
    uint32_t next, prev; /* the class's chunks with room; released chunks: next only */
} sl__slab_chunk_t;

typedef struct sl__slab_class {
    uint32_t kind;       /* SL__BLOCK_*; SL__BLOCK_NONE: a free entry */
    uint32_t cap;        /* entries per block */
    uint32_t size;       /* bytes per record: expire_at, then the entries */
    uint32_t hmask, cmask; /* head's and count's bits (count's from hb on) */
    uint32_t imask;      /* a record's index in its chunk, from its number */
    uint8_t hb, hc;      /* head in ref bits 0..hb-1, count in hb..hc-1 */
    uint8_t shift;       /* a full chunk holds 1 << shift records */
    uint32_t live;       /* records in use */
    uint32_t nchunks, chunks_cap;
    uint32_t room;       /* first chunk with memory and a free record, SLAB_NIL */
    uint32_t released;   /* first released chunk, SLAB_NIL */
    sl__slab_chunk_t *chunks;
} sl__slab_class_t;

typedef struct sl__slab {
    sl__slab_class_t *classes;
    uint32_t nclasses;     /* entries allocated */
    uint32_t alive;        /* entries in use */
    uint32_t chunk_bytes;  /* largest chunk */
} sl__slab_t;

/* An empty slab whose chunks are at most chunk_bytes (a record larger than
 * that has a chunk of its own). */
void sl__slab_init(sl__slab_t *s, size_t chunk_bytes);
/* Frees everything; the slab is left empty. */
void sl__slab_destroy(sl__slab_t *s);
/* The bytes one more record of (kind, cap) would add now (0 when its class
 * has a free record), or SIZE_MAX when it cannot have one (the bounds). */
size_t sl__slab_cost(const sl__slab_t *s, uint32_t kind, uint32_t cap);
/* The class of (kind, cap), SLAB_NIL when it has none. */
uint32_t sl__slab_class_of(const sl__slab_t *s, uint32_t kind, uint32_t cap);
/* A zeroed record of (kind, cap): *ref with head and count 0; *bytes grows
 * by sl__slab_cost(). SL_EFULL (the bounds) or SL_ENOMEM, nothing changed. */
int sl__slab_alloc(sl__slab_t *s, size_t *bytes, uint32_t kind, uint32_t cap, uint64_t *ref);
/* Gives record ref back; *bytes shrinks by what goes back to malloc. */
void sl__slab_free(sl__slab_t *s, size_t *bytes, uint64_t ref);

/* ---- a record's place (the decisions' path) ------------------------------------ */

static inline const sl__slab_class_t *sl__slab_class(const sl__slab_t *s, uint64_t ref) {
    return &s->classes[ref >> SLAB_CLASS_SHIFT];
}

static inline char *sl__slab_record_in(const sl__slab_class_t *c, uint64_t ref) {
    uint64_t n = (ref & SLAB_LOW) >> c->hc;
    return c->chunks[n >> c->shift].mem + (size_t)(n & c->imask) * c->size;
}

static inline char *sl__slab_record(const sl__slab_t *s, uint64_t ref) {
    return sl__slab_record_in(sl__slab_class(s, ref), ref);
}

static inline sl_usec_t sl__slab_expire(const sl__slab_t *s, uint64_t ref) {
    sl_usec_t t;
    memcpy(&t, sl__slab_record(s, ref), sizeof t); /* records of odd caps are 4-aligned */
    return t;
}

/* The block of record ref, as a view of its entries (b). Returns the
 * record's place (ref without head and count) and sets *hb, for
 * sl__slab_ref() to make the ref of the block as it is later. */
static inline uint64_t sl__slab_view(const sl__slab_t *s, uint64_t ref, sl__block_t *b, unsigned *hb) {
    const sl__slab_class_t *c = sl__slab_class(s, ref);
    b->kind = c->kind;
    b->cap = c->cap;
    b->head = (uint32_t)ref & c->hmask;
    b->count = (uint32_t)(ref >> c->hb) & c->cmask;
    b->data = (uint32_t *)(sl__slab_record_in(c, ref) + SLAB_EXPIRE_BYTES);
    *hb = c->hb;
    return ref & ~((uint64_t)c->cmask << c->hb | c->hmask);
}

/* The ref of view b's record (at `place`, from sl__slab_view) with b's
 * head and count. */
static inline uint64_t sl__slab_ref(uint64_t place, unsigned hb, const sl__block_t *b) {
    return place | b->head | (uint64_t)b->count << hb;
}

/* Writes view b's state back: expire_at into its record, and its ref. */
static inline uint64_t sl__slab_store(uint64_t place, unsigned hb, const sl__block_t *b, sl_usec_t expire_at) {
    memcpy((char *)b->data - SLAB_EXPIRE_BYTES, &expire_at, sizeof expire_at);
    return sl__slab_ref(place, hb, b);
}

#endif
