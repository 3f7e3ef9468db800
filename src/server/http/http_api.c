/* http_api.c -- the HTTP front's dispatcher: the route table is the union
 * of the route groups (http_routes.h), walked by the router (http_router.c).
 *
 * The first row whose path matches owns the request: an admin row first
 * asks the admin gate, then a method the row does not take is 405 with
 * Allow; a path no row matches is 404. A reply that could not be written
 * (out of memory) becomes a plain 503.
 */
#include "server/http/http_api.h"
#include "server/http/http_routes.h"

/* The front's table, in matching order. */
static const sld_http_route_t *const route_table[] = {
    sld_http_check_routes, sld_http_auth_routes, sld_http_admin_routes, sld_http_metrics_routes,
    sld_http_health_routes, sld_http_stats_routes, sld_http_status_page_routes, NULL,
};

static void dispatch(const sld_http_call_t *c, const sld_http_route_t *route) {
    if ((route->flags & SLD_ROUTE_ADMIN) && !sld_http_admin_gate(c))
        return;
    if (!sld_http_route_takes(route, c->req->method)) {
        char allow[64];
        sld_http_allow_text(route->methods, allow, sizeof allow);
        sld_http_method_not_allowed(c->reply, allow);
        return;
    }
    route->handler(c);
}

void sld_http_handle(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                     sld_http_reply_t *r) {
    sld_http_handle_async(d, worker, req, r, NULL);
}

void sld_http_handle_async(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                           sld_http_reply_t *r, sld_http_pending_t **later) {
    if (later)
        *later = NULL;
    sld_http_reply_reset(r);
    sld_http_call_t c = {.d = d, .worker = worker, .rt = sld_runtime(d), .req = req, .reply = r, .later = later};
    const sld_http_route_t *route = sld_http_route_find(route_table, req->path, &c.rest);
    if (route != NULL)
        dispatch(&c, route);
    else
        sld_http_error(r, 404, "not_found", NULL, "no such path (see docs/protocol.md)");
    if (r->body.failed || r->values.failed) {
        sld_http_reply_reset(r);
        r->status = 503;
        r->content_type = "text/plain; charset=utf-8";
        sld_buf_append_str(&r->body, "out of memory\n");
    }
}
