/* http_request.h -- reading a request's headers the one way every HTTP
 * front does: h2o's headers as sluiced reads them, a lookup by any case
 * for header:<Name> key attributes, and the fields of the forwarded
 * request a key is built from (keys/forward.h).
 *
 * Not here: the rest of a request (method, path, body: each front reads
 * them from h2o or from the forward-auth headers itself), building the key
 * (keys/forward.c).
 */
#ifndef SL_SERVER_HTTP_REQUEST_H
#define SL_SERVER_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "server/base/span.h"
#include "server/config/config.h"
#include "server/keys/forward.h"

/* A header of req (an h2o_req_t *) by its lower-case name; ptr NULL when
 * absent. Several X-Forwarded-For lines come joined with ", " into one list
 * (in req's pool), every line of it: any part left out would let the client
 * choose the key. Of several X-Real-IP lines the last (the nearest
 * proxy's) counts. The shape of sld_http_request_t's header hook. */
sld_span_t sld_http_request_header(void *req, const char *name, size_t len);

/* A lookup by lower-case name (find, may be NULL: no headers) made to take
 * any case, for header:<Name> attributes; lower is its scratch space. */
typedef struct sld_http_headers {
    sld_span_t (*find)(void *ctx, const char *lower, size_t len);
    void *ctx;
    char lower[256];
} sld_http_headers_t;

/* The header `name` (any case, up to 255 bytes: longer is absent) through
 * h (a sld_http_headers_t *): sld_forwarded_t's header hook. */
sld_span_t sld_http_header_any_case(void *h, const char *name, size_t len);

/* Fills what every front reads the same way into fw (the rest zeroed): the
 * peer, X-Forwarded-For, X-Real-IP, the value of the header named
 * user_header (any case), and header:<Name> through h, which must outlive
 * fw's use. */
void sld_http_forwarded(sld_forwarded_t *fw, sld_http_headers_t *h, const struct sockaddr *peer,
                        const char *user_header);

/* Whether policy pc keys on the user and fw has no (or an empty) user
 * header: the request is answered 401 rather than keyed. */
bool sld_http_user_missing(const sld_policy_t *pc, const sld_forwarded_t *fw);

#endif
