/* grpc_request.c -- Envoy's RateLimitRequest read straight from its wire
 * bytes into sld_grpc_rls_request_t (grpc_messages.h), in one pass and one
 * block (the worker thread's spare: grpc_spare.h), without protobuf-c's
 * unpacked message and its allocation per field.
 *
 * It answers exactly as protobuf-c 1.4's unpacking followed by the checks
 * of sld_grpc_rls_decode_pb (the reference, kept for the tests and the
 * differential fuzz target fuzz/fuzz_grpc_request.c), on any bytes:
 * - a tag is at most 5 bytes and its first byte not 0x00-0x07; wire types
 *   3, 4 (groups), 6 and 7 are refused; a varint is at most 10 bytes and a
 *   length at most 5, within the bytes left;
 * - unknown fields of wire types 0, 1, 2 and 5 are skipped; a known field
 *   of another wire type than its own is refused (a packed scalar too:
 *   these messages have no repeated scalars);
 * - a scalar or string given twice: the last wins (uint32 and enum take a
 *   varint's low 32 bits, uint64 its low 64);
 * - a message field given twice (limit, hits_addend): protobuf-c merges
 *   the two, and with proto3 scalars (no presence) the latter's values all
 *   win, zeros included: the last one, whole;
 * - strings end at their first NUL (the reference reads C strings).
 *
 * Not here: protobuf-c's decoding (grpc_messages.c), what a request means
 * (grpc_decide.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/grpc/grpc_messages.h"
#include "server/grpc/grpc_spare.h"

enum { WT_VARINT = 0, WT_64BIT = 1, WT_LEN = 2, WT_32BIT = 5 };

typedef struct rd {
    const uint8_t *p, *end;
} rd_t;

/* A varint of at most `bytes` bytes (10: its value mod 2^64). */
static inline bool read_varint_of(rd_t *r, size_t bytes, uint64_t *out) {
    if (r->p < r->end && r->p[0] < 0x80) { /* one byte: nearly every tag-less number here */
        *out = *r->p++;
        return true;
    }
    uint64_t v = 0;
    size_t max = (size_t)(r->end - r->p) < bytes ? (size_t)(r->end - r->p) : bytes;
    for (size_t i = 0; i < max; i++) {
        uint8_t b = r->p[i];
        v |= (uint64_t)(b & 0x7f) << (7 * i < 64 ? 7 * i : 63);
        if ((b & 0x80) == 0) {
            r->p += i + 1;
            *out = v;
            return true;
        }
    }
    return false;
}

static bool read_varint(rd_t *r, uint64_t *out) { return read_varint_of(r, 10, out); }

/* protobuf-c's parse_tag_and_wiretype: at most 5 bytes, the first one
 * carrying a field number; what does not fit 32 bits is dropped. */
static inline bool read_tag(rd_t *r, uint32_t *tag, unsigned *wt) {
    const uint8_t *p = r->p;
    size_t max = (size_t)(r->end - p) < 5 ? (size_t)(r->end - p) : 5;
    if (max == 0 || (p[0] & 0xf8) == 0)
        return false;
    *wt = p[0] & 7;
    if ((p[0] & 0x80) == 0) { /* field numbers up to 15: all of these messages' */
        r->p += 1;
        *tag = p[0] >> 3;
        return true;
    }
    uint32_t t = (uint32_t)(p[0] & 0x7f) >> 3;
    unsigned shift = 4;
    for (size_t i = 1; i < max; i++, shift += 7) {
        t |= (uint32_t)(p[i] & 0x7f) << shift;
        if ((p[i] & 0x80) == 0) {
            r->p += i + 1;
            *tag = t;
            return true;
        }
    }
    return false;
}

/* A length-prefixed field's body: a length of at most 5 bytes, then that
 * many bytes, all within the message. */
static inline bool read_len(rd_t *r, rd_t *body) {
    uint64_t n;
    if (!read_varint_of(r, 5, &n) || n > (uint64_t)(r->end - r->p))
        return false;
    *body = (rd_t){r->p, r->p + n};
    r->p = body->end;
    return true;
}

/* An unknown field of wire type wt, passed over. */
static bool skip_field(rd_t *r, unsigned wt) {
    uint64_t v;
    rd_t body;
    switch (wt) {
    case WT_VARINT:
        return read_varint(r, &v);
    case WT_LEN:
        return read_len(r, &body);
    case WT_64BIT:
    case WT_32BIT: {
        size_t n = wt == WT_64BIT ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return false;
        r->p += n;
        return true;
    }
    default: /* groups (3, 4) and 6, 7: protobuf-c has no use for them */
        return false;
    }
}

