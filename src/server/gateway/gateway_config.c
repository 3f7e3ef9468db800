/* gateway_config.c -- the gateway: section, read and checked (see
 * gateway_config.h): its libcyaml schema (every scalar a string, as the rest
 * of the file), the conversion of each value with the file's rules and
 * messages, and the check of its routes against the policies.
 *
 * Not here: serving, matching.
 */
#include <ctype.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "server/gateway/gateway_config.h"

#define DEFAULT_TIMEOUT (30 * SL_USEC_PER_SEC)
#define MAX_TIMEOUT (3600 * SL_USEC_PER_SEC)
#define MAX_BODY 4096
#define MAX_PREFIX 4096
#define MAX_HOST 255
#define PATH 256
#define DEFAULT_QUEUE 1000
#define DEFAULT_MAX_DELAY SL_USEC_PER_SEC
#define MAX_QUEUE 1000000
#define MAX_LIMIT 1000000

typedef struct raw_match {
    char *path_prefix, *host;
    char **methods;
    unsigned methods_count;
} raw_match_t;

typedef struct raw_concurrency {
    char *limit, *per, *max_wait, *status;
} raw_concurrency_t;

typedef struct raw_headers {
    char *client, *upstream;
} raw_headers_t;

typedef struct raw_route {
    char *name;
    raw_match_t *match;
    char *upstream;
    char **policies;
    unsigned policies_count;
    char *excess, *status, *body, *timeout, *max_delay, *queue;
    raw_concurrency_t *concurrency;
    raw_headers_t *headers;
} raw_route_t;

typedef struct raw_gateway {
    char *listen, *timeout;
    raw_headers_t *headers;
    raw_route_t *routes;
    unsigned routes_count;
} raw_gateway_t;

