/* http_route_auth.c -- forward-auth, any method on /v1/auth/<policy>[/path]
 * (docs/protocol.md "Forward-auth"): for gateways that ask before serving a
 * request (nginx auth_request, Traefik ForwardAuth, Envoy ext_authz). The
 * key is built from the forwarded request's headers (keys/forward.c); the
 * answer is 200 or auth_deny_status with the rate limit headers, no body.
 */
#include <string.h>
#include <strings.h>

#include "server/http/http_decide.h"
#include "server/http/http_request.h"
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
    sld_http_headers_t headers = {.find = req->header, .ctx = req->header_ctx};
    sld_forwarded_t fw;
    sld_http_forwarded(&fw, &headers, req->peer, cfg->user_header);
    fw.uri = first_header(req, "x-original-uri", "x-forwarded-uri");
    fw.method = first_header(req, "x-original-method", "x-forwarded-method");
    if (fw.uri.ptr == NULL && tail.ptr != NULL) /* Envoy appends the original path */
        fw.uri = tail;
    if (fw.method.ptr == NULL)
        fw.method = req->method;
    if (sld_http_user_missing(pc, &fw)) {
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
    if (sld_http_query_wait(c, &wait)) /* without wait=: the policy's max_wait */
        sld_http_decide_wait(c, &f, key, 1, wait < 0 ? pc->max_wait : wait);
}

const sld_http_route_t sld_http_auth_routes[] = {
    {SLD_M_ANY, SLD_MATCH_PREFIX, "/v1/auth/", forward_auth, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
