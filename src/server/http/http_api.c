/* http_api.c -- routes, check, forward-auth, health and metrics (see
 * http_api.h; the admin API is http_admin.c).
 *
 * Rate limit headers (IETF draft-ietf-httpapi-ratelimit-headers-10, and the
 * older X-RateLimit-* still widely read) are written for every decision:
 * one RateLimit-Policy and one RateLimit item per limit of the policy, named
 * after the policy ("per_user", or "per_user-1", "per_user-2" ... when it has
 * several). Seconds are rounded up, so a client that waits that long is
 * admitted; on a 429, no reset is announced earlier than Retry-After.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/engine/engine.h"
#include "server/keys/forward.h"
#include "server/http/http_api.h"
#include "server/observe/prometheus.h"

#define USEC_PER_MS 1000

bool sld_span_is(sld_span_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && (n == 0 || memcmp(s.ptr, lit, n) == 0);
}

static bool span_starts(sld_span_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.len >= n && memcmp(s.ptr, lit, n) == 0;
}

const char *sld_http_reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

/* ---- replies -------------------------------------------------------------------------------- */

void sld_http_reply_reset(sld_http_reply_t *r) {
    r->status = 200;
    r->content_type = NULL;
    r->nheaders = 0;
    sld_buf_reset(&r->values);
    sld_buf_reset(&r->body);
    sld_buf_reset(&r->scratch);
    sld_buf_reset(&r->key);
    r->values.failed = r->body.failed = r->scratch.failed = r->key.failed = false;
}

void sld_http_reply_free(sld_http_reply_t *r) {
    sld_buf_free(&r->values);
    sld_buf_free(&r->body);
    sld_buf_free(&r->scratch);
    sld_buf_free(&r->key);
}

const char *const sld_http_header_names[SLD_H_COUNT] = {
    [SLD_H_RATELIMIT_POLICY] = "RateLimit-Policy",
    [SLD_H_RATELIMIT] = "RateLimit",
    [SLD_H_X_RATELIMIT_LIMIT] = "X-RateLimit-Limit",
    [SLD_H_X_RATELIMIT_REMAINING] = "X-RateLimit-Remaining",
    [SLD_H_X_RATELIMIT_RESET] = "X-RateLimit-Reset",
    [SLD_H_RETRY_AFTER] = "Retry-After",
    [SLD_H_ALLOW] = "Allow",
    [SLD_H_WWW_AUTHENTICATE] = "WWW-Authenticate",
};

void sld_http_add_header(sld_http_reply_t *r, sld_http_header_id_t id, const char *fmt, ...) {
    if (r->nheaders == SLD_HTTP_MAX_HEADERS)
        return;
    size_t off = r->values.len;
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sld_buf_append(&r->values, small, (size_t)n);
    } else if (sld_buf_reserve(&r->values, (size_t)n + 1)) {
        va_start(ap, fmt);
        vsnprintf(r->values.data + off, (size_t)n + 1, fmt, ap);
        va_end(ap);
        r->values.len += (size_t)n;
    }
    r->headers[r->nheaders++] = (sld_http_header_t){id, sld_http_header_names[id], off, r->values.len - off};
}

/* A header value built piece by piece: begin, append to r->values, end. */
static size_t header_begin(sld_http_reply_t *r) { return r->values.len; }

static void header_end(sld_http_reply_t *r, sld_http_header_id_t id, size_t off) {
    if (r->nheaders < SLD_HTTP_MAX_HEADERS)
        r->headers[r->nheaders++] = (sld_http_header_t){id, sld_http_header_names[id], off, r->values.len - off};
}

static void json_reply(sld_http_reply_t *r, int status) {
    r->status = status;
    r->content_type = "application/json";
}

