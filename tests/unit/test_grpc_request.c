/* test_grpc_request.c -- the hand-written RateLimitRequest reader
 * (server/grpc/grpc_request.c) on a table of hostile and odd encodings:
 * each case answers as expected, and exactly as protobuf-c's decoding
 * (sld_grpc_rls_decode_pb) answers the same bytes. The fuzz target
 * fuzz/fuzz_grpc_request.c holds the two to each other on any bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/grpc/grpc_messages.h"

/* ---- a message built field by field ---------------------------------------------------------- */

typedef struct msg {
    uint8_t b[8192];
    size_t n;
} msg_t;

static msg_t *raw(msg_t *m, const void *p, size_t n) {
    memcpy(m->b + m->n, p, n);
    m->n += n;
    return m;
}

static msg_t *varint(msg_t *m, uint64_t v) {
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        m->b[m->n++] = b | (v ? 0x80 : 0);
    } while (v);
    return m;
}

static msg_t *tag(msg_t *m, uint32_t num, unsigned wt) { return varint(m, (uint64_t)num << 3 | wt); }
static msg_t *uint_field(msg_t *m, uint32_t num, uint64_t v) { return varint(tag(m, num, 0), v); }
static msg_t *bytes_field(msg_t *m, uint32_t num, const void *p, size_t n) {
    return raw(varint(tag(m, num, 2), n), p, n);
}
static msg_t *str_field(msg_t *m, uint32_t num, const char *s) { return bytes_field(m, num, s, strlen(s)); }
static msg_t *sub(msg_t *m, uint32_t num, const msg_t *inner) { return bytes_field(m, num, inner->b, inner->n); }

/* Entry {key, value} */
static msg_t entry(const char *k, const char *v) {
    msg_t e = {.n = 0};
    str_field(&e, 1, k);
    str_field(&e, 2, v);
    return e;
}

/* descriptor { entries {key: k, value: v} } */
static msg_t desc1(const char *k, const char *v) {
    msg_t e = entry(k, v), d = {.n = 0};
    sub(&d, 1, &e);
    return d;
}

/* RateLimitRequest { domain: "d", descriptors: [d] } */
static msg_t request(const msg_t *d) {
    msg_t r = {.n = 0};
    str_field(&r, 1, "d");
    sub(&r, 2, d);
    return r;
}

/* ---- the two decoders side by side ----------------------------------------------------------- */

typedef struct both {
    int rc;
    sld_grpc_rls_request_t r;
    char err[160];
} both_t;

/* Decodes m with the hand reader into *out, and with protobuf-c: they
 * must agree. */
static void decode(const msg_t *m, both_t *out) {
    sld_grpc_rls_request_t ref;
    char err_pb[160] = "";
    /* each its own allocation: ASan sees any read past the bytes */
    uint8_t *copy = malloc(m->n ? m->n : 1);
    memcpy(copy, m->b, m->n);
    out->err[0] = '\0';
    out->rc = sld_grpc_rls_decode(copy, m->n, &out->r, out->err, sizeof out->err);
    int rc_pb = sld_grpc_rls_decode_pb(copy, m->n, &ref, err_pb, sizeof err_pb);
    free(copy);
    const char *what = sld_grpc_rls_differ(out->rc, &out->r, out->err, rc_pb, &ref, err_pb);
    if (what != NULL)
        fail_msg("the hand reader and protobuf-c differ: %s (\"%s\" / \"%s\")", what, out->err, err_pb);
    sld_grpc_rls_request_free(&ref);
}

static bool span_is(sld_span_t s, const char *lit) { return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0; }

static void malformed(const msg_t *m) {
    both_t b;
    decode(m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "the request is not a RateLimitRequest (malformed protobuf)");
}

/* ---- the cases -------------------------------------------------------------------------------- */

static void plain_request(void **state) {
    (void)state;
    msg_t d = desc1("k", "1"), m = request(&d);
    both_t b;
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(span_is(b.r.domain, "d"));
    assert_int_equal(b.r.ndescriptors, 1);
    assert_int_equal(b.r.descriptors[0].nentries, 1);
    assert_true(span_is(b.r.descriptors[0].entries[0].key, "k"));
    assert_true(span_is(b.r.descriptors[0].entries[0].value, "1"));
    assert_false(b.r.descriptors[0].has_limit);
    assert_int_equal(b.r.descriptors[0].hits, 1);
    sld_grpc_rls_request_free(&b.r);
}