/* The next field of a message: its number and wire type, or false at the
 * end (*bad set when the bytes are not a field). Unknown fields (numbers
 * above `known`) are skipped here. */
static inline bool next_field(rd_t *r, uint32_t known, uint32_t *tag, unsigned *wt, bool *bad) {
    while (r->p < r->end) {
        if (!read_tag(r, tag, wt)) {
            *bad = true;
            return false;
        }
        if (*tag - 1 < known) /* 1..known */
            return true;
        if (!skip_field(r, *wt)) {
            *bad = true;
            return false;
        }
    }
    return false;
}

/* A string field: up to its first NUL, as protobuf-c's C string is read.
 * Descriptor keys and values are a few bytes: looked over in place, with
 * memchr for longer ones. */
static bool read_string(rd_t *r, unsigned wt, sld_span_t *out) {
    rd_t body;
    if (wt != WT_LEN || !read_len(r, &body))
        return false;
    size_t n = (size_t)(body.end - body.p), len = 0;
    if (n <= 16) {
        while (len < n && body.p[len] != 0)
            len++;
    } else {
        const uint8_t *nul = memchr(body.p, 0, n);
        len = nul ? (size_t)(nul - body.p) : n;
    }
    *out = (sld_span_t){(const char *)body.p, len};
    return true;
}

static bool read_message(rd_t *r, unsigned wt, rd_t *body) { return wt == WT_LEN && read_len(r, body); }

static bool read_uint(rd_t *r, unsigned wt, uint64_t *v) { return wt == WT_VARINT && read_varint(r, v); }

/* RateLimitDescriptor.Entry {string key = 1; string value = 2;} */
static bool read_entry(rd_t r, sld_grpc_entry_t *e) {
    uint32_t tag;
    unsigned wt;
    bool bad = false;
    *e = (sld_grpc_entry_t){{"", 0}, {"", 0}};
    while (next_field(&r, 2, &tag, &wt, &bad))
        if (!read_string(&r, wt, tag == 1 ? &e->key : &e->value))
            return false;
    return !bad;
}

/* RateLimitOverride {uint32 requests_per_unit = 1; RateLimitUnit unit = 2;}
 * and google.protobuf.UInt64Value {uint64 value = 1;}: numbered scalars,
 * fields[i - 1] set from field i (the last one given). */
static bool read_scalars(rd_t r, uint32_t known, uint64_t *fields) {
    uint32_t tag;
    unsigned wt;
    bool bad = false;
    for (uint32_t i = 0; i < known; i++)
        fields[i] = 0;
    while (next_field(&r, known, &tag, &wt, &bad))
        if (!read_uint(&r, wt, &fields[tag - 1]))
            return false;
    return !bad;
}

/* What one descriptor holds beyond its entries, and what the checks after
 * the reading need of it. */
typedef struct desc_read {
    size_t nentries;          /* every entry given */
    size_t empty_key;         /* the first stored entry with an empty key, or SIZE_MAX */
    bool has_limit, has_hits;
    uint64_t limit[2], hits;  /* requests_per_unit, unit; hits_addend.value */
} desc_read_t;

/* RateLimitDescriptor {repeated Entry entries = 1; RateLimitOverride limit
 * = 2; UInt64Value hits_addend = 3;}: its first `room` entries stored from
 * e (none when e is NULL), every one read. */
static bool read_descriptor(rd_t r, sld_grpc_entry_t *e, size_t room, desc_read_t *d) {
    uint32_t tag;
    unsigned wt;
    bool bad = false;
    rd_t body;
    *d = (desc_read_t){.empty_key = SIZE_MAX};
    while (next_field(&r, 3, &tag, &wt, &bad)) {
        if (!read_message(&r, wt, &body))
            return false;
        if (tag == 1) {
            sld_grpc_entry_t scratch, *slot = e != NULL && d->nentries < room ? &e[d->nentries] : &scratch;
            if (!read_entry(body, slot))
                return false;
            if (slot != &scratch && slot->key.len == 0 && d->empty_key == SIZE_MAX)
                d->empty_key = d->nentries;
            d->nentries++;
        } else if (tag == 2) {
            if (!read_scalars(body, 2, d->limit))
                return false;
            d->has_limit = true;
        } else {
            uint64_t v;
            if (!read_scalars(body, 1, &v))
                return false;
            d->has_hits = true;
            d->hits = v;
        }
    }
    return !bad;
}

