/* runtime_hooks.h -- the configuration in force, as the engine reaches it.
 *
 * The runtime (configuration + compiled policies, swapped on reload) is
 * the daemon's; the engine's store kinds, the rules kept in Redis and the
 * write-back sync reach it only through these hooks, given at start by
 * whoever wires the daemon (daemon/daemon.c over daemon/runtime.c). Here a
 * runtime is opaque: its configuration and policies are read through the
 * hooks, and it is pinned to stay alive while a call to Redis holds it.
 *
 * Not here: building, swapping or freeing runtimes (daemon/runtime.c).
 */
#ifndef SL_SERVER_RUNTIME_HOOKS_H
#define SL_SERVER_RUNTIME_HOOKS_H

#include <stddef.h>

#include "server/config/config.h"
#include "server/engine/policies.h"
#include "sluice.h"

struct sld_runtime;

typedef struct sld_runtime_hooks {
    void *ctx;
    /* The runtime in force: valid until the calling thread's loop moves on
     * (pin it to keep it longer). */
    const struct sld_runtime *(*current)(void *ctx);
    const sld_config_t *(*config)(const struct sld_runtime *rt);
    const sld_policies_t *(*policies)(const struct sld_runtime *rt);
    /* delta +1 keeps rt alive past a reload, -1 lets it go. */
    void (*pin)(const struct sld_runtime *rt, int delta);
    /* Whether cfg compiles into a runtime (cfg is freed either way); err
     * says why not. */
    int (*check)(void *ctx, sld_config_t *cfg, char *err, size_t err_len);
    /* Makes cfg the configuration in force (taking it over), as a reload
     * does; `why` is for the log. */
    int (*apply)(void *ctx, sld_config_t *cfg, const char *why, char *err, size_t err_len);
    /* The daemon's now, us (the manual test clock when it runs one). */
    sl_usec_t (*now)(void *ctx);
} sld_runtime_hooks_t;

#endif
