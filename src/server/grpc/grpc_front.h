/* grpc_front.h -- the gRPC front: Envoy's rate limit service
 * (/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) and gRPC
 * health (/grpc.health.v1.Health/Check) over HTTP/2 cleartext, on
 * listen.grpc or sluiced --grpc (off unless asked).
 *
 * HTTP/2 and gRPC's framing are the gRPC C core's (libgrpc): sluiced's
 * workers accept the connections on their own listening sockets, like the
 * other fronts, and hand each to the C core's server
 * (grpc_server_add_channel_from_fd). One thread of this front polls the C
 * core's completion queue: it takes new calls and their request message,
 * answers health and unknown methods itself, and hands each
 * ShouldRateLimit to a worker (round robin, through the worker's uv_async),
 * which decides it through the engine (grpc_decide.c) and starts the
 * answer from its own thread. Messages larger than limits.max_request_bytes
 * are refused by the C core with RESOURCE_EXHAUSTED; a call whose request
 * is not complete within limits.idle_timeout gets DEADLINE_EXCEEDED.
 * Connections count against limits.max_connections (net/admission.h), one
 * past it gets an HTTP/2 GOAWAY; each is released when its socket hangs up.
 *
 * Stopping: the workers stop accepting and the C core's server shuts down
 * (new calls are refused, those under way are answered); after the grace
 * period what is left is cancelled. sld_grpc_free, once the workers have
 * stopped, ends the completion queue's thread and the C core.
 *
 * With grpc.tls (grpc_config.h) the C core's own listener serves
 * listen.grpc instead, over TLS (grpc_tls.h; its from-fd channels are
 * cleartext only): the workers then accept nothing, and only decide.
 *
 * Not here: the protobuf messages (grpc_messages.c), deciding
 * (grpc_decide.c), the per-rule stats it registers for /metrics
 * (grpc_stats.c).
 */
#ifndef SL_SERVER_GRPC_FRONT_H
#define SL_SERVER_GRPC_FRONT_H

#include <stddef.h>
#include <stdint.h>

#include "server/net/front.h"
#include "server/state/daemon.h"

#define SLD_GRPC_RLS_METHOD "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define SLD_GRPC_HEALTH_METHOD "/grpc.health.v1.Health/Check"

typedef struct sld_grpc sld_grpc_t;

/* The front's shared part for `threads` workers: starts the C core, its
 * server (receiving at most max_message bytes per message) and the
 * completion queue's thread. SL_OK, or an error with err written. */
int sld_grpc_new(sld_daemon_t *d, uint32_t threads, uint32_t max_message, sld_grpc_t **out, char *err,
                 size_t err_len);

/* The address the workers accept on (listen.grpc), to give the server as
 * this front's; NULL with TLS, when the C core listens itself: then *port
 * is set to its port. */
const char *sld_grpc_accept_address(const sld_grpc_t *g, int *port);

/* Ends it all, after sld_server_stop (NULL: nothing). */
void sld_grpc_free(sld_grpc_t *g);

extern const sld_front_ops_t sld_grpc_front_ops;

#endif
