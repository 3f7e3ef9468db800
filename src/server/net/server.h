/* server.h -- the worker threads, their loops and listening sockets; the
 * fronts (RESP, HTTP) serve connections on them through their hooks
 * (front.h).
 *
 * One libuv loop per worker thread; on it, each front has its own listening
 * socket on the front's address (SO_REUSEPORT: the kernel spreads
 * connections), and a connection is served by the worker of its front with
 * fewest connections (accept_spread.h), where it stays.
 *
 * Not here: connections, parsing, replies (the fronts'), configuration and
 * signals (sluiced.c).
 */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/net/front.h"
#include "server/state/daemon.h"

typedef struct sld_server sld_server_t;

/* Starts `threads` workers, each serving the `nfronts` fronts (at least
 * one), each front on its own address; each front's *port gets the port
 * actually listened on. The fronts' tables must outlive the server. */
int sld_server_start(sld_daemon_t *d, const sld_front_t *fronts, size_t nfronts, uint32_t threads,
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
