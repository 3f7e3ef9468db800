/* resp_connection.h -- the RESP front: Redis-protocol connections on the
 * worker loops, served through the network's front hooks (net/front.h).
 *
 * A connection owns an input buffer (bytes received, not yet run), an
 * output buffer (replies not yet handed to the kernel) and a buffer being
 * written. Every complete command received is run at once, in order
 * (commands.c), the replies of a read go out in one write, and a reply that
 * comes later (a decision in Redis) keeps its place through the reply
 * queue (net/reply_queue.h).
 *
 * Not here: what commands do (commands.c), the RESP grammar (resp.c), the
 * worker loops and listening sockets (net/server.c, net/listener.c).
 */
#ifndef SL_SERVER_RESP_CONNECTION_H
#define SL_SERVER_RESP_CONNECTION_H

#include <stdatomic.h>
#include <stdint.h>

#include "server/net/front.h"
#include "server/state/daemon.h"

/* The RESP front's part shared by every worker: the caller's memory. */
typedef struct sld_resp_front {
    sld_daemon_t *d;
    _Atomic uint64_t next_id; /* CLIENT ID: unique across workers */
} sld_resp_front_t;

void sld_resp_front_init(sld_resp_front_t *f, sld_daemon_t *d);

/* The hooks the server calls; their ctx is a sld_resp_front_t. */
extern const sld_front_ops_t sld_resp_front_ops;

#endif
