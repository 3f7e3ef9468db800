/* http_config.c -- the HTTP front's settings (see http_config.h): what it
 * registers and how it reads them back. The rules (an IP address and a
 * port, "off"; a secret's length and env:NAME) are config/'s, the same for
 * every front. */
#include "server/http/http_config.h"

const sld_config_listen_t sld_http_listen_key = {
    .name = "http",
    .fallback = "127.0.0.1:8090",
    .option = "--http",
    .help = "HTTP listen address (default 127.0.0.1:8090); off = no HTTP",
};

const sld_config_section_t sld_http_admin_token_section = {
    .name = "admin_token",
    .kind = SLD_SECTION_SECRET,
    .secret = "a token",
};

const char *sld_http_listen(const sld_config_t *cfg) {
    const char *addr = sld_config_listen(cfg, sld_http_listen_key.name);
    return addr ? addr : "";
}

const char *sld_http_admin_token(const sld_config_t *cfg) {
    return sld_config_value(cfg, &sld_http_admin_token_section);
}
