/* grpc_tls.h -- the gRPC front over TLS (grpc.tls, grpc_config.h).
 *
 * The C core's channels made from a descriptor are cleartext only, so with
 * grpc.tls the C core listens on listen.grpc itself: its own socket (never
 * shared through SO_REUSEPORT, as net/listener.c's are not with another
 * daemon), accepted on its own threads; the workers still decide every
 * call. Such connections are not counted in limits.max_connections (the C
 * core tells nothing of them); idle ones are let go as the cleartext ones
 * (GRPC_ARG_MAX_CONNECTION_IDLE_MS), and one that does not finish its TLS
 * handshake within idle_timeout (at most the C core's default of 120 s) is
 * closed.
 *
 * Not here: the cleartext connections the workers accept, the calls
 * (grpc_front.c).
 */
#ifndef SL_SERVER_GRPC_TLS_H
#define SL_SERVER_GRPC_TLS_H

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "server/grpc/grpc_config.h"

/* Adds the TLS listener's two settings to args, whose array must have room
 * for them; idle is limits.idle_timeout (0: never). */
void sld_grpc_tls_args(grpc_channel_args *args, sl_usec_t idle);

/* Before grpc_server_start: the C core's TLS listener on addr with tls's
 * certificate and key. *creds is set (release it after the server, even on
 * an error) and *port to the port bound; SL_OK, or SL_EIO with err naming
 * the address and both files (the C core logs its own reason). */
int sld_grpc_tls_listen(grpc_server *server, const sld_grpc_settings_t *tls, const char *addr,
                        grpc_server_credentials **creds, int *port, char *err, size_t err_len);

#endif
