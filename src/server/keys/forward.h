/* forward.h -- the key of a forwarded request, for forward-auth.
 *
 * A gateway (nginx auth_request, Envoy ext_authz, Traefik ForwardAuth) asks
 * sluiced about a request it is about to serve. The key is built from that
 * request as the policy says (its key attributes: user, ip, endpoint,
 * method, header:<Name>, key), with the client's address believed only from
 * proxies the configuration trusts:
 *   - the peer's address, unless the peer is a trusted proxy; then the
 *     rightmost address of X-Forwarded-For that is not a trusted proxy (or
 *     X-Real-IP when there is no X-Forwarded-For);
 *   - IPv6 addresses grouped by their first ipv6_prefix bits (/64 by default),
 *     so rotating addresses inside one allocation does not escape a limit.
 * Pure: strings and addresses in, a key out.
 */
#ifndef SL_SERVER_FORWARD_H
#define SL_SERVER_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/base/cidr.h"   /* trusted proxies: sld_cidrs_t */
#include "server/base/span.h"

/* The request as the gateway forwarded it. Missing headers have ptr NULL. */
typedef struct sld_forwarded {
    const struct sockaddr *peer;   /* the connection's remote address */
    sld_span_t x_forwarded_for;
    sld_span_t x_real_ip;
    sld_span_t user;               /* the configured user header's value */
    sld_span_t uri;                /* X-Original-URI, else X-Forwarded-Uri */
    sld_span_t method;             /* X-Original-Method, else X-Forwarded-Method */
    sld_span_t route;              /* the gateway's route name (ptr NULL elsewhere) */
    /* header:<Name> attributes: looks a header up by name (case-insensitive). */
    sld_span_t (*header)(void *ctx, const char *name, size_t name_len);
    void *header_ctx;
} sld_forwarded_t;

/* The client address as text: "203.0.113.7", or "2001:db8:1:2::/64" for IPv6
 * grouped by prefix. Returns the length, 0 if no address can be found. */
size_t sld_client_ip(const sld_forwarded_t *in, const sld_cidrs_t *trusted, uint32_t ipv6_prefix,
                     char *out, size_t cap);

/* Builds the key for the attributes attrs[0..n) ("user", "ip", "endpoint",
 * "method", "route", "header:<Name>"): their values joined as "name=value" with '|'
 * (values escaped so that no two requests with different attributes share a
 * key). The endpoint is the URI's path without its query. Returns the key's
 * length, or 0 with *why set when an attribute has no value (e.g. no user
 * header: the caller answers 401/400). */
size_t sld_forward_key(const sld_forwarded_t *in, const sld_cidrs_t *trusted, uint32_t ipv6_prefix,
                       char *const *attrs, size_t n, char *out, size_t cap, const char **why);

#endif
