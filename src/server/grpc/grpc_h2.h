/* grpc_h2.h -- one gRPC connection's HTTP/2 session, on nghttp2: bytes in,
 * calls out to the front, answers in, bytes out. No socket, no loop: the
 * front (grpc_server.c) reads and writes, and a fuzzer feeds it bytes.
 *
 * nghttp2 keeps HTTP/2's state (streams, SETTINGS, HPACK, flow control,
 * the limits on what a client may open or send); this module maps streams
 * to unary gRPC calls: the method from :path (RLS, health; anything else
 * UNIMPLEMENTED), content-type application/grpc (else HTTP 415), POST (else
 * 405), grpc-timeout, one length-prefixed message (grpc_framing.h) taken as
 * soon as it is whole, with or without the end of the stream. A message
 * over max_message is refused with RESOURCE_EXHAUSTED, a compressed one
 * with UNIMPLEMENTED, a stream that ends without one with INVALID_ARGUMENT;
 * errors go out as Trailers-Only (one HEADERS frame).
 *
 * An answer (OK and its message) goes out as HEADERS, one DATA and the
 * trailers, and only when the client's windows can take the whole DATA:
 * until then it waits, and past idle_timeout it is given up (UNAVAILABLE,
 * Trailers-Only: HEADERS are not flow controlled). The sweep also ends a
 * call whose request is not whole within idle_timeout (DEADLINE_EXCEEDED),
 * one past its grpc-timeout (DEADLINE_EXCEEDED), and lets the connection
 * go (GOAWAY) once no call has been open for idle_timeout.
 *
 * A call handed to the front stays valid until answered, even when its
 * stream or connection goes first (it is then freed by the answer).
 *
 * Not here: the socket, TLS, counting connections (grpc_server.c), the
 * protobuf messages and deciding (grpc_messages.c, grpc_decide.c).
 */
#ifndef SL_SERVER_GRPC_H2_H
#define SL_SERVER_GRPC_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/grpc/grpc_framing.h" /* the methods, SLD_GRPC_M_* */

typedef struct sld_grpc_h2 sld_grpc_h2_t;
typedef struct sld_grpc_call sld_grpc_call_t;

typedef struct sld_grpc_h2_hooks {
    /* A whole request of method `method` (SLD_GRPC_M_RLS or _HEALTH):
     * msg[0..len) is valid during the hook only; answer it (now or later)
     * with sld_grpc_h2_answer, exactly once. */
    void (*on_request)(void *ctx, sld_grpc_call_t *call, int method, const uint8_t *msg, size_t len);
    /* An answer came outside sld_grpc_h2_feed: there is output to send. */
    void (*on_output)(void *ctx);
} sld_grpc_h2_hooks_t;

/* A server session (its SETTINGS queued to send), or NULL without memory. */
sld_grpc_h2_t *sld_grpc_h2_new(const sld_grpc_h2_hooks_t *hooks, void *ctx, uint32_t max_message,
                               int64_t now_ms);

/* Takes bytes the client sent. False: the connection is broken (a
 * protocol error: a GOAWAY may be queued); send the output, then close. */
bool sld_grpc_h2_feed(sld_grpc_h2_t *h, const uint8_t *data, size_t len, int64_t now_ms);

/* Appends what is ready to send to out (the answers of every call
 * completed since the last time, in one run). False: broken, close. */
bool sld_grpc_h2_output(sld_grpc_h2_t *h, sld_buf_t *out, int64_t now_ms);

/* Whether the session is over (both sides done, or broken): close once
 * the output is sent. */
bool sld_grpc_h2_done(const sld_grpc_h2_t *h);

/* Answers call: grpc_status 0 with body[0..len) as the message, or
 * another status with message (may be NULL). Copied: pointers need live
 * only during the call. */
void sld_grpc_h2_answer(sld_grpc_call_t *call, int grpc_status, const char *message, const uint8_t *body,
                        size_t len);

/* Every so often: the deadlines above (idle_ms 0: none but grpc-timeout). */
void sld_grpc_h2_sweep(sld_grpc_h2_t *h, int64_t now_ms, int64_t idle_ms);

/* Stopping: calls still receiving end UNAVAILABLE, a GOAWAY says no more;
 * those being decided are answered, then the session is done. */
void sld_grpc_h2_shutdown(sld_grpc_h2_t *h);

/* Whether a call is open on it. */
bool sld_grpc_h2_busy(const sld_grpc_h2_t *h);

/* Frees the session; calls being decided are freed when answered. */
void sld_grpc_h2_free(sld_grpc_h2_t *h);

#endif
