/* front_config.c -- the configuration every front registers (see
 * front_config.h). A new front adds its listen key and its sections here,
 * one line each. */
#include "server/daemon/front_config.h"
#include "server/config/section.h"
#include "server/daemon/observe_config.h"
#include "server/gateway/gateway_config.h"
#include "server/grpc/grpc_config.h"
#include "server/http/http_config.h"
#include "server/resp/resp_config.h"
#include "server/rls/rls_section.h"

/* The fronts' keys under listen:, in the order messages list them
 * ("unknown key ... in listen (expected one of resp, http)"). */
static const sld_config_listen_t *const listen_keys[] = {
    &sld_resp_listen_key,
    &sld_http_listen_key,
    &sld_grpc_listen_key,
};

/* The fronts' top-level keys: secrets are read and listed among the
 * built-in scalars, mappings after policies:, each kind in this order. */
static const sld_config_section_t *const sections[] = {
    &sld_http_admin_token_section,
    &sld_resp_requirepass_section,
    &sld_gateway_section,
    &sld_rls_section,
    &sld_grpc_section,
    &sld_observe_section,
};

int sld_daemon_config_register(void) {
    int rc = sld_config_listens_set(listen_keys, sizeof listen_keys / sizeof listen_keys[0]);
    return rc != SL_OK ? rc : sld_config_sections_set(sections, sizeof sections / sizeof sections[0]);
}
