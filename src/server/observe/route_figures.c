/* route_figures.c -- the gateway's per-route series read back (route_figures.h). */
#include <stdlib.h>
#include <string.h>

#include "server/observe/route_figures.h"

const char *const sld_route_result_names[SLD_ROUTE_RESULTS] = {"forwarded", "delayed", "rejected", "busy"};

/* The value of label `name` in {...}[0..len): its span, or false. */
static bool label(const char *labels, size_t len, const char *name, const char **v, size_t *vlen) {
    size_t n = strlen(name);
    for (size_t i = 0; i + n + 2 <= len; i++) {
        if ((i == 0 || labels[i - 1] == ',' || labels[i - 1] == '{') && memcmp(labels + i, name, n) == 0 &&
            labels[i + n] == '=' && labels[i + n + 1] == '"') {
            const char *start = labels + i + n + 2;
            const char *end = memchr(start, '"', len - (size_t)(start - labels));
            if (end == NULL)
                return false;
            *v = start;
            *vlen = (size_t)(end - start);
            return true;
        }
    }
    return false;
}

static sld_route_figures_t *route(sld_route_figures_t *out, size_t *n, size_t max, const char *name,
                                  size_t len) {
    if (len == 0 || len > SLD_ROUTE_NAME_LEN)
        return NULL;
    for (size_t i = 0; i < *n; i++)
        if (strlen(out[i].name) == len && memcmp(out[i].name, name, len) == 0)
            return &out[i];
    if (*n == max)
        return NULL;
    sld_route_figures_t *r = &out[(*n)++];
    memset(r, 0, sizeof *r);
    memcpy(r->name, name, len);
    return r;
}

static bool is(const char *metric, size_t len, const char *want) {
    return strlen(want) == len && memcmp(metric, want, len) == 0;
}

/* One sample line: metric{labels} value. */
static void line(const char *s, size_t len, sld_route_figures_t *out, size_t *n, size_t max) {
    static const char prefix[] = "sluice_gateway_";
    if (len < sizeof prefix || memcmp(s, prefix, sizeof prefix - 1) != 0)
        return;
    const char *brace = memchr(s, '{', len);
    const char *close = brace ? memchr(brace, '}', len - (size_t)(brace - s)) : NULL;
    if (close == NULL || close + 2 > s + len || close[1] != ' ')
        return;
    char num[40];
    size_t nlen = len - (size_t)(close + 2 - s);
    if (nlen == 0 || nlen >= sizeof num)
        return;
    memcpy(num, close + 2, nlen);
    num[nlen] = '\0';
    char *end;
    double v = strtod(num, &end);
    if (*end != '\0' || !(v >= 0) || v > 1.8e19)
        return;
    const char *metric = s + sizeof prefix - 1, *name, *value;
    size_t mlen = (size_t)(brace - metric), name_len, value_len;
    size_t llen = (size_t)(close - brace + 1);
    if (!label(brace, llen, "route", &name, &name_len))
        return;
    sld_route_figures_t *r = route(out, n, max, name, name_len);
    if (r == NULL)
        return;
    if (is(metric, mlen, "inflight")) {
        r->has_inflight = true;
        r->inflight = (uint64_t)v;
    } else if (is(metric, mlen, "queue_depth")) {
        r->queue_depth = (uint64_t)v;
    } else if (is(metric, mlen, "upstream_seconds_sum")) {
        r->upstream_sum = v;
    } else if (is(metric, mlen, "upstream_seconds_count")) {
        r->upstream_count = (uint64_t)v;
    } else if (is(metric, mlen, "requests_total") && label(brace, llen, "result", &value, &value_len)) {
        for (size_t k = 0; k < SLD_ROUTE_RESULTS; k++)
            if (strlen(sld_route_result_names[k]) == value_len &&
                memcmp(sld_route_result_names[k], value, value_len) == 0)
                r->requests[k] = (uint64_t)v;
    } else if (is(metric, mlen, "upstream_errors_total") && label(brace, llen, "status", &value, &value_len)) {
        if (value_len == 3 && memcmp(value, "502", 3) == 0)
            r->errors_502 = (uint64_t)v;
        else if (value_len == 3 && memcmp(value, "504", 3) == 0)
            r->errors_504 = (uint64_t)v;
    }
}

size_t sld_route_figures_parse(const char *text, size_t len, sld_route_figures_t *out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        line(text + i, end - i, out, &n, max);
        i = end + 1;
    }
    return n;
}
