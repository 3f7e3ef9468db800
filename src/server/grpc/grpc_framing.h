/* grpc_framing.h -- gRPC's framing over HTTP/2, as plain functions of
 * bytes: a request's length-prefixed message gathered from its DATA
 * (the 5-byte prefix: a compressed flag and a 32-bit length), the
 * grpc-timeout header read, and the header blocks of an answer written.
 *
 * Header blocks are written here without Huffman coding. An error's
 * trailers (grpc-status, grpc-message; for a Trailers-Only answer also
 * :status 200 and content-type) are HPACK literals never indexed: they
 * leave the connection's HPACK tables as they were, so grpc_h2.c may put
 * such a block in place of the one nghttp2 encoded whenever it goes out,
 * and a client or a test reads the status as plain bytes, as the gRPC C
 * core writes them. An answered call's headers and trailers use the
 * client's dynamic table (below): they are written as they go out.
 *
 * Not here: HTTP/2 itself (nghttp2, grpc_h2.c), protobuf (grpc_messages.c).
 */
#ifndef SL_SERVER_GRPC_FRAMING_H
#define SL_SERVER_GRPC_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"

#define SLD_GRPC_RLS_METHOD "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define SLD_GRPC_HEALTH_METHOD "/grpc.health.v1.Health/Check"

enum { SLD_GRPC_M_OTHER, SLD_GRPC_M_RLS, SLD_GRPC_M_HEALTH };

/* The method a request's :path value names. */
int sld_grpc_method_of(const uint8_t *path, size_t len);

/* gRPC status codes that the front answers with */
enum {
    SLD_GRPC_OK = 0,
    SLD_GRPC_CANCELLED = 1,
    SLD_GRPC_INVALID_ARGUMENT = 3,
    SLD_GRPC_DEADLINE_EXCEEDED = 4,
    SLD_GRPC_NOT_FOUND = 5,
    SLD_GRPC_RESOURCE_EXHAUSTED = 8,
    SLD_GRPC_UNIMPLEMENTED = 12,
    SLD_GRPC_INTERNAL = 13,
    SLD_GRPC_UNAVAILABLE = 14,
};

/* One request message being gathered. */
typedef struct sld_grpc_msg {
    uint8_t prefix[5];
    uint8_t have_prefix;
    uint32_t len;         /* the message's length, once the prefix is in */
    uint8_t *buf;         /* malloc'd, len bytes */
    size_t have;
    int state;            /* SLD_GRPC_MSG_* */
} sld_grpc_msg_t;

enum {
    SLD_GRPC_MSG_MORE,        /* not complete yet */
    SLD_GRPC_MSG_DONE,        /* buf[0..len) is the message; later bytes are ignored */
    SLD_GRPC_MSG_TOO_LARGE,   /* its length is over the bound */
    SLD_GRPC_MSG_COMPRESSED,  /* compressed: no encoding is offered */
    SLD_GRPC_MSG_NOMEM,
};

/* Takes the next DATA bytes of a request: the message's state after them.
 * Once not MORE, further bytes change nothing. */
int sld_grpc_msg_feed(sld_grpc_msg_t *m, const uint8_t *data, size_t len, uint32_t max);
void sld_grpc_msg_free(sld_grpc_msg_t *m);

/* Whether the first DATA bytes of a request, data[0..len), hold its whole
 * message, uncompressed and within max: then *msg is it, in data (no copy;
 * later bytes are ignored). False leaves the message to sld_grpc_msg_feed,
 * which then answers everything else (in parts, too large, compressed). */
bool sld_grpc_msg_whole(const uint8_t *data, size_t len, uint32_t max, const uint8_t **msg, uint32_t *msg_len);

/* A message's 5-byte prefix (uncompressed, len bytes) into p. */
void sld_grpc_msg_prefix(uint8_t *p, uint32_t len);

/* grpc-timeout ("1S", "250m": at most 8 digits and a unit of H M S m u n)
 * in microseconds, rounded up; false when malformed. */
bool sld_grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *usec);

