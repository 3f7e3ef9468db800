/* grpc_server.h -- the gRPC front: Envoy's rate limit service
 * (/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) and gRPC
 * health (/grpc.health.v1.Health/Check) over HTTP/2, on listen.grpc or
 * sluiced --grpc (off unless asked), cleartext or TLS (grpc.tls).
 *
 * On sluiced's worker loops, as the other fronts: each worker accepts on
 * its own listening socket, counts the connection against
 * limits.max_connections (one past it gets an HTTP/2 GOAWAY; over TLS it is
 * closed), does TLS through libh2o's sockets (ALPN h2), and runs each
 * connection's HTTP/2 session (grpc_h2.h, nghttp2). A call is decided on
 * the worker that owns its connection, in the loop, through the engine
 * (grpc_decide.c); the answers of every call completed in one pass of the
 * loop go out in one write per connection.
 *
 * limits.idle_timeout: a call whose request is not whole within it is
 * answered DEADLINE_EXCEEDED, an answer the client gives no window for is
 * given up (UNAVAILABLE), a connection with no call open (or no TLS
 * handshake) for that long is let go; read at each sweep, so a reload
 * changes it. Messages over limits.max_request_bytes (as at start) are
 * refused with RESOURCE_EXHAUSTED.
 *
 * Stopping: no new connections; calls still receiving end UNAVAILABLE, a
 * GOAWAY tells each client, calls being decided are answered, then each
 * connection closes; after the grace period what is left is closed.
 *
 * Not here: HTTP/2 and gRPC's framing (grpc_h2.c, grpc_framing.c), the
 * protobuf messages (grpc_messages.c), deciding (grpc_decide.c), the
 * per-rule stats it registers for /metrics (grpc_stats.c).
 */
#ifndef SL_SERVER_GRPC_SERVER_H
#define SL_SERVER_GRPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "server/net/front.h"
#include "server/state/daemon.h"

typedef struct sld_grpc_server sld_grpc_server_t;

/* The front's shared part for `threads` workers, taking messages of at
 * most max_message bytes; with grpc.tls its TLS context (an error naming
 * both files if OpenSSL refuses them). SL_OK, or an error with err
 * written. */
int sld_grpc_server_new(sld_daemon_t *d, uint32_t threads, uint32_t max_message, sld_grpc_server_t **out,
                        char *err, size_t err_len);

/* After sld_server_stop (NULL: nothing). */
void sld_grpc_server_free(sld_grpc_server_t *g);

extern const sld_front_ops_t sld_grpc_server_ops;

#endif
