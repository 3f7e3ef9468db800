/* cluster.h -- Redis Cluster routing, pure: the key -> slot hash (CRC16
 * XMODEM of the key or of its {hash tag}), the slot map read from a
 * CLUSTER SLOTS reply, and MOVED / ASK error replies.
 *
 * Not here: connections (connection.c), resending (routing.c).
 */
#ifndef SL_STORE_REDIS_CLUSTER_H
#define SL_STORE_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "store/redis/url.h"

struct redisReply;

#define SL__REDIS_SLOTS 16384
#define SL__REDIS_MAX_MASTERS 256      /* masters a slot map may name */
#define SL__REDIS_NO_NODE UINT16_MAX   /* an unassigned slot */

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), as the Cluster spec. */
uint16_t sl__redis_crc16(const void *buf, size_t len);

/* The slot of a key: the CRC16 of the part between the first '{' and the
 * first '}' after it when that part is not empty, else of the whole key. */
uint16_t sl__redis_key_slot(const void *key, size_t len);

typedef struct sl__redis_slot_map {
    size_t n_masters;
    sl__redis_addr_t masters[SL__REDIS_MAX_MASTERS];
    uint16_t slot[SL__REDIS_SLOTS]; /* index into masters, or SL__REDIS_NO_NODE */
    size_t assigned;                /* slots with a master */
} sl__redis_slot_map_t;

/* Reads a CLUSTER SLOTS reply into *map (caller memory, ~100 KB: allocate
 * it). A master given with an empty host ("unknown endpoint") gets
 * fallback_host, the host the reply came from. Returns 0, or SL_EINVAL
 * with *why (static) for a reply of the wrong shape. */
int sl__redis_parse_cluster_slots(const struct redisReply *r, const char *fallback_host,
                                  sl__redis_slot_map_t *map, const char **why);

typedef enum sl__redis_redirect_kind {
    SL__REDIS_REDIRECT_NONE = 0,
    SL__REDIS_REDIRECT_MOVED,
    SL__REDIS_REDIRECT_ASK
} sl__redis_redirect_kind_t;

typedef struct sl__redis_redirect {
    sl__redis_redirect_kind_t kind;
    uint16_t slot;
    sl__redis_addr_t to;   /* host "" when the server did not know its endpoint */
} sl__redis_redirect_t;

/* Reads an error reply's text "MOVED <slot> <host>:<port>" or "ASK ...".
 * Returns the kind (NONE for any other error; also for a malformed one). */
sl__redis_redirect_kind_t sl__redis_parse_redirect(const char *str, size_t len,
                                                   sl__redis_redirect_t *out);

#endif
