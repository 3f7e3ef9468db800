/* http_reply.c -- replies, their headers and errors, and pending answers
 * (see http_reply.h). Nothing here knows a route or a policy.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_check.h"
#include "server/http/http_reply.h"

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

/* Each name written once, for the names and their lengths alike. */
#define HEADER_NAMES(X)                                                                                        \
    X(SLD_H_RATELIMIT_POLICY, "RateLimit-Policy")                                                              \
    X(SLD_H_RATELIMIT, "RateLimit")                                                                            \
    X(SLD_H_X_RATELIMIT_LIMIT, "X-RateLimit-Limit")                                                            \
    X(SLD_H_X_RATELIMIT_REMAINING, "X-RateLimit-Remaining")                                                    \
    X(SLD_H_X_RATELIMIT_RESET, "X-RateLimit-Reset")                                                            \
    X(SLD_H_RETRY_AFTER, "Retry-After")                                                                        \
    X(SLD_H_ALLOW, "Allow")                                                                                    \
    X(SLD_H_WWW_AUTHENTICATE, "WWW-Authenticate")
#define AS_NAME(id, lit) [id] = lit,
#define AS_LEN(id, lit) [id] = sizeof(lit) - 1,

const char *const sld_http_header_names[SLD_H_COUNT] = {HEADER_NAMES(AS_NAME)};
const uint8_t sld_http_header_name_lens[SLD_H_COUNT] = {HEADER_NAMES(AS_LEN)};

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
    sld_http_header_end(r, id, off);
}

void sld_http_json_reply(sld_http_reply_t *r, int status) {
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
    sld_http_json_reply(r, status);
    sld_buf_printf(&r->body, "{\"error\":\"%s\"", code);
    if (param)
        sld_buf_printf(&r->body, ",\"parameter\":\"%s\"", param);
    sld_buf_append_str(&r->body, ",\"message\":");
    sld_json_string(&r->body, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    sld_buf_append_str(&r->body, "}\n");
}

void sld_http_text_reply(sld_http_reply_t *r, int status, const char *text) {
    r->status = status;
    r->content_type = "text/plain; charset=utf-8";
    sld_buf_append_str(&r->body, text);
}

void sld_http_method_not_allowed(sld_http_reply_t *r, const char *allow) {
    sld_http_error(r, 405, "method_not_allowed", NULL, "this path takes %s", allow);
    sld_http_add_header(r, SLD_H_ALLOW, "%s", allow);
}

/* ---- pending answers ------------------------------------------------------------------------ */

struct sld_http_pending {
    sld_http_reply_t reply;
    sld_http_done_fn done;  /* set by the wire layer; NULL: nobody waits any more */
    void *done_arg;
    void (*cancel)(void *arg); /* told once when nobody waits any more */
    void *cancel_arg;
    bool abandoned;            /* told nobody waits before cancel was set */
    alignas(max_align_t) unsigned char extra[]; /* the route's own state */
};

sld_http_pending_t *sld_http_pending_new(size_t extra) {
    return calloc(1, sizeof(sld_http_pending_t) + extra);
}

sld_http_reply_t *sld_http_pending_reply(sld_http_pending_t *pd) { return &pd->reply; }

void *sld_http_pending_extra(sld_http_pending_t *pd) { return pd->extra; }

void sld_http_pending_wait(sld_http_pending_t *pd, sld_http_done_fn done, void *arg) {
    pd->done = done;
    pd->done_arg = arg;
    pd->abandoned = done == NULL;
    void (*cancel)(void *) = pd->cancel;
    if (done == NULL && cancel) {
        pd->cancel = NULL;
        cancel(pd->cancel_arg);
    }
}

void sld_http_pending_on_cancel(sld_http_pending_t *pd, void (*cancel)(void *arg), void *arg) {
    pd->cancel = cancel;
    pd->cancel_arg = arg;
    if (pd->abandoned) { /* the request went while the store was answering */
        pd->cancel = NULL;
        cancel(arg);
    }
}

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
