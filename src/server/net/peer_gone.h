/* peer_gone.h -- whether the client of an HTTP/1 request that is being
 * held (a gateway waiter, a wait= answer) has closed its connection.
 *
 * libh2o reads no more from an HTTP/1 connection while a request is
 * served, and so learns that its client left only when it writes. A
 * caller that holds a request looks with this every so often (the gateway
 * and the HTTP front: every 100 ms, SLD_PEER_PROBE_MS). HTTP/2 keeps
 * reading: a stream or connection that ends disposes the request itself,
 * so this answers false for it.
 *
 * Not here: what a caller does with a client gone, the timer it looks on.
 */
#ifndef SL_SERVER_NET_PEER_GONE_H
#define SL_SERVER_NET_PEER_GONE_H

#include <stdbool.h>

#include <h2o.h>

#define SLD_PEER_PROBE_MS 100 /* how often a held HTTP/1 request's connection is looked at */

/* True when req is HTTP/1 and its client has closed the connection (or
 * it failed). A peek without taking a byte: a pipelined request after
 * this one leaves it alive. */
bool sld_peer_gone(h2o_req_t *req);

#endif
