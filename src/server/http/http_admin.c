/* http_admin.c -- the admin API under /v1/admin/ (docs/protocol.md).
 *
 * Off (404) unless admin_token is configured; every request must carry
 * "Authorization: Bearer <token>", compared in constant time so the answer's
 * timing says nothing about how much of a guess was right. Edits go through
 * the daemon's config.edit hook (runtime.c's sld_runtime_edit()): applied at
 * once and atomically, like a reload, and kept until the next reload from the
 * file or restart. With the Redis store they are also written to Redis's
 * rules (the engine's share_rules; rules.h follows them), so every daemon
 * applies them, and the answer waits until Redis has them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/base/secret.h"
#include "server/engine/engine.h"
#include "server/http/http_config.h"
#include "server/http/http_decide.h"
#include "server/http/http_routes.h"

#define MAX_POLICY_NAME 64
_Static_assert(MAX_POLICY_NAME == SLD_ROUTE_NAME_MAX, "the router checks the names this file copies");

/* ---- authorisation ------------------------------------------------------------------------ */

static bool authorised(const sld_config_t *cfg, const sld_http_request_t *req) {
    sld_span_t h = req->header ? req->header(req->header_ctx, "authorization", 13) : (sld_span_t){NULL, 0};
    if (h.ptr == NULL || h.len < 7 || strncasecmp(h.ptr, "bearer ", 7) != 0)
        return false;
    size_t i = 7;
    while (i < h.len && h.ptr[i] == ' ')
        i++;
    size_t end = h.len;
    while (end > i && (h.ptr[end - 1] == ' ' || h.ptr[end - 1] == '\t'))
        end--;
    const char *token = sld_http_admin_token(cfg);
    return sld_same_secret(h.ptr + i, end - i, token, strlen(token));
}

/* ---- policies as JSON ----------------------------------------------------------------------- */

/* A duration the configuration reads back, as a JSON string. */
static void duration(sld_buf_t *b, sl_usec_t us) {
    char text[32];
    sld_buf_printf(b, "\"%s\"", sld_config_duration_text(us, text, sizeof text));
}

static void limit_json(sld_buf_t *b, const sl_limit_t *l) {
    sld_buf_printf(b, "{\"algorithm\":\"%s\",\"limit\":%llu,\"period\":", sl_algorithm_name(l->algorithm),
                   (unsigned long long)l->limit);
    duration(b, l->period);
    if (l->burst)
        sld_buf_printf(b, ",\"burst\":%llu", (unsigned long long)l->burst);
    if (l->precision)
        sld_buf_printf(b, ",\"precision\":%u", l->precision);
    if (l->shaper)
        sld_buf_append_str(b, ",\"shaper\":true");
    if (l->count_denied)
        sld_buf_append_str(b, ",\"count_denied\":true");
    sld_buf_append_str(b, "}");
}

static void limits_json(sld_buf_t *b, const sl_limit_t *limits, size_t n) {
    sld_buf_append_str(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sld_buf_append_str(b, ",");
        limit_json(b, &limits[i]);
    }
    sld_buf_append_str(b, "]");
}

/* The policy as the file writes it (in JSON), with its name first. */
static void policy_json(sld_buf_t *b, const sld_policy_t *p) {
    sld_buf_printf(b, "{\"name\":\"%s\",\"key\":[", p->name);
    for (size_t i = 0; i < p->nkey_attrs; i++) {
        if (i)
            sld_buf_append_str(b, ",");
        sld_json_string(b, p->key_attrs[i], strlen(p->key_attrs[i]));
    }
    sld_buf_printf(b, "],\"mode\":\"%s\"", sl_mode_name(p->mode));
    if (p->mode == SL_MODE_SOFT)
        sld_buf_printf(b, ",\"soft_percent\":%u", p->soft_percent);
    sld_buf_append_str(b, ",\"limits\":");
    limits_json(b, p->limits, p->nlimits);
    if (p->has_pool) {
        sld_buf_append_str(b, ",\"pool\":");
        limit_json(b, &p->pool);
    }
    /* only when set: a policy without one follows the store's setting */
    if (p->on_store_failure != SLD_FAIL_DEFAULT)
        sld_buf_printf(b, ",\"on_store_failure\":\"%s\"", sld_store_failure_name(p->on_store_failure));
    if (p->max_wait > 0) {
        sld_buf_append_str(b, ",\"max_wait\":");
        duration(b, p->max_wait);
    }
    if (p->ntiers) {
        sld_buf_append_str(b, ",\"tiers\":[");
        for (size_t t = 0; t < p->ntiers; t++) {
            const sld_tier_t *tier = &p->tiers[t];
            sld_buf_printf(b, "%s{\"name\":\"%s\",\"keys\":[", t ? "," : "", tier->name);
            for (size_t k = 0; k < tier->nkeys; k++) {
                if (k)
                    sld_buf_append_str(b, ",");
                sld_json_string(b, tier->keys[k], strlen(tier->keys[k]));
            }
            sld_buf_append_str(b, "],\"limits\":");
            limits_json(b, tier->limits, tier->nlimits);
            sld_buf_append_str(b, "}");
        }
        sld_buf_append_str(b, "]");
    }
    sld_buf_append_str(b, "}");
}

