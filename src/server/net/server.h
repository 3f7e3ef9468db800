/* server.h -- the worker threads, their listeners, and RESP connections
 * (HTTP connections are http.c's, on the same loops).
 *
 * One libuv loop per worker thread, each with its own listening socket on the
 * same address (SO_REUSEPORT: the kernel spreads connections). Connections
 * stay on the worker that accepted them. Commands are run as they are
 * parsed, in order, and their replies written back in one write per batch.
 */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/state/daemon.h"

typedef struct sld_server sld_server_t;

/* Listens, unless the address is NULL or "", for RESP on `resp_listen` and for HTTP
 * on `http_listen` ("host:port", "[v6]:port"; port 0 = any free port) with
 * `threads` workers and starts serving. d->resp_port and d->http_port get
 * the actual ports. */
int sld_server_start(sld_daemon_t *d, const char *resp_listen, const char *http_listen, uint32_t threads,
                     sld_server_t **out, char *err, size_t err_len);

/* Makes every worker go through a loop iteration soon (after a runtime swap). */
void sld_server_wake(sld_server_t *s);

/* Whether every worker has been through an iteration since the runtime of
 * `generation` was published, so no worker still uses an older one. */
bool sld_server_quiescent(sld_server_t *s, uint64_t generation);

/* Stops accepting, sends what is owed, closes every connection (forcibly
 * after `grace_ms`), joins the workers and frees the server. */
void sld_server_stop(sld_server_t *s, uint64_t grace_ms);

#endif
