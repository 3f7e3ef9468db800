/* gateway.h -- the gateway front: sluiced as the rate-limiting reverse
 * proxy in front of the API servers (docs/gateway.md).
 *
 * Its own listeners (gateway.listen) on every worker loop, served by
 * libh2o: HTTP/1.1 with keep-alive and HTTP/2 with prior knowledge, or over
 * TLS (a listener with tls:) either one by ALPN. Each request is
 * matched to a route (gateway_route.h; none: 404), every policy of the
 * route decides it through the engine, all or nothing, and then it is
 * forwarded to the route's upstream by libh2o's reverse proxy, or refused
 * (excess: reject) with the route's status and the rate limit headers, or
 * forwarded anyway and counted (excess: shadow). An upstream that refuses
 * the connection gives 502 at once, one that does not answer within the
 * route's timeout 504, both with a body saying so.
 *
 * All-or-nothing across policies: the library decides one policy at a
 * time, and has no refund. A route with one policy charges it directly
 * (atomic). With several, every policy is first asked without charging
 * (SL_DECIDE_PEEK), in order; only when all would pass are they charged,
 * in order. A peek that denies is decided again for real, so the denial is
 * counted like any other (and charged, for a count_denied limit). A
 * concurrent request on the same key can win a place between
 * the two steps: then the later policy denies after the earlier ones were
 * charged, and the request is refused -- it never passes over a limit, it
 * may cost the key one unit it did not use.
 *
 * Reload: the policies are looked up by name per request, so a reload's
 * apply at once. A reload whose gateway: section has other routes makes
 * them the routes of the requests that arrive from then on, on every
 * worker (gateway_generation.c); requests queued, waiting or in flight end
 * under the routes that admitted them, with their upstreams. A route that
 * keeps its name keeps its counters, in-flight count and waiters (its
 * lane), and takes its new limits for every slot or place taken later.
 * The listeners (addresses, TLS certificates) and the access log's file
 * stay as at start: the log says which changed key needs a restart.
 *
 * excess: delay: the policy is asked for a reservation within max_delay
 * through the engine (SLD_DECIDE_WAIT); an admitted request with a delay
 * waits in its worker's line until its moment, then is forwarded; one that
 * cannot pass in time is refused as reject would. Several policies: the
 * peeks are reservations (where each place is, nothing charged), and the
 * charges are reservations at the latest of those places exactly
 * (not_before = max_wait = that moment), so each policy counts the request
 * when it runs; a charge that lost its place to a concurrent request gives
 * back its attempt's charges and asks the peeks again (at most 32 times).
 *
 * Concurrency limits (a route's concurrency:): once the policies passed,
 * the request takes a slot (gateway_concurrency.h), held in the request's
 * pool so that any end gives it back, or waits in its worker's FIFO,
 * served by one timer per worker loop, up to max_wait.
 *
 * A route with several upstreams takes them in turn (round robin), each
 * worker its own turn; https:// upstreams with the route's TLS context
 * (gateway_tls.h).
 *
 * A forwarded request takes the rate limit fields of its decisions with
 * it, to the upstream and/or on its response, and its upstream's latency
 * is counted (gateway_forward.h).
 *
 * Not here: the section (gateway_config.h), matching (gateway_route.h),
 * the counts (gateway_concurrency.h), the fields (gateway_forward.h).
 */
#ifndef SL_SERVER_GATEWAY_H
#define SL_SERVER_GATEWAY_H

#include "server/net/front.h"
#include "server/state/daemon.h"

typedef struct sld_gateway sld_gateway_t;

/* The gateway of the configuration in force (its gateway: section held).
 * SL_ENOENT when the configuration has none, SL_ENOMEM. */
int sld_gateway_new(sld_daemon_t *d, sld_gateway_t **out);
/* After the server has stopped. */
void sld_gateway_free(sld_gateway_t *gw);
/* gateway.listen: the first listener's address */
const char *sld_gateway_listen(const sld_gateway_t *gw);
/* How many listeners gateway.listen has (1..SLD_GW_MAX_LISTENS); each is
 * a front of its own for the server, listener i served as
 * sld_gateway_front(gw, i, port) gives it (port: where the server writes
 * the port it listens on, or NULL). A TLS listener's handshake is libh2o's,
 * on the same connection layer. */
size_t sld_gateway_nlistens(const sld_gateway_t *gw);
sld_front_t sld_gateway_front(sld_gateway_t *gw, size_t i, int *port);

/* After a reload (the new runtime in force): its routes apply to new
 * requests, if they changed (a worker may have seen to it already); a
 * changed key that needs a restart is warned about. */
void sld_gateway_reloaded(sld_gateway_t *gw);

/* The hooks the server calls (net/front.h); their ctx is a sld_gateway_t. */
extern const sld_front_ops_t sld_gateway_front_ops;

#endif