static const cyaml_schema_field_t match_fields[] = {
    SLD_CFG_STR("path_prefix", SLD_CFG_OPT, raw_match_t, path_prefix),
    SLD_CFG_STR("host", SLD_CFG_OPT, raw_match_t, host),
    CYAML_FIELD_SEQUENCE("methods", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_match_t, methods, &sld_config_string_entry, 0,
                         SLD_GW_MAX_METHODS),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t concurrency_fields[] = {
    SLD_CFG_STR("limit", SLD_CFG_OPT, raw_concurrency_t, limit),
    SLD_CFG_STR("per", SLD_CFG_OPT, raw_concurrency_t, per),
    SLD_CFG_STR("max_wait", SLD_CFG_OPT, raw_concurrency_t, max_wait),
    SLD_CFG_STR("status", SLD_CFG_OPT, raw_concurrency_t, status),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t headers_fields[] = {
    SLD_CFG_STR("client", SLD_CFG_OPT, raw_headers_t, client),
    SLD_CFG_STR("upstream", SLD_CFG_OPT, raw_headers_t, upstream),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t route_fields[] = {
    SLD_CFG_STR("name", 0, raw_route_t, name),
    CYAML_FIELD_MAPPING_PTR("match", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, match, match_fields),
    SLD_CFG_STR("upstream", 0, raw_route_t, upstream),
    CYAML_FIELD_SEQUENCE("policies", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, policies, &sld_config_string_entry, 0,
                         SLD_GW_MAX_POLICIES),
    SLD_CFG_STR("excess", SLD_CFG_OPT, raw_route_t, excess),
    SLD_CFG_STR("status", SLD_CFG_OPT, raw_route_t, status),
    SLD_CFG_STR("body", SLD_CFG_OPT, raw_route_t, body),
    SLD_CFG_STR("timeout", SLD_CFG_OPT, raw_route_t, timeout),
    SLD_CFG_STR("max_delay", SLD_CFG_OPT, raw_route_t, max_delay),
    SLD_CFG_STR("queue", SLD_CFG_OPT, raw_route_t, queue),
    CYAML_FIELD_MAPPING_PTR("concurrency", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, concurrency,
                            concurrency_fields),
    CYAML_FIELD_MAPPING_PTR("headers", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, headers, headers_fields),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t route_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_route_t, route_fields),
};

static const cyaml_schema_field_t gateway_fields[] = {
    SLD_CFG_STR("listen", SLD_CFG_OPT, raw_gateway_t, listen),
    SLD_CFG_STR("timeout", SLD_CFG_OPT, raw_gateway_t, timeout),
    CYAML_FIELD_MAPPING_PTR("headers", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_gateway_t, headers, headers_fields),
    CYAML_FIELD_SEQUENCE("routes", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_gateway_t, routes, &route_entry, 0,
                         SLD_GW_MAX_ROUTES),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t gateway_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_gateway_t, gateway_fields),
};

/* ---- values ---------------------------------------------------------------------------------- */

static bool is_tchar(unsigned char ch) {
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int get_match(sld_config_ctx_t *c, const char *at, const raw_match_t *m, sld_gw_route_t *rt) {
    char p[PATH], b[64];
    if (m->path_prefix) {
        size_t n = strlen(m->path_prefix);
        if (n == 0 || m->path_prefix[0] != '/' || n > MAX_PREFIX)
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "path_prefix"),
                                  "expected a path starting with /, like /api/, got \"%s\"",
                                  sld_config_show(m->path_prefix, b));
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)m->path_prefix[i] <= 0x20 || (unsigned char)m->path_prefix[i] >= 0x7f)
                return sld_config_bad(c, sld_config_join(p, sizeof p, at, "path_prefix"),
                                      "a path is printable ASCII without spaces");
        if ((rt->path_prefix = sld_config_dup(c, m->path_prefix)) == NULL)
            return SL_ENOMEM;
        rt->path_prefix_len = n;
    }
    if (m->host) {
        size_t n = strlen(m->host);
        bool ok = n > 0 && n <= MAX_HOST;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)m->host[i]) || m->host[i] == '-' || m->host[i] == '.';
        if (!ok)
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "host"),
                                  "expected a host name like api.example.com (no port), got \"%s\"",
                                  sld_config_show(m->host, b));
        if ((rt->host = sld_config_dup(c, m->host)) == NULL)
            return SL_ENOMEM;
        for (size_t i = 0; i < n; i++)
            rt->host[i] = (char)tolower((unsigned char)rt->host[i]);
    }
    if (m->methods_count) {
        if ((rt->methods = calloc(m->methods_count, sizeof *rt->methods)) == NULL)
            return sld_config_oom(c);
        char list[PATH];
        sld_config_join(list, sizeof list, at, "methods");
        for (unsigned i = 0; i < m->methods_count; i++) {
            const char *t = m->methods[i];
            bool ok = t[0] != '\0' && strlen(t) <= 32;
            for (const char *s = t; ok && *s; s++)
                ok = is_tchar((unsigned char)*s) && !islower((unsigned char)*s);
            if (!ok)
                return sld_config_bad(c, sld_config_entry(p, sizeof p, list, i),
                                      "expected an HTTP method in upper case, like GET, got \"%s\"",
                                      sld_config_show(t, b));
            if ((rt->methods[i] = sld_config_dup(c, t)) == NULL)
                return SL_ENOMEM;
            rt->nmethods = i + 1;
        }
    }
    return SL_OK;
}

/* "on" or "off" (true/false, yes/no too, as YAML 1.1 writes them). */
static int get_switch(sld_config_ctx_t *c, const char *path, const char *text, bool *out) {
    static const char *const on[] = {"on", "true", "yes"}, *const off[] = {"off", "false", "no"};
    char b[64];
    for (size_t i = 0; i < 3; i++) {
        if (strcasecmp(text, on[i]) == 0)
            return *out = true, SL_OK;
        if (strcasecmp(text, off[i]) == 0)
            return *out = false, SL_OK;
    }
    return sld_config_bad(c, path, "expected on or off, got \"%s\"", sld_config_show(text, b));
}

