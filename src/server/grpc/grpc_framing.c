/* grpc_framing.c -- gRPC's framing over HTTP/2 (see grpc_framing.h). */
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_framing.h"

#define MESSAGE_MAX 300

/* A gRPC message's length: bytes 1-4 of its 5-byte prefix, big-endian. */
static uint32_t prefix_len(const uint8_t *p) {
    return (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
}

int sld_grpc_method_of(const uint8_t *v, size_t len) {
    if (len == sizeof SLD_GRPC_RLS_METHOD - 1 && memcmp(v, SLD_GRPC_RLS_METHOD, len) == 0)
        return SLD_GRPC_M_RLS;
    if (len == sizeof SLD_GRPC_HEALTH_METHOD - 1 && memcmp(v, SLD_GRPC_HEALTH_METHOD, len) == 0)
        return SLD_GRPC_M_HEALTH;
    return SLD_GRPC_M_OTHER;
}

int sld_grpc_msg_feed(sld_grpc_msg_t *m, const uint8_t *data, size_t len, uint32_t max) {
    if (m->state != SLD_GRPC_MSG_MORE)
        return m->state;
    while (m->have_prefix < 5 && len > 0) {
        m->prefix[m->have_prefix++] = *data++;
        len--;
    }
    if (m->have_prefix < 5)
        return m->state;
    if (m->buf == NULL) {
        m->len = prefix_len(m->prefix);
        if (m->prefix[0] != 0)
            return m->state = SLD_GRPC_MSG_COMPRESSED;
        if (m->len > max)
            return m->state = SLD_GRPC_MSG_TOO_LARGE;
        /* one byte more: an empty message is a valid request too */
        if ((m->buf = malloc(m->len ? m->len : 1)) == NULL)
            return m->state = SLD_GRPC_MSG_NOMEM;
    }
    size_t take = m->len - m->have < len ? m->len - m->have : len;
    memcpy(m->buf + m->have, data, take);
    m->have += take;
    if (m->have == m->len)
        m->state = SLD_GRPC_MSG_DONE;
    return m->state;
}

bool sld_grpc_msg_whole(const uint8_t *data, size_t len, uint32_t max, const uint8_t **msg, uint32_t *msg_len) {
    if (len < 5 || data[0] != 0)
        return false;
    uint32_t n = prefix_len(data);
    if (n > max || n > len - 5)
        return false;
    *msg = data + 5;
    *msg_len = n;
    return true;
}

void sld_grpc_msg_prefix(uint8_t *p, uint32_t len) {
    p[0] = 0;
    p[1] = (uint8_t)(len >> 24);
    p[2] = (uint8_t)(len >> 16);
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
}

void sld_grpc_msg_free(sld_grpc_msg_t *m) {
    free(m->buf);
    memset(m, 0, sizeof *m);
}

bool sld_grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *usec) {
    if (len < 2 || len > 9)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    switch (v[len - 1]) {
    case 'H': *usec = n * 3600 * 1000000; return true;
    case 'M': *usec = n * 60 * 1000000; return true;
    case 'S': *usec = n * 1000000; return true;
    case 'm': *usec = n * 1000; return true;
    case 'u': *usec = n; return true;
    case 'n': *usec = (n + 999) / 1000; return true;
    default: return false;
    }
}

/* An HPACK string, raw (RFC 7541 5.2: H clear, a 7-bit prefix length). */
static size_t put_string(uint8_t *out, const uint8_t *s, size_t len) {
    size_t n = 0;
    if (len < 127) {
        out[n++] = (uint8_t)len;
    } else {
        out[n++] = 127;
        size_t rest = len - 127;
        while (rest >= 128) {
            out[n++] = (uint8_t)(0x80 | (rest & 0x7f));
            rest >>= 7;
        }
        out[n++] = (uint8_t)rest;
    }
    memcpy(out + n, s, len);
    return n + len;
}

