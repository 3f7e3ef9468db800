/* rmw_ceiling.c -- the read-modify-write ceiling (rmw_ceiling.h).
 *
 * The table is one anonymous mapping rather than the store's 256 shards'
 * tables: the same bytes and the same pages, without the shard step. A
 * slot's "modify" is the least a decision does: check the tag, bump the
 * value. The hash is a multiply-xorshift of the key's first and last eight
 * bytes, cheaper than the store's XXH3: a ceiling errs on the fast side.
 *
 * Not here: the library (this file does not include sluice.h).
 */
#define _GNU_SOURCE
#include "rmw_ceiling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_rng.h"

__extension__ typedef unsigned __int128 u128;

typedef struct cslot {
    uint64_t tag, v;
} cslot_t;

#define MAX_RUN 256

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t hash_key(const char *key, size_t len) {
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + len - 8, 8);
    uint64_t h = (a ^ (b * UINT64_C(0x9e3779b97f4a7c15))) * UINT64_C(0xbf58476d1ce4e5b9);
    return (h ^ (h >> 29)) | 1; /* never 0: 0 is an empty slot's tag */
}

static cslot_t *slot_for(cslot_t *table, size_t nslots, uint64_t h) {
    return &table[(size_t)(((u128)h * nslots) >> 64)];
}

static void rmw(cslot_t *s, uint64_t h) {
    if (s->tag != h)
        s->tag = h;
    s->v++;
}

/* One run of n operations on keys ks[0..n), prefetching ahead. */
static void run_ahead(cslot_t *table, size_t nslots, const char *const *ks, size_t len, unsigned n,
                      unsigned ahead) {
    uint64_t hs[MAX_RUN];
    for (unsigned i = 0; i < n && i < 2 * ahead; i++)
        __builtin_prefetch(ks[i]);
    for (unsigned i = 0; i < n && i < ahead; i++) {
        hs[i] = hash_key(ks[i], len);
        __builtin_prefetch(slot_for(table, nslots, hs[i]), 1);
    }
    for (unsigned i = 0; i < n; i++) {
        if (i + 2 * ahead < n)
            __builtin_prefetch(ks[i + 2 * ahead]);
        if (i + ahead < n) {
            hs[i + ahead] = hash_key(ks[i + ahead], len);
            __builtin_prefetch(slot_for(table, nslots, hs[i + ahead]), 1);
        }
        rmw(slot_for(table, nslots, hs[i]), hs[i]);
    }
}

/* An anonymous mapping of `bytes`, on huge pages when asked and granted. */
static void *map(size_t bytes, bool huge) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("sluice-bench: mmap");
        abort();
    }
    if (huge && madvise(p, bytes, MADV_HUGEPAGE) != 0)
        perror("sluice-bench: madvise(MADV_HUGEPAGE), timing on small pages");
    return p;
}

double rmw_ceiling(const rmw_keys_t *keys, size_t nslots, unsigned run, unsigned lookahead, bool huge,
                   double duration, uint64_t seed) {
    if (run == 0 || run > MAX_RUN || keys->len < 8 || keys->len > keys->stride || nslots == 0) {
        fprintf(stderr, "sluice-bench: rmw_ceiling: bad arguments\n");
        abort();
    }
    size_t bytes = nslots * sizeof(cslot_t), key_bytes = (size_t)keys->n * keys->stride;
    cslot_t *table = map(bytes, huge);
    memset(table, 0, bytes); /* every page mapped before timing, as the store's are */
    char *copy = huge ? map(key_bytes, true) : NULL;
    if (copy)
        memcpy(copy, keys->base, key_bytes);
    const char *base = copy ? copy : keys->base;
    uint64_t rng = seed, ops = 0;
    const char *ks[MAX_RUN];
    double t0 = now_seconds(), elapsed = 0;
    while (elapsed < duration) {
        for (unsigned rep = 0; rep < 64; rep++) {
            for (unsigned i = 0; i < run; i++) {
                const char *k = base + (size_t)below(splitmix64(&rng), keys->n) * keys->stride;
                if (lookahead == 0) {
                    uint64_t h = hash_key(k, keys->len);
                    rmw(slot_for(table, nslots, h), h);
                } else {
                    ks[i] = k;
                }
            }
            if (lookahead)
                run_ahead(table, nslots, ks, keys->len, run, lookahead);
            ops += run;
        }
        elapsed = now_seconds() - t0;
    }
    munmap(table, bytes);
    if (copy)
        munmap(copy, key_bytes);
    return (double)ops / elapsed;
}
