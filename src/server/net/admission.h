/* admission.h -- one count of connections against max_connections, for
 * every front.
 *
 * A front calls sld_conn_admit() for each connection it accepts and, if it
 * was admitted, sld_conn_release() when it closes. The counters are the
 * daemon's (connections_received, connections_rejected, connected: INFO
 * and /metrics report them); the bound is the runtime's max_connections,
 * read at each accept, so a reload changes it for the next connection.
 *
 * Not here: what a refused client is told (a RESP error, an HTTP 503: the
 * front's), closing idle connections.
 */
#ifndef SL_SERVER_ADMISSION_H
#define SL_SERVER_ADMISSION_H

#include <stdbool.h>

#include "server/state/daemon.h"

/* Counts a connection just accepted. True: admitted, counted as connected
 * until sld_conn_release(). False: over max_connections, counted as
 * rejected and not as connected (the front answers and closes it). */
bool sld_conn_admit(sld_daemon_t *d);

/* An admitted connection has closed. */
void sld_conn_release(sld_daemon_t *d);

#endif
