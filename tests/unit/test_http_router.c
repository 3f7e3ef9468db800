/* test_http_router.c -- the HTTP route table (src/server/http/http_router.c):
 * method bits, the four ways a row's path matches, the first matching row
 * owning its path, the Allow text of a 405, and the front's own groups
 * (http_routes.h) as the dispatcher sees them. Pure: no daemon, no clock.
 */
#include "rig.h"
#include "server/http/http_routes.h"

static void h_a(const sld_http_call_t *c) { (void)c; }
static void h_b(const sld_http_call_t *c) { (void)c; }
static void h_c(const sld_http_call_t *c) { (void)c; }

static const sld_http_route_t group_one[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/x", h_a, 0},
    {SLD_M_PUT, SLD_MATCH_NAME, "/things/", h_b, 0},
    {SLD_M_ANY, SLD_MATCH_UNDER, "/things/", h_c, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
static const sld_http_route_t group_two[] = {
    {SLD_M_POST, SLD_MATCH_PREFIX, "/p/", h_a, SLD_ROUTE_ADMIN},
    {SLD_M_DELETE, SLD_MATCH_EXACT, "/x", h_c, 0}, /* shadowed by group_one's /x */
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
static const sld_http_route_t *const table[] = {group_one, group_two, NULL};

static sld_span_t sp(const char *s) { return (sld_span_t){s, strlen(s)}; }

/* The row that owns path (NULL: 404), with its rest as a C string in rest. */
static const sld_http_route_t *find(const sld_http_route_t *const *groups, const char *path, char *rest) {
    /* an exact-length copy, so that a read past the path is caught by ASan */
    size_t n = strlen(path);
    char *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, path, n);
    sld_span_t r = {NULL, 0};
    const sld_http_route_t *route = sld_http_route_find(groups, (sld_span_t){copy, n}, &r);
    rest[0] = '\0';
    if (route) {
        assert_true(r.ptr >= copy && r.ptr + r.len == copy + n);
        memcpy(rest, r.ptr, r.len);
        rest[r.len] = '\0';
    }
    free(copy);
    return route;
}

static void method_bits(void **state) {
    (void)state;
    assert_int_equal(sld_http_method_bit(sp("GET")), SLD_M_GET);
    assert_int_equal(sld_http_method_bit(sp("HEAD")), SLD_M_HEAD);
    assert_int_equal(sld_http_method_bit(sp("POST")), SLD_M_POST);
    assert_int_equal(sld_http_method_bit(sp("PUT")), SLD_M_PUT);
    assert_int_equal(sld_http_method_bit(sp("DELETE")), SLD_M_DELETE);
    /* methods are case-sensitive (RFC 9110, 9.1); anything else is OTHER */
    assert_int_equal(sld_http_method_bit(sp("get")), SLD_M_OTHER);
    assert_int_equal(sld_http_method_bit(sp("PATCH")), SLD_M_OTHER);
    assert_int_equal(sld_http_method_bit(sp("GETX")), SLD_M_OTHER);
    assert_int_equal(sld_http_method_bit(sp("")), SLD_M_OTHER);
}

static void exact_and_prefix(void **state) {
    (void)state;
    char rest[128];
    assert_ptr_equal(find(table, "/x", rest), &group_one[0]);
    assert_string_equal(rest, "");
    assert_null(find(table, "/x/", rest));
    assert_null(find(table, "/xy", rest));
    assert_null(find(table, "/", rest));
    assert_null(find(table, "", rest));
    /* PREFIX: the path itself and anything after it */
    assert_ptr_equal(find(table, "/p/", rest), &group_two[0]);
    assert_string_equal(rest, "");
    assert_ptr_equal(find(table, "/p/a/b?c", rest), &group_two[0]);
    assert_string_equal(rest, "a/b?c");
    assert_null(find(table, "/p", rest));
    /* paths are bytes: nothing is decoded or folded */
    assert_null(find(table, "/%78", rest));
    assert_null(find(table, "/X", rest));
}

static void name_and_under(void **state) {
    (void)state;
    char rest[128], longname[80];
    assert_ptr_equal(find(table, "/things/abc", rest), &group_one[1]);
    assert_string_equal(rest, "abc");
    memset(longname, 0, sizeof longname);
    memcpy(longname, "/things/", 8);
    memset(longname + 8, 'n', SLD_ROUTE_NAME_MAX);
    assert_ptr_equal(find(table, longname, rest), &group_one[1]); /* 64 bytes: a name */
    longname[8 + SLD_ROUTE_NAME_MAX] = 'n';
    assert_ptr_equal(find(table, longname, rest), &group_one[2]); /* 65: not a name, but under */
    assert_ptr_equal(find(table, "/things/a/b", rest), &group_one[2]);
    assert_string_equal(rest, "a/b");
    assert_ptr_equal(find(table, "/things//", rest), &group_one[2]);
    /* UNDER wants at least one byte after the path */
    assert_null(find(table, "/things/", rest));
    assert_null(find(table, "/things", rest));
}

static void first_row_owns_the_path(void **state) {
    (void)state;
    char rest[8];
    const sld_http_route_t *r = find(table, "/x", rest);
    assert_ptr_equal(r, &group_one[0]);
    /* a later row for the same path never answers: DELETE is 405, not h_c */
    assert_false(sld_http_route_takes(r, sp("DELETE")));
    assert_true(sld_http_route_takes(r, sp("GET")));
    assert_true(sld_http_route_takes(r, sp("HEAD")));
    assert_false(sld_http_route_takes(r, sp("POST")));
    assert_true(sld_http_route_takes(&group_one[2], sp("BREW")));
    assert_int_equal(group_two[0].flags, SLD_ROUTE_ADMIN);
    /* an empty table finds nothing */
    const sld_http_route_t *const none[] = {NULL};
    assert_null(find(none, "/x", rest));
}

static void allow_text(void **state) {
    (void)state;
    char out[64];
    sld_http_allow_text(SLD_M_GET | SLD_M_HEAD, out, sizeof out);
    assert_string_equal(out, "GET");
    sld_http_allow_text(SLD_M_POST | SLD_M_GET, out, sizeof out);
    assert_string_equal(out, "GET, POST");
    sld_http_allow_text(SLD_M_DELETE | SLD_M_PUT | SLD_M_HEAD | SLD_M_GET, out, sizeof out);
    assert_string_equal(out, "GET, PUT, DELETE");
    sld_http_allow_text(SLD_M_POST, out, sizeof out);
    assert_string_equal(out, "POST");
    sld_http_allow_text(0, out, sizeof out);
    assert_string_equal(out, "");
    /* too small: cut at a whole method, always terminated */
    char small[6];
    sld_http_allow_text(SLD_M_GET | SLD_M_POST, small, sizeof small);
    assert_string_equal(small, "GET");
}

/* The front's own table, in the dispatcher's order. */
static const sld_http_route_t *const front[] = {sld_http_check_routes, sld_http_auth_routes,
                                                 sld_http_admin_routes, sld_http_metrics_routes,
                                                 sld_http_health_routes, NULL};

static void the_front_table(void **state) {
    (void)state;
    char rest[128], allow[64];
    const sld_http_route_t *r = find(front, "/v1/check", rest);
    assert_non_null(r);
    assert_true(sld_http_route_takes(r, sp("GET")) && sld_http_route_takes(r, sp("POST")));
    assert_false(sld_http_route_takes(r, sp("HEAD"))); /* a check charges; HEAD must not */
    sld_http_allow_text(r->methods, allow, sizeof allow);
    assert_string_equal(allow, "GET, POST");
    assert_null(find(front, "/v1/check/", rest));
    assert_null(find(front, "/v1/checks", rest));
    /* forward-auth: any method, everything after /v1/auth/ (empty included) */
    r = find(front, "/v1/auth/per_ip/api/x", rest);
    assert_non_null(r);
    assert_string_equal(rest, "per_ip/api/x");
    assert_true(sld_http_route_takes(r, sp("OPTIONS")));
    assert_ptr_equal(find(front, "/v1/auth/", rest), r);
    assert_null(find(front, "/v1/auth", rest));
    /* admin: every row behind the gate, a catch-all under /v1/admin */
    const char *admin_paths[] = {"/v1/admin", "/v1/admin/", "/v1/admin/policies", "/v1/admin/policies/p",
                                 "/v1/admin/policies/a/b", "/v1/admin/reset", "/v1/admin/reload",
                                 "/v1/admin/nothing"};
    for (size_t i = 0; i < sizeof admin_paths / sizeof admin_paths[0]; i++) {
        r = find(front, admin_paths[i], rest);
        assert_non_null(r);
        assert_true(r->flags & SLD_ROUTE_ADMIN);
    }
    r = find(front, "/v1/admin/policies/p", rest);
    assert_string_equal(rest, "p");
    sld_http_allow_text(r->methods, allow, sizeof allow);
    assert_string_equal(allow, "GET, PUT, DELETE");
    assert_true(sld_http_route_takes(find(front, "/v1/admin/policies/a/b", rest), sp("POST")));
    assert_null(find(front, "/v1/adminx", rest));
    /* metrics and health: GET and HEAD */
    const char *plain[] = {"/metrics", "/healthz", "/readyz"};
    for (size_t i = 0; i < 3; i++) {
        r = find(front, plain[i], rest);
        assert_non_null(r);
        assert_int_equal(r->methods, SLD_M_GET | SLD_M_HEAD);
        assert_int_equal(r->flags, 0);
    }
    assert_null(find(front, "/", rest));
    assert_null(find(front, "/metrics/", rest));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(method_bits),     cmocka_unit_test(exact_and_prefix),
        cmocka_unit_test(name_and_under),  cmocka_unit_test(first_row_owns_the_path),
        cmocka_unit_test(allow_text),      cmocka_unit_test(the_front_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
