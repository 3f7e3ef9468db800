/* gateway_diff.c -- two gateway: sections compared (see gateway_diff.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/gateway/gateway_diff.h"

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool same_list(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

bool sld_gw_route_equal(const sld_gw_route_t *a, const sld_gw_route_t *b) {
    return same_str(a->name, b->name) && same_str(a->path_prefix, b->path_prefix) &&
           same_list(a->methods, a->nmethods, b->methods, b->nmethods) && same_str(a->host, b->host) &&
           same_list(a->upstreams, a->nupstreams, b->upstreams, b->nupstreams) && a->tls_verify == b->tls_verify &&
           same_str(a->tls_ca, b->tls_ca) && same_list(a->policies, a->npolicies, b->policies, b->npolicies) &&
           a->excess == b->excess && a->status == b->status && same_str(a->body, b->body) &&
           a->timeout == b->timeout && memcmp(&a->concurrency, &b->concurrency, sizeof a->concurrency) == 0 &&
           a->queue == b->queue && a->max_delay == b->max_delay && a->headers.client == b->headers.client &&
           a->headers.upstream == b->headers.upstream && a->access_log == b->access_log;
}

bool sld_gw_routes_equal(const sld_gw_config_t *a, const sld_gw_config_t *b) {
    if (a->nroutes != b->nroutes)
        return false;
    for (size_t i = 0; i < a->nroutes; i++)
        if (!sld_gw_route_equal(&a->routes[i], &b->routes[i]))
            return false;
    return true;
}

/* ---- text ----------------------------------------------------------------------------------- */

typedef struct text {
    char *buf;
    size_t len, at;
    bool cut;
} text_t;

static void say(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(text_t *t, const char *fmt, ...) {
    if (t->len == 0 || t->cut)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->at, t->len - t->at, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < t->len - t->at) {
        t->at += (size_t)n;
        return;
    }
    t->cut = true; /* end it with "..." where there is room */
    size_t end = t->len - 1;
    for (size_t k = 0; k < 3 && end > k; k++)
        t->buf[end - 1 - k] = '.';
    t->buf[end] = '\0';
}

static const sld_gw_route_t *named(const sld_gw_config_t *g, const char *name, size_t *index) {
    for (size_t i = 0; i < g->nroutes; i++)
        if (strcmp(g->routes[i].name, name) == 0) {
            *index = i;
            return &g->routes[i];
        }
    return NULL;
}

/* The names of a's routes that `pick` says, after "label: "; how many. */
static size_t list(text_t *t, const char *label, const sld_gw_config_t *a, const sld_gw_config_t *b,
                   bool (*pick)(const sld_gw_route_t *r, const sld_gw_config_t *other)) {
    size_t n = 0;
    for (size_t i = 0; i < a->nroutes; i++) {
        if (!pick(&a->routes[i], b))
            continue;
        if (n++)
            say(t, ", %s", a->routes[i].name);
        else
            say(t, "%s%s: %s", t->at ? "; " : "", label, a->routes[i].name);
    }
    return n;
}

static bool missing(const sld_gw_route_t *r, const sld_gw_config_t *other) {
    size_t i;
    return named(other, r->name, &i) == NULL;
}

static bool differs(const sld_gw_route_t *r, const sld_gw_config_t *other) {
    size_t i;
    const sld_gw_route_t *o = named(other, r->name, &i);
    return o != NULL && !sld_gw_route_equal(r, o);
}

bool sld_gw_routes_change(const sld_gw_config_t *a, const sld_gw_config_t *b, sld_gw_routes_change_t *out,
                          char *text, size_t len) {
    text_t t = {.buf = text, .len = len};
    if (len)
        text[0] = '\0';
    *out = (sld_gw_routes_change_t){0};
    out->added = list(&t, "added", b, a, missing);
    out->removed = list(&t, "removed", a, b, missing);
    out->changed = list(&t, "changed", b, a, differs);
    /* the order of the routes both have: first match wins, so it matters */
    size_t last = 0;
    bool first = true;
    for (size_t i = 0; i < b->nroutes && !out->reordered; i++) {
        size_t at;
        if (named(a, b->routes[i].name, &at) == NULL)
            continue;
        out->reordered = !first && at < last;
        last = at;
        first = false;
    }
    if (out->reordered)
        say(&t, "%sorder changed", t.at ? "; " : "");
    return out->added || out->removed || out->changed || out->reordered;
}

size_t sld_gw_restart_keys(const sld_gw_config_t *running, const sld_gw_config_t *next, char *text, size_t len) {
    text_t t = {.buf = text, .len = len};
    if (len)
        text[0] = '\0';
    size_t n = 0;
    if (running->nlistens != next->nlistens) {
        say(&t, "gateway.listen (%zu listener%s instead of %zu)", next->nlistens, next->nlistens == 1 ? "" : "s",
            running->nlistens);
        n++;
    }
    for (size_t i = 0; i < running->nlistens && i < next->nlistens; i++) {
        const sld_gw_listen_t *r = &running->listens[i], *x = &next->listens[i];
        if (strcmp(r->addr, x->addr) != 0) {
            say(&t, "%sgateway.listen[%zu] (its address)", n ? ", " : "", i);
            n++;
        }
        bool cert = !same_str(r->cert, x->cert), key = !same_str(r->key, x->key);
        if (cert || key) {
            say(&t, "%sgateway.listen[%zu].tls (%s)", n ? ", " : "", i, cert && key ? "cert, key" : cert ? "cert" : "key");
            n++;
        }
    }
    if (next->access_log != NULL && !same_str(running->access_log, next->access_log)) {
        say(&t, "%sgateway.access_log (the file)", n ? ", " : "");
        n++;
    }
    return n;
}
