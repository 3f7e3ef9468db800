/* gateway_tls.h -- the gateway's OpenSSL contexts: a listener's (its
 * certificate chain and key, TLS 1.2 or later, HTTP/2 offered by ALPN) and
 * a route's for its https:// upstreams (the peer verified against the
 * system's CA store, or one CA file, or -- for tests -- not at all).
 *
 * Made when the configuration is read, so a bad file is a configuration
 * error with its line, never a failure at start; freed with it. libh2o
 * takes the contexts as they are (h2o_accept_ctx_t.ssl_ctx,
 * h2o_proxy_config_vars_t.ssl_ctx); OpenSSL's default ciphers.
 *
 * Not here: where the files are named (gateway_config.c), serving.
 */
#ifndef SL_SERVER_GATEWAY_TLS_H
#define SL_SERVER_GATEWAY_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

/* Which file a failure is about. */
typedef enum sld_gw_tls_file { SLD_GW_TLS_CERT, SLD_GW_TLS_KEY } sld_gw_tls_file_t;

/* A server context from the PEM files `cert` (the certificate, then any
 * intermediates) and `key`, which must match. SL_OK and *out, or
 * SL_EINVAL with the file at fault in *which and the reason in why. */
int sld_gw_tls_server(const char *cert, const char *key, SSL_CTX **out, sld_gw_tls_file_t *which, char *why,
                      size_t why_len);

/* A client context for upstreams: verify (the peer's chain, and its name
 * by libh2o) against the PEM file `ca` or, when NULL, the system's store;
 * without verify, any certificate is taken. SL_OK and *out, or SL_EINVAL
 * (the CA file) with the reason in why, or SL_ENOMEM. */
int sld_gw_tls_client(bool verify, const char *ca, SSL_CTX **out, char *why, size_t why_len);

#endif