/* What the client's HPACK decoder holds of the answers' fields. An
 * answer's HEADERS are :status 200 and content-type: application/grpc,
 * and its trailers grpc-status: 0 (nghttp2 would search and update its
 * HPACK tables for them on every call; the gRPC C core indexes small
 * grpc-status values too). nghttp2 is given every other field never
 * indexed, so the client's dynamic table only ever holds these two
 * entries, each added by the first block that needs it when it fits
 * beside what is there (nothing is evicted by an addition): the newest
 * is index 62, the other 63 (RFC 7541 2.3.3). Every header block nghttp2
 * writes goes through sld_grpc_hpack_updates, which follows the table's
 * size: a size update evicts the oldest entries until the rest fit
 * (4.4), and the next block needing one adds it again. A block not
 * followed (lost) leaves the table unknown: literals not indexed from
 * then on. */
enum { SLD_GRPC_HP_TYPE, SLD_GRPC_HP_OK }; /* content-type: application/grpc; grpc-status: 0 */

typedef struct sld_grpc_hpack {
    uint32_t size;     /* the table's maximum size, as the last size update set it */
    uint8_t n;         /* entries in the table */
    uint8_t entry[2];  /* SLD_GRPC_HP_*, oldest first */
    uint8_t at[2];     /* by SLD_GRPC_HP_*: its index, 0 while not in the table or lost */
    bool lost;         /* a block was not followed: literals from then on */
} sld_grpc_hpack_t;

#define SLD_GRPC_HPACK_INIT ((sld_grpc_hpack_t){.size = 4096})

/* The dynamic table size updates (RFC 7541 6.3) a header block begins
 * with, taken into t; returns their length (kept at the head of a block
 * that is replaced). */
size_t sld_grpc_hpack_updates(sld_grpc_hpack_t *t, const uint8_t *block, size_t len);

/* A header block went out not followed: the table is unknown from then on. */
void sld_grpc_hpack_lose(sld_grpc_hpack_t *t);

/* The largest block sld_grpc_answer_head writes. */
#define SLD_GRPC_HEAD_MAX 20

/* An answer's HEADERS block into out: 2 bytes once the content-type is
 * in the table, else a literal that adds it when the table has room.
 * Returns its length. */
size_t sld_grpc_answer_head(sld_grpc_hpack_t *t, uint8_t *out);

/* The largest block sld_grpc_ok_trailers writes. */
#define SLD_GRPC_OK_TRAILERS_MAX 16

/* An answered call's trailers block (grpc-status: 0) into out: 1 byte
 * once it is in the table, else a literal that adds it when the table has
 * room (else never indexed). Returns its length. */
size_t sld_grpc_ok_trailers(sld_grpc_hpack_t *t, uint8_t *out);

/* A HEADERS frame onto out, put together from what nghttp2 wrote, p: its
 * 9-byte frame header and the keep bytes of table size updates its block
 * began with (sld_grpc_hpack_updates), then fields[0..nfields), or with
 * fields NULL the answer's (sld_grpc_answer_head); its length set to fit. */
void sld_grpc_put_headers(sld_grpc_hpack_t *t, const uint8_t *p, size_t keep, const uint8_t *fields, size_t nfields,
                          sld_buf_t *out);

/* An answer's last DATA frame, its 9-byte header hd and its payload
 * data[0..len), onto out, and its trailers (sld_grpc_ok_trailers) after
 * it in a HEADERS frame of their own: the stream ends with them, not with
 * the DATA (its END_STREAM flag taken off). */
void sld_grpc_put_last_data(sld_grpc_hpack_t *t, const uint8_t *hd, const uint8_t *data, size_t len,
                            sld_buf_t *out);

/* The largest block sld_grpc_trailers writes. */
#define SLD_GRPC_TRAILERS_MAX 512

/* The trailers' header block into out (SLD_GRPC_TRAILERS_MAX bytes):
 * grpc-status and, when message is not NULL, grpc-message (percent-encoded,
 * cut to 300 bytes); with trailers_only also :status 200 and
 * content-type: application/grpc first. Returns its length. */
size_t sld_grpc_trailers(uint8_t *out, bool trailers_only, int status, const char *message);

#endif
