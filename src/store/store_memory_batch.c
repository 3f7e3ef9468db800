/* store_memory_batch.c -- the memory store's evaluate_batch: the requests
 * of sl_check_batch() decided in order, each exactly as evaluate would.
 *
 * What the per-request path pays and this does not: each key is hashed
 * once (the per-request path hashes it for its prefetch and again for its
 * decision), through no store call per request, and a run of consecutive
 * requests in one shard (a hot key, a few shards) is decided under one
 * acquisition of the shard's lock. Like the per-request path it prefetches
 * two stages ahead: the key bytes of request i + 2 * LOOKAHEAD, and the
 * home slot of request i + LOOKAHEAD, which it hashes then.
 *
 * Requests are never reordered, not even across shards: the first error
 * must leave every later request undecided (sl_check_batch's `done`), and
 * one shard's order is its decisions'. Each decision is store_memory.c's
 * decide_locked(), under the lock as mem_decide() takes it: held already
 * by a group, taken plainly for write-back, else tried, and when another
 * thread holds it the request goes to that thread (flat combining). A
 * request whose shard is not held first tries the deciding thread's copy
 * of its states (store_memory_memo.c), as mem_decide() does: a hot key's
 * denials take no lock.
 *
 * Not here: the decision itself (store_memory.c), elastic policies (the
 * limiter decides those one by one: the pool is a second evaluation).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "store_memory_private.h"

/* The look-ahead is store.h's; RING holds the hashes between its two
 * stages. A run under one acquisition of a lock decides at most
 * SL__SERVE_LIMIT requests, so that a long batch on one shard does not keep
 * other threads out of it (they spin, then block, and nobody serves them
 * until the run ends). */
#define LOOKAHEAD SL__LOOKAHEAD
#define RING 16
_Static_assert(RING > LOOKAHEAD, "a hash is kept until its request is decided");

typedef struct ahead {
    uint64_t h;    /* the key's hash (sl__mem_key_hash) */
    uint64_t tag;  /* its first limit's tag */
    shard_t *sh;   /* its shard */
} ahead_t;

static const void *key_of(const sl_request_t *r) { return r->key ? r->key : ""; }

/* Hashes request r, whose key bytes were prefetched before, and prefetches
 * its first limit's home slot: without the lock, from the shard's table as
 * last published (a stale one costs a useless prefetch, nothing else). And
 * the lock's line: 256 shards' headers do not all stay in L1, and the
 * lock's atomic cannot hide a miss as a plain load does. */
static inline void look(memory_store_t *m, const sl_policy_t *p, const sl_request_t *r, ahead_t *a) {
    a->h = sl__mem_key_hash(m, p, key_of(r), r->key_len);
    uint64_t tag = make_tag(a->h, p->limits[0].id);
    a->tag = tag;
    a->sh = &m->shards[shard_of(m, tag)];
    __builtin_prefetch(&a->sh->lock, 1);
    uintptr_t slots = atomic_load_explicit(&a->sh->hint_slots, memory_order_relaxed);
    uint32_t cap = atomic_load_explicit(&a->sh->hint_cap, memory_order_relaxed);
    __builtin_prefetch((const void *)(slots + (uintptr_t)home_of(tag, cap) * sizeof(slot_t)), 1);
}

/* Moves both stages on as request i is decided. */
static void advance(memory_store_t *m, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                    size_t i, ahead_t *ring) {
    if (i + 2 * LOOKAHEAD < n)
        __builtin_prefetch(reqs[i + 2 * LOOKAHEAD].key);
    if (i + LOOKAHEAD < n)
        look(m, p, &reqs[i + LOOKAHEAD], &ring[(i + LOOKAHEAD) % RING]);
}

/* Request r (a) decided from this thread's copy of its states, without
 * the lock, as mem_decide() does (store_memory_memo.c); false: not kept, or
 * it would charge. The caller has checked that p's decisions may be kept
 * and that a copy may be there. */
__attribute__((noinline)) static bool from_copy(memory_store_t *m, const sl_policy_t *p,
                                                const ahead_t *a, const sl_request_t *r,
                                                sl_usec_t now, sl_decision_t *out) {
    uint64_t tags[SL__MEMO_LIMITS];
    for (size_t i = 0; i < p->nlimits; i++)
        tags[i] = make_tag(a->h, p->limits[i].id);
    return sl__mem_memo_decide(m, a->sh, p, tags, now, r->cost, false, out, NULL);
}

int sl__mem_evaluate_batch(sl_store_t *s, const sl_policy_t *p, const sl_request_t *reqs, size_t n,
                           sl_usec_t now, sl_decision_t *out, size_t *done) {
    memory_store_t *m = (memory_store_t *)s;
    sl__memo_t *memos = sl__mem_memos();
    bool kept = sl__mem_memo_fits(p); /* may p's decisions come from copies */
    ahead_t ring[RING];
    for (size_t j = 0; j < n && j < 2 * LOOKAHEAD; j++)
        __builtin_prefetch(reqs[j].key);
    for (size_t j = 0; j < n && j < LOOKAHEAD; j++)
        look(m, p, &reqs[j], &ring[j]);
    size_t i = 0;
    int rc = SL_OK;
    while (i < n && rc == SL_OK) {
        shard_t *sh = ring[i % RING].sh;
        bool held = shard_held(m, sh);
        if (kept && !held && sl__memo_maybe_in(memos, m, ring[i % RING].tag) &&
            from_copy(m, p, &ring[i % RING], &reqs[i], now, &out[i])) {
            advance(m, p, reqs, n, i, ring);
            i++;
            continue;
        }
        if (!held && p->write_back) {
            pthread_mutex_lock(&sh->lock);
        } else if (!held && pthread_mutex_trylock(&sh->lock) != 0) {
            advance(m, p, reqs, n, i, ring);
            rc = sl__mem_decide_hashed(m, p, ring[i % RING].h, &reqs[i], now, true, &out[i]);
            i += rc == SL_OK;
            continue;
        }
        size_t run = 0;
        do { /* the run of requests in this shard */
            advance(m, p, reqs, n, i, ring);
            rc = sl__mem_decide_hashed(m, p, ring[i % RING].h, &reqs[i], now, false, &out[i]);
            i += rc == SL_OK;
        } while (rc == SL_OK && i < n && ring[i % RING].sh == sh && ++run < SL__SERVE_LIMIT);
        if (!held)
            shard_unlock_decided(sh, p->write_back);
    }
    *done = i;
    return rc;
}
