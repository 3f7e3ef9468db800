/* test_gateway_config.c -- the gateway: section (src/server/gateway/
 * gateway_config.c) read through the section registry (src/server/config/
 * section.c): a full section loads with its defaults; every kind of error
 * names its line; delay, concurrency and headers are read and checked; the
 * routes are checked against the policies; without a registered section
 * the key is unknown, as any other; admin copies share the section; a
 * gateway alone closes the default listeners; every truncated prefix of a
 * good file is refused or read without a crash or a leak. */
#include "rig.h"
#include "server/config/config.h"
#include "server/config/section.h"
#include "server/daemon/front_config.h"
#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_route.h"
#include "server/http/http_config.h"
#include "server/resp/resp_config.h"

/* the gateway among the other fronts' keys, as sluiced registers them */
static int setup(void **state) {
    (void)state;
    return sld_daemon_config_register();
}

static int teardown(void **state) {
    (void)state;
    sld_config_listens_set(NULL, 0);
    return sld_config_sections_set(NULL, 0);
}

#define POLICIES                                                                          \
    "policies:\n"                                                                         \
    "  - name: per_ip\n"                                                                  \
    "    key: [ip]\n"                                                                     \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"                            \
    "  - name: per_user\n"                                                                \
    "    key: [user, route]\n"                                                            \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"                            \
    "  - name: by_key\n"                                                                  \
    "    limits: [{algorithm: gcra, limit: 10, period: 1s}]\n"

static const char full[] =
    "gateway:\n"                                                   /* 1 */
    "  listen: 127.0.0.1:8080\n"                                   /* 2 */
    "  timeout: 5s\n"                                              /* 3 */
    "  routes:\n"                                                  /* 4 */
    "    - name: api\n"                                            /* 5 */
    "      match: {path_prefix: /api/, methods: [GET, POST], host: Api.Example.com}\n"
    "      upstream: http://127.0.0.1:9000\n"                      /* 7 */
    "      policies: [per_ip, per_user]\n"                         /* 8 */
    "      status: 503\n"                                          /* 9 */
    "      body: \"go away\\n\"\n"                                 /* 10 */
    "    - name: rest\n"                                           /* 11 */
    "      upstream: http://127.0.0.1:9001/base\n"                 /* 12 */
    "      excess: shadow\n"                                       /* 13 */
    "      timeout: 250ms\n"                                       /* 14 */
    POLICIES;

static sld_config_t *parse_ok(const char *yaml) {
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc != SL_OK)
        fail_msg("refused (%s): %s\n--- yaml:\n%s", sl_errname(rc), err, yaml);
    return cfg;
}

/* Refused, with "test.yaml:LINE: " and needle in the message. */
static void refused(const char *yaml, unsigned line, const char *needle) {
    char err[SLD_MAX_ERROR] = "", prefix[64];
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err);
    if (rc == SL_OK)
        sld_config_free(cfg);
    assert_int_equal(rc, SL_EINVAL);
    assert_null(cfg);
    snprintf(prefix, sizeof prefix, "test.yaml:%u: ", line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, needle) == NULL)
        fail_msg("expected \"%s...%s\"\n     got \"%s\"", prefix, needle, err);
}

/* libyaml's loader, which reads listen: and upstream:, refuses an anchor
 * written twice, which the rest of the file's checks let pass. */
static void test_reused_anchor(void **state) {
    (void)state;
    refused("gateway: &a\n  listen: &a 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n" POLICIES,
            1, "cannot be read: the anchor of line 1 is used again on line 2");
}