/* Only what r says: the rest of *h stays (the section's, or the defaults). */
static int get_headers(sld_config_ctx_t *c, const char *at, const raw_headers_t *r, sld_gw_headers_t *h,
                       bool *client_set) {
    char p[PATH];
    int rc;
    if (r->client) {
        if ((rc = get_switch(c, sld_config_join(p, sizeof p, at, "client"), r->client, &h->client)))
            return rc;
        *client_set = true;
    }
    if (r->upstream && (rc = get_switch(c, sld_config_join(p, sizeof p, at, "upstream"), r->upstream,
                                        &h->upstream)))
        return rc;
    return SL_OK;
}

static int get_upstream(sld_config_ctx_t *c, const char *path, const char *text, char **out) {
    char b[64];
    h2o_url_t url;
    if (strncmp(text, "https://", 8) == 0)
        return sld_config_bad(c, path, "https upstreams are not supported yet: use http://");
    if (strncmp(text, "http://", 7) != 0 || strlen(text) > 2048 ||
        h2o_url_parse(text, strlen(text), &url) != 0 || url.host.len == 0)
        return sld_config_bad(c, path, "expected http://host:port, like http://127.0.0.1:9000, got \"%s\"",
                              sld_config_show(text, b));
    return (*out = sld_config_dup(c, text)) ? SL_OK : SL_ENOMEM;
}

static int get_concurrency(sld_config_ctx_t *c, const char *at, const raw_concurrency_t *r,
                           sld_gw_route_t *rt) {
    char p[PATH], b[64];
    int rc;
    sld_gw_concurrency_t *cc = &rt->concurrency;
    cc->status = 503;
    if (r->limit == NULL)
        return sld_config_bad(c, at, "limit: is required (the most requests in flight, like 10)");
    if ((rc = sld_config_get_u32(c, sld_config_join(p, sizeof p, at, "limit"), r->limit, 1, MAX_LIMIT,
                                 &cc->limit)))
        return rc;
    if (r->per) {
        if (strcmp(r->per, "key") == 0)
            cc->per_key = true;
        else if (strcmp(r->per, "route") != 0)
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "per"),
                                  "expected route or key, got \"%s\"", sld_config_show(r->per, b));
    }
    if (r->max_wait && (rc = sld_config_get_duration_ms(c, sld_config_join(p, sizeof p, at, "max_wait"),
                                                        r->max_wait, MAX_TIMEOUT, &cc->max_wait)))
        return rc;
    if (r->status && (rc = sld_config_get_u32(c, sld_config_join(p, sizeof p, at, "status"), r->status, 400,
                                              599, &cc->status)))
        return rc;
    return SL_OK;
}

/* The section's defaults a route starts from. */
typedef struct route_defaults {
    sl_usec_t timeout;
    sld_gw_headers_t headers;
    bool client_set;                 /* headers.client was written, not the default */
} route_defaults_t;

