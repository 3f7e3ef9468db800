/* store_memory_slab.c -- the memory store's slabs of block records (see
 * store_memory_slab.h for the layout and its bounds).
 *
 * A class keeps an array of chunks; the chunks with a free record form a
 * list, and a record is always taken from its head, so that finding room
 * costs nothing however many chunks there are. A chunk whose last record
 * goes is freed and kept in a list of released chunks, whose numbers are
 * reused first (a record's number says its chunk, so numbers must stay
 * small); a class whose last record goes frees its chunk array and its
 * entry is reused; the class directory goes when no class is left.
 *
 * Not here: the slots that point at records (store_memory.c).
 */
#include <stdlib.h>

#include "mem_cost.h"
#include "store_memory_slab.h"
#include "sluice.h"

#define FREE_NONE UINT16_MAX
#define MAX_SHIFT 15 /* records per chunk fit a uint16_t index */

void sl__slab_init(sl__slab_t *s, size_t chunk_bytes) {
    memset(s, 0, sizeof *s);
    s->chunk_bytes = (uint32_t)(chunk_bytes < SLAB_CHUNK_BYTES ? chunk_bytes : SLAB_CHUNK_BYTES);
}

void sl__slab_destroy(sl__slab_t *s) {
    for (uint32_t k = 0; k < s->nclasses; k++) {
        sl__slab_class_t *c = &s->classes[k];
        for (uint32_t j = 0; j < c->nchunks; j++)
            free(c->chunks[j].mem);
        free(c->chunks);
    }
    free(s->classes);
    sl__slab_init(s, s->chunk_bytes);
}

static uint8_t bits_for(uint64_t v) { return v == 0 ? 0 : (uint8_t)(64 - __builtin_clzll(v)); }

/* The shape of class (kind, cap); false when a ref has no room for it. */
static bool shape(const sl__slab_t *s, uint32_t kind, uint32_t cap, sl__slab_class_t *c) {
    memset(c, 0, sizeof *c);
    if (kind == SL__BLOCK_NONE || cap == 0 || cap > SL__MAX_BLOCK_CAP)
        return false;
    c->kind = kind;
    c->cap = cap;
    c->size = (uint32_t)(SLAB_EXPIRE_BYTES + sl__block_data_bytes(kind, cap));
    if (kind != SL__BLOCK_COUNTERS) { /* head < cap, count <= cap */
        c->hb = bits_for(cap - 1);
        c->hc = (uint8_t)(c->hb + bits_for(cap));
    }
    while (c->shift < MAX_SHIFT && ((uint64_t)c->size << (c->shift + 1)) <= s->chunk_bytes)
        c->shift++;
    c->hmask = (uint32_t)((UINT64_C(1) << c->hb) - 1);
    c->cmask = (uint32_t)((UINT64_C(1) << (c->hc - c->hb)) - 1);
    c->imask = (UINT32_C(1) << c->shift) - 1;
    c->room = c->released = SLAB_NIL;
    return c->hc < SLAB_CLASS_SHIFT;
}

uint32_t sl__slab_class_of(const sl__slab_t *s, uint32_t kind, uint32_t cap) {
    for (uint32_t k = 0; k < s->nclasses; k++)
        if (s->classes[k].kind == kind && s->classes[k].cap == cap)
            return k;
    return SLAB_NIL;
}

static uint32_t free_entry(const sl__slab_t *s) {
    return sl__slab_class_of(s, SL__BLOCK_NONE, 0);
}

static uint32_t chunk_records(const sl__slab_class_t *c, uint32_t j) {
    return UINT32_C(1) << (j < c->shift ? j : c->shift);
}

static size_t chunk_cost(const sl__slab_class_t *c, uint32_t j) {
    return sl__heap_cost((size_t)chunk_records(c, j) * c->size);
}

static size_t array_cost(size_t n, size_t each) { return n ? sl__heap_cost(n * each) : 0; }

/* The chunk a class without room would allocate next, or SLAB_NIL when
 * its records' numbers would not fit a ref. */
