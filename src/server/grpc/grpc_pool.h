/* grpc_pool.h -- the allocator one gRPC HTTP/2 session gives nghttp2
 * (nghttp2_mem): blocks up to 1 KiB in five size classes (64 .. 1024
 * bytes), a few of each class kept for reuse.
 *
 * A call makes and frees the same handful of small blocks (its stream,
 * frames, queue items), in bursts of as many calls as a client has in
 * flight: more than malloc's per-thread cache keeps, so without this most
 * of them would go through its slow path. Up to `keep` blocks of a class
 * are kept (never more than the session had in use at once); the owner
 * trims them when it idles, and when it goes.
 *
 * Not here: nghttp2 itself, the session (grpc_h2.c). One thread only.
 */
#ifndef SL_SERVER_GRPC_POOL_H
#define SL_SERVER_GRPC_POOL_H

#include <stddef.h>

#define SLD_GRPC_POOL_CLASSES 5

typedef struct sld_grpc_pool {
    void *free[SLD_GRPC_POOL_CLASSES]; /* blocks (their headers), linked through their first word */
    unsigned n[SLD_GRPC_POOL_CLASSES];
    unsigned keep;                     /* the most kept per class */
} sld_grpc_pool_t;

/* nghttp2_mem's four functions, user_data the pool. */
void *sld_grpc_pool_malloc(size_t size, void *user_data);
void sld_grpc_pool_free(void *ptr, void *user_data);
void *sld_grpc_pool_calloc(size_t n, size_t size, void *user_data);
void *sld_grpc_pool_realloc(void *ptr, size_t size, void *user_data);

/* Frees the blocks kept. */
void sld_grpc_pool_trim(sld_grpc_pool_t *p);

#endif
