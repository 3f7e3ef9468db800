/* http_reply.h -- what an HTTP answer is made of, apart from the wire and
 * from any route: the request as spans, the reply (status, headers, body)
 * that the caller reuses from one request to the next, the helpers every
 * route writes it with (errors, plain text, 405 with Allow), and the pending
 * answer for a route that answers later.
 *
 * Not here: which route answers (http_router.h, http_api.c), what a route
 * says (the http_route_*.c files), putting it on the wire (http.c).
 */
#ifndef SL_SERVER_HTTP_REPLY_H
#define SL_SERVER_HTTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "server/base/buf.h"
#include "server/base/span.h"

#define SLD_HTTP_MAX_HEADERS 8

typedef struct sld_http_request {
    sld_span_t method;
    sld_span_t path;           /* without the query */
    sld_span_t query;          /* after '?'; ptr NULL when there is none */
    sld_span_t body;
    const struct sockaddr *peer;
    /* A request header by lower-case name; ptr NULL when absent. Repeated
     * X-Forwarded-For headers come joined with ", ". */
    sld_span_t (*header)(void *ctx, const char *name, size_t name_len);
    void *header_ctx;
    /* Whether the client has gone (given header_ctx), for an answer held
     * long: net/peer_gone.h. NULL: the wire tells the pending answer itself. */
    bool (*gone)(void *ctx);
} sld_http_request_t;

/* The response headers sluiced writes (http.c keeps their wire forms). */
typedef enum sld_http_header_id {
    SLD_H_RATELIMIT_POLICY,
    SLD_H_RATELIMIT,
    SLD_H_X_RATELIMIT_LIMIT,
    SLD_H_X_RATELIMIT_REMAINING,
    SLD_H_X_RATELIMIT_RESET,
    SLD_H_RETRY_AFTER,
    SLD_H_ALLOW,
    SLD_H_WWW_AUTHENTICATE,
    SLD_H_COUNT
} sld_http_header_id_t;

/* "RateLimit-Policy", ... as written on the wire, by id. */
extern const char *const sld_http_header_names[SLD_H_COUNT];
/* Their lengths, by id. */
extern const uint8_t sld_http_header_name_lens[SLD_H_COUNT];

typedef struct sld_http_header {
    sld_http_header_id_t id;
    const char *name;          /* sld_http_header_names[id] */
    size_t off, len;           /* the value, in reply.values */
} sld_http_header_t;

typedef struct sld_http_reply {
    int status;
    const char *content_type;  /* static; NULL when there is no body */
    sld_http_header_t headers[SLD_HTTP_MAX_HEADERS];
    size_t nheaders;
    sld_buf_t values;
    sld_buf_t body;
    sld_buf_t scratch;         /* decoded request fields, until the next request */
    sld_buf_t key;             /* a key built from attributes */
} sld_http_reply_t;

void sld_http_reply_reset(sld_http_reply_t *r);
void sld_http_reply_free(sld_http_reply_t *r);

/* The reason phrase of a status ("Too Many Requests"). */
const char *sld_http_reason(int status);

/* Whether s[0..len) is the C string lit. Inline, so that a literal's length
 * is known where it is called (a method, a parameter name: per request). */
static inline bool sld_span_is(sld_span_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && (n == 0 || memcmp(s.ptr, lit, n) == 0);
}

/* Adds a header whose value is printf'd (dropped when the reply already
 * has SLD_HTTP_MAX_HEADERS). */
void sld_http_add_header(sld_http_reply_t *r, sld_http_header_id_t id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A header value built piece by piece, without printf (the hot path):
 * off = sld_http_header_begin(r), append to r->values, then
 * sld_http_header_end(r, id, off). */
static inline size_t sld_http_header_begin(const sld_http_reply_t *r) { return r->values.len; }
static inline void sld_http_header_end(sld_http_reply_t *r, sld_http_header_id_t id, size_t off) {
    if (r->nheaders < SLD_HTTP_MAX_HEADERS)
        r->headers[r->nheaders++] = (sld_http_header_t){id, sld_http_header_names[id], off, r->values.len - off};
}

/* A JSON error: {"error": code, "parameter": param (if not NULL), "message": ...}. */
void sld_http_error(sld_http_reply_t *r, int status, const char *code, const char *param,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The status and content type of a JSON body the caller writes. */
void sld_http_json_reply(sld_http_reply_t *r, int status);
/* A plain-text body. */
void sld_http_text_reply(sld_http_reply_t *r, int status, const char *text);
/* 405: the path exists but not for this method; allow is the Allow header
 * ("GET, POST"). */
void sld_http_method_not_allowed(sld_http_reply_t *r, const char *allow);

/* ---- answers that come later (a decision or an edit in Redis) ---------------------------- */

typedef struct sld_http_pending sld_http_pending_t;
/* Called on the worker's loop with the whole reply, valid during the call. */
typedef void (*sld_http_done_fn)(void *arg, const sld_http_reply_t *reply);

/* A pending answer with its own reply, written into and then delivered (and
 * freed) once complete; with `extra` bytes of suitably aligned room for the
 * route's own state (sld_http_pending_extra). NULL when out of memory. */
sld_http_pending_t *sld_http_pending_new(size_t extra);
sld_http_reply_t *sld_http_pending_reply(sld_http_pending_t *pd);
void *sld_http_pending_extra(sld_http_pending_t *pd);
/* Who gets the answer; done NULL: nobody (the request went away). */
void sld_http_pending_wait(sld_http_pending_t *pd, sld_http_done_fn done, void *arg);
/* Asks to be told, by cancel(arg), when nobody waits any more
 * (sld_http_pending_wait with done NULL) before the answer is delivered:
 * an answer held on a timer stops waiting. At once when nobody waits
 * already (the request went while the store answered). It is still delivered (and
 * freed) by sld_http_pending_deliver, later. */
void sld_http_pending_on_cancel(sld_http_pending_t *pd, void (*cancel)(void *arg), void *arg);
/* Gives the reply to whoever waits (an unwritable one becomes a 503) and
 * frees the pending answer. */
void sld_http_pending_deliver(sld_http_pending_t *pd);

#endif
