/* listener.h -- a listening TCP socket on "host:port" or "[v6]:port".
 *
 * Every worker listens on the same address with its own socket
 * (SO_REUSEPORT: the kernel spreads connections): the first socket picks
 * the port (port 0: any free one), the others are opened on that port.
 *
 * Not here: accepting (each front's), the event loop.
 */
#ifndef SL_SERVER_LISTENER_H
#define SL_SERVER_LISTENER_H

#include <stddef.h>

/* Opens a listening socket on `addr`, on port `port_override` instead of
 * addr's when >= 0 (a worker after the first). Without an override, a
 * fixed port that anyone already listens on is refused, so a second daemon
 * cannot share it. *port_out gets the port. Returns the file descriptor,
 * or -1 with a message in err. */
int sld_listener_open(const char *addr, int port_override, int *port_out, char *err, size_t err_len);

#endif