static uint32_t next_chunk(const sl__slab_class_t *c) {
    if (c->released != SLAB_NIL)
        return c->released;
    uint64_t last = ((uint64_t)c->nchunks << c->shift) + chunk_records(c, c->nchunks) - 1;
    return c->nchunks < SLAB_NIL - 1 && last < UINT64_C(1) << (SLAB_CLASS_SHIFT - c->hc) ? c->nchunks
                                                                                      : SLAB_NIL;
}

static uint32_t grown(uint32_t n) { return n ? 2 * n : 1; }

/* What a chunk for a class without room costs: its records, and the
 * chunk array's growth when it is appended. */
static size_t room_cost(const sl__slab_class_t *c) {
    uint32_t j = next_chunk(c);
    if (j == SLAB_NIL)
        return SIZE_MAX;
    size_t cost = chunk_cost(c, j);
    if (j == c->nchunks && c->nchunks == c->chunks_cap)
        cost += array_cost(grown(c->chunks_cap), sizeof(sl__slab_chunk_t)) -
                array_cost(c->chunks_cap, sizeof(sl__slab_chunk_t));
    return cost;
}

size_t sl__slab_cost(const sl__slab_t *s, uint32_t kind, uint32_t cap) {
    uint32_t k = sl__slab_class_of(s, kind, cap);
    if (k != SLAB_NIL)
        return s->classes[k].room != SLAB_NIL ? 0 : room_cost(&s->classes[k]);
    sl__slab_class_t c;
    if (!shape(s, kind, cap, &c))
        return SIZE_MAX;
    size_t cost = room_cost(&c);
    if (free_entry(s) == SLAB_NIL) {
        if (s->nclasses >= SLAB_MAX_CLASSES)
            return SIZE_MAX;
        cost += array_cost(grown(s->nclasses), sizeof(sl__slab_class_t)) -
                array_cost(s->nclasses, sizeof(sl__slab_class_t));
    }
    return cost;
}

/* ---- the list of chunks with room ----------------------------------------------- */

static void room_push(sl__slab_class_t *c, uint32_t j) {
    sl__slab_chunk_t *ch = &c->chunks[j];
    ch->prev = SLAB_NIL;
    ch->next = c->room;
    if (c->room != SLAB_NIL)
        c->chunks[c->room].prev = j;
    c->room = j;
}

static void room_unlink(sl__slab_class_t *c, uint32_t j) {
    sl__slab_chunk_t *ch = &c->chunks[j];
    if (ch->prev != SLAB_NIL)
        c->chunks[ch->prev].next = ch->next;
    else
        c->room = ch->next;
    if (ch->next != SLAB_NIL)
        c->chunks[ch->next].prev = ch->prev;
}

/* ---- allocation ------------------------------------------------------------------ */

/* The class of (kind, cap), entered in the directory if new. */
static int class_for(sl__slab_t *s, size_t *bytes, uint32_t kind, uint32_t cap, uint32_t *out) {
    uint32_t k = sl__slab_class_of(s, kind, cap);
    if (k != SLAB_NIL) {
        *out = k;
        return SL_OK;
    }
    sl__slab_class_t c;
    if (!shape(s, kind, cap, &c))
        return SL_EFULL;
    k = free_entry(s);
    if (k == SLAB_NIL) {
        if (s->nclasses >= SLAB_MAX_CLASSES)
            return SL_EFULL;
        uint32_t n = grown(s->nclasses);
        sl__slab_class_t *grew = realloc(s->classes, n * sizeof *grew);
        if (grew == NULL)
            return SL_ENOMEM;
        *bytes += array_cost(n, sizeof *grew) - array_cost(s->nclasses, sizeof *grew);
        memset(grew + s->nclasses, 0, (n - s->nclasses) * sizeof *grew);
        s->classes = grew;
        k = s->nclasses;
        s->nclasses = n;
    }
    s->classes[k] = c;
    s->alive++;
    *out = k;
    return SL_OK;
}