void sld_http_error(sld_http_reply_t *r, int status, const char *code, const char *param,
                    const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    sld_buf_reset(&r->body);
    json_reply(r, status);
    sld_buf_printf(&r->body, "{\"error\":\"%s\"", code);
    if (param)
        sld_buf_printf(&r->body, ",\"parameter\":\"%s\"", param);
    sld_buf_append_str(&r->body, ",\"message\":");
    sld_json_string(&r->body, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    sld_buf_append_str(&r->body, "}\n");
}

static void text_reply(sld_http_reply_t *r, int status, const char *text) {
    r->status = status;
    r->content_type = "text/plain; charset=utf-8";
    sld_buf_append_str(&r->body, text);
}

static void method_not_allowed(sld_http_reply_t *r, const char *allow) {
    sld_http_error(r, 405, "method_not_allowed", NULL, "this path takes %s", allow);
    sld_http_add_header(r, SLD_H_ALLOW, "%s", allow);
}

/* ---- rate limit headers ---------------------------------------------------------------------- */

static int64_t secs_up(sl_usec_t us) {
    return us <= 0 ? 0 : us / SL_USEC_PER_SEC + (us % SL_USEC_PER_SEC != 0);
}

static int64_t ms_up(sl_usec_t us) {
    return us <= 0 ? 0 : us / USEC_PER_MS + (us % USEC_PER_MS != 0);
}

static void item_name(sld_buf_t *b, const char *policy, size_t i, size_t n) {
    sld_buf_append_lit(b, "\"");
    sld_buf_append_str(b, policy);
    if (n > 1) {
        sld_buf_append_lit(b, "-");
        sld_buf_append_u64(b, i + 1);
    }
    sld_buf_append_lit(b, "\"");
}

/* A header whose value is a number (the hot path: no printf). */
static void number_header(sld_http_reply_t *r, sld_http_header_id_t id, int64_t v) {
    size_t off = header_begin(r);
    sld_buf_append_i64(&r->values, v);
    header_end(r, id, off);
}

static void rate_headers(sld_http_reply_t *r, const char *policy, const sl_policy_t *p,
                         const sl_decision_t *dec, const sl_limit_report_t *lr) {
    size_t n = sl_policy_limit_count(p);
    int64_t retry = !dec->allowed && dec->retry_after != SL_NEVER ? secs_up(dec->retry_after) : -1;
    if (retry == 0) /* denied now: come back no sooner than in a second */
        retry = 1;
    size_t off = header_begin(r);
    for (size_t i = 0; i < n; i++) {
        const sl_limit_t *l = sl_policy_limit(p, i);
        if (i > 0)
            sld_buf_append(&r->values, ", ", 2);
        item_name(&r->values, policy, i, n);
        sld_buf_append_lit(&r->values, ";q=");
        sld_buf_append_u64(&r->values, l->limit);
        sld_buf_append_lit(&r->values, ";w=");
        sld_buf_append_i64(&r->values, secs_up(l->period));
    }
    header_end(r, SLD_H_RATELIMIT_POLICY, off);
    off = header_begin(r);
    for (size_t i = 0; i < n; i++) {
        int64_t t = secs_up(lr[i].reset_after);
        if (t < retry)
            t = retry;
        if (i > 0)
            sld_buf_append(&r->values, ", ", 2);
        item_name(&r->values, policy, i, n);
        sld_buf_append_lit(&r->values, ";r=");
        sld_buf_append_u64(&r->values, lr[i].remaining);
        sld_buf_append_lit(&r->values, ";t=");
        sld_buf_append_i64(&r->values, t);
    }
    header_end(r, SLD_H_RATELIMIT, off);
    int64_t reset = secs_up(dec->reset_after);
    number_header(r, SLD_H_X_RATELIMIT_LIMIT, dec->limit > INT64_MAX ? INT64_MAX : (int64_t)dec->limit);
    number_header(r, SLD_H_X_RATELIMIT_REMAINING, dec->remaining > INT64_MAX ? INT64_MAX : (int64_t)dec->remaining);
    number_header(r, SLD_H_X_RATELIMIT_RESET, reset > retry ? reset : retry);
    if (retry > 0)
        number_header(r, SLD_H_RETRY_AFTER, retry);
}

/* ---- keys ------------------------------------------------------------------------------------ */

/* header:<Name> of a check's attributes: given as "header:Name" or "Name". */
static sld_span_t attr_header(void *ctx, const char *name, size_t len) {
    const sld_check_request_t *cr = ctx;
    for (size_t i = 0; i < cr->nattrs; i++) {
        sld_span_t a = cr->attrs[i].name;
        if (a.len == len + 7 && strncasecmp(a.ptr, "header:", 7) == 0 && strncasecmp(a.ptr + 7, name, len) == 0)
            return cr->attrs[i].value;
        if (a.len == len && strncasecmp(a.ptr, name, len) == 0)
            return cr->attrs[i].value;
    }
    return (sld_span_t){NULL, 0};
}

static sld_span_t attr_value(const sld_check_request_t *cr, const char *name) {
    for (size_t i = 0; i < cr->nattrs; i++)
        if (sld_span_is(cr->attrs[i].name, name))
            return cr->attrs[i].value;
    return (sld_span_t){NULL, 0};
}

static bool only_key(const sld_policy_t *pc) {
    return pc->nkey_attrs == 1 && strcmp(pc->key_attrs[0], "key") == 0;
}

bool sld_http_check_key(const sld_runtime_t *rt, const sld_policy_t *pc, const sld_check_request_t *cr,
                        sld_http_reply_t *r, sld_span_t *key) {
    const sld_config_t *cfg = rt->cfg;
    if (cr->nattrs == 0) {
        if (!cr->has_key) {
            sld_http_error(r, 400, "bad_request", "key",
                           only_key(pc) ? "key: required" : "key: required (or attributes, in a POST)");
            return false;
        }
        *key = cr->key;
    } else {
        if (only_key(pc)) {
            sld_http_error(r, 400, "bad_request", "attributes",
                           "attributes: policy '%s' is keyed by the key the client gives, not attributes",
                           pc->name);
            return false;
        }
        for (size_t i = 0; i < pc->nkey_attrs; i++) {
            const char *a = pc->key_attrs[i];
            sld_span_t v = strncmp(a, "header:", 7) == 0 ? attr_header((void *)cr, a + 7, strlen(a + 7))
                                                         : attr_value(cr, a);
            if (v.ptr == NULL || v.len == 0) {
                sld_http_error(r, 400, "bad_request", "attributes",
                               "attributes: policy '%s' keys on %s: give it a non-empty value", pc->name, a);
                return false;
            }
        }
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        const struct sockaddr *peer = NULL;
        sld_span_t ip = attr_value(cr, "ip");
        if (ip.ptr != NULL) {
            char text[INET6_ADDRSTRLEN + 1];
            struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
            struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
            bool ok = ip.len < sizeof text;
            if (ok) {
                memcpy(text, ip.ptr, ip.len);
                text[ip.len] = '\0';
                if (inet_pton(AF_INET, text, &v4->sin_addr) == 1)
                    v4->sin_family = AF_INET;
                else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1)
                    v6->sin6_family = AF_INET6;
                else
                    ok = false;
            }
            if (!ok) {
                sld_http_error(r, 400, "bad_request", "attributes", "attributes: ip is not an IPv4 or IPv6 address");
                return false;
            }
            peer = (const struct sockaddr *)&ss;
        }
        /* The caller states the client's address: there is no proxy to trust. */
        sld_forwarded_t fw = {.peer = peer, .user = attr_value(cr, "user"),
                              .uri = attr_value(cr, "endpoint"), .method = attr_value(cr, "method"),
                              .header = attr_header, .header_ctx = (void *)cr};
        size_t cap = (size_t)cfg->max_key_bytes + 1;
        const char *why = NULL;
        if (!sld_buf_reserve(&r->key, cap)) {
            sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
            return false;
        }
        size_t n = sld_forward_key(&fw, NULL, cfg->ipv6_prefix, pc->key_attrs, pc->nkey_attrs,
                                   r->key.data, cap, &why);
        if (n == 0) {
            sld_http_error(r, 400, "bad_request", "attributes", "attributes: %s",
                           why ? why : "cannot build the key");
            return false;
        }
        *key = (sld_span_t){r->key.data, n};
    }
    if (key->len > cfg->max_key_bytes) {
        sld_http_error(r, 400, "bad_request", "key", "key: %zu bytes, longer than max_key_bytes (%u)",
                       key->len, cfg->max_key_bytes);
        return false;
    }
    return true;
}

