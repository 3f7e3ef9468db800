/* grpc_messages.h -- the gRPC front's protobuf messages as plain structs:
 * Envoy's RateLimitRequest decoded and checked, the plain structs of a
 * RateLimitResponse (encoded by hand: grpc_encode.h), and gRPC health's
 * Check request and response.
 *
 * The wire format is Envoy's API (proto/, the same field numbers and
 * types). A RateLimitRequest is read by hand (grpc_request.c), the health
 * messages with protobuf-c's code generated at build time; protobuf-c's
 * RateLimitRequest decoding stays as the reference the hand reader is held
 * to (sld_grpc_rls_decode_pb: the unit tests, the differential fuzz
 * target). Nothing above this module sees a protobuf-c type. Decoding is
 * pure: bytes in, a request out (owning its memory) or a message saying
 * what is wrong, for the client's INVALID_ARGUMENT.
 *
 * Not here: the gRPC calls (grpc_h2.c, grpc_server.c), deciding
 * (grpc_decide.c), RateLimitResponse's bytes (grpc_encode.c).
 */
#ifndef SL_SERVER_GRPC_MESSAGES_H
#define SL_SERVER_GRPC_MESSAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/span.h"
#include "server/rls/rls.h"
#include "sluice.h"

/* Bounds on what one request may carry (Envoy sends a few of each). */
#define SLD_GRPC_MAX_DESCRIPTORS 64
#define SLD_GRPC_MAX_ENTRIES 32

/* RateLimitResponse.Code */
enum { SLD_GRPC_CODE_UNKNOWN = 0, SLD_GRPC_CODE_OK = 1, SLD_GRPC_CODE_OVER_LIMIT = 2 };

/* Units are numbered as RateLimitUnit (envoy.type.v3) and
 * RateLimitResponse.RateLimit.Unit: sld_rls_unit_t (server/rls/rls.h). */

typedef struct sld_grpc_entry {
    sld_span_t key, value;
} sld_grpc_entry_t;

typedef struct sld_grpc_descriptor {
    const sld_grpc_entry_t *entries;
    size_t nentries;              /* 1..SLD_GRPC_MAX_ENTRIES */
    bool has_limit;               /* the descriptor carries a limit override */
    uint32_t limit_rpu;           /* its requests_per_unit */
    int limit_unit;               /* its unit (sld_rls_unit_t) */
    uint64_t hits;                /* what it charges: its own hits_addend when set,
                                     else the request's; 0 or unset counts as 1 */
} sld_grpc_descriptor_t;

typedef struct sld_grpc_rls_request {
    sld_span_t domain;            /* not empty */
    sld_grpc_descriptor_t *descriptors;
    size_t ndescriptors;          /* 1..SLD_GRPC_MAX_DESCRIPTORS */
    void *owner_;                 /* the memory of it all (what the spans point into) */
    void (*release_)(void *);     /* how owner_ is freed */
    sld_grpc_entry_t *entries_;
} sld_grpc_rls_request_t;

/* Decodes a RateLimitRequest from buf[0..len): SL_OK and *out (free it with
 * sld_grpc_rls_request_free), or SL_EINVAL (malformed bytes, an empty
 * domain, no descriptors, a descriptor without entries, an entry with an
 * empty key, too many of anything) with the reason in err, or SL_ENOMEM.
 * *out is left empty on error. */
int sld_grpc_rls_decode(const uint8_t *buf, size_t len, sld_grpc_rls_request_t *out, char *err,
                        size_t err_len);
/* The same through protobuf-c's unpacking: the reference sld_grpc_rls_decode
 * answers as on every input (results, codes and messages alike). */
int sld_grpc_rls_decode_pb(const uint8_t *buf, size_t len, sld_grpc_rls_request_t *out, char *err,
                           size_t err_len);
/* Both decoders' refusal: the reason (fmt with a and b) into err, *out
 * freed and emptied; returns SL_EINVAL. */
int sld_grpc_rls_refuse(sld_grpc_rls_request_t *out, char *err, size_t err_len, const char *fmt, size_t a,
                        size_t b);
/* Two decoders' answers to the same bytes compared: NULL when they agree
 * (codes, and the messages or every field), else what differs first. */
const char *sld_grpc_rls_differ(int rc_a, const sld_grpc_rls_request_t *a, const char *err_a, int rc_b,
                                const sld_grpc_rls_request_t *b, const char *err_b);
void sld_grpc_rls_request_free(sld_grpc_rls_request_t *r);

/* One DescriptorStatus. */
typedef struct sld_grpc_status {
    int code;                     /* SLD_GRPC_CODE_* */
    bool has_limit;               /* current_limit is sent */
    const char *name;             /* current_limit.name (NUL-terminated) */
    size_t name_len;              /* its length, or 0: measured */
    uint32_t rpu;                 /* current_limit.requests_per_unit */
    int unit;                     /* current_limit.unit */
    uint32_t remaining;           /* limit_remaining */
    sl_usec_t until_reset;        /* duration_until_reset; sent when has_limit */
} sld_grpc_status_t;

typedef struct sld_grpc_header {
    const char *key, *value;      /* NUL-terminated */
} sld_grpc_header_t;

/* gRPC health: the service asked about (a malloc'd C string, "" for the
 * server as a whole), or SL_EINVAL on malformed bytes. */
int sld_grpc_health_decode(const uint8_t *buf, size_t len, char **service);
/* HealthCheckResponse with status (1 SERVING, 2 NOT_SERVING, 3
 * SERVICE_UNKNOWN) into a malloc'd *out. */
int sld_grpc_health_encode(int status, uint8_t **out, size_t *out_len);

/* The unit and requests per unit that say `limit` per `period`: the unit
 * equal to the period when there is one, else the shortest unit longer than
 * the period with the same rate (10 per 90 s: 400 per hour), rounded down,
 * at least 1 and at most UINT32_MAX. */
void sld_grpc_limit_unit(uint64_t limit, sl_usec_t period, int *unit, uint32_t *rpu);

#endif
