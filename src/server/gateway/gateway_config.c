/* gateway_config.c -- the gateway: section, read and checked (see
 * gateway_config.h): its libcyaml schema (every scalar a string, as the rest
 * of the file), the conversion of each value with the file's rules and
 * messages, and the check of its routes against the policies.
 *
 * listen and a route's upstream may be a scalar or a list, which libcyaml
 * cannot describe: they are taken from libyaml's document of the file's
 * text (yaml_parser_load), loaded again here. config/ has refused what that
 * document could not stand for by then (aliases, non-scalar keys, deep
 * nesting, a second document); a non-scalar key is still refused here.
 *
 * Not here: serving, matching.
 */
#include <ctype.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>
#include <yaml.h>

#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_tls.h"

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
    char **policies;
    unsigned policies_count;
    char *excess, *status, *body, *timeout, *max_delay, *queue, *tls_ca, *tls_verify, *access_log;
    raw_concurrency_t *concurrency;
    raw_headers_t *headers;
} raw_route_t;

typedef struct raw_gateway {
    char *timeout, *access_log;
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
    CYAML_FIELD_IGNORE("upstream", SLD_CFG_OPT), /* a URL or a list: read by get_upstreams() */
    CYAML_FIELD_SEQUENCE("policies", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, policies, &sld_config_string_entry, 0,
                         SLD_GW_MAX_POLICIES),
    SLD_CFG_STR("excess", SLD_CFG_OPT, raw_route_t, excess),
    SLD_CFG_STR("status", SLD_CFG_OPT, raw_route_t, status),
    SLD_CFG_STR("body", SLD_CFG_OPT, raw_route_t, body),
    SLD_CFG_STR("timeout", SLD_CFG_OPT, raw_route_t, timeout),
    SLD_CFG_STR("max_delay", SLD_CFG_OPT, raw_route_t, max_delay),
    SLD_CFG_STR("queue", SLD_CFG_OPT, raw_route_t, queue),
    SLD_CFG_STR("tls_ca", SLD_CFG_OPT, raw_route_t, tls_ca),
    SLD_CFG_STR("tls_verify", SLD_CFG_OPT, raw_route_t, tls_verify),
    CYAML_FIELD_MAPPING_PTR("concurrency", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, concurrency,
                            concurrency_fields),
    CYAML_FIELD_MAPPING_PTR("headers", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_route_t, headers, headers_fields),
    SLD_CFG_STR("access_log", SLD_CFG_OPT, raw_route_t, access_log),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t route_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_route_t, route_fields),
};

static const cyaml_schema_field_t gateway_fields[] = {
    CYAML_FIELD_IGNORE("listen", SLD_CFG_OPT), /* an address or a list: read by get_listens() */
    SLD_CFG_STR("timeout", SLD_CFG_OPT, raw_gateway_t, timeout),
    SLD_CFG_STR("access_log", SLD_CFG_OPT, raw_gateway_t, access_log),
    CYAML_FIELD_MAPPING_PTR("headers", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_gateway_t, headers, headers_fields),
    CYAML_FIELD_SEQUENCE("routes", SLD_CFG_NULLABLE | SLD_CFG_OPT, raw_gateway_t, routes, &route_entry, 0,
                         SLD_GW_MAX_ROUTES),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t gateway_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_gateway_t, gateway_fields),
};

/* ---- the document: listen and upstream ------------------------------------------------------ */

/* The section's context and libyaml's document of the file. */
typedef struct reader {
    sld_config_ctx_t *c;
    yaml_document_t *doc;
} reader_t;

static yaml_node_t *ynode(const reader_t *rd, int i) { return i ? yaml_document_get_node(rd->doc, i) : NULL; }

static bool yis(const yaml_node_t *n, yaml_node_type_t t) { return n && n->type == t; }

/* A scalar's text; NULL for a collection, nothing, or a plain ~, null, Null,
 * NULL or empty scalar (YAML's nulls). */
static const char *yscalar(const yaml_node_t *n) {
    if (!yis(n, YAML_SCALAR_NODE))
        return NULL;
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0))
        return NULL;
    return v;
}

static bool ynull(const yaml_node_t *n) { return yis(n, YAML_SCALAR_NODE) && yscalar(n) == NULL; }

/* A mapping's i-th key as text; NULL for a non-scalar key (config/ refuses those first). */
static const char *ykey(const reader_t *rd, const yaml_node_t *m, size_t i) {
    yaml_node_t *k = ynode(rd, m->data.mapping.pairs.start[i].key);
    return yis(k, YAML_SCALAR_NODE) ? (const char *)k->data.scalar.value : NULL;
}

