/* http_router.c -- matching a request against the route table (see
 * http_router.h). Byte comparisons only: paths are not decoded, so
 * "/v1/%63heck" is no route (as before the table).
 */
#include <stdio.h>
#include <string.h>

#include "server/http/http_router.h"

unsigned sld_http_method_bit(sld_span_t method) {
    switch (method.len) { /* the length first: one comparison, not a walk over the names */
    case 3:
        return sld_span_is(method, "GET") ? SLD_M_GET : sld_span_is(method, "PUT") ? SLD_M_PUT : SLD_M_OTHER;
    case 4:
        return sld_span_is(method, "POST") ? SLD_M_POST : sld_span_is(method, "HEAD") ? SLD_M_HEAD : SLD_M_OTHER;
    case 6:
        return sld_span_is(method, "DELETE") ? SLD_M_DELETE : SLD_M_OTHER;
    default:
        return SLD_M_OTHER;
    }
}

static bool matches(const sld_http_route_t *route, sld_span_t path, sld_span_t *rest) {
    size_t n = strlen(route->path);
    if (path.len < n || memcmp(path.ptr, route->path, n) != 0)
        return false;
    sld_span_t after = {path.ptr + n, path.len - n};
    switch (route->match) {
    case SLD_MATCH_EXACT:
        if (after.len != 0)
            return false;
        break;
    case SLD_MATCH_PREFIX:
        break;
    case SLD_MATCH_UNDER:
        if (after.len == 0)
            return false;
        break;
    case SLD_MATCH_NAME:
        if (after.len == 0 || after.len > SLD_ROUTE_NAME_MAX || memchr(after.ptr, '/', after.len) != NULL)
            return false;
        break;
    default:
        return false;
    }
    *rest = after;
    return true;
}

const sld_http_route_t *sld_http_route_find(const sld_http_route_t *const *groups, sld_span_t path,
                                            sld_span_t *rest) {
    for (size_t g = 0; groups[g] != NULL; g++)
        for (const sld_http_route_t *r = groups[g]; r->handler != NULL; r++)
            if (matches(r, path, rest))
                return r;
    return NULL;
}

bool sld_http_route_takes(const sld_http_route_t *route, sld_span_t method) {
    return (route->methods & sld_http_method_bit(method)) != 0;
}

void sld_http_allow_text(unsigned methods, char *out, size_t size) {
    static const struct {
        const char *name;
        unsigned bit;
    } order[] = {{"GET", SLD_M_GET}, {"POST", SLD_M_POST}, {"PUT", SLD_M_PUT}, {"DELETE", SLD_M_DELETE}};
    size_t used = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!(methods & order[i].bit))
            continue;
        int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", order[i].name);
        if (n < 0 || (size_t)n >= size - used) {
            out[used] = '\0'; /* whole methods only */
            return;
        }
        used += (size_t)n;
    }
}