/* ---- check ------------------------------------------------------------------------------------ */

const sld_policy_t *sld_http_policy_named(const sld_runtime_t *rt, sld_span_t name, size_t *index) {
    if (sld_policies_find(rt->policies, name.ptr, name.len, "", 0, NULL, index) == NULL)
        return NULL;
    return sld_policies_config(rt->policies, *index);
}

void sld_http_unknown_policy(sld_http_reply_t *r, sld_span_t name) {
    sld_http_error(r, 404, "unknown_policy", "policy", "policy: no policy named '%.*s'",
                   (int)(name.len > 64 ? 64 : name.len), name.ptr);
}

/* What a decision answers: the check's JSON, or forward-auth's status. */
typedef struct finish {
    const sld_runtime_t *rt;
    size_t index;
    const sl_policy_t *p;
    const char *tier;
    bool auth;
} finish_t;

struct sld_http_pending {
    sld_http_reply_t reply;
    finish_t f;
    sld_http_done_fn done;  /* set by the wire layer; NULL: nobody waits any more */
    void *done_arg;
};

static void check_body(sld_http_reply_t *r, const finish_t *f, const sl_decision_t *dec);

/* The reply to a decision: headers, then the check's body or auth's status. */
static void finish(sld_http_reply_t *r, const finish_t *f, int rc, const sl_decision_t *dec,
                   const sl_limit_report_t *lr) {
    if (rc == SL_EFULL || rc == SL_ENOMEM || rc == SL_EIO) {
        sld_http_error(r, 503, "store_unavailable", NULL, "%s", sl_strerror(rc));
        return;
    }
    if (rc != SL_OK) {
        sld_http_error(r, 400, "bad_request", "cost", "cost: %s", sl_strerror(rc));
        return;
    }
    rate_headers(r, sld_policies_config(f->rt->policies, f->index)->name, f->p, dec, lr);
    if (f->auth)
        r->status = dec->allowed ? 200 : (int)f->rt->cfg->auth_deny_status;
    else
        check_body(r, f, dec);
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    sld_http_pending_t *pd = arg;
    finish(&pd->reply, &pd->f, rc, dec, lr);
    sld_http_pending_deliver(pd);
}

