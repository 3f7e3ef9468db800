/* http_check.h -- what a check request asks, from a query string or JSON.
 *
 *   GET  /v1/check?policy=P&key=K[&cost=N][&wait=500ms]
 *   POST /v1/check   {"policy": "P", "key": "K", "cost": N}
 *                    {"policy": "P", "attributes": {"user": "u", "ip": "..."}, "cost": N}
 *
 * Pure parsing: bytes in, fields out, no allocation. Decoded strings (percent
 * escapes, JSON escapes) are written into a caller's scratch buffer at least
 * as long as the input; the fields point into the input or into scratch.
 * Errors name the offending parameter, for a 400 reply that says which.
 */
#ifndef SL_SERVER_HTTP_CHECK_H
#define SL_SERVER_HTTP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/base/span.h"
#include "server/http/http_json.h" /* sld_json_string, for the answers to these requests */

#define SLD_CHECK_MAX_ATTRS 8

typedef struct sld_attr {
    sld_span_t name;   /* "user", "ip", "endpoint", "method", or a header name */
    sld_span_t value;
} sld_attr_t;

typedef struct sld_check_request {
    sld_span_t policy;            /* required, non-empty */
    bool has_key;
    sld_span_t key;               /* may be empty ("" is a key) */
    uint64_t cost;                /* default 1; 0 allowed (charges nothing) */
    int64_t wait;                 /* wait=: the longest hold, us (0..SL_MAX_WAIT); -1 none */
    sld_attr_t attrs[SLD_CHECK_MAX_ATTRS];
    size_t nattrs;                /* JSON "attributes" (instead of, or with, key) */
} sld_check_request_t;

/* Parses a query string (without the '?'). Unknown parameters are errors (a
 * misspelt "cots" must not silently mean cost 1). Returns 0 or SL_EINVAL
 * with *param = the parameter's name ("policy", "key", "cost", or the
 * unknown one, as a static string or "query") and *why = a static message. */
int sld_check_parse_query(const char *query, size_t len, char *scratch, sld_check_request_t *out,
                          const char **param, const char **why);

/* Parses a JSON body: one object, keys policy (string), key (string), cost
 * (non-negative integer), attributes (object of strings); nothing else, no
 * duplicates, nesting only for attributes. Strict JSON (RFC 8259): bad
 * syntax is an error with *param = "body". Same return convention. */
int sld_check_parse_json(const char *body, size_t len, char *scratch, sld_check_request_t *out,
                         const char **param, const char **why);

/* wait=: a duration ("500ms", "2s"; a bare number is seconds) from 0 to
 * SL_MAX_WAIT, in microseconds; false otherwise (SLD_CHECK_WAIT_RANGE says why). */
#define SLD_CHECK_WAIT_RANGE "must be a duration from 0 to 1h (\"500ms\", \"2s\")"
bool sld_check_parse_wait(const char *p, size_t n, int64_t *out);

#endif
