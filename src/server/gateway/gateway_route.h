/* gateway_route.h -- which route of the gateway serves a request: the
 * first whose match holds (path prefix, method, host), as configured.
 *
 * Pure: spans in, a route out; no allocation. The path is the one libh2o
 * normalised ("/a/../b" is "/b", no query), so a prefix cannot be dodged
 * with dot segments; the host is the request's authority (Host, or
 * HTTP/2's :authority), compared without its port and case-insensitively.
 *
 * Not here: the configuration (gateway_config.h), serving (gateway.c).
 */
#ifndef SL_SERVER_GATEWAY_ROUTE_H
#define SL_SERVER_GATEWAY_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "server/base/span.h"
#include "server/gateway/gateway_config.h"

/* Whether route rt matches the request (method, authority, path). */
bool sld_gw_route_matches(const sld_gw_route_t *rt, sld_span_t method, sld_span_t authority,
                          sld_span_t path);

/* The first route of g that matches, or NULL (the gateway answers 404). */
const sld_gw_route_t *sld_gw_route_find(const sld_gw_config_t *g, sld_span_t method,
                                        sld_span_t authority, sld_span_t path);

#endif
