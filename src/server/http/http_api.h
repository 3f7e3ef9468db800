/* http_api.h -- what sluiced answers over HTTP, apart from the wire.
 *
 * A request comes in as spans (method, path, query, body, a header lookup,
 * the peer's address); the answer goes out as a status, headers and a body
 * in a reply the caller reuses from one request to the next. http.c puts
 * both on the wire with libh2o; the unit tests call these directly.
 * The endpoints and their answers are docs/protocol.md's "HTTP".
 */
#ifndef SL_SERVER_HTTP_API_H
#define SL_SERVER_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/base/buf.h"
#include "server/state/daemon.h"
#include "server/http/http_check.h"

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

/* Answers one request on worker `worker`. `out` is reset first. Decisions
 * are made in this daemon's memory store. */
void sld_http_handle(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                     sld_http_reply_t *out);

/* An answer that comes later (a decision in Redis). */
typedef struct sld_http_pending sld_http_pending_t;
/* Called on the worker's loop with the whole reply, valid during the call. */
typedef void (*sld_http_done_fn)(void *arg, const sld_http_reply_t *reply);

/* Like sld_http_handle(), through the configured store: when *later comes
 * back non-NULL the answer is not in `out` but will be given to the
 * function set with sld_http_pending_wait(), which the caller must call at
 * once (the request's spans need not outlive this call). */
void sld_http_handle_async(sld_daemon_t *d, uint32_t worker, const sld_http_request_t *req,
                           sld_http_reply_t *out, sld_http_pending_t **later);
/* Who gets the answer; done NULL: nobody (the request went away). */
void sld_http_pending_wait(sld_http_pending_t *pd, sld_http_done_fn done, void *arg);

/* For endpoints that answer later: a pending answer with its own reply,
 * written into and then delivered (and freed) once complete. */
sld_http_pending_t *sld_http_pending_new(void);
sld_http_reply_t *sld_http_pending_reply(sld_http_pending_t *pd);
void sld_http_pending_deliver(sld_http_pending_t *pd);

void sld_http_reply_reset(sld_http_reply_t *r);
void sld_http_reply_free(sld_http_reply_t *r);

/* The reason phrase of a status ("Too Many Requests"). */
const char *sld_http_reason(int status);

/* ---- for the endpoint modules (http_api.c, http_admin.c) ---------------------------------- */

/* Adds a header whose value is printf'd. */
void sld_http_add_header(sld_http_reply_t *r, sld_http_header_id_t id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A JSON error: {"error": code, "parameter": param (if not NULL), "message": ...}. */
void sld_http_error(sld_http_reply_t *r, int status, const char *code, const char *param,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The admin API: `rest` is the path after "/v1/admin". With the Redis
 * store, edits are also stored there for every daemon, and answered when
 * Redis has them (*later, as sld_http_handle_async; later may be NULL). */
void sld_http_admin(sld_daemon_t *d, uint32_t worker, const sld_runtime_t *rt,
                    const sld_http_request_t *req, sld_span_t rest, sld_http_reply_t *out,
                    sld_http_pending_t **later);

/* The configured policy named `name` (and *index, its index), or NULL. */
const sld_policy_t *sld_http_policy_named(const sld_runtime_t *rt, sld_span_t name, size_t *index);
/* 404, no policy named `name`. */
void sld_http_unknown_policy(sld_http_reply_t *r, sld_span_t name);

/* The key of a check request: as given, or built from its attributes by the
 * policy's key list (into r->key). False when r already says why not. */
bool sld_http_check_key(const sld_runtime_t *rt, const sld_policy_t *pc, const sld_check_request_t *cr,
                        sld_http_reply_t *r, sld_span_t *key);

/* Whether s[0..len) is the C string lit. */
bool sld_span_is(sld_span_t s, const char *lit);

#endif