/* field 9 of wire type wt with a body of its kind appended to m */
static void unknown(msg_t *m, unsigned wt) {
    static const uint8_t f64[8] = {1, 2, 3, 4, 5, 6, 7, 8}, f32[4] = {1, 2, 3, 4};
    tag(m, 9, wt);
    if (wt == 0)
        varint(m, 300);
    else if (wt == 1)
        raw(m, f64, 8);
    else if (wt == 2)
        raw(varint(m, 2), "xy", 2);
    else if (wt == 5)
        raw(m, f32, 4);
}

/* Unknown fields of every wire type protobuf-c knows are skipped, in
 * every message; groups and wire types 6 and 7 are refused. */
static void unknown_fields(void **state) {
    (void)state;
    for (unsigned wt = 0; wt < 8; wt++) {
        /* at: which message gets the field (entry, limit, hits_addend, descriptor, request) */
        for (int at = 0; at < 5; at++) {
            msg_t e = entry("k", "v"), lim = {.n = 0}, hits = {.n = 0}, d = {.n = 0};
            uint_field(&lim, 1, 9);
            uint_field(&hits, 1, 4);
            msg_t *in[] = {&e, &lim, &hits, &d};
            if (at < 4 && at != 3)
                unknown(in[at], wt);
            sub(sub(sub(&d, 1, &e), 2, &lim), 3, &hits);
            if (at == 3)
                unknown(&d, wt);
            msg_t m = request(&d);
            if (at == 4)
                unknown(&m, wt);
            both_t b;
            decode(&m, &b);
            if (wt == 0 || wt == 1 || wt == 2 || wt == 5) {
                assert_int_equal(b.rc, SL_OK);
                assert_true(span_is(b.r.descriptors[0].entries[0].key, "k"));
                assert_int_equal(b.r.descriptors[0].limit_rpu, 9);
                assert_int_equal(b.r.descriptors[0].hits, 4);
                sld_grpc_rls_request_free(&b.r);
            } else {
                assert_int_equal(b.rc, SL_EINVAL);
            }
        }
    }
}

/* A singular field given again: the last wins, strings too; message fields
 * (limit, hits_addend) the last one whole, as protobuf-c's merge of proto3
 * scalars comes out. Fields in any order, descriptors among them. */
static void repeated_and_out_of_order(void **state) {
    (void)state;
    msg_t e1 = entry("a", "1"), e2 = entry("b", "2"), lim1 = {.n = 0}, lim2 = {.n = 0}, h1 = {.n = 0},
          h2 = {.n = 0}, d = {.n = 0}, m = {.n = 0};
    uint_field(uint_field(&lim1, 1, 5), 2, 2);   /* 5 per minute */
    uint_field(&lim2, 2, 3);                     /* per hour, no requests_per_unit */
    uint_field(&h1, 1, 3);
    /* h2 empty: hits_addend {} */
    sub(&d, 3, &h1);
    sub(&d, 2, &lim1);
    sub(&d, 1, &e1);
    sub(&d, 2, &lim2);
    sub(&d, 1, &e2);
    sub(&d, 3, &h2);
    uint_field(&m, 3, 7);
    str_field(&m, 1, "first");
    sub(&m, 2, &d);
    str_field(&m, 1, "second");
    msg_t d2 = desc1("c", "3");
    sub(&m, 2, &d2);
    uint_field(&m, 3, 8);
    both_t b;
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(span_is(b.r.domain, "second"));
    assert_int_equal(b.r.ndescriptors, 2);
    const sld_grpc_descriptor_t *x = &b.r.descriptors[0];
    assert_int_equal(x->nentries, 2);
    assert_true(span_is(x->entries[0].key, "a") && span_is(x->entries[1].key, "b"));
    assert_true(x->has_limit);
    assert_int_equal(x->limit_rpu, 0); /* the second limit, whole */
    assert_int_equal(x->limit_unit, 3);
    assert_int_equal(x->hits, 1);      /* the second hits_addend {}: 0 counts as 1 */
    assert_int_equal(b.r.descriptors[1].hits, 8);
    sld_grpc_rls_request_free(&b.r);

    /* within one message the last scalar wins, zero included */
    msg_t lim3 = {.n = 0}, d3 = desc1("k", "v");
    uint_field(uint_field(&lim3, 1, 5), 1, 0);
    sub(&d3, 2, &lim3);
    m = request(&d3);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(b.r.descriptors[0].has_limit);
    assert_int_equal(b.r.descriptors[0].limit_rpu, 0);
    sld_grpc_rls_request_free(&b.r);

    /* an entry's key given twice */
    msg_t e3 = {.n = 0}, d4 = {.n = 0};
    str_field(str_field(str_field(&e3, 1, "old"), 2, "v"), 1, "new");
    sub(&d4, 1, &e3);
    m = request(&d4);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(span_is(b.r.descriptors[0].entries[0].key, "new"));
    sld_grpc_rls_request_free(&b.r);
}