static void test_full_section(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(full);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_non_null(g);
    assert_string_equal(g->listen, "127.0.0.1:8080");
    assert_int_equal(g->timeout, 5 * SL_USEC_PER_SEC);
    assert_int_equal(g->nroutes, 2);
    const sld_gw_route_t *a = &g->routes[0], *b = &g->routes[1];
    assert_string_equal(a->name, "api");
    assert_string_equal(a->path_prefix, "/api/");
    assert_int_equal(a->path_prefix_len, 5);
    assert_int_equal(a->nmethods, 2);
    assert_string_equal(a->methods[1], "POST");
    assert_string_equal(a->host, "api.example.com");
    assert_string_equal(a->upstream, "http://127.0.0.1:9000");
    assert_int_equal(a->npolicies, 2);
    assert_string_equal(a->policies[1], "per_user");
    assert_int_equal(a->excess, SLD_GW_REJECT);
    assert_int_equal(a->status, 503);
    assert_string_equal(a->body, "go away\n");
    assert_int_equal(a->timeout, 5 * SL_USEC_PER_SEC);
    assert_null(b->path_prefix);
    assert_null(b->host);
    assert_int_equal(b->nmethods, 0);
    assert_int_equal(b->npolicies, 0);
    assert_int_equal(b->excess, SLD_GW_SHADOW);
    assert_int_equal(b->status, 429);
    assert_string_equal(b->body, "rate limit exceeded\n");
    assert_int_equal(b->timeout, 250 * 1000);
    /* a gateway and no listen: the decision fronts stay closed */
    assert_string_equal(sld_resp_listen(cfg), "");
    assert_string_equal(sld_http_listen(cfg), "");
    sld_config_free(cfg);
}

static void test_listen_kept_when_given(void **state) {
    (void)state;
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "listen: {resp: 127.0.0.1:7000}\n%s", full);
    sld_config_t *cfg = parse_ok(yaml);
    assert_string_equal(sld_resp_listen(cfg), "127.0.0.1:7000");
    assert_string_equal(sld_http_listen(cfg), "127.0.0.1:8090");
    sld_config_free(cfg);
    /* no gateway, both fronts off: refused as before */
    refused("listen: {resp: off, http: off}\n" POLICIES, 1, "nothing would answer");
}

static void test_errors_name_the_line(void **state) {
    (void)state;
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://127.0.0.1:2\n"
            "      colour: blue\n" POLICIES,
            6, "colour");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: ftp://x\n" POLICIES, 5,
            "gateway.routes[0].upstream: expected http://host:port");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      tls_ca: /etc/ssl/certs/ca-certificates.crt\n" POLICIES,
            6, "gateway.routes[0].tls_ca: applies to https:// upstreams only");
    refused("gateway:\n  listen: localhost:1\n  routes:\n    - name: a\n      upstream: http://x:1\n" POLICIES,
            2, "gateway.listen");
    refused("gateway:\n  routes:\n    - name: a\n      upstream: http://x:1\n" POLICIES, 1, "listen: is required");
    refused("gateway:\n  listen: 127.0.0.1:1\n" POLICIES, 1, "at least one route");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      excess: drop\n" POLICIES,
            6, "expected reject, delay or shadow");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      status: 200\n" POLICIES,
            6, "gateway.routes[0].status");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      match: {path_prefix: api}\n" POLICIES,
            6, "expected a path starting with /");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      match:\n        methods: [GET, post]\n" POLICIES,
            7, "gateway.routes[0].match.methods[1]: expected an HTTP method in upper case");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "    - name: a\n      upstream: http://x:2\n" POLICIES,
            6, "route name \"a\" is already used");
    refused("gateway:\n  listen: 127.0.0.1:1\n  timeout: soon\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            POLICIES, 3, "gateway.timeout");
}

/* A route's host written with the root's trailing dot names the same host
 * (a request's host is compared without it): it matches "example.com";
 * empty labels are refused. */
