/* admission.h -- one count of connections against max_connections, for
 * every front.
 *
 * A front calls sld_conn_admit() (or sld_conn_accept(), which takes the
 * connection too) for each connection it accepts and sld_conn_closed()
 * when it closes, which also releases it from its acceptor. The counters are the
 * daemon's (connections_received, connections_rejected, connected: INFO
 * and /metrics report them); the bound is the runtime's max_connections,
 * read at each accept, so a reload changes it for the next connection.
 *
 * Not here: what a refused client is told (a RESP error, an HTTP 503: the
 * front's words, given to sld_conn_accept), closing idle connections.
 */
#ifndef SL_SERVER_ADMISSION_H
#define SL_SERVER_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "server/net/accept_spread.h"
#include "server/state/daemon.h"

/* Counts a connection just accepted. True: admitted, counted as connected
 * until sld_conn_release(). False: over max_connections, counted as
 * rejected and not as connected (the front answers and closes it). */
bool sld_conn_admit(sld_daemon_t *d);

/* An admitted connection has closed. */
void sld_conn_release(sld_daemon_t *d);

/* A connection taken through acceptor `a` has closed (or was refused):
 * released from `a` and, if it was `admitted`, from the count here. The
 * fronts call this rather than the two releases, so that neither is
 * forgotten on some path. */
void sld_conn_closed(sld_daemon_t *d, sld_acceptor_t *a, bool admitted);

/* Takes the incoming connection (accept_spread.h) into `tcp` (not yet
 * initialised; the first member of a malloc'd connection) and admits it.
 * True: admitted, serve it (and release it from its acceptor and here when
 * it closes). False: it could not be taken, or it was over max_connections
 * and got `refusal` (the front's words, written as far as the socket takes
 * them at once); either way its handle is closing and the connection's
 * memory is freed with it. */
bool sld_conn_accept(sld_daemon_t *d, sld_incoming_t *in, uv_tcp_t *tcp, const char *refusal,
                     size_t refusal_len);

#endif