static const sld_policy_t *find_config(const sld_config_t *cfg, const char *name) {
    for (size_t i = 0; i < cfg->npolicies; i++)
        if (strcmp(cfg->policies[i].name, name) == 0)
            return &cfg->policies[i];
    return NULL;
}

static void ok_json(sld_http_reply_t *r, int status) {
    r->status = status;
    r->content_type = "application/json";
}

/* ---- sharing edits with every daemon ------------------------------------------------------------ */

static void on_shared(void *arg, int rc) {
    sld_http_pending_t *pd = arg;
    sld_http_reply_t *r = sld_http_pending_reply(pd);
    if (rc != SL_OK) {
        sld_http_reply_reset(r);
        sld_http_error(r, 503, "store_unavailable", NULL,
                       "applied on this daemon, but Redis did not store it for the others: try again");
    }
    sld_http_pending_deliver(pd);
}

/* Stores policy `name` (json NULL: its removal) in the shared store, when
 * there is one (the engine says). *r holds the answer so far; it moves into
 * a pending answer given when the store confirms. */
static void share_edit(sld_daemon_t *d, uint32_t worker, const char *name, const char *json, size_t json_len,
                       sld_http_reply_t *r, sld_http_pending_t **later) {
    sld_http_pending_t *pd = sld_http_pending_new(0);
    if (pd == NULL) {
        sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
        return;
    }
    int rc = sld_engine_share_rules(d->engine, worker, name, json, json_len, on_shared, pd);
    if (rc != SL_OK) {
        sld_http_pending_deliver(pd);
        if (rc != SL_ENOTSUP) /* ENOTSUP: nothing is shared, the answer stands */
            sld_http_error(r, 503, "store_unavailable", NULL,
                           "applied on this daemon, but Redis cannot be reached to store it for the others");
        return;
    }
    /* the answer so far becomes the pending one's */
    sld_http_reply_t *pr = sld_http_pending_reply(pd);
    sld_http_reply_t tmp = *pr;
    *pr = *r;
    *r = tmp;
    *later = pd;
}

/* ---- endpoints --------------------------------------------------------------------------------- */

static void list_policies(const sld_runtime_t *rt, sld_http_reply_t *r) {
    ok_json(r, 200);
    sld_buf_printf(&r->body, "{\"generation\":%llu,\"policies\":[", (unsigned long long)rt->generation);
    for (size_t i = 0; i < rt->cfg->npolicies; i++) {
        if (i)
            sld_buf_append_str(&r->body, ",");
        policy_json(&r->body, &rt->cfg->policies[i]);
    }
    sld_buf_append_str(&r->body, "]}\n");
}

static void put_policy(sld_daemon_t *d, uint32_t worker, const sld_runtime_t *rt, const char *name,
                       const sld_http_request_t *req, sld_http_reply_t *r, sld_http_pending_t **later) {
    char err[SLD_MAX_ERROR] = "", why[128];
    sld_policy_t *pol = NULL;
    int rc = sld_config_parse_policy(name, req->body.ptr ? req->body.ptr : "", req->body.len,
                                     rt->cfg->max_key_bytes, &pol, err, sizeof err);
    if (rc != SL_OK) {
        bool bad_name = strncmp(err, "policy name:", 12) == 0;
        sld_http_error(r, rc == SL_ENOMEM ? 503 : 400, "invalid_policy", bad_name ? "policy" : "body", "%s",
                       rc == SL_ENOMEM ? "out of memory" : err);
        return;
    }
    bool created = find_config(rt->cfg, name) == NULL;
    uint64_t generation = 0;
    snprintf(why, sizeof why, "admin: %s policy %s", created ? "added" : "replaced", name);
    rc = d->config.edit(d, pol, NULL, why, err, sizeof err, &generation);
    sld_config_policy_free(pol);
    if (rc != SL_OK) {
        sld_http_error(r, rc == SL_ENOMEM ? 503 : 400, "invalid_policy", "body", "%s", err);
        return;
    }
    ok_json(r, created ? 201 : 200);
    sld_buf_printf(&r->body, "{\"policy\":\"%s\",\"created\":%s,\"generation\":%llu}\n", name,
                   created ? "true" : "false", (unsigned long long)generation);
    if (later)
        share_edit(d, worker, name, req->body.ptr ? req->body.ptr : "", req->body.len, r, later);
}

