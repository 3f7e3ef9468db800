/* test_grpc_encode.c -- RateLimitResponse written by hand
 * (server/grpc/grpc_encode.c) is byte for byte what protobuf-c's generated
 * pack writes for the same message: a table of responses (every field,
 * zero and absent values, the largest counts, several statuses, both header
 * lists, a raw body) and a seeded random loop over the same space. protobuf-c
 * unpacks every hand-written answer back to what was meant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "server/grpc/grpc_encode.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitResponse pb_response_t;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus pb_status_t;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit pb_limit_t;
typedef Envoy__Config__Core__V3__HeaderValue pb_header_t;

#define MAX_ITEMS 80

/* The reference: r filled into protobuf-c's structs (as the front did
 * before it wrote its answers by hand) and packed by the generated code. */
static uint8_t *pack_reference(const sld_grpc_response_t *r, size_t *len) {
    static pb_status_t st[MAX_ITEMS];
    static pb_status_t *stp[MAX_ITEMS];
    static pb_limit_t lim[MAX_ITEMS];
    static Google__Protobuf__Duration dur[MAX_ITEMS];
    static pb_header_t rh[MAX_ITEMS], qh[MAX_ITEMS];
    static pb_header_t *rhp[MAX_ITEMS], *qhp[MAX_ITEMS];
    assert_true(r->nstatuses <= MAX_ITEMS && r->nresponse_headers <= MAX_ITEMS && r->nrequest_headers <= MAX_ITEMS);
    pb_response_t m = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
    m.overall_code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)r->overall_code;
    for (size_t i = 0; i < r->nstatuses; i++) {
        const sld_grpc_status_t *s = &r->statuses[i];
        envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&st[i]);
        st[i].code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)s->code;
        if (s->has_limit) {
            envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&lim[i]);
            lim[i].name = (char *)(s->name ? s->name : "");
            lim[i].requests_per_unit = s->rpu;
            lim[i].unit = (Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit__Unit)s->unit;
            st[i].current_limit = &lim[i];
            st[i].limit_remaining = s->remaining;
            google__protobuf__duration__init(&dur[i]);
            sl_usec_t us = s->until_reset > 0 ? s->until_reset : 0;
            dur[i].seconds = us / SL_USEC_PER_SEC;
            dur[i].nanos = (int32_t)(us % SL_USEC_PER_SEC) * 1000;
            st[i].duration_until_reset = &dur[i];
        }
        stp[i] = &st[i];
    }
    m.n_statuses = r->nstatuses;
    m.statuses = stp;
    for (size_t i = 0; i < r->nresponse_headers; i++) {
        envoy__config__core__v3__header_value__init(&rh[i]);
        rh[i].key = (char *)r->response_headers[i].key;
        rh[i].value = (char *)r->response_headers[i].value;
        rhp[i] = &rh[i];
    }
    m.n_response_headers_to_add = r->nresponse_headers;
    m.response_headers_to_add = rhp;
    for (size_t i = 0; i < r->nrequest_headers; i++) {
        envoy__config__core__v3__header_value__init(&qh[i]);
        qh[i].key = (char *)r->request_headers[i].key;
        qh[i].value = (char *)r->request_headers[i].value;
        qhp[i] = &qh[i];
    }
    m.n_request_headers_to_add = r->nrequest_headers;
    m.request_headers_to_add = qhp;
    m.raw_body.len = r->raw_body_len;
    m.raw_body.data = (uint8_t *)r->raw_body;
    *len = envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&m);
    uint8_t *buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    assert_int_equal(envoy__service__ratelimit__v3__rate_limit_response__pack(&m, buf), *len);
    return buf;
}

