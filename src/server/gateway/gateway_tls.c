/* gateway_tls.c -- the gateway's OpenSSL contexts (see gateway_tls.h).
 *
 * A file is opened first by us, so a missing or unreadable one is told as
 * the system says it; what OpenSSL then refuses is told by its first
 * error's reason. The error queue is left empty either way: it belongs to
 * the thread, and a later handshake on it must not read ours.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "server/gateway/gateway_tls.h"
#include "sluice.h"

static bool readable(const char *file, char *why, size_t why_len) {
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        snprintf(why, why_len, "cannot open %s: %s", file, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

static int openssl_failed(const char *what, const char *file, char *why, size_t why_len) {
    unsigned long e = ERR_get_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    snprintf(why, why_len, "%s %s: %s", what, file, reason ? reason : "not understood");
    ERR_clear_error();
    return SL_EINVAL;
}

static int mismatch(const char *cert, const char *key, char *why, size_t why_len) {
    ERR_clear_error();
    snprintf(why, why_len, "the key in %s does not match the certificate in %s", key, cert);
    return SL_EINVAL;
}

int sld_gw_tls_server(const char *cert, const char *key, SSL_CTX **out, sld_gw_tls_file_t *which, char *why,
                      size_t why_len) {
    *out = NULL;
    *which = SLD_GW_TLS_CERT;
    if (!readable(cert, why, why_len))
        return SL_EINVAL;
    *which = SLD_GW_TLS_KEY;
    if (!readable(key, why, why_len))
        return SL_EINVAL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        ERR_clear_error();
        snprintf(why, why_len, "out of memory");
        return SL_ENOMEM;
    }
    int rc = SL_OK;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    *which = SLD_GW_TLS_CERT;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        rc = openssl_failed("no certificate (PEM) in", cert, why, why_len);
    } else if ((*which = SLD_GW_TLS_KEY), SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        /* a key of another certificate is refused here already */
        unsigned long e = ERR_peek_error();
        if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
            rc = mismatch(cert, key, why, why_len);
        else
            rc = openssl_failed("no private key (PEM) in", key, why, why_len);
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        rc = mismatch(cert, key, why, why_len);
    }
    if (rc != SL_OK) {
        SSL_CTX_free(ctx);
        return rc;
    }
    /* HTTP/2 to the clients that offer it, HTTP/1.1 to the others */
    h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
    *out = ctx;
    return SL_OK;
}

int sld_gw_tls_client(bool verify, const char *ca, SSL_CTX **out, char *why, size_t why_len) {
    *out = NULL;
    if (ca != NULL && !readable(ca, why, why_len))
        return SL_EINVAL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ERR_clear_error();
        snprintf(why, why_len, "out of memory");
        return SL_ENOMEM;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
    if (verify) {
        /* libh2o checks the name itself once the chain is verified (and
         * skips that check only when the context does not verify) */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            int rc = openssl_failed("no CA certificate (PEM) in", ca ? ca : "the system's store", why, why_len);
            SSL_CTX_free(ctx);
            return rc;
        }
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    ERR_clear_error();
    *out = ctx;
    return SL_OK;
}
