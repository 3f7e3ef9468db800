/* http_router.h -- HTTP routes as one table of rows, and the matching of a
 * request's method and path against them.
 *
 * A route group (check, forward-auth, admin, health, metrics: one
 * http_route_*.c file each, or a future front's) is an array of rows ending
 * with a row whose handler is NULL; the table is a NULL-terminated list of
 * groups, walked in order. The first row whose path matches owns the path:
 * when it does not take the method, the answer is 405 with the methods it
 * does take (sld_http_allow_text), never another row's.
 *
 * Pure: no daemon, no reply; http_api.c dispatches with it.
 */
#ifndef SL_SERVER_HTTP_ROUTER_H
#define SL_SERVER_HTTP_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/span.h"
#include "server/http/http_reply.h"

/* Methods, as bits of a route's `methods`. HEAD is never named in Allow:
 * it goes with GET, where a route takes it. */
enum {
    SLD_M_GET = 1u << 0,
    SLD_M_HEAD = 1u << 1,
    SLD_M_POST = 1u << 2,
    SLD_M_PUT = 1u << 3,
    SLD_M_DELETE = 1u << 4,
    SLD_M_OTHER = 1u << 5,   /* any method not named above */
    SLD_M_ANY = (1u << 6) - 1
};

/* How a row's path matches the request's; `rest` is what follows it. */
typedef enum sld_http_match {
    SLD_MATCH_EXACT,   /* the path itself; rest is empty */
    SLD_MATCH_PREFIX,  /* the path and anything after it, nothing included */
    SLD_MATCH_UNDER,   /* the path and at least one byte after it */
    SLD_MATCH_NAME     /* the path and one name: 1..SLD_ROUTE_NAME_MAX bytes, no '/' */
} sld_http_match_t;

#define SLD_ROUTE_NAME_MAX 64

/* Row flags. */
enum {
    SLD_ROUTE_ADMIN = 1u << 0  /* the admin API: admin_token on, and the bearer token given,
                                  before the method is looked at */
};

struct sld_daemon;
struct sld_runtime;

/* What a handler is given: the request, the path after the row's, the
 * reply to write and, when the caller can wait, where to leave a pending
 * answer (later NULL: answer now or not at all). */
typedef struct sld_http_call {
    struct sld_daemon *d;
    uint32_t worker;
    const struct sld_runtime *rt;     /* the configuration in force for this request */
    const sld_http_request_t *req;
    sld_span_t rest;
    sld_http_reply_t *reply;
    sld_http_pending_t **later;
} sld_http_call_t;

typedef void (*sld_http_handler_fn)(const sld_http_call_t *call);

typedef struct sld_http_route {
    unsigned methods;              /* SLD_M_* bits */
    sld_http_match_t match;
    const char *path;
    sld_http_handler_fn handler;   /* NULL: the end of a group */
    unsigned flags;                /* SLD_ROUTE_* */
} sld_http_route_t;

/* The SLD_M_* bit of a method ("GET" -> SLD_M_GET; unknown -> SLD_M_OTHER). */
unsigned sld_http_method_bit(sld_span_t method);

/* The first row of the groups (a NULL-terminated list) whose path matches
 * `path`, with *rest what follows the row's path; NULL when none does. */
const sld_http_route_t *sld_http_route_find(const sld_http_route_t *const *groups, sld_span_t path,
                                            sld_span_t *rest);

/* Whether the row takes the method. */
bool sld_http_route_takes(const sld_http_route_t *route, sld_span_t method);

/* The Allow value of a method set, "GET, PUT, DELETE", into out[0..size)
 * (HEAD left out, see above; other methods cannot be named). */
void sld_http_allow_text(unsigned methods, char *out, size_t size);

#endif