/* A literal never indexed with a new name (RFC 7541 6.2.3). */
static size_t put_field(uint8_t *out, const char *name, const uint8_t *value, size_t len) {
    size_t n = 0;
    out[n++] = 0x10;
    n += put_string(out + n, (const uint8_t *)name, strlen(name));
    return n + put_string(out + n, value, len);
}

/* what an entry takes in the table: name, value and 32 (RFC 7541 4.1) */
static uint32_t entry_size(uint8_t e) { return e == SLD_GRPC_HP_TYPE ? 32 + 12 + 16 : 32 + 11 + 1; }

static uint32_t table_used(const sld_grpc_hpack_t *t) {
    uint32_t used = 0;
    for (uint8_t i = 0; i < t->n; i++)
        used += entry_size(t->entry[i]);
    return used;
}

/* Each entry's index (the newest is 62), after the table changed: an
 * answer reads it without a search. */
static void table_reindex(sld_grpc_hpack_t *t) {
    t->at[0] = t->at[1] = 0;
    for (uint8_t i = 0; i < t->n && !t->lost; i++)
        t->at[t->entry[i]] = (uint8_t)(62 + (t->n - 1 - i));
}

/* Whether e is added by the block being written: it fits beside the
 * entries there (then it is counted as added). */
static bool table_add(sld_grpc_hpack_t *t, uint8_t e) {
    if (t->lost || table_used(t) + entry_size(e) > t->size)
        return false;
    t->entry[t->n++] = e;
    table_reindex(t);
    return true;
}

size_t sld_grpc_hpack_updates(sld_grpc_hpack_t *t, const uint8_t *b, size_t len) {
    size_t i = 0;
    while (i < len && (b[i] & 0xe0) == 0x20) {
        /* a 5-bit prefix integer (RFC 7541 5.1) */
        uint64_t v = b[i++] & 0x1f;
        if (v == 0x1f) {
            unsigned shift = 0;
            uint8_t c;
            do {
                if (i >= len || shift > 28) {
                    sld_grpc_hpack_lose(t); /* not one nghttp2 writes */
                    return len;
                }
                c = b[i++];
                v += (uint64_t)(c & 0x7f) << shift;
                shift += 7;
            } while (c & 0x80);
        }
        t->size = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        /* the oldest go first until the rest fit (RFC 7541 4.3) */
        while (t->n > 0 && table_used(t) > t->size) {
            t->entry[0] = t->entry[1];
            t->n--;
        }
        table_reindex(t);
    }
    return i;
}

void sld_grpc_hpack_lose(sld_grpc_hpack_t *t) {
    t->lost = true;
    table_reindex(t);
}

size_t sld_grpc_answer_head(sld_grpc_hpack_t *t, uint8_t *out) {
    out[0] = 0x88; /* :status 200, static table index 8 */
    if (t->at[SLD_GRPC_HP_TYPE] != 0) {
        out[1] = (uint8_t)(0x80 | t->at[SLD_GRPC_HP_TYPE]);
        return 2;
    }
    /* content-type is static name index 31: with incremental indexing
     * (6-bit prefix, 0x40 | 31), or without (4-bit prefix: 15, then 16) */
    size_t n = 1;
    if (table_add(t, SLD_GRPC_HP_TYPE)) {
        out[n++] = 0x40 | 31;
    } else {
        out[n++] = 0x0f;
        out[n++] = 31 - 15;
    }
    out[n++] = 16;
    memcpy(out + n, "application/grpc", 16);
    return n + 16;
}

static const char hex[] = "0123456789ABCDEF";

/* grpc-status 0 as put_field writes it (never indexed) */
static const uint8_t ok_trailers[] = {0x10, 11, 'g', 'r', 'p', 'c', '-', 's', 't', 'a', 't', 'u', 's', 1, '0'};

