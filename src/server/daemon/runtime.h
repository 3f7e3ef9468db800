/* runtime.h -- the configuration in force: building one, swapping it in,
 * freeing the old ones once no worker can still be using them.
 *
 * A reload (SIGHUP, or the admin API from a worker thread) and every admin
 * edit go through sld_runtime_apply(), one at a time. Workers read the
 * runtime without locks (sld_runtime()); each worker records, once per loop
 * iteration, the generation it has seen, and a retired runtime is freed only
 * when every worker has seen a newer one.
 */
#ifndef SL_SERVER_RUNTIME_H
#define SL_SERVER_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "server/state/daemon.h"

/* Compiles cfg into a runtime (which takes cfg over on success). */
int sld_runtime_build(sld_daemon_t *d, sld_config_t *cfg, uint64_t generation, sld_runtime_t **out,
                      char *err, size_t err_len);
void sld_runtime_free(sld_runtime_t *rt);

/* Makes cfg the configuration in force (taking it over, freeing it on
 * error): settings that need a restart keep their running values, the
 * policies are compiled, the runtime swapped in atomically. `why` is for the
 * log ("reloaded sluice.yaml", "admin: put policy x"). *generation (may be
 * NULL) gets the new generation. Safe from any thread. */
int sld_runtime_apply(sld_daemon_t *d, sld_config_t *cfg, const char *why, char *err,
                      size_t err_len, uint64_t *generation);

/* The running configuration with the policy put->name added or replaced
 * (put may be NULL) and the policy `remove` taken out (may be NULL), applied
 * as sld_runtime_apply() does; the edit and the swap happen under one lock,
 * so concurrent edits never undo each other. SL_ENOENT when `remove` does
 * not exist, SL_EINVAL when it is the only policy. */
int sld_runtime_edit(sld_daemon_t *d, const sld_policy_t *put, const char *remove, const char *why,
                     char *err, size_t err_len, uint64_t *generation);

/* Rereads the configuration file and applies it (SIGHUP, admin reload).
 * SL_ENOCONFIG when running on the built-in default. Failures are counted and
 * logged; the running configuration stays. */
int sld_runtime_reload(sld_daemon_t *d, char *err, size_t err_len, uint64_t *generation);

/* Frees retired runtimes no worker can still use (main thread, periodically). */
void sld_runtime_collect(sld_daemon_t *d);

/* Frees everything, the runtime in force included (after the workers stopped). */
void sld_runtime_shutdown(sld_daemon_t *d);

#endif