static void test_host_trailing_dot(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n"
                                 "      match: {host: Example.COM.}\n      upstream: http://x:1\n" POLICIES);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_string_equal(g->routes[0].host, "example.com");
    sld_span_t get = {"GET", 3}, path = {"/", 1};
    assert_true(sld_gw_route_matches(&g->routes[0], get, (sld_span_t){"example.com", 11}, path));
    assert_true(sld_gw_route_matches(&g->routes[0], get, (sld_span_t){"EXAMPLE.com.:8080", 17}, path));
    sld_config_free(cfg);
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      match: {host: a..b}\n"
            "      upstream: http://x:1\n" POLICIES,
            5, "gateway.routes[0].match.host: expected a host name");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      match: {host: a..}\n"
            "      upstream: http://x:1\n" POLICIES,
            5, "gateway.routes[0].match.host: expected a host name");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      match: {host: .}\n"
            "      upstream: http://x:1\n" POLICIES,
            5, "gateway.routes[0].match.host: expected a host name");
}

/* access_log: off by default; a route logs when the section does, unless
 * it says off; a route cannot log without the section's log. */
static void test_access_log(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(full);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_null(g->access_log);
    assert_false(g->routes[0].access_log);
    sld_config_free(cfg);
    cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  access_log: /var/log/gw.log\n  routes:\n"
                   "    - name: a\n      upstream: http://x:1\n    - name: b\n      upstream: http://x:1\n"
                   "      access_log: off\n" POLICIES);
    g = sld_config_section(cfg, "gateway");
    assert_string_equal(g->access_log, "/var/log/gw.log");
    assert_true(g->routes[0].access_log);
    assert_false(g->routes[1].access_log);
    sld_config_free(cfg);
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      access_log: on\n" POLICIES,
            6, "access_log: on needs gateway.access_log");
}

/* listen: one address or a list, an entry {address, tls: {cert, key}};
 * upstream: one URL or a list (round robin), https:// with tls_ca and
 * tls_verify. Files that cannot be read are errors at their line (the
 * integration test, test_gateway_tls.py, loads real ones). */
static void test_lists_and_tls(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok("gateway:\n  listen: [127.0.0.1:8080, \"[::1]:8081\"]\n  routes:\n"
                                 "    - name: a\n      upstream: [http://127.0.0.1:1, http://127.0.0.1:2/x]\n"
                                 "    - name: b\n      upstream:\n        - https://localhost:3\n"
                                 "      tls_verify: off\n" POLICIES);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_int_equal(g->nlistens, 2);
    assert_string_equal(g->listen, "127.0.0.1:8080");
    assert_string_equal(g->listens[1].addr, "[::1]:8081");
    assert_null(g->listens[0].tls);
    assert_int_equal(g->routes[0].nupstreams, 2);
    assert_string_equal(g->routes[0].upstream, "http://127.0.0.1:1");
    assert_string_equal(g->routes[0].upstreams[1], "http://127.0.0.1:2/x");
    assert_null(g->routes[0].tls);
    assert_int_equal(g->routes[1].nupstreams, 1);
    assert_non_null(g->routes[1].tls);
    assert_false(g->routes[1].tls_verify);
    sld_config_free(cfg);
    cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: https://x:1\n" POLICIES);
    g = sld_config_section(cfg, "gateway");
    assert_non_null(g->routes[0].tls); /* verified against the system's store */
    assert_true(g->routes[0].tls_verify);
    sld_config_free(cfg);
    /* routes with the same tls_verify and tls_ca share one context */
    cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: https://x:1\n"
                   "    - name: b\n      upstream: https://y:1\n"
                   "    - name: c\n      upstream: https://z:1\n      tls_verify: off\n" POLICIES);
    g = sld_config_section(cfg, "gateway");
    assert_non_null(g->routes[0].tls);
    assert_ptr_equal(g->routes[1].tls, g->routes[0].tls);
    assert_non_null(g->routes[2].tls);
    assert_ptr_not_equal(g->routes[2].tls, g->routes[0].tls);
    sld_config_free(cfg);