sld_http_pending_t *sld_http_pending_new(void) { return calloc(1, sizeof(sld_http_pending_t)); }

sld_http_reply_t *sld_http_pending_reply(sld_http_pending_t *pd) { return &pd->reply; }

void sld_http_pending_deliver(sld_http_pending_t *pd) {
    if (pd->reply.body.failed || pd->reply.values.failed) {
        sld_http_reply_reset(&pd->reply);
        sld_http_error(&pd->reply, 503, "out_of_memory", NULL, "out of memory");
    }
    if (pd->done)
        pd->done(pd->done_arg, &pd->reply);
    sld_http_reply_free(&pd->reply);
    free(pd);
}

void sld_http_pending_wait(sld_http_pending_t *pd, sld_http_done_fn done, void *arg) {
    pd->done = done;
    pd->done_arg = arg;
}

/* Decides and answers, now or (with *later) when the store answers. */
static void decide(sld_daemon_t *d, uint32_t worker, const finish_t *f, sld_span_t key,
                   uint64_t cost, sld_http_reply_t *r, sld_http_pending_t **later) {
    sl_decision_t dec;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    sld_request_t req = {.origin = {.rt = f->rt, .index = f->index,
                                    .slot = sld_policies_slot(f->rt->policies, f->index)},
                         .p = f->p, .key = key.ptr, .key_len = key.len, .cost = cost};
    sld_http_pending_t *pd = NULL;
    if (later && sld_engine_defers(d->engine, f->p)) {
        if ((pd = calloc(1, sizeof *pd)) == NULL) {
            sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
            return;
        }
        pd->f = *f;
    }
    int rc = sld_engine_decide(d->engine, worker, &req, &dec, lr, pd ? on_decided : NULL, pd);
    if (rc == SLD_PENDING) {
        *later = pd;
        return;
    }
    free(pd);
    finish(r, f, rc, &dec, lr);
}

