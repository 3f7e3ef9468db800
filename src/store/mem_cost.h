/* mem_cost.h -- what an allocation really costs, for the memory store's
 * accounting and its max_memory cap.
 *
 * The cap covers everything the store keeps: its own header, the shard
 * headers (with their locks), the tables and the out-of-line blocks, each
 * counted as the allocator rounds it, so that used_memory is what is really
 * taken and never passes max_memory. glibc's malloc puts an 8-byte header
 * before each chunk and rounds chunks to 16 bytes, 32 at least; aligned_alloc
 * gives the slack before an aligned chunk back to the heap, so it costs the
 * same. mmap costs whole pages.
 *
 * Not here: deciding what to allocate (store_memory.c).
 */
#ifndef SL_STORE_MEM_COST_H
#define SL_STORE_MEM_COST_H

#include <stddef.h>

#define SL__PAGE_BYTES 4096u

/* malloc(n), calloc(1, n), aligned_alloc(a, n) */
static inline size_t sl__heap_cost(size_t n) {
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

/* mmap(n) */
static inline size_t sl__pages_cost(size_t n) {
    return (n + SL__PAGE_BYTES - 1) / SL__PAGE_BYTES * SL__PAGE_BYTES;
}

#endif