size_t sld_grpc_ok_trailers(sld_grpc_hpack_t *t, uint8_t *out) {
    if (t->at[SLD_GRPC_HP_OK] != 0) {
        out[0] = (uint8_t)(0x80 | t->at[SLD_GRPC_HP_OK]);
        return 1;
    }
    memcpy(out, ok_trailers, sizeof ok_trailers);
    if (table_add(t, SLD_GRPC_HP_OK))
        out[0] = 0x40; /* a literal with incremental indexing, a new name (RFC 7541 6.2.1) */
    return sizeof ok_trailers;
}

size_t sld_grpc_trailers(uint8_t *out, bool trailers_only, int status, const char *message) {
    if (!trailers_only && status == SLD_GRPC_OK && message == NULL) {
        memcpy(out, ok_trailers, sizeof ok_trailers);
        return sizeof ok_trailers;
    }
    size_t n = 0;
    if (trailers_only) {
        out[n++] = 0x88; /* :status 200, static table index 8 */
        n += put_field(out + n, "content-type", (const uint8_t *)"application/grpc", 16);
    }
    uint8_t digits[4];
    size_t nd = 0;
    unsigned s = status < 0 || status > 99 ? 2 : (unsigned)status; /* 2 UNKNOWN */
    if (s >= 10)
        digits[nd++] = (uint8_t)('0' + s / 10);
    digits[nd++] = (uint8_t)('0' + s % 10);
    n += put_field(out + n, "grpc-status", digits, nd);
    if (message != NULL) {
        /* gRPC's percent-encoding: printable ASCII but '%' as is */
        uint8_t enc[MESSAGE_MAX];
        size_t e = 0;
        for (const uint8_t *p = (const uint8_t *)message; *p && e + 3 <= sizeof enc; p++) {
            if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
                enc[e++] = *p;
            } else {
                enc[e++] = '%';
                enc[e++] = (uint8_t)hex[*p >> 4];
                enc[e++] = (uint8_t)hex[*p & 15];
            }
        }
        n += put_field(out + n, "grpc-message", enc, e);
    }
    return n;
}

/* Room for more bytes in out: a look before buf.c is asked (a call writes
 * two frames here). */
static uint8_t *room(sld_buf_t *out, size_t more) {
    if (out->cap - out->len < more && !sld_buf_reserve(out, more))
        return NULL;
    return (uint8_t *)out->data + out->len;
}

static void put_length(uint8_t *frame, size_t len) {
    frame[0] = (uint8_t)(len >> 16);
    frame[1] = (uint8_t)(len >> 8);
    frame[2] = (uint8_t)len;
}

void sld_grpc_put_headers(sld_grpc_hpack_t *t, const uint8_t *p, size_t keep, const uint8_t *fields, size_t nfields,
                          sld_buf_t *out) {
    uint8_t *o = room(out, 9 + keep + (fields != NULL ? nfields : SLD_GRPC_HEAD_MAX));
    if (o == NULL)
        return;
    memcpy(o, p, 9 + keep);
    if (fields != NULL)
        memcpy(o + 9 + keep, fields, nfields);
    else
        nfields = sld_grpc_answer_head(t, o + 9 + keep);
    put_length(o, keep + nfields);
    out->len += 9 + keep + nfields;
}

void sld_grpc_put_last_data(sld_grpc_hpack_t *t, const uint8_t *hd, const uint8_t *data, size_t len,
                            sld_buf_t *out) {
    size_t n = 9 + len;
    uint8_t *o = room(out, n + 9 + SLD_GRPC_OK_TRAILERS_MAX);
    if (o == NULL)
        return;
    memcpy(o, hd, 9);
    memcpy(o + 9, data, len);
    o[4] &= (uint8_t)~0x1; /* END_STREAM */
    uint8_t *tr = o + n;
    size_t tlen = sld_grpc_ok_trailers(t, tr + 9);
    put_length(tr, tlen);
    tr[3] = 0x1; /* HEADERS */
    tr[4] = 0x1 | 0x4; /* END_STREAM, END_HEADERS */
    memcpy(tr + 5, hd + 5, 4);
    out->len += n + 9 + tlen;
}