int sld_grpc_rls_decode(const uint8_t *buf, size_t len, sld_grpc_rls_request_t *out, char *err,
                        size_t err_len) {
    memset(out, 0, sizeof *out);
    /* Every descriptor and entry takes at least 2 bytes (a tag and a
     * length), so len / 2 of each is room enough, within the bounds past
     * which the request is refused anyway. The spans point into a copy of
     * the bytes: the caller's go when this returns. */
    size_t maxd = len / 2 < SLD_GRPC_MAX_DESCRIPTORS ? len / 2 : SLD_GRPC_MAX_DESCRIPTORS;
    size_t maxe = len / 2 < (size_t)SLD_GRPC_MAX_DESCRIPTORS * SLD_GRPC_MAX_ENTRIES
                      ? len / 2
                      : (size_t)SLD_GRPC_MAX_DESCRIPTORS * SLD_GRPC_MAX_ENTRIES;
    size_t dbytes = maxd * sizeof(sld_grpc_descriptor_t), ebytes = maxe * sizeof(sld_grpc_entry_t);
    desc_read_t reads[SLD_GRPC_MAX_DESCRIPTORS];
    /* the worker's spare block, given back when the request is freed */
    uint8_t *block = sld_grpc_spare_take(dbytes + ebytes + len + 1);
    if (block == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    out->owner_ = block;
    out->release_ = sld_grpc_spare_give;
    out->descriptors = (sld_grpc_descriptor_t *)(void *)block;
    out->entries_ = (sld_grpc_entry_t *)(void *)(block + dbytes);
    uint8_t *copy = block + dbytes + ebytes;
    if (len > 0)
        memcpy(copy, buf, len);

    rd_t r = {copy, copy + len}, body;
    uint32_t tag;
    unsigned wt;
    bool bad = false;
    uint64_t request_hits = 0;
    size_t n = 0, used = 0;
    out->domain = (sld_span_t){"", 0};
    while (next_field(&r, 3, &tag, &wt, &bad)) {
        bool ok;
        if (tag == 1) {
            ok = read_string(&r, wt, &out->domain);
        } else if (tag == 2) {
            ok = read_message(&r, wt, &body);
            if (ok && n < maxd) {
                size_t room = maxe - used < SLD_GRPC_MAX_ENTRIES ? maxe - used : SLD_GRPC_MAX_ENTRIES;
                ok = read_descriptor(body, out->entries_ + used, room, &reads[n]);
                out->descriptors[n].entries = out->entries_ + used;
                used += reads[n].nentries < room ? reads[n].nentries : room;
            } else if (ok) {
                desc_read_t scratch;
                ok = read_descriptor(body, NULL, 0, &scratch);
            }
            n++;
        } else {
            ok = read_uint(&r, wt, &request_hits);
        }
        if (!ok) {
            bad = true;
            break;
        }
    }
    if (bad)
        return sld_grpc_rls_refuse(out, err, err_len, "the request is not a RateLimitRequest (malformed protobuf)",
                                   0, 0);
    if (out->domain.len == 0)
        return sld_grpc_rls_refuse(out, err, err_len, "the domain is empty", 0, 0);
    if (n == 0)
        return sld_grpc_rls_refuse(out, err, err_len, "there are no descriptors", 0, 0);
    if (n > SLD_GRPC_MAX_DESCRIPTORS)
        return sld_grpc_rls_refuse(out, err, err_len, "%zu descriptors: at most %zu", n, SLD_GRPC_MAX_DESCRIPTORS);
    for (size_t i = 0; i < n; i++) {
        if (reads[i].nentries == 0)
            return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu has no entries", i, 0);
        if (reads[i].nentries > SLD_GRPC_MAX_ENTRIES)
            return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu has too many entries (at most %zu)", i,
                          SLD_GRPC_MAX_ENTRIES);
        if (reads[i].empty_key != SIZE_MAX)
            return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu: entry %zu has an empty key", i,
                                       reads[i].empty_key);
    }
    out->ndescriptors = n;
    /* uint32 on the wire: its low 32 bits, as protobuf-c reads it */
    uint64_t hits32 = (uint32_t)request_hits;
    for (size_t i = 0; i < n; i++) {
        sld_grpc_descriptor_t *o = &out->descriptors[i];
        const desc_read_t *d = &reads[i];
        o->nentries = d->nentries;
        o->has_limit = d->has_limit;
        o->limit_rpu = d->has_limit ? (uint32_t)d->limit[0] : 0;
        o->limit_unit = d->has_limit ? (int)(uint32_t)d->limit[1] : 0;
        /* as Envoy's reference service: a descriptor's own hits_addend
         * replaces the request's, and 0 counts as 1 */
        o->hits = d->has_hits ? (d->hits ? d->hits : 1) : hits32 ? hits32 : 1;
    }
    return SL_OK;
}