static void check(sld_daemon_t *d, uint32_t worker, const sld_runtime_t *rt,
                  const sld_http_request_t *req, sld_http_reply_t *r, sld_http_pending_t **later) {
    /* Not HEAD: it would be charged like a GET, and HEAD must change nothing. */
    bool get = sld_span_is(req->method, "GET");
    if (!get && !sld_span_is(req->method, "POST")) {
        method_not_allowed(r, "GET, POST");
        return;
    }
    sld_span_t in = get ? req->query : req->body;
    if (!sld_buf_reserve(&r->scratch, in.len + 1)) {
        sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
        return;
    }
    sld_check_request_t cr;
    const char *param = NULL, *why = NULL;
    int rc = get ? sld_check_parse_query(in.ptr ? in.ptr : "", in.len, r->scratch.data, &cr, &param, &why)
                 : sld_check_parse_json(in.ptr ? in.ptr : "", in.len, r->scratch.data, &cr, &param, &why);
    if (rc != SL_OK) {
        sld_http_error(r, 400, "bad_request", param, "%s: %s", param, why);
        return;
    }
    size_t index = 0;
    const char *tier = NULL;
    const sl_policy_t *p = NULL;
    const sld_policy_t *pc;
    sld_span_t key;
    if (cr.nattrs == 0 && cr.has_key) { /* the common case: one lookup finds policy and tier */
        p = sld_policies_find(rt->policies, cr.policy.ptr, cr.policy.len, cr.key.ptr, cr.key.len, &tier, &index);
        pc = p ? sld_policies_config(rt->policies, index) : NULL;
    } else {
        pc = sld_http_policy_named(rt, cr.policy, &index);
    }
    if (pc == NULL) {
        sld_http_unknown_policy(r, cr.policy);
        return;
    }
    if (!sld_http_check_key(rt, pc, &cr, r, &key))
        return;
    if (p == NULL)
        p = sld_policies_find(rt->policies, cr.policy.ptr, cr.policy.len, key.ptr, key.len, &tier, &index);
    if (p == NULL) { /* cannot be: the policy was found above, in this same runtime */
        sld_http_unknown_policy(r, cr.policy);
        return;
    }
    finish_t f = {.rt = rt, .index = index, .p = p, .tier = tier, .auth = false};
    decide(d, worker, &f, key, cr.cost, r, later);
}

static void check_body(sld_http_reply_t *r, const finish_t *f, const sl_decision_t *dec) {
    const sld_policy_t *pc = sld_policies_config(f->rt->policies, f->index);
    const char *tier = f->tier;
    const sl_policy_t *p = f->p;
    json_reply(r, dec->allowed ? 200 : 429);
    sld_buf_t *b = &r->body;
    if (dec->allowed)
        sld_buf_append_lit(b, "{\"allowed\":true,\"policy\":\"");
    else
        sld_buf_append_lit(b, "{\"allowed\":false,\"policy\":\"");
    sld_buf_append_str(b, pc->name); /* [A-Za-z0-9_.-]: nothing to escape */
    if (tier) {
        sld_buf_append_lit(b, "\",\"tier\":\"");
        sld_buf_append_str(b, tier);
    }
    sld_buf_append_lit(b, "\",\"limit\":");
    sld_buf_append_u64(b, dec->limit);
    sld_buf_append_lit(b, ",\"remaining\":");
    sld_buf_append_u64(b, dec->remaining);
    sld_buf_append_lit(b, ",\"reset_after_ms\":");
    sld_buf_append_i64(b, ms_up(dec->reset_after));
    sld_buf_append_lit(b, ",\"retry_after_ms\":");
    sld_buf_append_i64(b, dec->retry_after == SL_NEVER ? -1 : ms_up(dec->retry_after));
    if (dec->limited)
        sld_buf_append_lit(b, ",\"limited\":true");
    else
        sld_buf_append_lit(b, ",\"limited\":false");
    bool shaper = false;
    for (size_t i = 0; i < sl_policy_limit_count(p); i++)
        shaper |= sl_policy_limit(p, i)->shaper;
    if (shaper) { /* a shaper's clients look for it on every answer, 0 included */
        sld_buf_append_lit(b, ",\"delay_ms\":");
        sld_buf_append_i64(b, ms_up(dec->delay));
    }
    sld_buf_append_str(b, "}\n");
}