static void dump(const char *what, const uint8_t *b, size_t n) {
    fprintf(stderr, "%s (%zu):", what, n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %02x", b[i]);
    fprintf(stderr, "\n");
}

/* The hand encoder against the reference: the same size (within the
 * bound), the same bytes, nothing written past the size, and protobuf-c
 * reads it back. */
static void same_bytes(const sld_grpc_response_t *r) {
    size_t want_len;
    uint8_t *want = pack_reference(r, &want_len);
    size_t size = sld_grpc_response_size(r);
    assert_true(sld_grpc_response_bound(r) >= size);
    uint8_t *got = malloc(size + 16);
    assert_non_null(got);
    memset(got, 0xA5, size + 16);
    size_t len = sld_grpc_response_write(r, got);
    if (len != want_len || size != want_len || memcmp(got, want, len) != 0) {
        dump("protobuf-c", want, want_len);
        dump("by hand   ", got, len);
    }
    assert_int_equal(size, want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(got[size + i], 0xA5);
    /* the same with the header fields' lengths given */
    static size_t lens[2 * MAX_ITEMS];
    for (size_t i = 0; i < r->nresponse_headers; i++) {
        lens[2 * i] = r->response_headers[i].key ? strlen(r->response_headers[i].key) : 0;
        lens[2 * i + 1] = r->response_headers[i].value ? strlen(r->response_headers[i].value) : 0;
    }
    sld_grpc_response_t given = *r;
    given.response_header_lens = lens;
    uint8_t *again = malloc(size + 1);
    assert_non_null(again);
    assert_int_equal(sld_grpc_response_size(&given), size);
    assert_int_equal(sld_grpc_response_write(&given, again), len);
    assert_memory_equal(again, want, len);
    free(again);
    pb_response_t *m = envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, len, got);
    assert_non_null(m);
    assert_int_equal(m->n_statuses, r->nstatuses);
    assert_int_equal(m->n_response_headers_to_add, r->nresponse_headers);
    assert_int_equal(m->n_request_headers_to_add, r->nrequest_headers);
    assert_int_equal(m->raw_body.len, r->raw_body_len);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(m, NULL);
    free(got);
    free(want);
}

static const sld_grpc_header_t ietf[] = {
    {"ratelimit-policy", "10;w=60"}, {"ratelimit", "limit=10, remaining=0, reset=59"}, {"retry-after", "59"}};

static void table(void **state) {
    (void)state;
    char long_name[300], long_value[20000];
    memset(long_name, 'n', sizeof long_name - 1), long_name[sizeof long_name - 1] = '\0';
    memset(long_value, 'v', sizeof long_value - 1), long_value[sizeof long_value - 1] = '\0';
    static const uint8_t body[] = {0, 1, 2, 0xff, 'x'};
    const sld_grpc_status_t every = {.code = SLD_GRPC_CODE_OVER_LIMIT, .has_limit = true, .name = "per_user",
                                     .rpu = 10, .unit = SLD_RLS_MINUTE, .remaining = 3,
                                     .until_reset = 59 * SL_USEC_PER_SEC + 250000};
    const sld_grpc_status_t zero_limit = {.has_limit = true}; /* present, every field zero */
    const sld_grpc_status_t no_limit = {.code = SLD_GRPC_CODE_OK, .remaining = 7}; /* remaining not sent */
    const sld_grpc_status_t large = {.code = SLD_GRPC_CODE_OK, .has_limit = true, .name = long_name,
                                     .rpu = UINT32_MAX, .unit = SLD_RLS_YEAR, .remaining = UINT32_MAX,
                                     .until_reset = INT64_MAX};
    const sld_grpc_status_t negative = {.code = -1, .has_limit = true, .name = NULL, .unit = -7,
                                        .until_reset = -5}; /* enums sign-extended; a past reset is 0 */
    const sld_grpc_status_t whole_seconds = {.code = 1, .has_limit = true, .name = "", .rpu = 1,
                                             .unit = SLD_RLS_WEEK, .until_reset = 3 * SL_USEC_PER_SEC};
    const sld_grpc_status_t under_a_second = {.code = 1, .has_limit = true, .rpu = 128, .unit = 1,
                                              .remaining = 127, .until_reset = 1};
    const sld_grpc_status_t several[] = {every, zero_limit, no_limit, large, negative, whole_seconds, under_a_second};
    const sld_grpc_header_t odd[] = {{"", ""}, {NULL, NULL}, {"x-empty", ""}, {"", "no key"},
                                     {"x-long", long_value}};
    sld_grpc_status_t many[64];
    for (size_t i = 0; i < 64; i++)
        many[i] = (i % 2) ? every : no_limit;
    const sld_grpc_response_t cases[] = {
        {0},
        {.overall_code = SLD_GRPC_CODE_OK},
        {.overall_code = SLD_GRPC_CODE_OVER_LIMIT, .statuses = &every, .nstatuses = 1},
        {.statuses = &zero_limit, .nstatuses = 1},
        {.statuses = &no_limit, .nstatuses = 1},
        {.statuses = &large, .nstatuses = 1},
        {.statuses = &negative, .nstatuses = 1, .overall_code = -3},
        {.overall_code = SLD_GRPC_CODE_OK, .statuses = several, .nstatuses = 7, .response_headers = ietf,
         .nresponse_headers = 3},
        {.overall_code = SLD_GRPC_CODE_OVER_LIMIT, .statuses = several, .nstatuses = 7, .response_headers = ietf,
         .nresponse_headers = 3, .request_headers = odd, .nrequest_headers = 5, .raw_body = body,
         .raw_body_len = sizeof body},
        {.response_headers = odd, .nresponse_headers = 5},
        {.raw_body = body, .raw_body_len = 0}, /* an empty body is not sent */
        {.overall_code = 1, .statuses = many, .nstatuses = 64, .response_headers = ietf, .nresponse_headers = 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same_bytes(&cases[i]);
}

/* ---- the seeded random loop ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void) { /* splitmix64: the same sequence on every machine */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A value near the edges of the varint lengths more often than not. */
static uint64_t rnd_value(void) {
    switch (rnd() % 4) {
    case 0: return 0;
    case 1: return rnd() % 300;
    case 2: return (1ULL << (rnd() % 64)) - (rnd() % 2);
    default: return rnd();
    }
}

static char pool[MAX_ITEMS * 5][400];

static const char *rnd_string(size_t slot) {
    if (rnd() % 6 == 0)
        return NULL;
    size_t len = rnd() % 4 == 0 ? rnd() % sizeof pool[0] : rnd() % 12;
    for (size_t i = 0; i < len; i++)
        pool[slot][i] = (char)(1 + rnd() % 255); /* any byte but NUL */
    pool[slot][len] = '\0';
    return pool[slot];
}

static void random_responses(void **state) {
    (void)state;
    static sld_grpc_status_t st[MAX_ITEMS];
    static sld_grpc_header_t rh[MAX_ITEMS], qh[MAX_ITEMS];
    static uint8_t body[512];
    rng_state = 0x5eed2216;
    for (int round = 0; round < 3000; round++) {
        sld_grpc_response_t r = {.overall_code = (int)(int32_t)rnd_value()};
        r.nstatuses = rnd() % 3 == 0 ? rnd() % MAX_ITEMS : rnd() % 4;
        for (size_t i = 0; i < r.nstatuses; i++)
            st[i] = (sld_grpc_status_t){.code = (int)(int32_t)rnd_value(), .has_limit = rnd() % 4 != 0,
                                        .name = rnd_string(i), .rpu = (uint32_t)rnd_value(),
                                        .unit = (int)(int32_t)rnd_value(), .remaining = (uint32_t)rnd_value(),
                                        .until_reset = (sl_usec_t)rnd_value()};
        r.statuses = st;
        r.nresponse_headers = rnd() % 5;
        r.nrequest_headers = rnd() % 8 == 0 ? rnd() % MAX_ITEMS : 0;
        for (size_t i = 0; i < r.nresponse_headers; i++)
            rh[i] = (sld_grpc_header_t){rnd_string(MAX_ITEMS + i), rnd_string(2 * MAX_ITEMS + i)};
        for (size_t i = 0; i < r.nrequest_headers; i++)
            qh[i] = (sld_grpc_header_t){rnd_string(3 * MAX_ITEMS + i), rnd_string(4 * MAX_ITEMS + i)};
        r.response_headers = rh;
        r.request_headers = qh;
        r.raw_body_len = rnd() % 4 == 0 ? rnd() % sizeof body : 0;
        for (size_t i = 0; i < r.raw_body_len; i++)
            body[i] = (uint8_t)rnd();
        r.raw_body = body;
        same_bytes(&r);
    }
}

/* Every key, value and limit name length from 0 to 40 (each short copy's
 * size class, and the one-byte lengths' edge), with the status name's
 * length given as the decider gives it: protobuf-c's bytes. */
static void every_short_length(void **state) {
    (void)state;
    static char key[64], value[64], name[64];
    for (size_t k = 0; k <= 40; k++) {
        for (size_t v = 0; v <= 40; v++) {
            memset(key, 'k', k);
            key[k] = '\0';
            for (size_t i = 0; i < v; i++)
                value[i] = (char)('a' + (k + i) % 26);
            value[v] = '\0';
            memset(name, 'n', v);
            name[v] = '\0';
            sld_grpc_status_t st = {.code = 1, .has_limit = true, .name = name, .name_len = v, .rpu = 10,
                                    .unit = 2, .remaining = 3, .until_reset = 1500000};
            sld_grpc_header_t h[2] = {{key, value}, {value, key}};
            sld_grpc_response_t r = {.overall_code = 1, .statuses = &st, .nstatuses = 1,
                                     .response_headers = h, .nresponse_headers = 2};
            same_bytes(&r);
        }
    }
}

/* The malloc'd form the front's callers had: the same bytes. */
static void malloc_form(void **state) {
    (void)state;
    const sld_grpc_status_t s = {.code = 2, .has_limit = true, .name = "n", .rpu = 5, .unit = 2, .remaining = 0,
                                 .until_reset = 1500000};
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(sld_grpc_rls_encode(2, &s, 1, ietf, 3, &buf, &len), SL_OK);
    sld_grpc_response_t r = {.overall_code = 2, .statuses = &s, .nstatuses = 1, .response_headers = ietf,
                             .nresponse_headers = 3};
    size_t want_len;
    uint8_t *want = pack_reference(&r, &want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(buf, want, len);
    free(buf);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table),
        cmocka_unit_test(random_responses),
        cmocka_unit_test(every_short_length),
        cmocka_unit_test(malloc_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
