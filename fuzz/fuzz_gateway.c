/* fuzz_gateway.c -- libFuzzer target for the gateway's configuration
 * section and route matching.
 *
 * The input is a configuration file with the gateway: section registered:
 * sld_config_parse() must return SL_OK or an error with a message, never
 * crash, leak or read out of bounds. When it loads, every route must have
 * been checked (a name, http:// or https:// upstreams, policies that exist), and
 * requests are matched against it: a few taken from the input's last bytes
 * (the path; and its last three lines as method, host and path), and
 * for every route one built from its own match (its method, its host in
 * upper case with a port or a trailing dot, its prefix and more), which it
 * must match. The route found, if any, must match, no earlier one may, and
 * each answer must agree with a plain reading of the rules (ref_matches).
 * A configuration equals itself and a second parse of the same text
 * (the same routes and no key that needs a restart: what a reload
 * compares, gateway_diff.h).
 * Build and run: make fuzz (clang, ASan + UBSan, under CTest).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/config/config.h"
#include "server/config/section.h"
#include "server/daemon/front_config.h"
#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_diff.h"
#include "server/gateway/gateway_route.h"

/* The rules as docs/gateway.md states them, written apart from
 * gateway_route.c: the path starts with the prefix; the method is one of
 * the list, exactly; the authority without its port (an IPv6 literal kept
 * whole in its brackets) and a trailing dot equals the host, ignoring ASCII
 * case. */
static bool ref_matches(const sld_gw_route_t *r, sld_span_t method, sld_span_t authority, sld_span_t path) {
    if (r->path_prefix && (path.ptr == NULL || path.len < strlen(r->path_prefix) ||
                           strncmp(path.ptr, r->path_prefix, strlen(r->path_prefix)) != 0 ||
                           memchr(path.ptr, '\0', strlen(r->path_prefix)) != NULL))
        return false;
    bool method_ok = r->nmethods == 0;
    for (size_t i = 0; i < r->nmethods; i++)
        method_ok |= method.ptr && method.len == strlen(r->methods[i]) &&
                     memcmp(method.ptr, r->methods[i], method.len) == 0;
    if (!method_ok)
        return false;
    if (r->host == NULL)
        return true;
    if (authority.ptr == NULL)
        return false;
    size_t n = authority.len;
    if (n && authority.ptr[0] == '[') {
        const char *close = memchr(authority.ptr, ']', n);
        n = close ? (size_t)(close - authority.ptr) + 1 : n;
    } else {
        for (size_t i = 0; i < n; i++)
            if (authority.ptr[i] == ':') {
                n = i;
                break;
            }
        if (n && authority.ptr[n - 1] == '.')
            n--;
    }
    return n == strlen(r->host) && strncasecmp(authority.ptr, r->host, n) == 0 &&
           memchr(authority.ptr, '\0', n) == NULL;
}

static void check_match(const sld_gw_config_t *g, sld_span_t method, sld_span_t host, sld_span_t path) {
    const sld_gw_route_t *r = sld_gw_route_find(g, method, host, path);
    if (r && !sld_gw_route_matches(r, method, host, path))
        abort();
    for (size_t i = 0; i < g->nroutes; i++) {
        bool m = sld_gw_route_matches(&g->routes[i], method, host, path);
        if (m != ref_matches(&g->routes[i], method, host, path))
            abort();
        if (r == NULL ? m : (&g->routes[i] < r && m))
            abort();
    }
}

static sld_span_t span(const char *s) { return (sld_span_t){s, s ? strlen(s) : 0}; }

/* A request built from route r's own match must match r (and find r or a
 * route before it). */
