/* grpc_config.c -- the gRPC front's settings (see grpc_config.h). */
#include "server/grpc/grpc_config.h"

const sld_config_listen_t sld_grpc_listen_key = {
    .name = "grpc",
    .fallback = NULL,
    .option = "--grpc",
    .help = "gRPC listen address: Envoy's rate limit service (default off)",
};

const char *sld_grpc_listen(const sld_config_t *cfg) {
    const char *addr = sld_config_listen(cfg, sld_grpc_listen_key.name);
    return addr ? addr : "";
}
