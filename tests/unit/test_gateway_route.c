/* test_gateway_route.c -- the gateway's route matching (src/server/gateway/
 * gateway_route.c): path prefix, methods and host, each optional; the first
 * match wins; the host is compared without its port and case; no match is
 * NULL. */
#include "rig.h"
#include "server/gateway/gateway_route.h"

static sld_span_t S(const char *s) { return (sld_span_t){s, s ? strlen(s) : 0}; }

/* writable copies: the route's fields are not const */
static char get[] = "GET", post[] = "POST", api[] = "api", api_prefix[] = "/api/",
            api_host[] = "api.example.com", v6[] = "v6", v6_host[] = "[::1]", stat[] = "static",
            stat_prefix[] = "/static/", rest[] = "rest";
static char *api_methods[] = {get, post};

static sld_gw_route_t routes[] = {
    {.name = api, .path_prefix = api_prefix, .path_prefix_len = 5, .methods = api_methods, .nmethods = 2,
     .host = api_host},
    {.name = v6, .host = v6_host},
    {.name = stat, .path_prefix = stat_prefix, .path_prefix_len = 8},
    {.name = rest},
};

static const sld_gw_config_t g = {.routes = routes, .nroutes = 4};

static const char *find(const char *method, const char *authority, const char *path) {
    const sld_gw_route_t *r = sld_gw_route_find(&g, S(method), S(authority), S(path));
    return r ? r->name : NULL;
}

static void test_first_match_wins(void **state) {
    (void)state;
    assert_string_equal(find("GET", "api.example.com", "/api/users"), "api");
    assert_string_equal(find("POST", "API.Example.COM:8080", "/api/"), "api");
    assert_string_equal(find("GET", "api.example.com.", "/api/x"), "api");
    /* one condition fails: the next route */
    assert_string_equal(find("DELETE", "api.example.com", "/api/users"), "rest");
    assert_string_equal(find("GET", "other.example.com", "/api/users"), "rest");
    assert_string_equal(find("GET", "api.example.com", "/apix"), "rest");
    assert_string_equal(find("GET", "api.example.com", "/api"), "rest");
    assert_string_equal(find("get", "api.example.com", "/api/x"), "rest"); /* methods are case-sensitive */
    assert_string_equal(find("GET", "[::1]:8080", "/x"), "v6");
    assert_string_equal(find("GET", "x", "/static/a.css"), "static");
    assert_string_equal(find("GET", NULL, "/static/a.css"), "static");
    assert_string_equal(find("GET", NULL, NULL), "rest");
}

static void test_no_match(void **state) {
    (void)state;
    sld_gw_config_t only = {.routes = routes, .nroutes = 1};
    assert_null(sld_gw_route_find(&only, S("GET"), S("api.example.com"), S("/other")));
    assert_null(sld_gw_route_find(&only, S("GET"), S(NULL), S("/api/x")));   /* no host */
    assert_null(sld_gw_route_find(&only, S("GET"), S("api.example.co"), S("/api/x")));
    assert_null(sld_gw_route_find(NULL, S("GET"), S("h"), S("/")));
    sld_gw_config_t none = {0};
    assert_null(sld_gw_route_find(&none, S("GET"), S("h"), S("/")));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_match_wins),
        cmocka_unit_test(test_no_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
