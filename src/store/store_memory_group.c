/* store_memory_group.c -- the memory store's groups (group.h): the shards
 * of the states a transaction touches, locked in ascending order and held
 * for the calling thread until it ends the group.
 *
 * The thread's held shards are thread-local, so that the ordinary calls
 * (evaluate, reset, stats) made in between skip the locks their thread
 * holds: a store-wide count of groups (memory_store_t.groups) keeps that
 * look-up off every decision while no group is held anywhere.
 *
 * Not here: which states a command touches (the daemon), evaluation
 * (store_memory.c).
 */
#include <stdlib.h>

#include "../core/policy.h"
#include "store_memory_private.h"

_Thread_local held_t sl__mem_held;

bool sl__mem_holds(const memory_store_t *m, uint32_t i) {
    const held_t *h = &sl__mem_held;
    if (h->m != m)
        return false;
    if (h->all)
        return true;
    uint32_t lo = 0, hi = h->n; /* idx is sorted */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->idx[mid] == i)
            return true;
        if (h->idx[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static int by_index(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The shards of keys[0..n) (an elastic policy's pool too), ascending and
 * each once, into idx (room for 2n); their count. */
static uint32_t shards_of(const memory_store_t *m, const sl__group_key_t *keys, size_t n,
                          uint32_t *idx) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const sl_policy_t *p = keys[i].p;
        idx[k++] = sl__mem_shard_of_key(m, p, keys[i].key ? keys[i].key : "", keys[i].key_len);
        if (p->mode == SL_MODE_ELASTIC && p->pool) /* limiter.c borrows from it under key "" */
            idx[k++] = sl__mem_shard_of_key(m, p->pool, "", 0);
    }
    qsort(idx, k, sizeof *idx, by_index);
    size_t out = 0;
    for (size_t i = 0; i < k; i++)
        if (out == 0 || idx[out - 1] != idx[i])
            idx[out++] = idx[i];
    return (uint32_t)out;
}

int sl__mem_group_begin(sl_store_t *s, const sl__group_key_t *keys, size_t n, bool all) {
    memory_store_t *m = (memory_store_t *)s;
    held_t *h = &sl__mem_held;
    if (h->m != NULL) /* one group per thread: a second would lock its own shards again */
        return SL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].p == NULL || (keys[i].key == NULL && keys[i].key_len > 0))
            return SL_EINVAL;
    uint32_t *idx = NULL;
    uint32_t count = 0;
    if (!all && n > 0) {
        /* 2n: a key and its pool; out of memory, every shard does as well */
        idx = n <= SIZE_MAX / (2 * sizeof *idx) ? malloc(2 * n * sizeof *idx) : NULL;
        if (idx == NULL)
            all = true;
        else
            count = shards_of(m, keys, n, idx);
    }
    /* ascending, as every group takes them: no two groups wait on each
     * other, and a single decision holds one lock and waits for nothing */
    if (all)
        for (uint32_t i = 0; i < m->nshards; i++)
            pthread_mutex_lock(&m->shards[i].lock);
    else
        for (uint32_t i = 0; i < count; i++)
            pthread_mutex_lock(&m->shards[idx[i]].lock);
    *h = (held_t){.m = m, .idx = idx, .n = count, .all = all};
    atomic_fetch_add_explicit(&m->groups, 1, memory_order_relaxed);
    return SL_OK;
}

void sl__mem_group_end(sl_store_t *s) {
    memory_store_t *m = (memory_store_t *)s;
    held_t h = sl__mem_held;
    if (h.m != m)
        return;
    sl__mem_held = (held_t){0};
    atomic_fetch_sub_explicit(&m->groups, 1, memory_order_relaxed);
    /* whatever the group did, seen in all of its shards at once: every
     * copy dropped before any shard is unlocked */
    uint32_t n = h.all ? m->nshards : h.n;
    for (uint32_t k = 0; k < n; k++)
        shard_changed(&m->shards[h.all ? k : h.idx[k]]);
    for (uint32_t k = n; k-- > 0;)
        pthread_mutex_unlock(&m->shards[h.all ? k : h.idx[k]].lock);
    free(h.idx);
}