static int get_route(sld_config_ctx_t *c, const char *at, const raw_route_t *r, sld_gw_route_t *rt,
                     const route_defaults_t *def) {
    char p[PATH], b[64];
    int rc;
    rt->excess = SLD_GW_REJECT;
    rt->status = 429;
    rt->timeout = def->timeout;
    if ((rc = sld_config_get_name(c, sld_config_join(p, sizeof p, at, "name"), r->name, &rt->name)))
        return rc;
    if (r->match && (rc = get_match(c, sld_config_join(p, sizeof p, at, "match"), r->match, rt)))
        return rc;
    if ((rc = get_upstream(c, sld_config_join(p, sizeof p, at, "upstream"), r->upstream, &rt->upstream)))
        return rc;
    if (r->excess) {
        if (strcmp(r->excess, "reject") == 0)
            rt->excess = SLD_GW_REJECT;
        else if (strcmp(r->excess, "shadow") == 0)
            rt->excess = SLD_GW_SHADOW;
        else if (strcmp(r->excess, "delay") == 0)
            rt->excess = SLD_GW_DELAY;
        else
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "excess"),
                                  "expected reject, delay or shadow, got \"%s\"", sld_config_show(r->excess, b));
        if (rt->excess == SLD_GW_DELAY && r->policies_count == 0)
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "excess"),
                                  "excess: delay needs at least one policy (this route has none)");
    }
    /* a shadow route is meant to change nothing for its clients: its fields
     * (which may say r=0 on a request it forwards) reach them only when asked */
    rt->headers = def->headers;
    bool client_set = def->client_set;
    if (r->headers && (rc = get_headers(c, sld_config_join(p, sizeof p, at, "headers"), r->headers, &rt->headers,
                                        &client_set)))
        return rc;
    if (!client_set)
        rt->headers.client = rt->excess != SLD_GW_SHADOW;
    rt->max_delay = DEFAULT_MAX_DELAY;
    if (r->max_delay) {
        if ((rc = sld_config_get_duration_ms(c, sld_config_join(p, sizeof p, at, "max_delay"), r->max_delay,
                                             MAX_TIMEOUT, &rt->max_delay)))
            return rc;
        if (rt->excess != SLD_GW_DELAY)
            return sld_config_bad(c, p, "max_delay applies to excess: delay only");
    }
    rt->queue = DEFAULT_QUEUE;
    if (r->concurrency &&
        (rc = get_concurrency(c, sld_config_join(p, sizeof p, at, "concurrency"), r->concurrency, rt)))
        return rc;
    if (r->queue) {
        if ((rc = sld_config_get_u32(c, sld_config_join(p, sizeof p, at, "queue"), r->queue, 0, MAX_QUEUE,
                                     &rt->queue)))
            return rc;
        if (rt->concurrency.limit == 0 && rt->excess != SLD_GW_DELAY)
            return sld_config_bad(c, p, "queue applies to excess: delay and concurrency: only");
    }
    if (r->status) {
        if ((rc = sld_config_get_u32(c, sld_config_join(p, sizeof p, at, "status"), r->status, 400, 599,
                                     &rt->status)))
            return rc;
        if (rt->excess == SLD_GW_SHADOW)
            return sld_config_bad(c, p, "status applies to excess: reject and delay only");
    }
    if (r->body) {
        sld_config_join(p, sizeof p, at, "body");
        if (strlen(r->body) > MAX_BODY)
            return sld_config_bad(c, p, "at most %d bytes", MAX_BODY);
        if (rt->excess == SLD_GW_SHADOW)
            return sld_config_bad(c, p, "body applies to excess: reject and delay only");
    }
    if ((rt->body = sld_config_dup(c, r->body ? r->body : "rate limit exceeded\n")) == NULL)
        return SL_ENOMEM;
    if (r->timeout && (rc = sld_config_get_duration_ms(c, sld_config_join(p, sizeof p, at, "timeout"),
                                                       r->timeout, MAX_TIMEOUT, &rt->timeout)))
        return rc;
    if (r->policies_count) {
        if ((rt->policies = calloc(r->policies_count, sizeof *rt->policies)) == NULL)
            return sld_config_oom(c);
        char list[PATH];
        sld_config_join(list, sizeof list, at, "policies");
        for (unsigned i = 0; i < r->policies_count; i++) {
            if ((rc = sld_config_get_name(c, sld_config_entry(p, sizeof p, list, i), r->policies[i],
                                          &rt->policies[i])))
                return rc;
            rt->npolicies = i + 1;
            for (size_t k = 0; k < i; k++)
                if (strcmp(rt->policies[k], rt->policies[i]) == 0)
                    return sld_config_bad(c, p, "policy \"%s\" is named twice", rt->policies[i]);
        }
    }
    return SL_OK;
}

