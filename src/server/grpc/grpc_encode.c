/* grpc_encode.c -- RateLimitResponse by hand (see grpc_encode.h).
 *
 * Written in one pass: a length-delimited field keeps one byte for its
 * length, filled in once its body is written (the body moved up in the
 * rare case of a body over 127 bytes), so no message is sized twice. */
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_encode.h"

/* protobuf wire types */
enum { WT_VARINT = 0, WT_LEN = 2 };

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t put_varint(uint8_t *out, uint64_t v) {
    if (v < 0x80) { /* nearly every one here: a length, a code, a unit */
        out[0] = (uint8_t)v;
        return 1;
    }
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* int32 and enum values go on the wire sign-extended to 64 bits */
static uint64_t int32_wire(int32_t v) { return (uint64_t)(int64_t)v; }

/* Tags of field numbers under 16 are one byte. */
static size_t put_tag(uint8_t *out, unsigned field, unsigned wt) {
    out[0] = (uint8_t)(field << 3 | wt);
    return 1;
}

/* a varint field, left out when zero (proto3) */
static size_t varint_field_size(uint64_t v) { return v ? 1 + varint_size(v) : 0; }

static size_t put_varint_field(uint8_t *out, unsigned field, uint64_t v) {
    if (v == 0)
        return 0;
    size_t n = put_tag(out, field, WT_VARINT);
    return n + put_varint(out + n, v);
}

/* a length-delimited field of len bytes, the tag and length */
static size_t len_field_size(size_t len) { return 1 + varint_size(len) + len; }

static size_t put_len_head(uint8_t *out, unsigned field, size_t len) {
    size_t n = put_tag(out, field, WT_LEN);
    return n + put_varint(out + n, len);
}

/* A length-delimited field whose body is written next, its length not
 * known yet: the tag, and one byte kept for the length. */
static size_t open_len(uint8_t *out, unsigned field) { return put_tag(out, field, WT_LEN) + 1; }

/* The length of the body written at body[0..len) put in the byte kept
 * before it; past 127 the body moves up to make room for the longer
 * varint. Returns how many bytes it moved. */
static size_t close_len(uint8_t *body, size_t len) {
    if (len < 0x80) {
        body[-1] = (uint8_t)len;
        return 0;
    }
    size_t extra = varint_size(len) - 1;
    memmove(body + extra, body, len);
    put_varint(body - 1, len);
    return extra;
}

/* n bytes (w <= n <= 2w) from src to dst as two overlapping moves of a
 * constant w bytes: each a load and a store, no call. */
#define COPY_ENDS(dst, src, n, w)                                                                                      \
    do {                                                                                                               \
        uint8_t a_[w], b_[w];                                                                                          \
        memcpy(a_, (src), w);                                                                                          \
        memcpy(b_, (src) + (n) - (w), w);                                                                              \
        memcpy((dst), a_, w);                                                                                          \
        memcpy((dst) + (n) - (w), b_, w);                                                                              \
    } while (0)

/* n bytes from src to dst: the header names and values, a limit's name,
 * are a few to a few dozen bytes, copied here without a call to memcpy. */
static inline void copy_bytes(uint8_t *dst, const void *src, size_t n) {
    const uint8_t *s = src;
    if (n >= 16 && n <= 32)
        COPY_ENDS(dst, s, n, 16);
    else if (n >= 8 && n < 16)
        COPY_ENDS(dst, s, n, 8);
    else if (n >= 4 && n < 8)
        COPY_ENDS(dst, s, n, 4);
    else if (n > 0)
        memcpy(dst, s, n);
}

/* a string or bytes field, left out when empty (proto3) */
static size_t bytes_field_size(size_t len) { return len ? len_field_size(len) : 0; }

static size_t put_bytes_field(uint8_t *out, unsigned field, const void *p, size_t len) {
    if (len == 0)
        return 0;
    size_t n = put_len_head(out, field, len);
    copy_bytes(out + n, p, len);
    return n + len;
}

static size_t cstr_len(const char *s) { return s ? strlen(s) : 0; }

/* a status's name length: given, else measured */
static size_t name_len(const sld_grpc_status_t *s) { return s->name_len ? s->name_len : cstr_len(s->name); }

/* ---- RateLimit {requests_per_unit 1, unit 2, name 3} ----------------------------------------- */

static size_t limit_size(const sld_grpc_status_t *s) {
    return varint_field_size(s->rpu) + varint_field_size(int32_wire(s->unit)) + bytes_field_size(name_len(s));
}

static size_t put_limit(uint8_t *out, const sld_grpc_status_t *s) {
    size_t n = put_varint_field(out, 1, s->rpu);
    n += put_varint_field(out + n, 2, int32_wire(s->unit));
    return n + put_bytes_field(out + n, 3, s->name, name_len(s));
}

/* ---- Duration {seconds 1, nanos 2} ---------------------------------------------------------- */

static void duration_of(const sld_grpc_status_t *s, uint64_t *sec, uint64_t *nanos) {
    sl_usec_t us = s->until_reset > 0 ? s->until_reset : 0;
    *sec = (uint64_t)(us / SL_USEC_PER_SEC);
    *nanos = int32_wire((int32_t)(us % SL_USEC_PER_SEC) * 1000);
}

static size_t duration_size(const sld_grpc_status_t *s) {
    uint64_t sec, nanos;
    duration_of(s, &sec, &nanos);
    return varint_field_size(sec) + varint_field_size(nanos);
}

static size_t put_duration(uint8_t *out, const sld_grpc_status_t *s) {
    uint64_t sec, nanos;
    duration_of(s, &sec, &nanos);
    size_t n = put_varint_field(out, 1, sec);
    return n + put_varint_field(out + n, 2, nanos);
}

/* ---- DescriptorStatus {code 1, current_limit 2, limit_remaining 3, duration_until_reset 4} ---- */

/* As sld_grpc_rls_encode always sent them: the limit, what is left and
 * the duration only with has_limit. */
static size_t status_size(const sld_grpc_status_t *s) {
    size_t n = varint_field_size(int32_wire(s->code));
    if (s->has_limit)
        n += len_field_size(limit_size(s)) + varint_field_size(s->remaining) + len_field_size(duration_size(s));
    return n;
}

static size_t put_status(uint8_t *out, const sld_grpc_status_t *s) {
    size_t n = put_varint_field(out, 1, int32_wire(s->code));
    if (s->has_limit) {
        size_t body = n += open_len(out + n, 2);
        n += put_limit(out + n, s);
        n += close_len(out + body, n - body);
        n += put_varint_field(out + n, 3, s->remaining);
        body = n += open_len(out + n, 4);
        n += put_duration(out + n, s);
        n += close_len(out + body, n - body);
    }
    return n;
}

/* ---- HeaderValue {key 1, value 2} ----------------------------------------------------------- */

/* h's key and value lengths: given (lens, two of them), else measured */
static void header_lens(const sld_grpc_header_t *h, const size_t *lens, size_t *klen, size_t *vlen) {
    if (lens != NULL) {
        *klen = lens[0];
        *vlen = lens[1];
    } else {
        *klen = cstr_len(h->key);
        *vlen = cstr_len(h->value);
    }
}

static size_t header_size(const sld_grpc_header_t *h, const size_t *lens) {
    size_t klen, vlen;
    header_lens(h, lens, &klen, &vlen);
    return bytes_field_size(klen) + bytes_field_size(vlen);
}

/* the whole field, any lengths */
static size_t put_header_any(uint8_t *out, unsigned field, const sld_grpc_header_t *h, size_t klen, size_t vlen) {
    size_t body = open_len(out, field);
    size_t n = body + put_bytes_field(out + body, 1, h->key, klen);
    n += put_bytes_field(out + n, 2, h->value, vlen);
    return n + close_len(out + body, n - body);
}

/* the whole field: each string measured once */
static inline size_t put_header_field(uint8_t *out, unsigned field, const sld_grpc_header_t *h,
                                      const size_t *lens) {
    size_t klen, vlen;
    header_lens(h, lens, &klen, &vlen);
    if (!(klen > 0 && vlen > 0 && klen + vlen < 0x80 - 4))
        return put_header_any(out, field, h, klen, vlen);
    /* the common case, every length one byte: put_header_any's bytes,
     * straight */
    out[0] = (uint8_t)(field << 3 | WT_LEN);
    out[1] = (uint8_t)(4 + klen + vlen);
    out[2] = 1 << 3 | WT_LEN;
    out[3] = (uint8_t)klen;
    copy_bytes(out + 4, h->key, klen);
    uint8_t *v = out + 4 + klen;
    v[0] = 2 << 3 | WT_LEN;
    v[1] = (uint8_t)vlen;
    copy_bytes(v + 2, h->value, vlen);
    return 6 + klen + vlen;
}

/* ---- RateLimitResponse {overall_code 1, statuses 2, response_headers_to_add 3,
 *      request_headers_to_add 4, raw_body 5} ----------------------------------------------------- */

size_t sld_grpc_response_size(const sld_grpc_response_t *r) {
    size_t n = varint_field_size(int32_wire(r->overall_code));
    for (size_t i = 0; i < r->nstatuses; i++)
        n += len_field_size(status_size(&r->statuses[i]));
    const size_t *lens = r->response_header_lens;
    for (size_t i = 0; i < r->nresponse_headers; i++)
        n += len_field_size(header_size(&r->response_headers[i], lens ? lens + 2 * i : NULL));
    for (size_t i = 0; i < r->nrequest_headers; i++)
        n += len_field_size(header_size(&r->request_headers[i], NULL));
    return n + bytes_field_size(r->raw_body_len);
}

size_t sld_grpc_response_bound(const sld_grpc_response_t *r) {
    /* a varint field at most 11 bytes, a length-delimited one's head 6 */
    size_t n = 11 + 6 + r->raw_body_len;
    for (size_t i = 0; i < r->nstatuses; i++)
        n += 6 + 11 + 6 + 11 + 11 + 6 + name_len(&r->statuses[i]) + 11 + 6 + 11 + 11;
    const size_t *lens = r->response_header_lens;
    for (size_t i = 0; i < r->nresponse_headers; i++) {
        size_t klen, vlen;
        header_lens(&r->response_headers[i], lens ? lens + 2 * i : NULL, &klen, &vlen);
        n += 6 + 6 + klen + 6 + vlen;
    }
    for (size_t i = 0; i < r->nrequest_headers; i++)
        n += 6 + 6 + cstr_len(r->request_headers[i].key) + 6 + cstr_len(r->request_headers[i].value);
    return n;
}

size_t sld_grpc_response_write(const sld_grpc_response_t *r, uint8_t *out) {
    size_t n = put_varint_field(out, 1, int32_wire(r->overall_code));
    for (size_t i = 0; i < r->nstatuses; i++) {
        size_t body = n += open_len(out + n, 2);
        n += put_status(out + n, &r->statuses[i]);
        n += close_len(out + body, n - body);
    }
    const size_t *lens = r->response_header_lens;
    for (size_t i = 0; i < r->nresponse_headers; i++)
        n += put_header_field(out + n, 3, &r->response_headers[i], lens ? lens + 2 * i : NULL);
    for (size_t i = 0; i < r->nrequest_headers; i++)
        n += put_header_field(out + n, 4, &r->request_headers[i], NULL);
    return n + put_bytes_field(out + n, 5, r->raw_body, r->raw_body_len);
}

int sld_grpc_rls_encode(int overall_code, const sld_grpc_status_t *statuses, size_t n,
                        const sld_grpc_header_t *headers, size_t nheaders, uint8_t **out,
                        size_t *out_len) {
    sld_grpc_response_t r = {.overall_code = overall_code,
                             .statuses = statuses,
                             .nstatuses = n,
                             .response_headers = headers,
                             .nresponse_headers = nheaders};
    size_t len = sld_grpc_response_size(&r);
    if ((*out = malloc(len ? len : 1)) == NULL)
        return SL_ENOMEM;
    *out_len = sld_grpc_response_write(&r, *out);
    return SL_OK;
}
