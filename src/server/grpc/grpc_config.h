/* grpc_config.h -- the gRPC front's settings, registered with the
 * configuration (config/section.h): its key under listen: (listen.grpc,
 * --grpc; off unless given), and how the front's code reads it back.
 *
 * Not here: the front (grpc_front.c).
 */
#ifndef SL_SERVER_GRPC_CONFIG_H
#define SL_SERVER_GRPC_CONFIG_H

#include "server/config/section.h"

/* listen.grpc; register with sld_config_listens_set(). */
extern const sld_config_listen_t sld_grpc_listen_key;

/* The gRPC front's address in cfg: "" when it is off. */
const char *sld_grpc_listen(const sld_config_t *cfg);

#endif
