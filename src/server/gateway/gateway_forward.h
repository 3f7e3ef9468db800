/* gateway_forward.h -- what goes with a request the gateway forwards: the
 * rate limit fields of its decisions, to the upstream on the request and to
 * the client on the response (a route's headers: {client, upstream}), and
 * the time the upstream took to answer (the route's latency histogram).
 *
 * The fields are those sld_http_rate_headers writes on a refusal
 * (RateLimit-Policy, RateLimit, X-RateLimit-Limit, -Remaining, -Reset),
 * without Retry-After: one item per limit of every policy decided, in the
 * route's order; the X-RateLimit-* of the policy with the fewest remaining.
 *
 * Not here: deciding (gateway.c), the counts (gateway_concurrency.h).
 */
#ifndef SL_SERVER_GATEWAY_FORWARD_H
#define SL_SERVER_GATEWAY_FORWARD_H

#include <stdbool.h>
#include <stddef.h>

#include <h2o.h>

#include "server/gateway/gateway_concurrency.h"
#include "server/gateway/gateway_config.h"
#include "server/http/http_reply.h"
#include "sluice.h"

#define SLD_GW_NFIELDS 5 /* RateLimit-Policy .. X-RateLimit-Reset */

/* The fields of the policies decided so far, their text in the request's pool. */
typedef struct sld_gw_fields {
    struct {
        bool set;
        uint64_t remaining;
        h2o_iovec_t values[SLD_GW_NFIELDS];
    } policy[SLD_GW_MAX_POLICIES];
} sld_gw_fields_t;

/* Keeps the fields of the charging decision of the route's policy i (named
 * `name`), written through `scratch` (reset here; any reply not in use). */
void sld_gw_fields_note(sld_gw_fields_t *f, size_t i, h2o_req_t *req, sld_http_reply_t *scratch,
                        const char *name, const sl_policy_t *p, uint32_t soft_percent, const sl_decision_t *dec,
                        const sl_limit_report_t *lr);

/* Hands req to the route's proxy: with the fields on it when h->upstream
 * (any the client sent of the same names dropped first, so the upstream can
 * believe them), on its response when h->client, and the time to the
 * response's head counted into the route's latency histogram (its lane)
 * and written to *upstream_us (unless NULL; not for libh2o's own 502). */
void sld_gw_forward(h2o_req_t *req, h2o_handler_t *proxy, const sld_gw_fields_t *f, size_t npolicies,
                    const sld_gw_headers_t *h, sld_gw_lane_t *lane, sl_usec_t *upstream_us);

/* The lane of the route whose upstream req was handed to by
 * sld_gw_forward(); NULL when it was not. Not by matching req again:
 * libh2o's proxy rewrites its authority and path to the upstream's. */
sld_gw_lane_t *sld_gw_forwarded_route(h2o_req_t *req);

/* What libh2o's proxy logged about the upstream, or NULL: its own 502s
 * come with one, an upstream's 502 without. */
const h2o_iovec_t *sld_gw_proxy_error(h2o_req_t *req);

#endif
