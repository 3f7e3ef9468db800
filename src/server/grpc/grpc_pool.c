/* grpc_pool.c -- nghttp2's allocations for one session (see grpc_pool.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_pool.h"

typedef struct pool_hdr {
    size_t cap;     /* usable bytes after the header */
    size_t cls;     /* its size class, or SIZE_MAX: a block past them (also keeps what follows aligned) */
} pool_hdr_t;

/* The class of a block of size bytes: the smallest 64 << c that holds it
 * (a table, not a search: nghttp2 allocates a dozen times a call). */
static size_t pool_class(size_t size) {
    static const uint8_t cls[16] = {0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4};
    if (size > (size_t)64 << (SLD_GRPC_POOL_CLASSES - 1))
        return SIZE_MAX;
    return size == 0 ? 0 : cls[(size - 1) >> 6];
}

/* A new block of class c (SIZE_MAX: of size bytes), from malloc: apart
 * from the reuse path, which then needs no stack frame of its own. */
__attribute__((noinline)) static void *pool_new(size_t c, size_t size) {
    size_t cap = c != SIZE_MAX ? (size_t)64 << c : size;
    if (cap > SIZE_MAX - sizeof(pool_hdr_t))
        return NULL;
    pool_hdr_t *b = malloc(sizeof *b + cap);
    if (b == NULL)
        return NULL;
    b->cap = cap;
    b->cls = c;
    return b + 1;
}

void *sld_grpc_pool_malloc(size_t size, void *user_data) {
    sld_grpc_pool_t *p = user_data;
    size_t c = pool_class(size);
    if (c == SIZE_MAX || p->free[c] == NULL)
        return pool_new(c, size);
    pool_hdr_t *b = p->free[c];
    memcpy(&p->free[c], b + 1, sizeof(void *));
    p->n[c]--;
    return b + 1;
}

void sld_grpc_pool_free(void *ptr, void *user_data) {
    sld_grpc_pool_t *p = user_data;
    if (ptr == NULL)
        return;
    pool_hdr_t *b = (pool_hdr_t *)ptr - 1;
    size_t c = b->cls;
    if (c != SIZE_MAX && p->n[c] < p->keep) {
        memcpy(ptr, &p->free[c], sizeof(void *));
        p->free[c] = b;
        p->n[c]++;
        return;
    }
    free(b);
}

void *sld_grpc_pool_calloc(size_t n, size_t size, void *user_data) {
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *ptr = sld_grpc_pool_malloc(n * size, user_data);
    if (ptr != NULL)
        memset(ptr, 0, n * size);
    return ptr;
}

void *sld_grpc_pool_realloc(void *ptr, size_t size, void *user_data) {
    if (ptr == NULL)
        return sld_grpc_pool_malloc(size, user_data);
    pool_hdr_t *b = (pool_hdr_t *)ptr - 1;
    if (size <= b->cap)
        return ptr;
    void *bigger = sld_grpc_pool_malloc(size, user_data);
    if (bigger == NULL)
        return NULL;
    memcpy(bigger, ptr, b->cap);
    sld_grpc_pool_free(ptr, user_data);
    return bigger;
}

void sld_grpc_pool_trim(sld_grpc_pool_t *p) {
    for (int c = 0; c < SLD_GRPC_POOL_CLASSES; c++) {
        while (p->free[c] != NULL) {
            pool_hdr_t *b = p->free[c];
            memcpy(&p->free[c], b + 1, sizeof(void *));
            free(b);
        }
        p->n[c] = 0;
    }
}
