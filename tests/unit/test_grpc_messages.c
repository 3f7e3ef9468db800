/* test_grpc_messages.c -- the gRPC front's protobuf <-> plain struct mapping
 * (server/grpc/grpc_messages.c): requests packed by protobuf-c's generated
 * code decode to what they carry (hits_addend resolved as Envoy's reference
 * service does), bad ones are refused with a reason, every truncated prefix
 * of a good one is handled without a crash; responses unpack to what was
 * encoded; limits map to Envoy's units. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_encode.h"
#include "server/grpc/grpc_messages.h"

typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor pb_descriptor_t;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__Entry pb_entry_t;

/* A request of two descriptors: {user=alice, path=/a} with a limit override
 * and hits_addend 5, and {ip=} with none; request hits_addend `hits`. */
static uint8_t *pack_request(const char *domain, uint32_t hits, size_t *len) {
    Envoy__Service__Ratelimit__V3__RateLimitRequest m = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_REQUEST__INIT;
    pb_entry_t e[3];
    pb_entry_t *ep0[2] = {&e[0], &e[1]}, *ep1[1] = {&e[2]};
    for (int i = 0; i < 3; i++)
        envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__entry__init(&e[i]);
    /* protobuf-c's strings are char *, never written through when packing */
    e[0].key = (char *)"user", e[0].value = (char *)"alice";
    e[1].key = (char *)"path", e[1].value = (char *)"/a";
    e[2].key = (char *)"ip", e[2].value = (char *)"";
    pb_descriptor_t d[2];
    envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__init(&d[0]);
    envoy__extensions__common__ratelimit__v3__rate_limit_descriptor__init(&d[1]);
    Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor__RateLimitOverride o =
        ENVOY__EXTENSIONS__COMMON__RATELIMIT__V3__RATE_LIMIT_DESCRIPTOR__RATE_LIMIT_OVERRIDE__INIT;
    o.requests_per_unit = 42;
    o.unit = ENVOY__TYPE__V3__RATE_LIMIT_UNIT__HOUR;
    Google__Protobuf__UInt64Value h = GOOGLE__PROTOBUF__UINT64_VALUE__INIT;
    h.value = 5;
    d[0].n_entries = 2, d[0].entries = ep0, d[0].limit = &o, d[0].hits_addend = &h;
    d[1].n_entries = 1, d[1].entries = ep1;
    pb_descriptor_t *dp[2] = {&d[0], &d[1]};
    m.domain = (char *)domain;
    m.n_descriptors = 2;
    m.descriptors = dp;
    m.hits_addend = hits;
    *len = envoy__service__ratelimit__v3__rate_limit_request__get_packed_size(&m);
    uint8_t *buf = malloc(*len);
    envoy__service__ratelimit__v3__rate_limit_request__pack(&m, buf);
    return buf;
}

static bool span_is(sld_span_t s, const char *lit) { return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0; }

static void decodes_every_field(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = pack_request("edge", 0, &len);
    sld_grpc_rls_request_t r;
    char err[128] = "";
    assert_int_equal(sld_grpc_rls_decode(buf, len, &r, err, sizeof err), SL_OK);
    assert_true(span_is(r.domain, "edge"));
    assert_int_equal(r.ndescriptors, 2);
    const sld_grpc_descriptor_t *d = &r.descriptors[0];
    assert_int_equal(d->nentries, 2);
    assert_true(span_is(d->entries[0].key, "user") && span_is(d->entries[0].value, "alice"));
    assert_true(span_is(d->entries[1].key, "path") && span_is(d->entries[1].value, "/a"));
    assert_true(d->has_limit);
    assert_int_equal(d->limit_rpu, 42);
    assert_int_equal(d->limit_unit, SLD_RLS_HOUR);
    assert_int_equal(d->hits, 5); /* its own hits_addend */
    d = &r.descriptors[1];
    assert_int_equal(d->nentries, 1);
    assert_true(span_is(d->entries[0].key, "ip") && span_is(d->entries[0].value, ""));
    assert_false(d->has_limit);
    assert_int_equal(d->hits, 1); /* the request's 0 counts as 1 */
    char *key;
    size_t key_len;
    assert_int_equal(sld_grpc_descriptor_key(&r.descriptors[0], 1024, &key, &key_len), SL_OK);
    assert_string_equal(key, "user=alice|path=/a");
    assert_int_equal(key_len, strlen("user=alice|path=/a"));
    free(key);
    assert_int_equal(sld_grpc_descriptor_key(&r.descriptors[0], 10, &key, &key_len), SL_ERANGE);
    sld_grpc_rls_request_free(&r);
    free(buf);

    buf = pack_request("edge", 7, &len);
    assert_int_equal(sld_grpc_rls_decode(buf, len, &r, err, sizeof err), SL_OK);
    assert_int_equal(r.descriptors[0].hits, 5);
    assert_int_equal(r.descriptors[1].hits, 7);
    sld_grpc_rls_request_free(&r);
    free(buf);
}

