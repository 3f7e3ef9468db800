/* http_server.h -- serving HTTP with libh2o on a worker's loop: the one
 * connection layer of every front that speaks HTTP (the decision front,
 * http.c, and the gateway, gateway/gateway.c).
 *
 * A front builds an h2o configuration (its handlers; the limits every HTTP
 * listener shares come from sld_http_server_config) and hands it with its
 * worker's listening socket to sld_http_server_start(). From then on this
 * module owns the listener's life: accepting and counting connections
 * against max_connections (a bare 503 over it, net/admission.h), the list of
 * open connections, resetting those whose client has not taken a byte of
 * its replies for write_timeout (net/tcp_stall.h), and the stop: no new
 * connections, replies say "Connection: close", connections waiting for a
 * request close at once, and each socket outlives h2o's close for a
 * lingering close (net/linger.h).
 *
 * A front's worker state begins with a sld_http_server_t, so the hooks
 * below serve as its net/front.h hooks as they are; the front keeps start,
 * dispose and free (what it owns besides). Also here: putting a sluiced
 * reply on the wire as an h2o request's answer.
 *
 * Not here: what any request is answered (the fronts' handlers), reading a
 * request's headers (http_request.h).
 */
#ifndef SL_SERVER_HTTP_SERVER_H
#define SL_SERVER_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "server/http/http_reply.h"
#include "server/net/accept_spread.h"
#include "server/net/linger.h"
#include "server/state/daemon.h"

typedef struct sld_http_conn sld_http_conn_t; /* one accepted connection (http_server.c) */

typedef struct sld_http_server {
    h2o_context_t ctx;        /* a handler finds its worker from req->conn->ctx */
    h2o_accept_ctx_t accept;  /* a front serving TLS sets accept.ssl_ctx (the gateway) */
    sld_daemon_t *d;
    uv_loop_t *loop;
    sld_acceptor_t acceptor;  /* the listener, and connections handed over (net/accept_spread.h) */
    sld_http_conn_t *conns;
    sld_linger_t linger;      /* closed by h2o while stopping, until their clients close */
    bool serving;             /* ctx exists (and must be disposed) */
    bool stopping;
    bool disposed;
} sld_http_server_t;

/* Initialises an h2o configuration with what every HTTP listener shares:
 * no server name of libh2o's (sld_http_server_name), a body up to max_request_bytes, a request (and an idle
 * keep-alive or HTTP/2 connection) closed after idle_timeout. The caller
 * registers its handlers and disposes it (h2o_config_dispose) once every
 * context using it is disposed. */
void sld_http_server_config(h2o_globalconf_t *config, const sld_config_t *cfg);

/* Adds "Server: sluiced" to req's response unless it has a Server field:
 * for a response not written by sld_http_send_reply() (which adds it), such
 * as one a proxy passes on. */
void sld_http_server_name(h2o_req_t *req);

/* Serves the listening socket fd (taken over: closed on failure) on `loop`
 * as worker `index` of the front's `spread` (net/accept_spread.h) with
 * `config` (which must outlive the server), into s (zeroed memory,
 * the first member of the front's worker). `what` names the listener in
 * the error ("HTTP", "the gateway"). On failure s is still stopped and
 * disposed like a server that ran. */
int sld_http_server_start(sld_http_server_t *s, sld_daemon_t *d, uv_loop_t *loop, h2o_globalconf_t *config,
                          int fd, sld_spread_t *spread, uint32_t index, const char *what, char *err,
                          size_t err_len);

/* net/front.h's begin_stop, tick, force_close and idle, for a worker whose
 * first member is a sld_http_server_t. */
void sld_http_server_begin_stop(void *worker);
void sld_http_server_tick(void *worker, uint64_t now);
void sld_http_server_force_close(void *worker);
bool sld_http_server_idle(void *worker);

/* Once the loop has stopped running: closes the listener, disposes the
 * context and closes what still lingers. Idempotent. The front then
 * disposes its configuration and frees its worker. */
void sld_http_server_dispose(sld_http_server_t *s);

/* Puts reply r on the wire as req's answer: status, content type,
 * sluiced's headers (their wire names and h2o tokens), body. */
void sld_http_send_reply(h2o_req_t *req, const sld_http_reply_t *r);

#endif
