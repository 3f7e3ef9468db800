/* grpc_encode.h -- RateLimitResponse written by hand, straight into the
 * caller's buffer, by protobuf's wire rules (varints, length-delimited
 * fields, proto3's absent zero values), byte for byte what protobuf-c's
 * generated pack would write for the same message: fields in field-number
 * order, a scalar or string left out when zero or empty, a sub-message
 * sent (even empty) when present.
 *
 * Why by hand: packing through protobuf-c cost a third of a call's
 * instructions (filling its structs, then a descriptor-driven walk to size
 * the message and another to write it); the answer is a few fixed fields.
 * tests/unit/test_grpc_encode.c holds the two to the same bytes.
 *
 * Not here: the request (grpc_request.c, grpc_messages.c), framing
 * (grpc_framing.c).
 */
#ifndef SL_SERVER_GRPC_ENCODE_H
#define SL_SERVER_GRPC_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "server/grpc/grpc_messages.h"

/* One RateLimitResponse; NULL arrays go with a count of 0. */
typedef struct sld_grpc_response {
    int overall_code;                           /* SLD_GRPC_CODE_* */
    const sld_grpc_status_t *statuses;
    size_t nstatuses;
    const sld_grpc_header_t *response_headers;  /* response_headers_to_add */
    size_t nresponse_headers;
    /* the lengths of response_headers' keys and values (key, value, key,
     * ...), or NULL: each measured with strlen, twice (sized, then written) */
    const size_t *response_header_lens;
    const sld_grpc_header_t *request_headers;   /* request_headers_to_add */
    size_t nrequest_headers;
    const uint8_t *raw_body;                    /* raw_body, sent when raw_body_len > 0 */
    size_t raw_body_len;
} sld_grpc_response_t;

/* The encoded length of r. */
size_t sld_grpc_response_size(const sld_grpc_response_t *r);

/* At least the encoded length of r, cheaper to reckon than it. */
size_t sld_grpc_response_bound(const sld_grpc_response_t *r);

/* Writes r into out (at least sld_grpc_response_size(r) bytes: it never
 * writes past what it returns); returns the length written. */
size_t sld_grpc_response_write(const sld_grpc_response_t *r, uint8_t *out);

/* A RateLimitResponse of overall_code, statuses and response headers into
 * a malloc'd *out of *out_len bytes: SL_OK or SL_ENOMEM. */
int sld_grpc_rls_encode(int overall_code, const sld_grpc_status_t *statuses, size_t n,
                        const sld_grpc_header_t *headers, size_t nheaders, uint8_t **out,
                        size_t *out_len);

#endif
