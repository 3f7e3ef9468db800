/* listener.h -- a listening TCP socket on "host:port" or "[v6]:port".
 *
 * Every worker listens on the same address with its own socket
 * (SO_REUSEPORT: the kernel spreads connections): the first socket picks
 * the port (port 0: any free one), the others are opened on that port; a
 * front serves its worker's socket on the worker's loop.
 *
 * Not here: accepting a connection (each front's), running the loop.
 */
#ifndef SL_SERVER_LISTENER_H
#define SL_SERVER_LISTENER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

/* Opens a listening socket on `addr`, on port `port_override` instead of
 * addr's when >= 0 (a worker after the first). Without an override, a
 * fixed port that anyone already listens on is refused, so a second daemon
 * cannot share it. *port_out gets the port. Returns the file descriptor,
 * or -1 with a message in err. */
int sld_listener_open(const char *addr, int port_override, int *port_out, char *err, size_t err_len);

/* Serves the listening socket fd (taking it over: closed on failure) on
 * `loop` through the handle l, with l->data = data: each new connection
 * calls on_connection. *opened tells whether l was initialised, and so must
 * be closed (sld_listener_close), even on failure. 0 or a libuv error. */
int sld_listener_serve(uv_loop_t *loop, uv_tcp_t *l, int fd, void *data, uv_connection_cb on_connection,
                       bool *opened);

/* Stops accepting: closes l unless it was never opened or is closing already. */
void sld_listener_close(uv_tcp_t *l, bool opened);

#endif
