/* front_config.h -- the configuration every front registers, in one table:
 * the listen keys (listen.resp, listen.http: each with its command-line
 * option) and the top-level sections (admin_token, requirepass, gateway:),
 * handed to config/ (config/section.h), which names no front.
 *
 * Not here: what a front's settings mean (each front's *_config.c), reading
 * the file (config/).
 */
#ifndef SL_SERVER_DAEMON_FRONT_CONFIG_H
#define SL_SERVER_DAEMON_FRONT_CONFIG_H

/* Registers every front's configuration. Call once, before the first load
 * and before the command line is read (the listen keys' options come from
 * it); tests that read whole files call it too. SL_OK, or SL_EINVAL when
 * config/ refuses a table (too long, a name twice). */
int sld_daemon_config_register(void);

#endif
