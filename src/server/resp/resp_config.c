/* resp_config.c -- the RESP front's settings (see resp_config.h): what it
 * registers and how it reads them back. The rules (an IP address and a
 * port, "off"; a secret's length and env:NAME) are config/'s, the same for
 * every front. */
#include "server/resp/resp_config.h"

const sld_config_listen_t sld_resp_listen_key = {
    .name = "resp",
    .fallback = "127.0.0.1:6390",
    .option = "--resp",
    .help = "RESP listen address (default 127.0.0.1:6390; port 0 = any); off = no RESP",
};

const sld_config_section_t sld_resp_requirepass_section = {
    .name = "requirepass",
    .kind = SLD_SECTION_SECRET,
    .secret = "a password",
};

const char *sld_resp_listen(const sld_config_t *cfg) {
    const char *addr = sld_config_listen(cfg, sld_resp_listen_key.name);
    return addr ? addr : "";
}

const char *sld_resp_requirepass(const sld_config_t *cfg) {
    return sld_config_value(cfg, &sld_resp_requirepass_section);
}