static void delete_policy(sld_daemon_t *d, uint32_t worker, const char *name, sld_http_reply_t *r,
                          sld_http_pending_t **later) {
    char err[SLD_MAX_ERROR] = "", why[128];
    uint64_t generation = 0;
    snprintf(why, sizeof why, "admin: removed policy %s", name);
    int rc = d->config.edit(d, NULL, name, why, err, sizeof err, &generation);
    if (rc == SL_ENOENT) {
        sld_http_error(r, 404, "unknown_policy", "policy", "%s", err);
        return;
    }
    if (rc != SL_OK) {
        sld_http_error(r, rc == SL_EINVAL ? 409 : 503, rc == SL_EINVAL ? "conflict" : "unavailable", NULL,
                       "%s", err);
        return;
    }
    ok_json(r, 200);
    sld_buf_printf(&r->body, "{\"deleted\":\"%s\",\"generation\":%llu}\n", name, (unsigned long long)generation);
    if (later)
        share_edit(d, worker, name, NULL, 0, r, later);
}

/* /v1/admin/policies/<name>: a name the router has checked (1 to 64 bytes, no '/'). */
static void policy_endpoint(const sld_http_call_t *c) {
    sld_span_t name = c->rest;
    const sld_http_request_t *req = c->req;
    sld_http_reply_t *r = c->reply;
    char cname[MAX_POLICY_NAME + 1];
    memcpy(cname, name.ptr, name.len);
    cname[name.len] = '\0';
    if (sld_span_is(req->method, "PUT")) {
        put_policy(c->d, c->worker, c->rt, cname, req, r, c->later);
    } else if (sld_span_is(req->method, "DELETE")) {
        delete_policy(c->d, c->worker, cname, r, c->later);
    } else {
        const sld_policy_t *p = find_config(c->rt->cfg, cname);
        if (p == NULL) {
            sld_http_unknown_policy(r, name);
            return;
        }
        ok_json(r, 200);
        policy_json(&r->body, p);
        sld_buf_append_str(&r->body, "\n");
    }
}

/* /v1/admin/policies/<anything else>: no policy is called that. */
static void bad_policy_name(const sld_http_call_t *c) {
    sld_http_error(c->reply, 404, "unknown_policy", "policy", "policy names are 1 to 64 of A-Z a-z 0-9 _ . -");
}

static void reset_answer(sld_http_reply_t *r, int rc, const char *policy) {
    if (rc != SL_OK) {
        sld_http_error(r, 503, "store_unavailable", NULL, "%s", sl_strerror(rc));
        return;
    }
    ok_json(r, 200);
    sld_buf_printf(&r->body, "{\"reset\":true,\"policy\":\"%s\"}\n", policy);
}

static void on_reset(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    (void)d;
    (void)limits;
    sld_http_pending_t *pd = arg;
    sld_http_reply_t *r = sld_http_pending_reply(pd);
    char policy[MAX_POLICY_NAME + 1];
    snprintf(policy, sizeof policy, "%.*s", (int)r->scratch.len, r->scratch.data ? r->scratch.data : "");
    reset_answer(r, rc, policy);
    sld_http_pending_deliver(pd);
}