/* Varints: 10 bytes at most (the value's low 32 bits for a uint32 and an
 * enum, 64 for a uint64), one more or one cut short refused. */
static void varints(void **state) {
    (void)state;
    msg_t d = desc1("k", "v"), m = request(&d);
    static const uint8_t ten[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    raw(&m, ten, sizeof ten); /* hits_addend: 2^64 - 1 */
    both_t b;
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_int_equal(b.r.descriptors[0].hits, UINT32_MAX);
    sld_grpc_rls_request_free(&b.r);

    msg_t lim = {.n = 0}, h = {.n = 0}, d2 = desc1("k", "v");
    uint_field(uint_field(&lim, 1, (1ull << 32) + 6), 2, (1ull << 35) + 4);
    raw(&h, ten, sizeof ten);
    h.b[0] = 0x08; /* value = 2^64 - 1 */
    sub(sub(&d2, 2, &lim), 3, &h);
    m = request(&d2);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_int_equal(b.r.descriptors[0].limit_rpu, 6);
    assert_int_equal(b.r.descriptors[0].limit_unit, 4);
    assert_int_equal(b.r.descriptors[0].hits, UINT64_MAX);
    sld_grpc_rls_request_free(&b.r);

    /* eleven bytes */
    static const uint8_t eleven[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x01};
    m = request(&d);
    malformed(raw(&m, eleven, sizeof eleven));
    /* cut short, at the end and inside a sub-message */
    m = request(&d);
    malformed(raw(&m, "\x18\x80", 2));
    msg_t bad_lim = {.n = 0}, d3 = desc1("k", "v");
    raw(&bad_lim, "\x08\x80", 2);
    sub(&d3, 2, &bad_lim);
    m = request(&d3);
    malformed(&m);
    /* a varint where a string or message belongs, and the other way round
     * (a packed hits_addend) */
    m = request(&d);
    malformed(uint_field(&m, 1, 1));
    m = request(&d);
    malformed(uint_field(&m, 2, 1));
    m = request(&d);
    malformed(bytes_field(&m, 3, "\x05", 1));
    msg_t d4 = desc1("k", "v");
    malformed((m = request(uint_field(&d4, 3, 1)), &m));
    /* the UInt64Value given as a fixed64 */
    msg_t h2 = {.n = 0}, d5 = desc1("k", "v");
    raw(tag(&h2, 1, 1), "\1\0\0\0\0\0\0\0", 8);
    sub(&d5, 3, &h2);
    m = request(&d5);
    malformed(&m);
}

/* Bytes appended to a good request, and what comes of it. */
typedef struct tail {
    const char *what, *bytes;
    size_t len;
    bool ok;
} tail_t;

#define TAIL(what, lit, ok) {what, lit, sizeof(lit) - 1, ok}

/* Tags: at most 5 bytes, the first byte carrying a field number; lengths
 * at most 5 bytes and within what is left. */
static void tags_and_lengths(void **state) {
    (void)state;
    static const tail_t tails[] = {
        TAIL("field 1 as a 5-byte tag, a padded 2-byte length", "\x8a\x80\x80\x80\x00\x81\x00x", true),
        TAIL("a 6-byte tag", "\x8a\x80\x80\x80\x80\x00\x00", false),
        TAIL("field 0 in the first byte", "\x00\x00", false),
        TAIL("field 0 in the first byte, wire type 2", "\x02\x00", false),
        TAIL("field 0 over two bytes: unknown, skipped", "\x80\x00\x05", true),
        TAIL("a huge field number, unknown", "\xf8\xff\xff\xff\x7f\x01", true),
        TAIL("a length past the end", "\x0a\x05x", false),
        TAIL("a 6-byte length", "\x0a\x80\x80\x80\x80\x80\x00", false),
        TAIL("a length of 2^35 - 1", "\x0a\xff\xff\xff\xff\x0f", false),
        TAIL("a fixed64 cut short", "\x49\x01\x02\x03", false),
        TAIL("a fixed32 cut short", "\x4d\x01\x02", false),
    };
    msg_t d = desc1("k", "v"), m;
    both_t b;
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        m = request(&d);
        raw(&m, tails[i].bytes, tails[i].len);
        decode(&m, &b);
        if (b.rc != (tails[i].ok ? SL_OK : SL_EINVAL))
            fail_msg("%s: %s", tails[i].what, b.err);
        if (!tails[i].ok)
            assert_string_equal(b.err, "the request is not a RateLimitRequest (malformed protobuf)");
        sld_grpc_rls_request_free(&b.r);
    }
    /* the domain given last, as a 5-byte tag: "x" */
    m = request(&d);
    raw(&m, "\x8a\x80\x80\x80\x00\x81\x00x", 8);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(span_is(b.r.domain, "x"));
    sld_grpc_rls_request_free(&b.r);
    /* a 5-byte length of 0: an empty domain, the last one given */
    m = request(&d);
    raw(&m, "\x0a\x80\x80\x80\x80\x00", 6);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "the domain is empty");
    /* lengths past the end nested */
    m = request(&d);
    m.b[4] = 0x09; /* the descriptor claims one byte more than there is */
    malformed(&m);
    m = request(&d);
    m.b[6] = 0x07; /* its entry claims more than the descriptor holds */
    malformed(&m);
}

