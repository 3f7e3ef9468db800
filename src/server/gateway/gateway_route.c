/* gateway_route.c -- the gateway's route matching (see gateway_route.h). */
#include <string.h>

#include "server/gateway/gateway_route.h"

static char lower(char ch) { return ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch; }

/* The authority's host: "[v6]" kept whole, ":port" dropped. */
static sld_span_t host_of(sld_span_t a) {
    if (a.ptr == NULL)
        return a;
    size_t n = a.len;
    if (n && a.ptr[0] == '[') {
        const char *close = memchr(a.ptr, ']', n);
        return (sld_span_t){a.ptr, close ? (size_t)(close - a.ptr) + 1 : n};
    }
    const char *colon = memchr(a.ptr, ':', n);
    if (colon)
        n = (size_t)(colon - a.ptr);
    if (n && a.ptr[n - 1] == '.') /* "example.com." names the same host */
        n--;
    return (sld_span_t){a.ptr, n};
}

bool sld_gw_route_matches(const sld_gw_route_t *rt, sld_span_t method, sld_span_t authority,
                          sld_span_t path) {
    if (rt->path_prefix &&
        (path.ptr == NULL || path.len < rt->path_prefix_len ||
         memcmp(path.ptr, rt->path_prefix, rt->path_prefix_len) != 0))
        return false;
    if (rt->nmethods) {
        bool any = false;
        for (size_t i = 0; !any && i < rt->nmethods; i++)
            any = method.ptr && strlen(rt->methods[i]) == method.len &&
                  memcmp(rt->methods[i], method.ptr, method.len) == 0;
        if (!any)
            return false;
    }
    if (rt->host) {
        sld_span_t h = host_of(authority);
        size_t n = strlen(rt->host);
        if (h.ptr == NULL || h.len != n)
            return false;
        for (size_t i = 0; i < n; i++)
            if (lower(h.ptr[i]) != rt->host[i])
                return false;
    }
    return true;
}

const sld_gw_route_t *sld_gw_route_find(const sld_gw_config_t *g, sld_span_t method,
                                        sld_span_t authority, sld_span_t path) {
    for (size_t i = 0; g && i < g->nroutes; i++)
        if (sld_gw_route_matches(&g->routes[i], method, authority, path))
            return &g->routes[i];
    return NULL;
}
