/* http.h -- the HTTP front on the workers' loops, with libh2o.
 *
 * Each worker thread serves HTTP on its own libuv loop, next to RESP: its own
 * listening socket on the shared port (SO_REUSEPORT), its own h2o context.
 * HTTP/1.1 with keep-alive and pipelining, and HTTP/2 with prior knowledge
 * (h2o's, at no cost to us). What the endpoints answer is http_api.c; this
 * module only moves requests and replies between libh2o and it, and serves
 * as a front of the network layer (net/front.h): the server calls it only
 * through sld_http_front_ops.
 */
#ifndef SL_SERVER_HTTP_H
#define SL_SERVER_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "server/base/span.h"
#include "server/http/http_reply.h"
#include "server/net/front.h"
#include "server/state/daemon.h"

struct st_h2o_req_t;

typedef struct sld_http sld_http_t; /* shared: h2o's global configuration */

/* The HTTP front's shared part (every worker's h2o context uses it). */
int sld_http_new(sld_daemon_t *d, sld_http_t **out);
/* After the server has stopped. */
void sld_http_free(sld_http_t *h);

/* The hooks the server calls (net/front.h); their ctx is a sld_http_t.
 * Stopping: no new connections, requests already received are answered,
 * keep-alive connections are closed (they would otherwise hold the stop);
 * the tick resets connections whose client has not taken a byte of its
 * replies for write_timeout and moves lingering closes on; the worker's h2o
 * context is disposed once the loop has stopped running (h2o runs the loop
 * itself here), before the loop is closed. */
extern const sld_front_ops_t sld_http_front_ops;

/* The bare 503 a connection over max_connections gets on every HTTP
 * listener (this front's and the gateway's). */
extern const char sld_http_busy[];

/* For other fronts on libh2o (the gateway): puts reply r on the wire as
 * req's answer (status, content type, sluiced's headers, body), and looks
 * a request header up by its lower-case name as the HTTP front does
 * (repeated X-Forwarded-For lines joined, the last X-Real-IP). */
void sld_http_send_reply(struct st_h2o_req_t *req, const sld_http_reply_t *r);
sld_span_t sld_http_request_header(void *req, const char *name, size_t len);

#endif
