/* wiring.h -- the daemon's state handed to the engine's parts as the hooks
 * and contexts they take, so none of them names the daemon: the runtime
 * hooks (the configuration in force, applying one, the clock), the store
 * kinds' context, the rules kept in Redis and the write-back sync.
 *
 * Not here: what those parts do (engine/), the runtime itself (runtime.c).
 */
#ifndef SL_SERVER_WIRING_H
#define SL_SERVER_WIRING_H

#include <uv.h>

#include "server/state/daemon.h"
#include "server/engine/runtime_hooks.h"

/* d's runtime (runtime.c) and clock (sld_now) as the engine's hooks. */
sld_runtime_hooks_t sld_daemon_runtime_hooks(sld_daemon_t *d);

/* d->engine over d's store kind, with d->decide as its context. */
int sld_daemon_engine_new(sld_daemon_t *d);

/* d->write_back: the sync of d's write-back policies, on `loop`. */
int sld_daemon_write_back_start(sld_daemon_t *d, uv_loop_t *loop);

/* d->rules: following the policies kept in d's Redis store, on `loop`. */
int sld_daemon_rules_start(sld_daemon_t *d, uv_loop_t *loop);

#endif
