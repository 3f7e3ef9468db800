/* http_ratelimit.h -- the rate limit header fields of a decision: the IETF
 * RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-10),
 * the older X-RateLimit-* still widely read, and Retry-After.
 *
 * One RateLimit-Policy and one RateLimit item per limit of the policy,
 * named after the policy ("per_user", or "per_user-1", "per_user-2" ... when
 * it has several). For every limit and every state, the item's remaining r
 * is at most its quota q and its reset t at most its window w: q and w are
 * chosen per algorithm so that they hold (sld_http_limit_quota; the reasons
 * are docs/protocol.md's "Rate limit headers").
 *
 * Not here: deciding (the engine), the reply's body (the routes).
 */
#ifndef SL_SERVER_HTTP_RATELIMIT_H
#define SL_SERVER_HTTP_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "server/http/http_reply.h"
#include "sluice.h"

/* A limit's quota policy: q quota units per window of w seconds (w >= 1).
 * q is the limit, or the burst capacity when that is larger; w is the time
 * q takes at the limit's rate, or the longest the limit can take to be full
 * again when that is longer. soft_percent: the policy's soft tolerance (0
 * unless its mode is soft), which stretches how long a limit takes. */
void sld_http_limit_quota(const sl_limit_t *l, uint32_t soft_percent, uint64_t *q, int64_t *w);

/* The bytes sld_http_rate_headers reserves after r->values.len for the
 * fields of policy p named after a name of name_len bytes: a caller whose
 * values buffer already has that room (one of its own, whose cap says so)
 * sees it never grown. */
size_t sld_http_rate_headers_room(const sl_policy_t *p, size_t name_len);

/* Writes RateLimit-Policy, RateLimit, X-RateLimit-Limit, -Remaining, -Reset
 * and, on a denial that can pass later, Retry-After, for a decision `dec` of
 * policy `p` (items named after `name`) with one report per limit in lr. */
void sld_http_rate_headers(sld_http_reply_t *r, const char *name, const sl_policy_t *p, uint32_t soft_percent,
                           const sl_decision_t *dec, const sl_limit_report_t *lr);

#endif