static void reset_key(sld_daemon_t *d, uint32_t worker, const sld_runtime_t *rt, const sld_http_request_t *req,
                      sld_http_reply_t *r, sld_http_pending_t **later) {
    if (!sld_buf_reserve(&r->scratch, req->body.len + 1)) {
        sld_http_error(r, 503, "out_of_memory", NULL, "out of memory");
        return;
    }
    sld_check_request_t cr;
    const char *param = NULL, *why = NULL;
    if (sld_check_parse_json(req->body.ptr ? req->body.ptr : "", req->body.len, r->scratch.data, &cr, &param,
                             &why) != SL_OK) {
        sld_http_error(r, 400, "bad_request", param, "%s: %s", param, why);
        return;
    }
    size_t index = 0;
    const sld_policy_t *pc = sld_http_policy_named(rt, cr.policy, &index);
    if (pc == NULL) {
        sld_http_unknown_policy(r, cr.policy);
        return;
    }
    sld_span_t key;
    if (!sld_http_check_key(rt, pc, &cr, r, &key))
        return;
    const sl_policy_t *p = sld_policies_find(rt->policies, cr.policy.ptr, cr.policy.len, key.ptr, key.len,
                                             NULL, NULL);
    if (p == NULL) {
        sld_http_unknown_policy(r, cr.policy);
        return;
    }
    sld_request_t rq = {.origin = {.rt = rt, .index = index, .slot = sld_policies_slot(rt->policies, index)},
                        .p = p, .key = key.ptr, .key_len = key.len};
    sld_http_pending_t *pd = NULL;
    if (sld_engine_defers(d->engine, p)) { /* the answer comes later: only an asynchronous caller can wait */
        if (later == NULL || (pd = sld_http_pending_new(0)) == NULL) {
            sld_http_error(r, 503, "unavailable", NULL, "cannot wait for the store here");
            return;
        }
    }
    int rc = sld_engine_reset(d->engine, worker, &rq, pd ? on_reset : NULL, pd);
    if (rc == SLD_PENDING) {
        /* the policy's name outlives the request in the pending answer */
        sld_buf_append_str(&sld_http_pending_reply(pd)->scratch, pc->name);
        *later = pd;
        return;
    }
    if (pd)
        sld_http_pending_deliver(pd);
    reset_answer(r, rc, pc->name);
}

static void reload(sld_daemon_t *d, sld_http_reply_t *r) {
    char err[SLD_MAX_ERROR] = "";
    uint64_t generation = 0;
    int rc = d->config.reload(d, err, sizeof err, &generation);
    if (rc == SL_ENOCONFIG) {
        sld_http_error(r, 409, "no_config_file", NULL, "%s", err);
        return;
    }
    if (rc != SL_OK) {
        sld_http_error(r, 400, "reload_failed", NULL, "%s", err);
        return;
    }
    ok_json(r, 200);
    sld_buf_printf(&r->body, "{\"reloaded\":true,\"generation\":%llu}\n", (unsigned long long)generation);
}

static void admin_list(const sld_http_call_t *c) { list_policies(c->rt, c->reply); }

static void admin_reset(const sld_http_call_t *c) {
    reset_key(c->d, c->worker, c->rt, c->req, c->reply, c->later);
}

static void admin_reload(const sld_http_call_t *c) { reload(c->d, c->reply); }

static void admin_unknown(const sld_http_call_t *c) {
    sld_http_error(c->reply, 404, "not_found", NULL, "admin paths: /v1/admin/policies[/NAME], /v1/admin/reset, "
                                                     "/v1/admin/reload");
}

bool sld_http_admin_gate(const sld_http_call_t *c) {
    const sld_config_t *cfg = c->rt->cfg;
    if (sld_http_admin_token(cfg) == NULL) {
        sld_http_error(c->reply, 404, "not_found", NULL, "the admin API is off: configure admin_token to turn it on");
        return false;
    }
    if (!authorised(cfg, c->req)) {
        sld_http_error(c->reply, 401, "unauthorized", NULL, "the admin API needs Authorization: Bearer <admin_token>");
        sld_http_add_header(c->reply, SLD_H_WWW_AUTHENTICATE, "Bearer realm=\"sluice admin\"");
        return false;
    }
    return true;
}

/* Every row is SLD_ROUTE_ADMIN: with the API off or without the token, no
 * path under /v1/admin says whether it exists. */
const sld_http_route_t sld_http_admin_routes[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/v1/admin/policies", admin_list, SLD_ROUTE_ADMIN},
    {SLD_M_GET | SLD_M_HEAD | SLD_M_PUT | SLD_M_DELETE, SLD_MATCH_NAME, "/v1/admin/policies/", policy_endpoint,
     SLD_ROUTE_ADMIN},
    {SLD_M_ANY, SLD_MATCH_UNDER, "/v1/admin/policies/", bad_policy_name, SLD_ROUTE_ADMIN},
    {SLD_M_POST, SLD_MATCH_EXACT, "/v1/admin/reset", admin_reset, SLD_ROUTE_ADMIN},
    {SLD_M_POST, SLD_MATCH_EXACT, "/v1/admin/reload", admin_reload, SLD_ROUTE_ADMIN},
    {SLD_M_ANY, SLD_MATCH_EXACT, "/v1/admin", admin_unknown, SLD_ROUTE_ADMIN},
    {SLD_M_ANY, SLD_MATCH_PREFIX, "/v1/admin/", admin_unknown, SLD_ROUTE_ADMIN},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
