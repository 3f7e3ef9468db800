/* grpc_spare.h -- blocks of memory a worker thread keeps for its next
 * ShouldRateLimit: a decoded request's block and a call's block come back
 * here when the call ends and serve the next one, instead of a malloc and
 * a free each per call.
 *
 * A block taken is the taker's alone until given back: a call that waits
 * on the store across loop turns keeps its blocks, and a call started
 * meanwhile takes others (or new ones). Per thread, a few blocks of at most
 * SLD_GRPC_SPARE_MAX bytes are kept; larger ones, and any past those few,
 * are freed. What a thread keeps is freed when it ends.
 *
 * Not here: what goes in the blocks (grpc_request.c, grpc_decide.c).
 */
#ifndef SL_SERVER_GRPC_SPARE_H
#define SL_SERVER_GRPC_SPARE_H

#include <stddef.h>

/* blocks above this are never kept */
#define SLD_GRPC_SPARE_MAX ((size_t)16 * 1024)

/* A block of at least size bytes (max_align_t aligned): one the thread
 * kept, or a new one; NULL when out of memory. */
void *sld_grpc_spare_take(size_t size);

/* Gives back a block from sld_grpc_spare_take (NULL: nothing), kept for the
 * thread's next take or freed. Only on the thread that took it. */
void sld_grpc_spare_give(void *block);

#endif
