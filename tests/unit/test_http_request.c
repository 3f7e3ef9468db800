/* test_http_request.c -- reading a request's headers as every HTTP front
 * does (src/server/http/http_request.c): h2o's lookup (X-Forwarded-For
 * lines joined, the last X-Real-IP), the any-case lookup behind
 * header:<Name>, the forwarded fields and the 401 test. No daemon, no clock.
 */
#include <h2o.h>
#undef MIN /* sys/param.h's; rig.h has its own */

#include "rig.h"
#include "server/http/http_request.h"

/* A lookup by lower-case name over a fixed table, remembering the name it
 * was asked for last. */
typedef struct fake_headers {
    const char *names[4];
    const char *values[4];
    char asked[256];
} fake_headers_t;

static sld_span_t fake_find(void *ctx, const char *lower, size_t len) {
    fake_headers_t *f = ctx;
    memcpy(f->asked, lower, len);
    f->asked[len] = '\0';
    for (size_t i = 0; i < 4 && f->names[i]; i++)
        if (strlen(f->names[i]) == len && memcmp(f->names[i], lower, len) == 0)
            return (sld_span_t){f->values[i], strlen(f->values[i])};
    return (sld_span_t){NULL, 0};
}

static void assert_span(sld_span_t s, const char *want) {
    if (want == NULL) {
        assert_null(s.ptr);
        return;
    }
    assert_non_null(s.ptr);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
}

static void any_case_asks_by_the_lower_case_name(void **state) {
    (void)state;
    fake_headers_t f = {.names = {"x-tenant"}, .values = {"acme"}};
    sld_http_headers_t h = {.find = fake_find, .ctx = &f};
    assert_span(sld_http_header_any_case(&h, "X-Tenant", 8), "acme");
    assert_string_equal(f.asked, "x-tenant");
    assert_span(sld_http_header_any_case(&h, "X-Other", 7), NULL);
    /* a name longer than the scratch space is absent, never cut short */
    char longer[300];
    memset(longer, 'A', sizeof longer);
    f.asked[0] = '\0';
    assert_span(sld_http_header_any_case(&h, longer, sizeof longer), NULL);
    assert_string_equal(f.asked, "");
    /* no lookup at all: every header is absent */
    sld_http_headers_t none = {0};
    assert_span(sld_http_header_any_case(&none, "X-Tenant", 8), NULL);
}

static void forwarded_reads_what_every_front_reads(void **state) {
    (void)state;
    fake_headers_t f = {.names = {"x-forwarded-for", "x-real-ip", "x-api-key"},
                        .values = {"198.51.100.7, 10.0.0.1", "10.0.0.1", "k1"}};
    sld_http_headers_t h = {.find = fake_find, .ctx = &f};
    struct sockaddr_in peer = {.sin_family = AF_INET};
    sld_forwarded_t fw;
    memset(&fw, 0xff, sizeof fw); /* every field is written */
    sld_http_forwarded(&fw, &h, (const struct sockaddr *)&peer, "X-API-Key");
    assert_ptr_equal(fw.peer, &peer);
    assert_span(fw.x_forwarded_for, "198.51.100.7, 10.0.0.1");
    assert_span(fw.x_real_ip, "10.0.0.1");
    assert_span(fw.user, "k1");
    assert_span(fw.uri, NULL);
    assert_span(fw.method, NULL);
    assert_span(fw.route, NULL);
    assert_ptr_equal(fw.header_ctx, &h);
    assert_span(fw.header(fw.header_ctx, "X-Real-IP", 9), "10.0.0.1");
}

static void user_missing_only_when_the_policy_keys_on_it(void **state) {
    (void)state;
    static char ip[] = "ip", user[] = "user";
    sld_policy_t keyed = {.key_attrs = {ip, user}, .nkey_attrs = 2};
    sld_policy_t unkeyed = {.key_attrs = {ip}, .nkey_attrs = 1};
    sld_forwarded_t none = {0}, empty = {.user = {"", 0}}, some = {.user = {"k1", 2}};
    assert_true(sld_http_user_missing(&keyed, &none));
    assert_true(sld_http_user_missing(&keyed, &empty));
    assert_false(sld_http_user_missing(&keyed, &some));
    assert_false(sld_http_user_missing(&unkeyed, &none));
}

static void add(h2o_req_t *req, const char *name, const char *value) {
    h2o_add_header_by_str(&req->pool, &req->headers, name, strlen(name), 1, NULL, value, strlen(value));
}

static void h2o_lookup_joins_forwarded_for_and_takes_the_last_real_ip(void **state) {
    (void)state;
    h2o_req_t req;
    memset(&req, 0, sizeof req);
    h2o_mem_init_pool(&req.pool);
    add(&req, "x-forwarded-for", "198.51.100.7");
    add(&req, "x-real-ip", "203.0.113.1");
    add(&req, "x-forwarded-for", "10.0.0.1");
    add(&req, "x-real-ip", "10.0.0.2");
    add(&req, "x-forwarded-for", "10.0.0.3");
    add(&req, "x-tenant", "acme");
    add(&req, "x-tenant", "other");
    assert_span(sld_http_request_header(&req, "x-forwarded-for", 15), "198.51.100.7, 10.0.0.1, 10.0.0.3");
    assert_span(sld_http_request_header(&req, "x-real-ip", 9), "10.0.0.2");
    assert_span(sld_http_request_header(&req, "x-tenant", 8), "acme"); /* any other: the first line */
    assert_span(sld_http_request_header(&req, "x-missing", 9), NULL);
    h2o_mem_clear_pool(&req.pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(any_case_asks_by_the_lower_case_name),
        cmocka_unit_test(forwarded_reads_what_every_front_reads),
        cmocka_unit_test(user_missing_only_when_the_policy_keys_on_it),
        cmocka_unit_test(h2o_lookup_joins_forwarded_for_and_takes_the_last_real_ip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
