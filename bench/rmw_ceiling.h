/* rmw_ceiling.h -- the read-modify-write ceiling of one core, for
 * sluice-bench: how many random 16-byte slots per second one thread can
 * read and write when each is chosen by hashing a random key's bytes, on a
 * table as large as the memory store's for the same keys. No decision, no
 * lock, no probing: what a decision on many keys could at best approach.
 *
 * Not a library interface: bench/ only.
 */
#ifndef SL_BENCH_RMW_CEILING_H
#define SL_BENCH_RMW_CEILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rmw_keys {
    const char *base;  /* key k at base + k * stride, len bytes (8 to stride) */
    uint32_t n;
    size_t stride, len;
} rmw_keys_t;

/* Read-modify-writes per second on one thread, over `duration` seconds, of
 * a table of nslots 16-byte slots. lookahead 0: one operation after the
 * other, each waiting for its key and then its slot. Else in runs of `run`
 * operations (the keys of a run chosen first, as a caller of
 * sl_check_batch() does), prefetching the key of operation i + 2 *
 * lookahead and the slot of i + lookahead, as sl_check_batch() does. huge:
 * the table and a copy of the keys on transparent huge pages (madvise), to
 * show what the TLB costs (the store's tables are separate mappings per
 * shard, too small for them). */
double rmw_ceiling(const rmw_keys_t *keys, size_t nslots, unsigned run, unsigned lookahead, bool huge,
                   double duration, uint64_t seed);

#endif
