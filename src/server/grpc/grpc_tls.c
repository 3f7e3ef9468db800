/* grpc_tls.c -- the gRPC front over TLS (see grpc_tls.h). */
#include <stdio.h>

#include "server/base/log.h"
#include "server/grpc/grpc_tls.h"

/* the C core's own default for a server's handshake */
#define HANDSHAKE_MAX_MS 120000

void sld_grpc_tls_args(grpc_channel_args *args, sl_usec_t idle) {
    args->args[args->num_args++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ALLOW_REUSEPORT,
                                              .value.integer = 0};
    int64_t ms = idle > 0 ? (int64_t)(idle / 1000) : HANDSHAKE_MAX_MS;
    args->args[args->num_args++] = (grpc_arg){.type = GRPC_ARG_INTEGER,
                                              .key = (char *)GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                                              .value.integer = ms > HANDSHAKE_MAX_MS ? HANDSHAKE_MAX_MS
                                                               : ms < 1         ? 1
                                                                                : (int)ms};
}

int sld_grpc_tls_listen(grpc_server *server, const sld_grpc_settings_t *tls, const char *addr,
                        grpc_server_credentials **creds, int *port, char *err, size_t err_len) {
    /* the C core copies both PEMs */
    grpc_ssl_pem_key_cert_pair pair = {.private_key = tls->key_pem, .cert_chain = tls->cert_pem};
    *creds = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
    *port = *creds ? grpc_server_add_http2_port(server, addr, *creds) : 0;
    if (*port > 0) {
        sld_info("grpc: TLS on %s (port %d) with %s, on the gRPC C core's own listener", addr, *port,
                 tls->cert_path);
        return SL_OK;
    }
    snprintf(err, err_len,
             "grpc: cannot serve TLS on %s: the address is taken or refused, or the gRPC C core refused "
             "grpc.tls.cert '%s' or grpc.tls.key '%s' (its reason is logged above)",
             addr, tls->cert_path, tls->key_path);
    return SL_EIO;
}
