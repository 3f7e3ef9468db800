/* grpc_spare.c -- a worker thread's spare blocks (see grpc_spare.h).
 *
 * Each block carries its capacity in a header before what the caller
 * sees. A new block is at least SPARE_MIN bytes, so that one kept serves
 * the next call's like-sized request. The blocks a thread keeps hang off a
 * pthread key whose destructor frees them when the thread ends (the main
 * thread's stay reachable from its thread-local slots until exit). */
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/grpc/grpc_spare.h"

/* blocks kept per thread: a call's request and call blocks, and a spare
 * pair for a call started while one waits on the store */
#define SPARE_SLOTS 4
#define SPARE_MIN ((size_t)2048)

typedef struct head {
    alignas(max_align_t) size_t cap;
} head_t;

typedef struct slots {
    head_t *block[SPARE_SLOTS];
    size_t n;
    bool keyed; /* registered with the key, for the thread's end */
} slots_t;

static _Thread_local slots_t spare;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void slots_free(void *p) {
    slots_t *s = p;
    while (s->n > 0)
        free(s->block[--s->n]);
}

static void key_make(void) { (void)pthread_key_create(&key, slots_free); }

void *sld_grpc_spare_take(size_t size) {
    slots_t *s = &spare;
    for (size_t i = s->n; i-- > 0;) {
        head_t *h = s->block[i];
        if (h->cap >= size) {
            s->block[i] = s->block[--s->n];
            return h + 1;
        }
    }
    size_t cap = size < SPARE_MIN ? SPARE_MIN : size;
    if (cap > SIZE_MAX - sizeof(head_t))
        return NULL;
    head_t *h = malloc(sizeof *h + cap);
    if (h == NULL)
        return NULL;
    h->cap = cap;
    return h + 1;
}

void sld_grpc_spare_give(void *block) {
    if (block == NULL)
        return;
    head_t *h = (head_t *)block - 1;
    slots_t *s = &spare;
    if (h->cap > SLD_GRPC_SPARE_MAX || s->n == SPARE_SLOTS) {
        free(h);
        return;
    }
    if (!s->keyed) {
        /* once per thread: its blocks freed when it ends */
        pthread_once(&key_once, key_make);
        if (pthread_setspecific(key, s) != 0) {
            free(h);
            return;
        }
        s->keyed = true;
    }
    s->block[s->n++] = h;
}