static size_t ypairs(const yaml_node_t *m) {
    return yis(m, YAML_MAPPING_NODE) ? (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start) : 0;
}

/* The value of `key` in mapping m, or NULL. */
static yaml_node_t *yget(const reader_t *rd, const yaml_node_t *m, const char *key) {
    for (size_t i = 0; i < ypairs(m); i++) {
        const char *k = ykey(rd, m, i);
        if (k && strcmp(k, key) == 0)
            return ynode(rd, m->data.mapping.pairs.start[i].value);
    }
    return NULL;
}

static size_t ylen(const yaml_node_t *s) {
    return yis(s, YAML_SEQUENCE_NODE) ? (size_t)(s->data.sequence.items.top - s->data.sequence.items.start) : 0;
}

static yaml_node_t *yat(const reader_t *rd, const yaml_node_t *s, size_t i) {
    return i < ylen(s) ? ynode(rd, s->data.sequence.items.start[i]) : NULL;
}

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
        if (n > 1 && m->host[n - 1] == '.')
            n--; /* "example.com." names example.com, as a request's host is compared */
        /* ".." searched in the whole text: "a.." is no "a." with its dot */
        bool ok = n > 0 && n <= MAX_HOST && m->host[0] != '.' && strstr(m->host, "..") == NULL;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)m->host[i]) || m->host[i] == '-' || m->host[i] == '.';
        if (!ok)
            return sld_config_bad(c, sld_config_join(p, sizeof p, at, "host"),
                                  "expected a host name like api.example.com (no port), got \"%s\"",
                                  sld_config_show(m->host, b));
        if ((rt->host = sld_config_dup(c, m->host)) == NULL)
            return SL_ENOMEM;
        rt->host[n] = '\0';
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

static int get_upstream(sld_config_ctx_t *c, const char *path, const yaml_node_t *n, char **out) {
    char b[64];
    h2o_url_t url;
    const char *text = yscalar(n);
    if (text == NULL)
        return sld_config_bad(c, path, "expected a URL like http://127.0.0.1:9000");
    bool https = strncmp(text, "https://", 8) == 0;
    if ((!https && strncmp(text, "http://", 7) != 0) || strlen(text) > 2048 ||
        h2o_url_parse(text, strlen(text), &url) != 0 || url.host.len == 0)
        return sld_config_bad(c, path,
                              "expected http://host:port or https://host:port, like http://127.0.0.1:9000, got \"%s\"",
                              sld_config_show(text, b));
    return (*out = sld_config_dup(c, text)) ? SL_OK : SL_ENOMEM;
}

/* A file's path (created if missing, appended to), stderr, or off. */
static int get_access_log(sld_config_ctx_t *c, const char *path, const char *text, char **out) {
    char b[64];
    if (strcasecmp(text, "off") == 0 || strcasecmp(text, "false") == 0 || strcasecmp(text, "no") == 0)
        return SL_OK;
    if (strcmp(text, "stderr") != 0 && (text[0] == '\0' || strlen(text) > 4096 || strchr(text, '\n')))
        return sld_config_bad(c, path, "expected a file's path, stderr or off, got \"%s\"",
                              sld_config_show(text, b));
    return (*out = sld_config_dup(c, text)) ? SL_OK : SL_ENOMEM;
}

