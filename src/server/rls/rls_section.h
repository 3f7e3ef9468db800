/* rls_section.h -- the rls: section of sluiced's file, as the Envoy rate
 * limit service registers it with config/ (server/config/section.h):
 *
 *   rls:
 *     config_dir: /etc/ratelimit/config   # envoyproxy/ratelimit's YAML files
 *     response_headers: both              # ietf, x-ratelimit, both or off
 *
 * The directory is loaded with the file: at start, on every SIGHUP reload
 * and by --check-config. Its rules live and die with the configuration they
 * came with, so a reload swaps them with it, whole, and a directory with an
 * error fails the reload (the running rules stay). `sluiced --rls-config
 * DIR` names the directory instead of the file (sld_rls_section_override).
 *
 * Not here: the rules themselves (rls.h), serving them (server/grpc/).
 */
#ifndef SL_SERVER_RLS_SECTION_H
#define SL_SERVER_RLS_SECTION_H

#include "server/config/config.h"
#include "server/config/section.h"
#include "server/rls/rls.h"

/* rls.response_headers: which rate limit headers ShouldRateLimit's answer
 * asks Envoy to add to its response (response_headers_to_add). */
typedef enum sld_rls_headers {
    SLD_RLS_HEADERS_BOTH = 0,       /* both kinds below (the default) */
    SLD_RLS_HEADERS_IETF,           /* RateLimit-Policy and RateLimit (IETF draft) */
    SLD_RLS_HEADERS_X,              /* X-RateLimit-Limit, -Remaining, -Reset */
    SLD_RLS_HEADERS_OFF,            /* none */
} sld_rls_headers_t;

typedef struct sld_rls_settings {
    char *config_dir;               /* as given (relative: to the working directory) */
    sld_rls_headers_t response_headers;
    sld_rls_config_t *rules;        /* loaded from it; owned by the section */
} sld_rls_settings_t;

extern const sld_config_section_t sld_rls_section;

/* --rls-config: dir replaces rls.config_dir in every later load (NULL: the
 * file's own). Call before the first load, from one thread; dir is kept,
 * not copied. A file without an rls: section needs one added for it
 * (sld_rls_section_yaml). */
void sld_rls_section_override(const char *dir);
/* The directory --rls-config named, or NULL. */
const char *sld_rls_section_overridden(void);
/* The section that --rls-config adds to a file that has none: YAML text to
 * append ("\nrls:\n  config_dir: ...\n"), in buf; NULL when it does not fit
 * or no override is set. */
const char *sld_rls_section_yaml(char *buf, size_t size);
/* sld_config_load(path), or when path is NULL sld_config_parse(name, text,
 * len) (the built-in default), then, when --rls-config is set and the file
 * has no rls: section, the same text again with the section added (its
 * lines keep their numbers). For sluiced's load at start and on reload. */
int sld_rls_config_load(const char *path, const char *name, const char *text, size_t len,
                        sld_config_t **out, char *err, size_t err_len);

/* The rules in force in cfg, or NULL when it has no rls: section. Valid as
 * long as cfg is. (Not const: request-supplied limits are cached in it.) */
sld_rls_config_t *sld_rls_rules(const sld_config_t *cfg);
/* rls.response_headers in cfg (the default without an rls: section). */
sld_rls_headers_t sld_rls_response_headers(const sld_config_t *cfg);

#endif
