/* store_memory_table.h -- where the memory store's tables come from: their
 * size in whole pages, their cost as allocated (mem_cost.h), and the
 * allocation itself (calloc below a page, mmap from a page up).
 *
 * Static inline so that store_memory.c calls them as before, out of its
 * own 800 lines. Not a public interface: store_memory.c only (the other
 * store files reach table_cost and page_fit through sl__mem_* wrappers).
 */
#ifndef SL_STORE_MEMORY_TABLE_H
#define SL_STORE_MEMORY_TABLE_H

#include <stdlib.h>
#include <sys/mman.h>

#include "mem_cost.h"
#include "store_memory_private.h"

static inline size_t table_bytes(uint32_t cap) { return (size_t)cap * sizeof(slot_t); }

/* What a table of `cap` slots (already page_fit) costs: see table_alloc. */
static inline size_t table_cost(uint32_t cap) {
    size_t n = table_bytes(cap);
    return n < PAGE_BYTES ? sl__heap_cost(n) : sl__pages_cost(n);
}

/* Tables of a page or more come straight from mmap, so that a grown-out
 * table goes back to the system at once instead of lingering in the malloc
 * heap; their capacity is rounded up to fill whole pages. */
static inline uint32_t page_fit(uint32_t cap) {
    if (table_bytes(cap) < PAGE_BYTES)
        return cap;
    size_t bytes = (table_bytes(cap) + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    return (uint32_t)(bytes / sizeof(slot_t));
}

static inline slot_t *table_alloc(uint32_t cap) {
    if (table_bytes(cap) < PAGE_BYTES)
        return calloc(cap, sizeof(slot_t));
    void *p = mmap(NULL, table_bytes(cap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void table_free(slot_t *slots, uint32_t cap) {
    if (slots == NULL)
        return;
    if (table_bytes(cap) < PAGE_BYTES)
        free(slots);
    else
        munmap(slots, table_bytes(cap));
}

#endif
