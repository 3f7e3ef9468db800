/* grpc_decide.h -- one ShouldRateLimit, decided through the engine on a
 * worker: each descriptor matched to a policy and a key, the descriptors
 * all or nothing, the answer encoded as Envoy's RateLimitResponse.
 *
 * Which limit decides a descriptor, and under which key: with an rls:
 * section (Envoy ratelimit's configuration directory, server/rls/), its
 * rules as the reference service applies them (rls.h: the most specific
 * descriptor, a request-supplied limit in a known domain, unlimited,
 * replaces; the key "domain|k=v|..."); without one, the sluiced policy
 * named after the domain, keyed by the descriptor's entries "k=v" joined
 * with "|". A descriptor that nothing limits answers OK without a
 * current_limit, as the reference answers one it has no rule for.
 *
 * All or nothing: with several matched descriptors each is first asked
 * without being charged (a peek); only when every one passes is each
 * charged. A peek that denies is decided again for real, so the denial is
 * counted as any other, and nothing else is charged. As the gateway does
 * (gateway.c), and with its one gap: two requests racing between the peeks
 * and the charges may both be charged.
 *
 * Not here: the gRPC calls (grpc_h2.c, grpc_server.c), the protobuf bytes
 * (grpc_messages.c).
 */
#ifndef SL_SERVER_GRPC_DECIDE_H
#define SL_SERVER_GRPC_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "server/grpc/grpc_messages.h"
#include "server/grpc/grpc_stats.h"
#include "server/state/daemon.h"

/* The answer: a gRPC status code (0 OK, with the encoded response in
 * body[0..len)), or another code with a message; every pointer is valid
 * during the call only. */
typedef void (*sld_grpc_answer_fn)(void *arg, int grpc_status, const char *message, const uint8_t *body,
                                   size_t len);

/* Decides req (taken over, freed here) on worker `worker`'s loop thread,
 * counting the decisions of Envoy ratelimit's limits in metrics slot
 * `slot` and their per-rule stats in stats (may be NULL; grpc_stats.h);
 * answer(arg, ...) comes exactly once, on that thread, maybe before this
 * returns. */
void sld_grpc_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, sld_grpc_stats_t *stats,
                     sld_grpc_rls_request_t *req, sld_grpc_answer_fn answer, void *arg);

/* The key a descriptor is counted under, "k1=v1|k2=v2", into a malloc'd
 * *key: SL_OK, SL_E2BIG past max_key_bytes, SL_ENOMEM. */
int sld_grpc_descriptor_key(const sld_grpc_descriptor_t *desc, uint32_t max_key_bytes, char **key,
                            size_t *key_len);

#endif
