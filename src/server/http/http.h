/* http.h -- the HTTP front on the workers' loops, with libh2o.
 *
 * Each worker thread serves HTTP on its own libuv loop, next to RESP: its own
 * listening socket on the shared port (SO_REUSEPORT), its own h2o context.
 * HTTP/1.1 with keep-alive and pipelining, and HTTP/2 with prior knowledge
 * (h2o's, at no cost to us). What the endpoints answer is http_api.c; this
 * module only moves requests and replies between libh2o and it.
 */
#ifndef SL_SERVER_HTTP_H
#define SL_SERVER_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "server/state/daemon.h"

typedef struct sld_http sld_http_t;               /* shared: h2o's global configuration */
typedef struct sld_http_worker sld_http_worker_t; /* one per worker loop */

int sld_http_new(sld_daemon_t *d, sld_http_t **out);
void sld_http_free(sld_http_t *h);

/* Serves the listening socket fd on `loop` as worker `index`. */
int sld_http_worker_start(sld_http_t *h, uv_loop_t *loop, int fd, uint32_t index,
                          sld_http_worker_t **out, char *err, size_t err_len);

/* Stops accepting; requests already received are answered; keep-alive
 * connections are closed (they would otherwise hold the stop). */
void sld_http_worker_begin_stop(sld_http_worker_t *w);

/* Called every second or so (more often while stopping): resets every
 * connection whose client has not taken a byte of its replies for `timeout`
 * (µs; 0 = never) as of loop time `now` (ms) -- a client that does not
 * read -- and moves lingering closes on. Returns how many it reset. */
uint64_t sld_http_worker_tick(sld_http_worker_t *w, uint64_t now, sl_usec_t timeout);

/* Closes every connection left at once (the grace period is over). */
void sld_http_worker_force_close(sld_http_worker_t *w);

/* Whether no HTTP connection is left (lingering closes included). */
bool sld_http_worker_idle(const sld_http_worker_t *w);

/* Frees the worker's h2o context; after its loop has stopped running (h2o
 * runs the loop itself here), before the loop is closed. */
void sld_http_worker_dispose(sld_http_worker_t *w);
/* Frees it, once its loop has run every close through. */
void sld_http_worker_free(sld_http_worker_t *w);

#endif