/* ---- forward-auth ------------------------------------------------------------------------------ */

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

/* /v1/auth/<policy>[/original path]: `rest` is what follows "/v1/auth/". */
static void forward_auth(sld_daemon_t *d, uint32_t worker, const sld_runtime_t *rt,
                         const sld_http_request_t *req, sld_span_t rest, sld_http_reply_t *r,
                         sld_http_pending_t **later) {
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
    if (only_key(pc)) {
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
    finish_t f = {.rt = rt, .index = index, .p = p, .tier = NULL, .auth = true};
    decide(d, worker, &f, key, 1, r, later);
}

/* 503 with the reason while the shared store is down. */
static bool store_down_reply(sld_daemon_t *d, sld_http_reply_t *r) {
    sld_store_status_t st;
    sld_engine_status(d->engine, &st);
    if (st.up)
        return false;
    text_reply(r, 503, "store unavailable: deciding by on_store_failure\n");
    sld_buf_printf(&r->body, "%s\n", st.last_error[0] ? st.last_error : "no answer yet");
    return true;
}

/* ---- routes ------------------------------------------------------------------------------------ */

void sld_http_handle(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                     sld_http_reply_t *r) {
    sld_http_handle_async(d, worker, req, r, NULL);
}

void sld_http_handle_async(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                           sld_http_reply_t *r, sld_http_pending_t **later) {
    if (later)
        *later = NULL;
    sld_http_reply_reset(r);
    const sld_runtime_t *rt = sld_runtime(d);
    sld_span_t path = req->path;
    bool get = sld_span_is(req->method, "GET") || sld_span_is(req->method, "HEAD");
    if (sld_span_is(path, "/v1/check")) {
        check(d, worker, rt, req, r, later);
    } else if (span_starts(path, "/v1/auth/")) {
        forward_auth(d, worker, rt, req, (sld_span_t){path.ptr + 9, path.len - 9}, r, later);
    } else if (sld_span_is(path, "/v1/admin") || span_starts(path, "/v1/admin/")) {
        sld_http_admin(d, worker, rt, req, (sld_span_t){path.ptr + 9, path.len - 9}, r, later);
    } else if (sld_span_is(path, "/metrics")) {
        if (!get) {
            method_not_allowed(r, "GET");
            return;
        }
        r->content_type = "text/plain; version=0.0.4; charset=utf-8";
        if (d->metrics) {
            sld_figures_t f = {.stats = &d->stats, .generation = rt ? rt->generation : 0,
                               .started_at = d->started_at, .process = true};
            sl_store_stats(d->store, &f.store);
            sld_engine_status(d->engine, &f.status);
            sld_snapshot_t s;
            if (sld_snapshot_take(&s, d->metrics, &f) == SL_OK)
                sld_prometheus_render(&s, &r->body);
            else
                r->body.failed = true;
            sld_snapshot_free(&s);
        }
    } else if (sld_span_is(path, "/healthz")) {
        if (get)
            text_reply(r, 200, "ok\n");
        else
            method_not_allowed(r, "GET");
    } else if (sld_span_is(path, "/readyz")) {
        if (!get)
            method_not_allowed(r, "GET");
        else if (atomic_load(&d->stopping))
            text_reply(r, 503, "stopping\n");
        else if (!store_down_reply(d, r))
            text_reply(r, 200, "ready\n");
    } else {
        sld_http_error(r, 404, "not_found", NULL, "no such path (see docs/protocol.md)");
    }
    if (r->body.failed || r->values.failed) {
        sld_http_reply_reset(r);
        r->status = 503;
        r->content_type = "text/plain; charset=utf-8";
        sld_buf_append_str(&r->body, "out of memory\n");
    }
}
