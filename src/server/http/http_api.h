/* http_api.h -- what sluiced answers over HTTP, apart from the wire.
 *
 * A request comes in as spans (method, path, query, body, a header lookup,
 * the peer's address); the answer goes out as a status, headers and a body
 * in a reply the caller reuses from one request to the next (http_reply.h).
 * http.c puts both on the wire with libh2o; the unit tests call these
 * directly. The path is looked up in the route table (http_router.h), the
 * union of the route groups (http_routes.h). The endpoints and their
 * answers are docs/protocol.md's "HTTP".
 */
#ifndef SL_SERVER_HTTP_API_H
#define SL_SERVER_HTTP_API_H

#include <stdint.h>

#include "server/state/daemon.h"
#include "server/http/http_check.h"
#include "server/http/http_reply.h"

/* Answers one request on worker `worker`. `out` is reset first. Decisions
 * are made in this daemon's memory store. */
void sld_http_handle(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                     sld_http_reply_t *out);

/* Like sld_http_handle(), through the configured store: when *later comes
 * back non-NULL the answer is not in `out` but will be given to the
 * function set with sld_http_pending_wait(), which the caller must call at
 * once (the request's spans need not outlive this call). */
void sld_http_handle_async(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                           sld_http_reply_t *out, sld_http_pending_t **later);

#endif
