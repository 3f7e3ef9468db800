/* tcp_stall.h -- has a connection's output stopped moving?
 *
 * A client that never reads its replies stops acknowledging them once its
 * receive buffer is full; until then the kernel takes our replies (its send
 * buffer grows to megabytes), so "our write completed" says nothing about
 * the client. Progress is read from the kernel instead: the bytes the
 * client has acknowledged (TCP_INFO's tcpi_bytes_acked). A connection with
 * output waiting (in the event loop's queue or the kernel's send queue)
 * whose acknowledged count has not changed for the timeout is stalled.
 *
 * Not here: what to do about it (the fronts, resp_connection.c and
 * http/http_server.c for every HTTP listener, reset the connection).
 */
#ifndef SL_SERVER_TCP_STALL_H
#define SL_SERVER_TCP_STALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

typedef struct sld_tcp_stall {
    uint64_t acked;  /* the client's acknowledged bytes when last seen moving */
    uint64_t since;  /* loop time, ms: when that was */
} sld_tcp_stall_t;

/* Looks at socket fd at loop time `now` (ms), with `queued` bytes still in
 * the event loop's write queue: true when output has waited for `timeout`
 * (µs; 0 = never) without the client acknowledging a byte. Call it every
 * tick; a socket the kernel cannot describe is never stalled. */
bool sld_tcp_stalled(sld_tcp_stall_t *s, int fd, size_t queued, uint64_t now, sl_usec_t timeout);

#endif