/* Strings end at their first NUL, as protobuf-c's C strings are read; an
 * overlong key is the decision's to refuse (limits.max_key_bytes), not the
 * reader's. */
static void strings(void **state) {
    (void)state;
    both_t b;
    msg_t e = {.n = 0}, d = {.n = 0}, m;
    bytes_field(&e, 1, "k\0x", 3);
    bytes_field(&e, 2, "v\0y", 3);
    sub(&d, 1, &e);
    m = (msg_t){.n = 0};
    bytes_field(&m, 1, "dom\0ain", 7);
    sub(&m, 2, &d);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_true(span_is(b.r.domain, "dom"));
    assert_true(span_is(b.r.descriptors[0].entries[0].key, "k"));
    assert_true(span_is(b.r.descriptors[0].entries[0].value, "v"));
    sld_grpc_rls_request_free(&b.r);

    e = (msg_t){.n = 0}, d = (msg_t){.n = 0};
    bytes_field(&e, 1, "\0k", 2);
    sub(&d, 1, &e);
    m = request(&d);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "descriptor 0: entry 0 has an empty key");

    m = (msg_t){.n = 0};
    bytes_field(&m, 1, "\0", 1);
    msg_t d1 = desc1("k", "v");
    sub(&m, 2, &d1);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "the domain is empty");

    static char big[4000];
    memset(big, 'k', sizeof big - 1);
    msg_t dbig = desc1(big, "v");
    m = request(&dbig);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_int_equal(b.r.descriptors[0].entries[0].key.len, sizeof big - 1);
    sld_grpc_rls_request_free(&b.r);
}

/* The bounds: 64 descriptors, 32 entries each; none, and empty. */
static void bounds(void **state) {
    (void)state;
    both_t b;
    msg_t m = {.n = 0}, d = desc1("k", "v");
    str_field(&m, 1, "d");
    for (int i = 0; i < SLD_GRPC_MAX_DESCRIPTORS; i++)
        sub(&m, 2, &d);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_int_equal(b.r.ndescriptors, SLD_GRPC_MAX_DESCRIPTORS);
    sld_grpc_rls_request_free(&b.r);
    sub(&m, 2, &d);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "65 descriptors: at most 64");
    /* past the bound, the rest is still read: malformed wins */
    malformed(raw(&m, "\x12\x05", 2));

    msg_t e = entry("k", "v"), many = {.n = 0};
    for (int i = 0; i < SLD_GRPC_MAX_ENTRIES; i++)
        sub(&many, 1, &e);
    m = request(&many);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_OK);
    assert_int_equal(b.r.descriptors[0].nentries, SLD_GRPC_MAX_ENTRIES);
    sld_grpc_rls_request_free(&b.r);
    sub(&many, 1, &e);
    m = request(&many);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "descriptor 0 has too many entries (at most 32)");

    msg_t empty = {.n = 0};
    decode(&empty, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "the domain is empty");
    m = request(&empty);
    decode(&m, &b);
    assert_int_equal(b.rc, SL_EINVAL);
    assert_string_equal(b.err, "descriptor 0 has no entries");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_request), cmocka_unit_test(unknown_fields),
        cmocka_unit_test(repeated_and_out_of_order), cmocka_unit_test(varints),
        cmocka_unit_test(tags_and_lengths), cmocka_unit_test(strings),
        cmocka_unit_test(bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
