/* http_config.h -- the HTTP front's settings, registered by the front with
 * the configuration (config/section.h): its key under listen: (listen.http,
 * --http, 127.0.0.1:8090 by default) and admin_token, the bearer token that
 * turns the admin API on; and how the front's code reads them from a
 * configuration.
 *
 * Not here: the admin API (http_admin.c), the listener (http.c).
 */
#ifndef SL_SERVER_HTTP_CONFIG_H
#define SL_SERVER_HTTP_CONFIG_H

#include "server/config/section.h"

/* listen.http; register with sld_config_listens_set(). */
extern const sld_config_listen_t sld_http_listen_key;

/* admin_token: a secret; register with sld_config_sections_set(). */
extern const sld_config_section_t sld_http_admin_token_section;

/* The HTTP front's address in cfg: "" when it is off. */
const char *sld_http_listen(const sld_config_t *cfg);

/* The admin API's bearer token, or NULL: the admin API is off. */
const char *sld_http_admin_token(const sld_config_t *cfg);

#endif