#define ROUTE "  routes:\n    - name: a\n      upstream: http://x:1\n" POLICIES
    refused("gateway:\n  listen:\n    - 127.0.0.1:1\n    - {address: 127.0.0.1:2, tls: {cert: /nonexistent.pem, "
            "key: /nonexistent.key}}\n" ROUTE,
            4, "gateway.listen[1].tls.cert: cannot open /nonexistent.pem: No such file or directory");
    refused("gateway:\n  listen:\n    - address: 127.0.0.1:2\n      tls:\n        cert: /dev/null\n"
            "        key: /nonexistent.key\n" ROUTE,
            6, "gateway.listen[0].tls.key: cannot open /nonexistent.key");
    refused("gateway:\n  listen:\n    - address: 127.0.0.1:2\n      tls:\n        cert: /dev/null\n"
            "        key: /dev/null\n" ROUTE,
            5, "gateway.listen[0].tls.cert: no certificate (PEM) in /dev/null");
    refused("gateway:\n  listen:\n    - address: 127.0.0.1:2\n      tls: {cert: /dev/null}\n" ROUTE, 4,
            "gateway.listen[0].tls: key: is required");
    refused("gateway:\n  listen:\n    - {address: 127.0.0.1:2, tls: on}\n" ROUTE, 3,
            "gateway.listen[0].tls: expected {cert: FILE, key: FILE}");
    refused("gateway:\n  listen:\n    - {adress: 127.0.0.1:2}\n" ROUTE, 3, "gateway.listen[0].adress: unknown key");
    refused("gateway:\n  listen:\n    - {tls: {cert: a, key: b}}\n" ROUTE, 3, "address: is required");
    refused("gateway:\n  listen: [127.0.0.1:2, localhost:3]\n" ROUTE, 2, "gateway.listen[1]");
    refused("gateway:\n  listen: [127.0.0.1:2, 127.0.0.1:2]\n" ROUTE, 2, "127.0.0.1:2 is listed twice");
    refused("gateway:\n  listen: []\n" ROUTE, 2, "expected 1 to 16 listeners, got 0");
    refused("gateway:\n  listen: [[127.0.0.1:2]]\n" ROUTE, 2, "gateway.listen[0]: expected an address");
    cfg = parse_ok("gateway:\n  listen: {address: 127.0.0.1:2}\n" ROUTE); /* one listener, as a mapping */
    assert_string_equal(((const sld_gw_config_t *)sld_config_section(cfg, "gateway"))->listen, "127.0.0.1:2");
    sld_config_free(cfg);
#undef ROUTE
#define GW "gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n"
    refused(GW "      upstream: [http://x:1, ftp://y]\n" POLICIES, 5,
            "gateway.routes[0].upstream[1]: expected http://host:port or https://host:port");
    refused(GW "      upstream: []\n" POLICIES, 5, "gateway.routes[0].upstream: expected 1 to 64 URLs, got 0");
    refused(GW "      upstream: {url: http://x:1}\n" POLICIES, 5, "gateway.routes[0].upstream: expected a URL");
    refused(GW "      policies: [per_ip]\n" POLICIES, 4, "gateway.routes[0]: upstream: is required");
    refused(GW "      upstream: https://x:1\n      tls_ca: /nonexistent.pem\n" POLICIES, 6,
            "gateway.routes[0].tls_ca: cannot open /nonexistent.pem");
    refused(GW "      upstream: https://x:1\n      tls_ca: /dev/null\n" POLICIES, 6,
            "gateway.routes[0].tls_ca: no CA certificate (PEM) in /dev/null");
    refused(GW "      upstream: https://x:1\n      tls_verify: maybe\n" POLICIES, 6,
            "gateway.routes[0].tls_verify: expected on or off");
    refused(GW "      upstream: https://x:1\n      tls_verify: off\n      tls_ca: /dev/null\n" POLICIES, 7,
            "a CA is of no use with tls_verify: off");
#undef GW
}

