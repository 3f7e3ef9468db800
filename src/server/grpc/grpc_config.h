/* grpc_config.h -- the gRPC front's settings, registered with the
 * configuration (config/section.h): its key under listen: (listen.grpc,
 * --grpc; off unless given), its section grpc: (TLS), and how the front's
 * code reads them back.
 *
 *   grpc:
 *     tls:
 *       cert: /etc/sluice/grpc.pem   # PEM: the certificate, then its chain
 *       key: /etc/sluice/grpc.key    # PEM: its private key
 *
 * The files are read with the rest of the file (at start, on reload, by
 * --check-config); the front takes them at start only.
 *
 * Not here: the front (grpc_server.c).
 */
#ifndef SL_SERVER_GRPC_CONFIG_H
#define SL_SERVER_GRPC_CONFIG_H

#include "server/config/section.h"

/* listen.grpc; register with sld_config_listens_set(). */
extern const sld_config_listen_t sld_grpc_listen_key;

/* grpc:; register with sld_config_sections_set(). */
extern const sld_config_section_t sld_grpc_section;

typedef struct sld_grpc_settings {
    char *cert_path, *key_path;   /* as given (relative: to the working directory) */
    char *cert_pem, *key_pem;     /* their contents, NUL-terminated */
} sld_grpc_settings_t;

/* The gRPC front's address in cfg: "" when it is off. */
const char *sld_grpc_listen(const sld_config_t *cfg);

/* grpc.tls in cfg, or NULL when the front serves cleartext. Valid as long
 * as cfg is. */
const sld_grpc_settings_t *sld_grpc_tls(const sld_config_t *cfg);

#endif