static void route_free(sld_gw_route_t *rt) {
    free(rt->name);
    free(rt->path_prefix);
    for (size_t i = 0; i < rt->nmethods; i++)
        free(rt->methods[i]);
    free(rt->methods);
    free(rt->host);
    free(rt->upstream);
    for (size_t i = 0; i < rt->npolicies; i++)
        free(rt->policies[i]);
    free(rt->policies);
    free(rt->body);
}

static void gateway_free(void *value) {
    sld_gw_config_t *g = value;
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->nroutes; i++)
        route_free(&g->routes[i]);
    free(g->routes);
    free(g);
}

static int gateway_parse(sld_config_ctx_t *c, const void *raw, void **out) {
    const raw_gateway_t *r = raw;
    sld_gw_config_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return sld_config_oom(c);
    *out = g; /* freed with the section, even when incomplete */
    g->timeout = DEFAULT_TIMEOUT;
    char p[PATH];
    int rc;
    if (r->listen == NULL)
        return sld_config_bad(c, "gateway", "listen: is required (the gateway's own address, like "
                                            "127.0.0.1:8080)");
    if ((rc = sld_config_get_listen(c, "gateway.listen", r->listen, g->listen)))
        return rc;
    if (r->timeout &&
        (rc = sld_config_get_duration_ms(c, "gateway.timeout", r->timeout, MAX_TIMEOUT, &g->timeout)))
        return rc;
    route_defaults_t def = {.timeout = g->timeout, .headers = {.client = true, .upstream = false}};
    if (r->headers && (rc = get_headers(c, "gateway.headers", r->headers, &def.headers, &def.client_set)))
        return rc;
    if (r->routes_count == 0)
        return sld_config_bad(c, "gateway", "routes: at least one route is needed");
    if ((g->routes = calloc(r->routes_count, sizeof *g->routes)) == NULL)
        return sld_config_oom(c);
    for (unsigned i = 0; i < r->routes_count; i++) {
        g->nroutes = i + 1;
        if ((rc = get_route(c, sld_config_entry(p, sizeof p, "gateway.routes", i), &r->routes[i],
                            &g->routes[i], &def)))
            return rc;
        char name[PATH];
        sld_config_join(name, sizeof name, p, "name");
        for (size_t k = 0; k < i; k++)
            if (strcmp(g->routes[k].name, g->routes[i].name) == 0)
                return sld_config_bad(c, name, "route name \"%s\" is already used", g->routes[i].name);
    }
    return SL_OK;
}

/* Every policy a route names exists, and is keyed by request attributes. */
static int gateway_check(sld_config_ctx_t *c, const void *value, const sld_config_t *cfg) {
    const sld_gw_config_t *g = value;
    char p[PATH], list[PATH];
    for (size_t i = 0; i < g->nroutes; i++) {
        const sld_gw_route_t *rt = &g->routes[i];
        sld_config_entry(list, sizeof list, "gateway.routes", i);
        sld_config_join(list, sizeof list, list, "policies");
        for (size_t k = 0; k < rt->npolicies; k++) {
            const sld_policy_t *pol = sld_config_policy(cfg, rt->policies[k]);
            sld_config_entry(p, sizeof p, list, k);
            if (pol == NULL)
                return sld_config_bad(c, p, "no policy named \"%s\" (policies: lists them)", rt->policies[k]);
            for (size_t a = 0; a < pol->nkey_attrs; a++)
                if (strcmp(pol->key_attrs[a], "key") == 0)
                    return sld_config_bad(c, p,
                                          "policy \"%s\" is keyed by a key the client gives; the gateway "
                                          "builds keys from requests: give it key: [ip], [user], ...",
                                          pol->name);
        }
    }
    return SL_OK;
}

const sld_config_section_t sld_gateway_section = {
    .name = "gateway",
    .schema = &gateway_schema,
    .listens = true,
    .parse = gateway_parse,
    .check = gateway_check,
    .free = gateway_free,
};
