/* http_decide.c -- policy by name, keys from attributes, and deciding for
 * the HTTP routes (see http_decide.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/engine/engine.h"
#include "server/http/http_decide.h"
#include "server/http/http_ratelimit.h"

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

bool sld_http_only_key(const sld_policy_t *pc) {
    return pc->nkey_attrs == 1 && strcmp(pc->key_attrs[0], "key") == 0;
}

bool sld_http_check_key(const sld_runtime_t *rt, const sld_policy_t *pc, const sld_check_request_t *cr,
                        sld_http_reply_t *r, sld_span_t *key) {
    const sld_config_t *cfg = rt->cfg;
    if (cr->nattrs == 0) {
        if (!cr->has_key) {
            sld_http_error(r, 400, "bad_request", "key",
                           sld_http_only_key(pc) ? "key: required" : "key: required (or attributes, in a POST)");
            return false;
        }
        *key = cr->key;
    } else {
        if (sld_http_only_key(pc)) {
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

/* ---- policies ---------------------------------------------------------------------------------- */

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
/* ---- deciding ---------------------------------------------------------------------------------- */

/* The reply to a decision: headers, then the route's answer. */
static void finish(sld_http_reply_t *r, const sld_http_decision_t *f, int rc, const sl_decision_t *dec,
                   const sl_limit_report_t *lr) {
    if (rc == SL_EFULL || rc == SL_ENOMEM || rc == SL_EIO) {
        sld_http_error(r, 503, "store_unavailable", NULL, "%s", sl_strerror(rc));
        return;
    }
    if (rc != SL_OK) {
        sld_http_error(r, 400, "bad_request", "cost", "cost: %s", sl_strerror(rc));
        return;
    }
    const sld_policy_t *pc = sld_policies_config(f->rt->policies, f->index);
    sld_http_rate_headers(r, pc->name, f->p, pc->mode == SL_MODE_SOFT ? pc->soft_percent : 0, dec, lr);
    f->answer(r, f, dec);
}

void sld_http_finish(sld_http_reply_t *r, const sld_http_decision_t *f, int rc, const sl_decision_t *dec,
                     const sl_limit_report_t *lr) {
    finish(r, f, rc, dec, lr);
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    sld_http_pending_t *pd = arg;
    finish(sld_http_pending_reply(pd), sld_http_pending_extra(pd), rc, dec, lr);
    sld_http_pending_deliver(pd);
}

void sld_http_decide(const sld_http_call_t *c, const sld_http_decision_t *f, sld_span_t key, uint64_t cost) {
    sl_decision_t dec;
    sl_limit_report_t lr[SL_MAX_LIMITS];
    sld_request_t req = {.origin = {.rt = f->rt, .index = f->index,
                                    .slot = sld_policies_slot(f->rt->policies, f->index)},
                         .p = f->p, .key = key.ptr, .key_len = key.len, .cost = cost};
    sld_http_pending_t *pd = NULL;
    if (c->later && sld_engine_defers(c->d->engine, f->p)) {
        if ((pd = sld_http_pending_new(sizeof *f)) == NULL) {
            sld_http_error(c->reply, 503, "out_of_memory", NULL, "out of memory");
            return;
        }
        memcpy(sld_http_pending_extra(pd), f, sizeof *f);
    }
    int rc = sld_engine_decide(c->d->engine, c->worker, &req, &dec, lr, pd ? on_decided : NULL, pd);
    if (rc == SLD_PENDING) {
        *c->later = pd;
        return;
    }
    free(pd);
    finish(c->reply, f, rc, &dec, lr);
}
