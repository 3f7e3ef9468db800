/* grpc_head.h -- a gRPC request's header block, read field by field:
 * the method from :path, POST, content-type application/grpc,
 * grpc-timeout, and what RFC 9113 asks of a well-formed request.
 *
 * Inline, as store_memory_private.h's helpers are: nghttp2 calls
 * grpc_h2.c's on_header for every field of every call (nine a call from
 * a usual client), and a call out of it to another file for each cost
 * about a hundred instructions a call.
 *
 * Not here: HPACK and the header list's size (nghttp2, grpc_h2.c), what is
 * answered to a request that is not one (grpc_h2.c).
 */
#ifndef SL_SERVER_GRPC_HEAD_H
#define SL_SERVER_GRPC_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/grpc/grpc_framing.h"

/* What a request's header block said (all zero before its first field). */
typedef struct sld_grpc_head {
    int method;          /* SLD_GRPC_M_* */
    bool post;           /* :method POST */
    bool grpc_type;      /* content-type application/grpc[+proto|;...] */
    bool malformed;      /* RFC 9113 8.1.1 */
    bool timed;          /* a grpc-timeout read: timeout_us */
    uint8_t pseudo;      /* pseudo-header fields seen (SLD_GRPC_PS_*) */
    uint64_t timeout_us;
} sld_grpc_head_t;

/* the request's pseudo-header fields, and whether a regular field came */
enum {
    SLD_GRPC_PS_METHOD = 1,
    SLD_GRPC_PS_SCHEME = 2,
    SLD_GRPC_PS_PATH = 4,
    SLD_GRPC_PS_AUTHORITY = 8,
    SLD_GRPC_PS_REGULAR = 16,
};

static inline bool sld_grpc_head_is(const uint8_t *s, size_t len, const char *lit) {
    return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

/* A pseudo-header field: each known one once, all before the regular
 * fields (RFC 9113 8.3); else the request is malformed. */
static inline void sld_grpc_head_seen(sld_grpc_head_t *r, uint8_t which) {
    if ((r->pseudo & (which | SLD_GRPC_PS_REGULAR)) != 0)
        r->malformed = true;
    r->pseudo |= which;
}

static inline void sld_grpc_head_pseudo(sld_grpc_head_t *r, const uint8_t *name, size_t namelen,
                                        const uint8_t *value, size_t valuelen) {
    switch (namelen) {
    case 5:
        if (memcmp(name, ":path", 5) == 0) {
            sld_grpc_head_seen(r, SLD_GRPC_PS_PATH);
            r->method = sld_grpc_method_of(value, valuelen);
            r->malformed = r->malformed || valuelen == 0;
            return;
        }
        break;
    case 7:
        if (memcmp(name, ":method", 7) == 0) {
            sld_grpc_head_seen(r, SLD_GRPC_PS_METHOD);
            r->post = sld_grpc_head_is(value, valuelen, "POST");
            return;
        }
        if (memcmp(name, ":scheme", 7) == 0) {
            sld_grpc_head_seen(r, SLD_GRPC_PS_SCHEME);
            return;
        }
        break;
    case 10:
        if (memcmp(name, ":authority", 10) == 0) {
            sld_grpc_head_seen(r, SLD_GRPC_PS_AUTHORITY);
            return;
        }
        break;
    default:
        break;
    }
    r->malformed = true; /* :status, :protocol or unknown in a request */
}

/* One field of a request's header block: what gRPC needs of it, and RFC
 * 9113's rules for a well-formed request (8.3: each pseudo-header field
 * once, all before the regular ones, no :status; 8.2.2: no connection-
 * specific field, te only "trailers"). Names are told apart by length
 * and a letter before anything is compared. Names of other fields are not
 * checked: none of them is read. */
static inline void sld_grpc_head_field(sld_grpc_head_t *r, const uint8_t *name, size_t namelen,
                                       const uint8_t *value, size_t valuelen) {
    if (namelen > 0 && name[0] == ':') {
        sld_grpc_head_pseudo(r, name, namelen, value, valuelen);
        return;
    }
    r->pseudo |= SLD_GRPC_PS_REGULAR;
    switch (namelen) {
    case 2:
        r->malformed =
            r->malformed || (memcmp(name, "te", 2) == 0 && !sld_grpc_head_is(value, valuelen, "trailers"));
        break;
    case 7:
        r->malformed = r->malformed || memcmp(name, "upgrade", 7) == 0;
        break;
    case 10:
        r->malformed = r->malformed || (name[0] == 'c' && memcmp(name, "connection", 10) == 0) ||
                       (name[0] == 'k' && memcmp(name, "keep-alive", 10) == 0);
        break;
    case 12:
        if (name[0] == 'c' && memcmp(name, "content-type", 12) == 0) {
            r->grpc_type = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                           (valuelen == 16 || value[16] == '+' || value[16] == ';');
        } else if (name[0] == 'g' && memcmp(name, "grpc-timeout", 12) == 0) {
            uint64_t usec;
            if (sld_grpc_timeout_parse(value, valuelen, &usec)) {
                r->timed = true;
                r->timeout_us = usec;
            }
        }
        break;
    case 16:
        r->malformed = r->malformed || memcmp(name, "proxy-connection", 16) == 0;
        break;
    case 17:
        r->malformed = r->malformed || memcmp(name, "transfer-encoding", 17) == 0;
        break;
    default:
        break;
    }
}

/* Whether the whole block was a well-formed request: :method, :scheme and
 * :path there, and nothing malformed. */
static inline bool sld_grpc_head_wellformed(const sld_grpc_head_t *r) {
    const uint8_t need = SLD_GRPC_PS_METHOD | SLD_GRPC_PS_SCHEME | SLD_GRPC_PS_PATH;
    return !r->malformed && (r->pseudo & need) == need;
}

#endif