static void match_own(const sld_gw_config_t *g, size_t i) {
    const sld_gw_route_t *r = &g->routes[i];
    char host[300], path[4200];
    const char *method = r->nmethods ? r->methods[r->nmethods - 1] : "GET";
    const char *forms[] = {"%s", "%s:8080", "%s."};
    for (size_t f = 0; f < 3; f++) {
        snprintf(host, sizeof host, forms[f], r->host ? r->host : "any.example");
        for (char *c = host; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        snprintf(path, sizeof path, "%sx/y", r->path_prefix ? r->path_prefix : "/");
        sld_span_t m = span(method), h = span(host), p = span(path);
        if (!sld_gw_route_matches(r, m, h, p))
            abort();
        const sld_gw_route_t *found = sld_gw_route_find(g, m, h, p);
        if (found == NULL || found > r)
            abort();
        check_match(g, m, h, p);
    }
}

static void match_some(const sld_gw_config_t *g, const uint8_t *data, size_t size) {
    for (size_t i = 0; i < g->nroutes; i++)
        match_own(g, i);
    static const char *const methods[] = {"GET", "POST", "DELETE", ""};
    static const char *const hosts[] = {"api.example.com", "API.example.com:8080", "[::1]:80", "", NULL};
    size_t tail = size < 64 ? size : 64;
    sld_span_t path = {(const char *)data + size - tail, tail};
    for (size_t m = 0; m < 4; m++)
        for (size_t h = 0; h < 5; h++)
            check_match(g, span(methods[m]), span(hosts[h]), path);
    /* the input's last three lines (a leading '#' dropped, so that a seed
     * can keep them in YAML comments): method, host, path, each fuzzed */
    sld_span_t part[3];
    const char *end = (const char *)data + size, *low = end - (size < 400 ? size : 400);
    if (end > low && end[-1] == '\n')
        end--;
    for (int k = 2; k >= 0; k--) {
        const char *b = end;
        while (b > low && b[-1] != '\n')
            b--;
        if (b == low && k > 0)
            return;
        part[k] = (sld_span_t){b, (size_t)(end - b)};
        if (part[k].len && part[k].ptr[0] == '#')
            part[k] = (sld_span_t){part[k].ptr + 1, part[k].len - 1};
        end = b - 1;
    }
    check_match(g, part[0], part[1], part[2]);
}

/* What a reload sees as no change at all. */
static bool same(const sld_gw_config_t *a, const sld_gw_config_t *b) {
    return sld_gw_routes_equal(a, b) && sld_gw_restart_keys(a, b, NULL, 0) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int registered = -1; /* the gateway among the other fronts' keys */
    if (registered < 0)
        registered = sld_daemon_config_register();
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("fuzz.yaml", (const char *)data, size, &cfg, err, sizeof err);
    if (rc != SL_OK) {
        if (cfg != NULL || err[0] == '\0')
            abort();
        return 0;
    }
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    if (g != NULL) {
        if (g->nroutes == 0 || g->listen[0] == '\0' || g->nlistens == 0 || g->nlistens > SLD_GW_MAX_LISTENS ||
            strcmp(g->listen, g->listens[0].addr) != 0)
            abort();
        for (size_t i = 0; i < g->nlistens; i++) /* tls: both files, and a context made from them */
            if ((g->listens[i].tls != NULL) != (g->listens[i].cert != NULL && g->listens[i].key != NULL))
                abort();
        for (size_t i = 0; i < g->nroutes; i++) {
            const sld_gw_route_t *r = &g->routes[i];
            if (r->name == NULL || r->nupstreams == 0 || r->upstream != r->upstreams[0] || r->status < 400 ||
                r->status > 599)
                abort();
            /* every upstream http:// or https://, and the https ones have a TLS context */
            for (size_t k = 0; k < r->nupstreams; k++) {
                bool https = strncmp(r->upstreams[k], "https://", 8) == 0;
                if ((!https && strncmp(r->upstreams[k], "http://", 7) != 0) || (https && r->tls == NULL))
                    abort();
            }
            for (size_t k = 0; k < r->npolicies; k++)
                if (sld_config_policy(cfg, r->policies[k]) == NULL)
                    abort();
            /* the new keys' invariants: delay takes one policy; a limit's status is an error status */
            if (r->excess == SLD_GW_DELAY && (r->npolicies != 1 || r->max_delay <= 0))
                abort();
            if (r->concurrency.limit && (r->concurrency.status < 400 || r->concurrency.status > 599))
                abort();
            if (r->access_log && g->access_log == NULL) /* a route logs only into the section's log */
                abort();
        }
        match_some(g, data, size);
        if (!same(g, g))
            abort();
        sld_config_t *again = NULL;
        if (sld_config_parse("fuzz.yaml", (const char *)data, size, &again, err, sizeof err) != SL_OK)
            abort(); /* the same text loads the same way */
        const sld_gw_config_t *g2 = sld_config_section(again, "gateway");
        if (g2 == NULL || !same(g, g2) || !same(g2, g))
            abort();
        sld_config_free(again);
    }
    sld_config_free(cfg);
    return 0;
}
