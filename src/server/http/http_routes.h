/* http_routes.h -- the route groups of sluiced's HTTP front, one file each
 * (http_router.h says what a row is). The front's table is their union,
 * in this order (http_api.c); a new front registers its own groups the
 * same way.
 */
#ifndef SL_SERVER_HTTP_ROUTES_H
#define SL_SERVER_HTTP_ROUTES_H

#include "server/http/http_router.h"

extern const sld_http_route_t sld_http_check_routes[];   /* /v1/check: http_route_check.c */
extern const sld_http_route_t sld_http_auth_routes[];    /* /v1/auth/<policy>: http_route_auth.c */
extern const sld_http_route_t sld_http_admin_routes[];   /* /v1/admin...: http_admin.c */
extern const sld_http_route_t sld_http_metrics_routes[]; /* /metrics: http_metrics.c */
extern const sld_http_route_t sld_http_stats_routes[];   /* /v1/stats: http_stats.c */
extern const sld_http_route_t sld_http_status_page_routes[]; /* /status: http_status_page.c */
extern const sld_http_route_t sld_http_health_routes[];  /* /healthz, /readyz: http_route_health.c */

/* The gate of SLD_ROUTE_ADMIN rows (http_admin.c): true when the admin API
 * is on and the request carries its token; otherwise the reply says why
 * (404 when it is off, 401 without the right token). */
bool sld_http_admin_gate(const sld_http_call_t *c);

#endif