static bool same_str(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* upstream: one URL or a list of them (round robin), and the TLS context
 * for the https ones: that of an earlier route (prev[0..nprev)) with the same
 * tls_verify and tls_ca when there is one, as loading a CA bundle takes
 * ~50 ms and ~870 KB a context. */
static int get_upstreams(const reader_t *rd, const char *at, const yaml_node_t *n, const raw_route_t *r,
                         sld_gw_route_t *rt, const sld_gw_route_t *prev, size_t nprev) {
    sld_config_ctx_t *c = rd->c;
    char p[PATH], e[PATH];
    int rc;
    sld_config_join(p, sizeof p, at, "upstream");
    if (n == NULL || ynull(n))
        return sld_config_bad(c, at, "upstream: is required (a URL like http://127.0.0.1:9000, or a list of them)");
    bool list = yis(n, YAML_SEQUENCE_NODE);
    size_t count = list ? ylen(n) : 1;
    if (list) {
        if (count == 0 || count > SLD_GW_MAX_UPSTREAMS)
            return sld_config_bad(c, p, "expected 1 to %d URLs, got %zu", SLD_GW_MAX_UPSTREAMS, count);
    }
    if ((rt->upstreams = calloc(count, sizeof *rt->upstreams)) == NULL)
        return sld_config_oom(c);
    bool https = false;
    for (size_t i = 0; i < count; i++) {
        if ((rc = get_upstream(c, list ? sld_config_entry(e, sizeof e, p, i) : p, list ? yat(rd, n, i) : n,
                               &rt->upstreams[i])))
            return rc;
        rt->nupstreams = i + 1;
        https = https || strncmp(rt->upstreams[i], "https://", 8) == 0;
    }
    rt->upstream = rt->upstreams[0];
    rt->tls_verify = true;
    if (r->tls_verify && (rc = get_switch(c, sld_config_join(e, sizeof e, at, "tls_verify"), r->tls_verify,
                                          &rt->tls_verify)))
        return rc;
    if (r->tls_ca && (rt->tls_ca = sld_config_dup(c, r->tls_ca)) == NULL)
        return SL_ENOMEM;
    if (!https) {
        if (r->tls_ca || r->tls_verify)
            return sld_config_bad(c, sld_config_join(e, sizeof e, at, r->tls_ca ? "tls_ca" : "tls_verify"),
                                  "applies to https:// upstreams only");
        return SL_OK;
    }
    if (r->tls_ca && !rt->tls_verify)
        return sld_config_bad(c, sld_config_join(e, sizeof e, at, "tls_ca"),
                              "a CA is of no use with tls_verify: off (nothing is verified)");
    for (size_t k = 0; k < nprev; k++)
        if (prev[k].tls && prev[k].tls_verify == rt->tls_verify && same_str(prev[k].tls_ca, rt->tls_ca)) {
            SSL_CTX_up_ref(prev[k].tls); /* route_free drops one reference a route */
            rt->tls = prev[k].tls;
            return SL_OK;
        }
    char why[512];
    if ((rc = sld_gw_tls_client(rt->tls_verify, rt->tls_ca, &rt->tls, why, sizeof why)) == SL_ENOMEM)
        return sld_config_oom(c);
    if (rc != SL_OK)
        return sld_config_bad(c, r->tls_ca ? sld_config_join(e, sizeof e, at, "tls_ca") : p, "%s", why);
    return SL_OK;
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
    bool access_log;                 /* the section has a log */
    sld_gw_headers_t headers;
    bool client_set;                 /* headers.client was written, not the default */
} route_defaults_t;

static int get_route(const reader_t *rd, const char *at, const raw_route_t *r, const yaml_node_t *node,
                     sld_gw_route_t *rt, const sld_gw_route_t *prev, size_t nprev, const route_defaults_t *def) {
    sld_config_ctx_t *c = rd->c;
    char p[PATH], b[64];
    int rc;
    rt->excess = SLD_GW_REJECT;
    rt->status = 429;
    rt->timeout = def->timeout;
    if ((rc = sld_config_get_name(c, sld_config_join(p, sizeof p, at, "name"), r->name, &rt->name)))
        return rc;
    if (r->match && (rc = get_match(c, sld_config_join(p, sizeof p, at, "match"), r->match, rt)))
        return rc;
    if ((rc = get_upstreams(rd, at, yget(rd, node, "upstream"), r, rt, prev, nprev)))
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
    rt->access_log = def->access_log;
    if (r->access_log) {
        bool on = true;
        if ((rc = get_switch(c, sld_config_join(p, sizeof p, at, "access_log"), r->access_log, &on)))
            return rc;
        if (on && !def->access_log)
            return sld_config_bad(c, p, "access_log: on needs gateway.access_log (a file, or stderr)");
        rt->access_log = on;
    }
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

/* One listener: an address, or {address: ..., tls: {cert: FILE, key: FILE}}. */
/* The first key of mapping m that is neither a nor b into *out (NULL when
 * none): SL_OK, or "cannot be read" for a non-scalar key, as before libyaml's
 * document read the section (config/ refuses those first). */
static int other_key(const reader_t *rd, const yaml_node_t *m, const char *a, const char *b, const char **out) {
    *out = NULL;
    for (size_t i = 0; i < ypairs(m); i++) {
        const char *k = ykey(rd, m, i);
        if (k == NULL)
            return sld_config_bad(rd->c, "gateway", "cannot be read");
        if (strcmp(k, a) != 0 && strcmp(k, b) != 0) {
            *out = k;
            return SL_OK;
        }
    }
    return SL_OK;
}

static int get_listen(const reader_t *rd, const char *at, const yaml_node_t *n, sld_gw_listen_t *l) {
    sld_config_ctx_t *c = rd->c;
    char p[PATH], t[PATH];
    const char *other;
    int rc;
    if (yscalar(n))
        return sld_config_get_listen(c, at, yscalar(n), l->addr);
    if (!yis(n, YAML_MAPPING_NODE))
        return sld_config_bad(c, at, "expected an address like 127.0.0.1:8080, or {address: 127.0.0.1:8443, "
                                     "tls: {cert: FILE, key: FILE}}");
    if ((rc = other_key(rd, n, "address", "tls", &other)))
        return rc;
    if (other)
        return sld_config_bad(c, sld_config_join(p, sizeof p, at, other),
                              "unknown key (a listener has address: and tls:)");
    const yaml_node_t *addr = yget(rd, n, "address"), *tls = yget(rd, n, "tls");
    if (yscalar(addr) == NULL)
        return sld_config_bad(c, addr ? sld_config_join(p, sizeof p, at, "address") : at,
                              "address: is required (an address like 127.0.0.1:8443)");
    rc = sld_config_get_listen(c, sld_config_join(p, sizeof p, at, "address"), yscalar(addr), l->addr);
    if (rc != SL_OK || tls == NULL)
        return rc;
    sld_config_join(t, sizeof t, at, "tls");
    if (!yis(tls, YAML_MAPPING_NODE))
        return sld_config_bad(c, t, "expected {cert: FILE, key: FILE}");
    if ((rc = other_key(rd, tls, "cert", "key", &other)))
        return rc;
    if (other)
        return sld_config_bad(c, sld_config_join(p, sizeof p, t, other),
                              "unknown key (tls: has cert: and key:, PEM files)");
    const yaml_node_t *cert = yget(rd, tls, "cert"), *key = yget(rd, tls, "key");
    const char *missing = cert == NULL ? "cert" : key == NULL ? "key" : NULL;
    if (missing)
        return sld_config_bad(c, t, "%s: is required (a PEM file)", missing);
    const char *cert_file = yscalar(cert), *key_file = yscalar(key);
    if (cert_file == NULL || cert_file[0] == '\0')
        return sld_config_bad(c, sld_config_join(p, sizeof p, t, "cert"), "expected a file name");
    if (key_file == NULL || key_file[0] == '\0')
        return sld_config_bad(c, sld_config_join(p, sizeof p, t, "key"), "expected a file name");
    if ((l->cert = sld_config_dup(c, cert_file)) == NULL || (l->key = sld_config_dup(c, key_file)) == NULL)
        return SL_ENOMEM;
    char why[1024];
    sld_gw_tls_file_t which;
    if ((rc = sld_gw_tls_server(l->cert, l->key, &l->tls, &which, why, sizeof why)) == SL_ENOMEM)
        return sld_config_oom(c);
    if (rc != SL_OK)
        return sld_config_bad(c, sld_config_join(p, sizeof p, t, which == SLD_GW_TLS_CERT ? "cert" : "key"), "%s",
                              why);
    return SL_OK;
}

/* listen: an address, or a list of addresses and listeners with tls:. */
static int get_listens(const reader_t *rd, const yaml_node_t *n, sld_gw_config_t *g) {
    sld_config_ctx_t *c = rd->c;
    char p[PATH];
    int rc;
    if (n == NULL || ynull(n))
        return sld_config_bad(c, "gateway", "listen: is required (the gateway's own address, like "
                                            "127.0.0.1:8080)");
    bool list = yis(n, YAML_SEQUENCE_NODE);
    size_t count = list ? ylen(n) : 1;
    if (list) {
        if (count == 0 || count > SLD_GW_MAX_LISTENS)
            return sld_config_bad(c, "gateway.listen", "expected 1 to %d listeners, got %zu", SLD_GW_MAX_LISTENS,
                                  count);
    }
    if ((g->listens = calloc(count, sizeof *g->listens)) == NULL)
        return sld_config_oom(c);
    for (size_t i = 0; i < count; i++) {
        g->nlistens = i + 1;
        const char *at = list ? sld_config_entry(p, sizeof p, "gateway.listen", i) : "gateway.listen";
        if ((rc = get_listen(rd, at, list ? yat(rd, n, i) : n, &g->listens[i])))
            return rc;
        const char *port = strrchr(g->listens[i].addr, ':');
        for (size_t k = 0; k < i; k++)
            if (strcmp(g->listens[k].addr, g->listens[i].addr) == 0 && !(port && strcmp(port, ":0") == 0))
                return sld_config_bad(c, at, "%s is listed twice", g->listens[i].addr);
    }
    memcpy(g->listen, g->listens[0].addr, sizeof g->listen);
    return SL_OK;
}

static void route_free(sld_gw_route_t *rt) {
    free(rt->name);
    free(rt->path_prefix);
    for (size_t i = 0; i < rt->nmethods; i++)
        free(rt->methods[i]);
    free(rt->methods);
    free(rt->host);
    for (size_t i = 0; i < rt->nupstreams; i++)
        free(rt->upstreams[i]);
    free(rt->upstreams);
    SSL_CTX_free(rt->tls);
    free(rt->tls_ca);
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
    free(g->access_log);
    for (size_t i = 0; i < g->nlistens; i++) {
        free(g->listens[i].cert);
        free(g->listens[i].key);
        SSL_CTX_free(g->listens[i].tls);
    }
    free(g->listens);
    free(g);
}

static int gateway_read(const reader_t *rd, const raw_gateway_t *r, const yaml_node_t *node, sld_gw_config_t *g);

static int gateway_parse(sld_config_ctx_t *c, const void *raw, void **out) {
    const raw_gateway_t *r = raw;
    sld_gw_config_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return sld_config_oom(c);
    *out = g; /* freed with the section, even when incomplete */
    g->timeout = DEFAULT_TIMEOUT;
    int rc;
    /* listen and the routes' upstream: from libyaml's document of the file's text */
    size_t len;
    const char *text = sld_config_source(c, &len);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sld_config_oom(c);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    bool loaded = yaml_parser_load(&parser, &doc) != 0;
    yaml_error_type_t error = parser.error;
    /* config/ lets an anchor be written again (YAML allows it; with aliases
     * refused it names nothing), libyaml's loader does not: say so. */
    bool anchor = error == YAML_COMPOSER_ERROR && parser.context && strstr(parser.context, "duplicate anchor");
    size_t first = parser.context_mark.line + 1, second = parser.problem_mark.line + 1;
    yaml_parser_delete(&parser);
    if (!loaded && anchor)
        return sld_config_bad(c, "gateway", "cannot be read: the anchor of line %zu is used again on line %zu "
                                            "(anchors must differ)", first, second);
    if (!loaded)
        return error == YAML_MEMORY_ERROR ? sld_config_oom(c) : sld_config_bad(c, "gateway", "cannot be read");
    reader_t rd = {.c = c, .doc = &doc};
    rc = gateway_read(&rd, r, yget(&rd, yaml_document_get_root_node(&doc), "gateway"), g);
    yaml_document_delete(&doc);
    return rc;
}

static int gateway_read(const reader_t *rd, const raw_gateway_t *r, const yaml_node_t *node, sld_gw_config_t *g) {
    sld_config_ctx_t *c = rd->c;
    char p[PATH];
    int rc;
    if ((rc = get_listens(rd, yget(rd, node, "listen"), g)))
        return rc;
    if (r->timeout &&
        (rc = sld_config_get_duration_ms(c, "gateway.timeout", r->timeout, MAX_TIMEOUT, &g->timeout)))
        return rc;
    if (r->access_log && (rc = get_access_log(c, "gateway.access_log", r->access_log, &g->access_log)))
        return rc;
    route_defaults_t def = {.timeout = g->timeout, .headers = {.client = true, .upstream = false},
                            .access_log = g->access_log != NULL};
    if (r->headers && (rc = get_headers(c, "gateway.headers", r->headers, &def.headers, &def.client_set)))
        return rc;
    if (r->routes_count == 0)
        return sld_config_bad(c, "gateway", "routes: at least one route is needed");
    if ((g->routes = calloc(r->routes_count, sizeof *g->routes)) == NULL)
        return sld_config_oom(c);
    const yaml_node_t *routes = yget(rd, node, "routes");
    for (unsigned i = 0; i < r->routes_count; i++) {
        g->nroutes = i + 1;
        if ((rc = get_route(rd, sld_config_entry(p, sizeof p, "gateway.routes", i), &r->routes[i],
                            yat(rd, routes, i), &g->routes[i], g->routes, i, &def)))
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