static void refuses_bad_requests(void **state) {
    (void)state;
    sld_grpc_rls_request_t r;
    char err[128];
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff};
    assert_int_equal(sld_grpc_rls_decode(junk, sizeof junk, &r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "malformed"));
    assert_null(r.descriptors);
    /* empty: no domain */
    assert_int_equal(sld_grpc_rls_decode(junk, 0, &r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "domain"));
    size_t len;
    uint8_t *buf = pack_request("", 0, &len);
    assert_int_equal(sld_grpc_rls_decode(buf, len, &r, err, sizeof err), SL_EINVAL);
    free(buf);
    /* domain only */
    static const uint8_t domain_only[] = {0x0a, 0x01, 'x'};
    assert_int_equal(sld_grpc_rls_decode(domain_only, sizeof domain_only, &r, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "there are no descriptors");
    /* a descriptor without entries: field 2, length 0 */
    static const uint8_t no_entries[] = {0x0a, 0x01, 'x', 0x12, 0x00};
    assert_int_equal(sld_grpc_rls_decode(no_entries, sizeof no_entries, &r, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "descriptor 0 has no entries");
    /* an entry with an empty key: descriptor { entries { value: "v" } } */
    static const uint8_t empty_key[] = {0x0a, 0x01, 'x', 0x12, 0x05, 0x0a, 0x03, 0x12, 0x01, 'v'};
    assert_int_equal(sld_grpc_rls_decode(empty_key, sizeof empty_key, &r, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "descriptor 0: entry 0 has an empty key");
}

static void every_truncated_prefix(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = pack_request("edge", 3, &len);
    for (size_t n = 0; n < len; n++) {
        /* its own allocation: ASan sees any read past the prefix */
        uint8_t *part = malloc(n ? n : 1);
        memcpy(part, buf, n);
        sld_grpc_rls_request_t r;
        char err[128];
        int rc = sld_grpc_rls_decode(part, n, &r, err, sizeof err);
        assert_true(rc == SL_OK || rc == SL_EINVAL);
        sld_grpc_rls_request_free(&r);
        free(part);
    }
    free(buf);
}

static void encodes_every_field(void **state) {
    (void)state;
    sld_grpc_status_t st[2] = {
        {.code = SLD_GRPC_CODE_OVER_LIMIT, .has_limit = true, .name = "edge", .rpu = 3,
         .unit = SLD_RLS_MINUTE, .remaining = 0, .until_reset = 12 * SL_USEC_PER_SEC + 500},
        {.code = SLD_GRPC_CODE_OK}};
    sld_grpc_header_t h[1] = {{"RateLimit", "\"edge\";r=0;t=12"}};
    uint8_t *buf;
    size_t len;
    assert_int_equal(sld_grpc_rls_encode(SLD_GRPC_CODE_OVER_LIMIT, st, 2, h, 1, &buf, &len), SL_OK);
    Envoy__Service__Ratelimit__V3__RateLimitResponse *m =
        envoy__service__ratelimit__v3__rate_limit_response__unpack(NULL, len, buf);
    assert_non_null(m);
    assert_int_equal(m->overall_code, 2);
    assert_int_equal(m->n_statuses, 2);
    assert_int_equal(m->statuses[0]->code, 2);
    assert_string_equal(m->statuses[0]->current_limit->name, "edge");
    assert_int_equal(m->statuses[0]->current_limit->requests_per_unit, 3);
    assert_int_equal(m->statuses[0]->current_limit->unit, 2);
    assert_int_equal(m->statuses[0]->limit_remaining, 0);
    assert_int_equal(m->statuses[0]->duration_until_reset->seconds, 12);
    assert_int_equal(m->statuses[0]->duration_until_reset->nanos, 500000);
    assert_int_equal(m->statuses[1]->code, 1);
    assert_null(m->statuses[1]->current_limit);
    assert_null(m->statuses[1]->duration_until_reset);
    assert_int_equal(m->n_response_headers_to_add, 1);
    assert_string_equal(m->response_headers_to_add[0]->key, "RateLimit");
    assert_string_equal(m->response_headers_to_add[0]->value, "\"edge\";r=0;t=12");
    assert_int_equal(m->n_request_headers_to_add, 0);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(m, NULL);
    free(buf);
}

static void health_messages(void **state) {
    (void)state;
    static const uint8_t req[] = {0x0a, 0x03, 'a', 'b', 'c'};
    char *service;
    assert_int_equal(sld_grpc_health_decode(req, sizeof req, &service), SL_OK);
    assert_string_equal(service, "abc");
    free(service);
    assert_int_equal(sld_grpc_health_decode(req, 0, &service), SL_OK);
    assert_string_equal(service, "");
    free(service);
    assert_int_equal(sld_grpc_health_decode(req, 3, &service), SL_EINVAL);
    uint8_t *buf;
    size_t len;
    assert_int_equal(sld_grpc_health_encode(1, &buf, &len), SL_OK);
    assert_int_equal(len, 2);
    assert_int_equal(buf[0], 0x08);
    assert_int_equal(buf[1], 1);
    free(buf);
}

static void limit_units(void **state) {
    (void)state;
    int unit;
    uint32_t rpu;
    sld_grpc_limit_unit(3, 60 * SL_USEC_PER_SEC, &unit, &rpu);
    assert_int_equal(unit, SLD_RLS_MINUTE);
    assert_int_equal(rpu, 3);
    sld_grpc_limit_unit(5, SL_USEC_PER_SEC, &unit, &rpu);
    assert_int_equal(unit, SLD_RLS_SECOND);
    assert_int_equal(rpu, 5);
    sld_grpc_limit_unit(10, 90 * SL_USEC_PER_SEC, &unit, &rpu); /* the same rate per hour */
    assert_int_equal(unit, SLD_RLS_HOUR);
    assert_int_equal(rpu, 400);
    sld_grpc_limit_unit(7, 7 * 86400 * SL_USEC_PER_SEC, &unit, &rpu);
    assert_int_equal(unit, SLD_RLS_WEEK);
    assert_int_equal(rpu, 7);
    sld_grpc_limit_unit(100, 500 * 1000, &unit, &rpu); /* 100 per 0.5 s */
    assert_int_equal(unit, SLD_RLS_SECOND);
    assert_int_equal(rpu, 200);
    sld_grpc_limit_unit(1, 2 * 365 * 86400 * SL_USEC_PER_SEC, &unit, &rpu); /* longer than a year */
    assert_int_equal(unit, SLD_RLS_YEAR);
    assert_int_equal(rpu, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decodes_every_field), cmocka_unit_test(refuses_bad_requests),
        cmocka_unit_test(every_truncated_prefix), cmocka_unit_test(encodes_every_field),
        cmocka_unit_test(health_messages), cmocka_unit_test(limit_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