/* A chunk with memory for class c, at the head of its room list. */
static int add_chunk(sl__slab_class_t *c, size_t *bytes) {
    uint32_t j = next_chunk(c);
    if (j == SLAB_NIL)
        return SL_EFULL;
    char *mem = malloc((size_t)chunk_records(c, j) * c->size);
    if (mem == NULL)
        return SL_ENOMEM;
    if (j == c->released) {
        c->released = c->chunks[j].next;
    } else {
        if (c->nchunks == c->chunks_cap) {
            uint32_t n = grown(c->chunks_cap);
            sl__slab_chunk_t *grew = realloc(c->chunks, n * sizeof *grew);
            if (grew == NULL) {
                free(mem);
                return SL_ENOMEM;
            }
            *bytes += array_cost(n, sizeof *grew) - array_cost(c->chunks_cap, sizeof *grew);
            c->chunks = grew;
            c->chunks_cap = n;
        }
        c->nchunks++;
    }
    *bytes += chunk_cost(c, j);
    c->chunks[j] = (sl__slab_chunk_t){mem, 0, FREE_NONE, 0, SLAB_NIL, SLAB_NIL};
    room_push(c, j);
    return SL_OK;
}

int sl__slab_alloc(sl__slab_t *s, size_t *bytes, uint32_t kind, uint32_t cap, uint64_t *ref) {
    uint32_t k;
    int rc = class_for(s, bytes, kind, cap, &k);
    if (rc != SL_OK)
        return rc;
    sl__slab_class_t *c = &s->classes[k];
    if (c->room == SLAB_NIL && (rc = add_chunk(c, bytes)) != SL_OK)
        return rc; /* a new class stays, empty, for the next try */
    uint32_t j = c->room;
    sl__slab_chunk_t *ch = &c->chunks[j];
    uint32_t i;
    if (ch->free != FREE_NONE) {
        i = ch->free;
        memcpy(&ch->free, ch->mem + (size_t)i * c->size, sizeof ch->free);
    } else {
        i = ch->fresh++;
    }
    if (++ch->live == chunk_records(c, j))
        room_unlink(c, j);
    c->live++;
    memset(ch->mem + (size_t)i * c->size, 0, c->size);
    *ref = (uint64_t)k << SLAB_CLASS_SHIFT | (((uint64_t)j << c->shift) | i) << c->hc;
    return SL_OK;
}

/* Class k has no record left: its chunks (all released) and array go, and
 * with the last class the directory. */
static void drop_class(sl__slab_t *s, size_t *bytes, uint32_t k) {
    sl__slab_class_t *c = &s->classes[k];
    *bytes -= array_cost(c->chunks_cap, sizeof *c->chunks);
    free(c->chunks);
    memset(c, 0, sizeof *c);
    if (--s->alive == 0) {
        *bytes -= array_cost(s->nclasses, sizeof *s->classes);
        free(s->classes);
        s->classes = NULL;
        s->nclasses = 0;
    }
}

void sl__slab_free(sl__slab_t *s, size_t *bytes, uint64_t ref) {
    uint32_t k = (uint32_t)(ref >> SLAB_CLASS_SHIFT);
    sl__slab_class_t *c = &s->classes[k];
    uint64_t n = (ref & SLAB_LOW) >> c->hc;
    uint32_t j = (uint32_t)(n >> c->shift);
    uint16_t i = (uint16_t)(n & c->imask);
    sl__slab_chunk_t *ch = &c->chunks[j];
    c->live--;
    if (--ch->live == 0) { /* its memory goes back; its number is reused first */
        if (ch->live + 1 < chunk_records(c, j))
            room_unlink(c, j);
        free(ch->mem);
        *bytes -= chunk_cost(c, j);
        *ch = (sl__slab_chunk_t){NULL, 0, FREE_NONE, 0, c->released, SLAB_NIL};
        c->released = j;
        if (c->live == 0)
            drop_class(s, bytes, k);
        return;
    }
    if (ch->live + 1 == chunk_records(c, j))
        room_push(c, j);
    memcpy(ch->mem + (size_t)i * c->size, &ch->free, sizeof ch->free);
    ch->free = i;
}
