/* resp_config.h -- the RESP front's settings, registered by the front with
 * the configuration (config/section.h): its key under listen: (listen.resp,
 * --resp, 127.0.0.1:6390 by default) and requirepass, the password AUTH
 * takes; and how the front's code reads them from a configuration.
 *
 * Not here: AUTH itself (auth.c), the listener (resp_connection.c).
 */
#ifndef SL_SERVER_RESP_CONFIG_H
#define SL_SERVER_RESP_CONFIG_H

#include "server/config/section.h"

/* listen.resp; register with sld_config_listens_set(). */
extern const sld_config_listen_t sld_resp_listen_key;

/* requirepass: a secret; register with sld_config_sections_set(). */
extern const sld_config_section_t sld_resp_requirepass_section;

/* The RESP front's address in cfg: "" when it is off. */
const char *sld_resp_listen(const sld_config_t *cfg);

/* The password AUTH takes, or NULL: no password (every AUTH of "default"
 * passes, as Redis 6+ without requirepass). */
const char *sld_resp_requirepass(const sld_config_t *cfg);

#endif