static void test_delay(void **state) {
    (void)state;
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      excess: delay\n" POLICIES,
            6, "gateway.routes[0].excess: excess: delay needs at least one policy (this route has none)");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      max_delay: 2s\n" POLICIES,
            6, "max_delay applies to excess: delay only");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      policies: [per_ip]\n      excess: delay\n      max_delay: soon\n" POLICIES,
            8, "gateway.routes[0].max_delay");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      queue: 100\n" POLICIES,
            6, "queue applies to excess: delay and concurrency: only");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      policies: [per_ip]\n      excess: shadow\n      status: 503\n" POLICIES,
            8, "status applies to excess: reject and delay only");
    sld_config_t *cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n"
                                 "      upstream: http://x:1\n      policies: [per_ip]\n      excess: delay\n"
                                 "      max_delay: 2s\n      queue: 5\n      status: 503\n"
                                 "    - name: b\n      upstream: http://x:1\n      policies: [per_ip]\n"
                                 "      excess: delay\n" POLICIES);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_int_equal(g->routes[0].excess, SLD_GW_DELAY);
    assert_int_equal(g->routes[0].max_delay, 2 * SL_USEC_PER_SEC);
    assert_int_equal(g->routes[0].queue, 5);
    assert_int_equal(g->routes[0].status, 503);
    assert_int_equal(g->routes[1].max_delay, SL_USEC_PER_SEC);
    assert_int_equal(g->routes[1].queue, 1000);
    sld_config_free(cfg);
}

/* headers: {client, upstream}: client on and upstream off by default,
 * client off on a shadow route unless written; the section's setting is
 * every route's default, a route's own wins field by field. */
static void test_headers(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(full);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    assert_true(g->routes[0].headers.client);
    assert_false(g->routes[0].headers.upstream);
    assert_false(g->routes[1].headers.client); /* shadow */
    assert_false(g->routes[1].headers.upstream);
    sld_config_free(cfg);
    cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  headers: {upstream: on}\n  routes:\n"
                   "    - name: a\n      upstream: http://x:1\n      headers: {client: off}\n"
                   "    - name: b\n      upstream: http://x:1\n      excess: shadow\n"
                   "      headers: {client: On, upstream: false}\n"
                   "    - name: c\n      upstream: http://x:1\n      excess: shadow\n" POLICIES);
    g = sld_config_section(cfg, "gateway");
    assert_false(g->routes[0].headers.client);
    assert_true(g->routes[0].headers.upstream);
    assert_true(g->routes[1].headers.client);
    assert_false(g->routes[1].headers.upstream);
    assert_false(g->routes[2].headers.client);
    assert_true(g->routes[2].headers.upstream);
    sld_config_free(cfg);
    cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  headers: {client: on}\n  routes:\n"
                   "    - name: c\n      upstream: http://x:1\n      excess: shadow\n" POLICIES);
    g = sld_config_section(cfg, "gateway");
    assert_true(g->routes[0].headers.client); /* written for the section: shadow routes too */
    sld_config_free(cfg);
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      headers: {client: maybe}\n" POLICIES,
            6, "gateway.routes[0].headers.client: expected on or off, got \"maybe\"");
    refused("gateway:\n  listen: 127.0.0.1:1\n  headers: {upstream: 1}\n  routes:\n    - name: a\n"
            "      upstream: http://x:1\n" POLICIES,
            3, "gateway.headers.upstream: expected on or off");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      headers: {server: on}\n" POLICIES,
            6, "server");
}

