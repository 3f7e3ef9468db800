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

#include "server/net/front.h"
#include "server/state/daemon.h"

typedef struct sld_http sld_http_t; /* shared: h2o's global configuration */

/* The HTTP front's shared part (every worker's h2o context uses it). */
int sld_http_new(sld_daemon_t *d, sld_http_t **out);
/* After the server has stopped. */
void sld_http_free(sld_http_t *h);

/* The hooks the server calls (net/front.h); their ctx is a sld_http_t.
 * Connections, the write timeout and the stop are http_server.h's; the
 * worker's h2o context is disposed once the loop has stopped running (h2o
 * runs the loop itself here), before the loop is closed. */
extern const sld_front_ops_t sld_http_front_ops;

#endif
