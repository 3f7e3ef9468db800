/* http_decide.h -- what the HTTP routes that decide share: finding the
 * policy by name, the key of a request (given, or built from attributes),
 * and asking the engine, now or later, then writing the rate limit headers
 * and the route's own answer.
 *
 * Not here: parsing a request (http_check.h), the routes themselves
 * (http_route_check.c, http_route_auth.c, http_admin.c).
 */
#ifndef SL_SERVER_HTTP_DECIDE_H
#define SL_SERVER_HTTP_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/http/http_api.h"  /* the daemon's state, as every HTTP route sees it */
#include "server/http/http_check.h"
#include "server/http/http_router.h"

/* The configured policy named `name` (and *index, its index), or NULL. */
const sld_policy_t *sld_http_policy_named(const sld_runtime_t *rt, sld_span_t name, size_t *index);
/* 404, no policy named `name`. */
void sld_http_unknown_policy(sld_http_reply_t *r, sld_span_t name);
/* Whether the policy is keyed by the key the client gives (key: [key]). */
bool sld_http_only_key(const sld_policy_t *pc);

/* The key of a check request: as given, or built from its attributes by the
 * policy's key list (into r->key). False when r already says why not. */
bool sld_http_check_key(const sld_runtime_t *rt, const sld_policy_t *pc, const sld_check_request_t *cr,
                        sld_http_reply_t *r, sld_span_t *key);

typedef struct sld_http_decision sld_http_decision_t;
/* A route's answer to a decision, after the rate limit headers. */
typedef void (*sld_http_answer_fn)(sld_http_reply_t *r, const sld_http_decision_t *f, const sl_decision_t *dec);

/* What a decision is about and who answers it; copied into a pending answer
 * when the store answers later. */
struct sld_http_decision {
    const sld_runtime_t *rt;
    size_t index;               /* the policy's, in rt */
    const sl_policy_t *p;       /* the policy or its tier's */
    const char *tier;           /* NULL: no tier */
    sld_http_answer_fn answer;
};

/* Writes the answer to a decision (or to error rc) into r: the rate limit
 * headers, then f's answer. */
void sld_http_finish(sld_http_reply_t *r, const sld_http_decision_t *f, int rc, const sl_decision_t *dec,
                     const sl_limit_report_t *lr);

/* Decides `cost` for `key` and answers in c->reply, or (with *c->later)
 * when the store answers. Store errors are 503, a refused cost 400. */
void sld_http_decide(const sld_http_call_t *c, const sld_http_decision_t *f, sld_span_t key, uint64_t cost);

#endif
