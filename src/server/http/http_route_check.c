/* http_route_check.c -- POST and GET /v1/check (docs/protocol.md "HTTP"):
 * the request parsed (http_check.c), its policy and key found, decided
 * (http_decide.c), answered with a JSON body.
 *
 * Not HEAD: it would be charged like a GET, and HEAD must change nothing.
 */
#include <string.h>

#include "server/base/decimal.h"
#include "server/http/http_decide.h"
#include "server/http/http_routes.h"
#include "server/http/http_wait.h"

static int64_t ms_up(sl_usec_t us) {
    return us <= 0 ? 0 : sld_ms_up(us);
}

/* The body's fixed text at its longest, and its numbers: room reserved once,
 * then written straight (literals as stores, no call per piece). */
#define BODY_TEXT "{\"allowed\":false,\"policy\":\"\",\"tier\":\"\",\"limit\":,\"remaining\":,\"reset_after_ms\":," \
                  "\"retry_after_ms\":,\"limited\":false,\"delay_ms\":}\n"
#define BODY_NUMBERS 5

static char *put_str(char *p, const char *s, size_t n) {
    memcpy(p, s, n);
    return p + n;
}

static void check_body(sld_http_reply_t *r, const sld_http_decision_t *f, const sl_decision_t *dec) {
    const sld_policy_t *pc = sld_policies_config(f->rt->policies, f->index);
    const char *tier = f->tier;
    const sl_policy_t *p = f->p;
    sld_http_json_reply(r, dec->allowed ? 200 : 429);
    sld_buf_t *b = &r->body;
    size_t name_len = strlen(pc->name), tier_len = tier ? strlen(tier) : 0;
    if (!sld_buf_reserve(b, sizeof BODY_TEXT + name_len + tier_len + BODY_NUMBERS * SLD_DEC_MAX))
        return; /* body.failed: the answer becomes a 503 */
    char *o = b->data + b->len;
    if (dec->allowed)
        o = SLD_PUT_LIT(o, "{\"allowed\":true,\"policy\":\"");
    else
        o = SLD_PUT_LIT(o, "{\"allowed\":false,\"policy\":\"");
    o = put_str(o, pc->name, name_len); /* [A-Za-z0-9_.-]: nothing to escape */
    if (tier) {
        o = SLD_PUT_LIT(o, "\",\"tier\":\"");
        o = put_str(o, tier, tier_len);
    }
    o = SLD_PUT_LIT(o, "\",\"limit\":");
    o = sld_dec_u64(o, dec->limit);
    o = SLD_PUT_LIT(o, ",\"remaining\":");
    o = sld_dec_u64(o, dec->remaining);
    o = SLD_PUT_LIT(o, ",\"reset_after_ms\":");
    o = sld_dec_i64(o, ms_up(dec->reset_after));
    o = SLD_PUT_LIT(o, ",\"retry_after_ms\":");
    o = sld_dec_i64(o, dec->retry_after == SL_NEVER ? -1 : ms_up(dec->retry_after));
    if (dec->limited)
        o = SLD_PUT_LIT(o, ",\"limited\":true");
    else
        o = SLD_PUT_LIT(o, ",\"limited\":false");
    bool shaper = false;
    for (size_t i = 0; i < sl_policy_limit_count(p); i++)
        shaper |= sl_policy_limit(p, i)->shaper;
    if (shaper) { /* a shaper's clients look for it on every answer, 0 included */
        o = SLD_PUT_LIT(o, ",\"delay_ms\":");
        o = sld_dec_i64(o, ms_up(dec->delay));
    }
    o = SLD_PUT_LIT(o, "}\n");
    b->len = (size_t)(o - b->data);
}

static void check(const sld_http_call_t *c) {
    const sld_http_request_t *req = c->req;
    const sld_runtime_t *rt = c->rt;
    sld_http_reply_t *r = c->reply;
    bool get = sld_span_is(req->method, "GET");
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
    sld_http_decision_t f = {.rt = rt, .index = index, .p = p, .tier = tier, .answer = check_body};
    sld_http_decide_wait(c, &f, key, cr.cost, cr.wait); /* without wait=: sld_http_decide */
}

const sld_http_route_t sld_http_check_routes[] = {
    {SLD_M_GET | SLD_M_POST, SLD_MATCH_EXACT, "/v1/check", check, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
