/* store_memory_combine.c -- one shard's decisions combined under its lock
 * (flat combining), so that threads deciding for the same hot key do not
 * take turns on the lock.
 *
 * When two threads decide for one key, passing the shard's lock back and
 * forth moves the lock's and the state's cache lines between cores on
 * every decision, and a thread that finds the lock taken may sleep in the
 * kernel: two threads made 0.3-0.6x the decisions of one. Here a thread
 * that finds the lock taken does not wait for it: it publishes its
 * request on the shard's list and spins on its own record. The holder,
 * before it unlocks, runs every published request in turn; the state stays
 * in its cache and the waiter only reads its answer. Each request is run
 * exactly as the waiter would have run it itself (its own clock reading,
 * its own arguments), one after the other under the lock: decisions stay
 * what they are, only who computes them changes.
 *
 * No request is left behind: a holder serves the list before unlocking and
 * once more after (a request published while it unlocked), and a waiter
 * tries the lock itself now and then and, after a while, blocks on it (the
 * holder may be a group or a sweep, which serves nobody).
 *
 * Not here: what a request does (store_memory.c's decision under the lock).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "store_memory_private.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* A waiter tries the lock itself every TRY_EVERY spins, and blocks on it
 * after SPIN_LIMIT: a decision under the lock takes well under a
 * microsecond, a group or a sweep may hold it for much longer. */
#define TRY_EVERY 32u
#define SPIN_LIMIT 4096u

/* Runs the published requests, oldest first; the lock is held. */
static void serve(shard_t *sh) {
    unsigned served = 0;
    while (served < SL__SERVE_LIMIT &&
           atomic_load_explicit(&sh->pending, memory_order_relaxed) != NULL) {
        sl__mem_req_t *list = atomic_exchange_explicit(&sh->pending, NULL, memory_order_acquire);
        sl__mem_req_t *fifo = NULL; /* the list is newest first */
        while (list) {
            sl__mem_req_t *next = list->next;
            list->next = fifo;
            fifo = list;
            list = next;
        }
        while (fifo) {
            sl__mem_req_t *next = fifo->next; /* read before the waiter may return */
            fifo->rc = fifo->run(fifo->ctx);
            atomic_store_explicit(&fifo->done, 1, memory_order_release);
            fifo = next;
            served++;
        }
    }
}

/* Unlocks, then serves once more what was published meanwhile if the lock
 * is free (otherwise its new holder will). */
void sl__mem_release(shard_t *sh) {
    serve(sh);
    pthread_mutex_unlock(&sh->lock);
    if (atomic_load_explicit(&sh->pending, memory_order_seq_cst) != NULL &&
        pthread_mutex_trylock(&sh->lock) == 0) {
        serve(sh);
        pthread_mutex_unlock(&sh->lock);
    }
}

int sl__mem_combine(shard_t *sh, sl__mem_req_t *r) {
    r->next = atomic_load_explicit(&sh->pending, memory_order_relaxed);
    atomic_init(&r->done, 0);
    while (!atomic_compare_exchange_weak_explicit(&sh->pending, &r->next, r, memory_order_seq_cst,
                                                  memory_order_relaxed))
        ;
    for (unsigned spins = 1;; spins++) {
        if (atomic_load_explicit(&r->done, memory_order_acquire))
            return r->rc;
        if (spins % TRY_EVERY == 0 || spins >= SPIN_LIMIT) {
            /* Once we hold the lock our request is done (a holder took the
             * list with it and ran that batch whole before unlocking) or
             * still on the list, and serve's first batch takes it. */
            if (spins >= SPIN_LIMIT)
                pthread_mutex_lock(&sh->lock);
            else if (pthread_mutex_trylock(&sh->lock) != 0)
                continue;
            serve(sh);
            pthread_mutex_unlock(&sh->lock);
            return r->rc;
        }
        cpu_relax();
    }
}
