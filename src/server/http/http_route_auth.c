/* http_route_auth.c -- forward-auth, any method on /v1/auth/<policy>[/path]
 * (docs/protocol.md "Forward-auth"): for gateways that ask before serving a
 * request (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz). The
 * key is built from the forwarded request's headers (keys/forward.c); the
 * answer is 200 or auth_deny_status with the rate limit headers, no body.
 */
#include <string.h>
#include <strings.h>

#include "server/http/http_decide.h"
#include "server/http/http_routes.h"
#include "server/http/http_wait.h"

static sld_span_t header(const sld_http_request_t *req, const char *name) {
    if (req->header == NULL)
        return (sld_span_t){NULL, 0};
    return req->header(req->header_ctx, name, strlen(name));
}

static sld_span_t first_header(const sld_http_request_t *req, const char *a, const char *b) {
    sld_span_t v = header(req, a);
    return v.ptr != NULL ? v : header(req, b);
}

typedef struct header_ctx {
    const sld_http_request_t *req;
    char lower[256];
} header_ctx_t;

/* header:<Name>, looked up by the lower-case name the wire layer keeps. */
static sld_span_t request_header(void *ctx, const char *name, size_t len) {
    header_ctx_t *h = ctx;
    if (len >= sizeof h->lower)
        return (sld_span_t){NULL, 0};
    for (size_t i = 0; i < len; i++)
        h->lower[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
    h->lower[len] = '\0';
    return h->req->header ? h->req->header(h->req->header_ctx, h->lower, len) : (sld_span_t){NULL, 0};
}

static bool keys_on(const sld_policy_t *pc, const char *attr) {
    for (size_t i = 0; i < pc->nkey_attrs; i++)
        if (strcmp(pc->key_attrs[i], attr) == 0)
            return true;
    return false;
}

static void auth_status(sld_http_reply_t *r, const sld_http_decision_t *f, const sl_decision_t *dec) {
    r->status = dec->allowed ? 200 : (int)f->rt->cfg->auth_deny_status;
}

/* /v1/auth/<policy>[/original path]: `rest` is what follows "/v1/auth/". */
static void forward_auth(const sld_http_call_t *c) {
    const sld_runtime_t *rt = c->rt;
    const sld_http_request_t *req = c->req;
    sld_http_reply_t *r = c->reply;
    sld_span_t rest = c->rest;
    const sld_config_t *cfg = rt->cfg;
    sld_span_t name = rest, tail = {NULL, 0};
    const char *slash = memchr(rest.ptr, '/', rest.len);
    if (slash) {
        name.len = (size_t)(slash - rest.ptr);
        tail = (sld_span_t){slash, rest.len - name.len};
    }
    size_t index = 0;
    const sld_policy_t *pc = name.len ? sld_http_policy_named(rt, name, &index) : NULL;
    if (pc == NULL) {
        sld_http_unknown_policy(r, name);
        return;
    }
    if (sld_http_only_key(pc)) {
        sld_http_error(r, 400, "bad_request", "policy",
                       "policy: '%s' is keyed by a key the client gives (use /v1/check); forward-auth "
                       "needs key: [ip, user, endpoint, method or header:NAME]",
                       pc->name);
        return;
    }
    header_ctx_t hc = {.req = req};
    char user_header[256];
    size_t un = strlen(cfg->user_header);
    if (un >= sizeof user_header)
        un = sizeof user_header - 1;
    for (size_t i = 0; i < un; i++) {
        char ch = cfg->user_header[i];
        user_header[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch);
    }
    user_header[un] = '\0';
    sld_forwarded_t fw = {.peer = req->peer,
                          .x_forwarded_for = header(req, "x-forwarded-for"),
                          .x_real_ip = header(req, "x-real-ip"),
                          .user = header(req, user_header),
                          .uri = first_header(req, "x-original-uri", "x-forwarded-uri"),
                          .method = first_header(req, "x-original-method", "x-forwarded-method"),
                          .header = request_header,
                          .header_ctx = &hc};
    if (fw.uri.ptr == NULL && tail.ptr != NULL) /* Envoy appends the original path */
        fw.uri = tail;
    if (fw.method.ptr == NULL)
        fw.method = req->method;
    if (keys_on(pc, "user") && (fw.user.ptr == NULL || fw.user.len == 0)) {
        sld_http_error(r, 401, "unauthorized", "user", "no %s header: the policy keys on the user",
                       cfg->user_header);
        /* A 401 names how to authenticate (RFC 9110, 11.6.1). */
        if (strcasecmp(cfg->user_header, "authorization") == 0)
            sld_http_add_header(r, SLD_H_WWW_AUTHENTICATE, "Bearer realm=\"sluice\"");
        else
            sld_http_add_header(r, SLD_H_WWW_AUTHENTICATE, "ApiKey realm=\"sluice\", header=\"%s\"",
                                cfg->user_header);
        return;
    }
    size_t cap = (size_t)cfg->max_key_bytes + 1;
    if (!sld_buf_reserve(&r->key, cap)) {
        sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
        return;
    }
    const char *why = NULL;
    size_t n = sld_forward_key(&fw, rt->trusted, cfg->ipv6_prefix, pc->key_attrs, pc->nkey_attrs,
                               r->key.data, cap, &why);
    if (n == 0) {
        sld_http_error(r, 400, "bad_request", "key", "cannot build the key: %s", why ? why : "unknown");
        return;
    }
    sld_span_t key = {r->key.data, n};
    const sl_policy_t *p = sld_policies_find(rt->policies, name.ptr, name.len, key.ptr, key.len, NULL, &index);
    if (p == NULL) {
        sld_http_unknown_policy(r, name);
        return;
    }
    sld_http_decision_t f = {.rt = rt, .index = index, .p = p, .tier = NULL, .answer = auth_status};
    int64_t wait;
    if (sld_http_query_wait(c, &wait))
        sld_http_decide_wait(c, &f, key, 1, wait);
}

const sld_http_route_t sld_http_auth_routes[] = {
    {SLD_M_ANY, SLD_MATCH_PREFIX, "/v1/auth/", forward_auth, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