static void test_concurrency(void **state) {
    (void)state;
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {per: route}\n" POLICIES,
            6, "gateway.routes[0].concurrency: limit: is required");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {limit: 0}\n" POLICIES,
            6, "gateway.routes[0].concurrency.limit");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {limit: 3, per: user}\n" POLICIES,
            6, "gateway.routes[0].concurrency.per: expected route or key, got \"user\"");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {limit: 3, max_wait: soon}\n" POLICIES,
            6, "gateway.routes[0].concurrency.max_wait");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {limit: 3, status: 200}\n" POLICIES,
            6, "gateway.routes[0].concurrency.status");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      concurrency: {limit: 3}\n      queue: -1\n" POLICIES,
            7, "gateway.routes[0].queue");

    sld_config_t *cfg = parse_ok("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n"
                                 "      upstream: http://x:1\n      queue: 7\n"
                                 "      concurrency: {limit: 3, per: key, max_wait: 1500ms, status: 502}\n"
                                 "    - name: b\n      upstream: http://x:1\n"
                                 "      concurrency: {limit: 2}\n" POLICIES);
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    const sld_gw_route_t *a = &g->routes[0], *b = &g->routes[1];
    assert_int_equal(a->concurrency.limit, 3);
    assert_true(a->concurrency.per_key);
    assert_int_equal(a->concurrency.max_wait, 1500 * 1000);
    assert_int_equal(a->concurrency.status, 502);
    assert_int_equal(a->queue, 7);
    assert_int_equal(b->concurrency.limit, 2);
    assert_false(b->concurrency.per_key);
    assert_int_equal(b->concurrency.max_wait, 0);
    assert_int_equal(b->concurrency.status, 503);
    assert_int_equal(b->queue, 1000);
    assert_int_equal(g->routes[0].concurrency.limit, 3);
    sld_config_free(cfg);
}

static void test_policies_checked(void **state) {
    (void)state;
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      policies: [per_ip, nope]\n" POLICIES,
            6, "gateway.routes[0].policies[1]: no policy named \"nope\"");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      policies: [by_key]\n" POLICIES,
            6, "keyed by a key the client gives");
    refused("gateway:\n  listen: 127.0.0.1:1\n  routes:\n    - name: a\n      upstream: http://x:1\n"
            "      policies: [per_ip, per_ip]\n" POLICIES,
            6, "named twice");
}

static void test_unregistered_is_unknown(void **state) {
    (void)state;
    sld_config_sections_set(NULL, 0);
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    assert_int_equal(sld_config_parse("test.yaml", full, strlen(full), &cfg, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "test.yaml:1: "));
    assert_non_null(strstr(err, "gateway"));
    assert_int_equal(sld_daemon_config_register(), SL_OK);
}

static void test_copies_share_the_section(void **state) {
    (void)state;
    sld_config_t *cfg = parse_ok(full);
    sld_config_t *copy = sld_config_edit(cfg, NULL, "by_key");
    assert_non_null(copy);
    assert_ptr_equal(sld_config_section(copy, "gateway"), sld_config_section(cfg, "gateway"));
    sld_config_part_t *held = sld_config_section_hold(cfg, "gateway");
    assert_non_null(held);
    sld_config_free(cfg);
    sld_config_free(copy);
    const sld_gw_config_t *g = sld_config_part_value(held); /* still alive: held */
    assert_string_equal(g->routes[0].name, "api");
    sld_config_part_release(held);
    assert_null(sld_config_section_hold(NULL, "gateway"));
}

static void test_truncated_prefixes(void **state) {
    (void)state;
    size_t n = strlen(full);
    for (size_t i = 0; i <= n; i++) {
        char err[SLD_MAX_ERROR];
        sld_config_t *cfg = NULL;
        int rc = sld_config_parse("test.yaml", full, i, &cfg, err, sizeof err);
        if (rc == SL_OK)
            sld_config_free(cfg);
        else
            assert_null(cfg);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_section),
        cmocka_unit_test(test_reused_anchor),
        cmocka_unit_test(test_listen_kept_when_given),
        cmocka_unit_test(test_errors_name_the_line),
        cmocka_unit_test(test_host_trailing_dot),
        cmocka_unit_test(test_access_log),
        cmocka_unit_test(test_lists_and_tls),
        cmocka_unit_test(test_delay),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_policies_checked),
        cmocka_unit_test(test_unregistered_is_unknown),
        cmocka_unit_test(test_copies_share_the_section),
        cmocka_unit_test(test_truncated_prefixes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
