/* decide.h -- the daemon's store kinds behind the decision engine
 * (engine.h): memory, Redis strict (with the policies' on_store_failure
 * fallback) and write-back (decided here, shared by write_back.c). The
 * daemon picks one at start by its store settings; the fronts only ever
 * see the engine.
 *
 * Not here: the engine's calls (engine.c), the Redis protocol (remote.c,
 * store/redis/), the sync of write-back (write_back.c).
 */
#ifndef SL_SERVER_DECIDE_H
#define SL_SERVER_DECIDE_H

#include "server/state/daemon.h"
#include "server/engine/engine.h"

/* The memory store, Redis strict, write-back. ctx: the daemon. */
extern const sld_store_kind_t sld_kind_memory;
extern const sld_store_kind_t sld_kind_redis;
extern const sld_store_kind_t sld_kind_write_back;

/* An engine over d's store: memory without d->remote, else Redis strict,
 * or write-back with d->write_back. Decisions are counted in d's counters,
 * stats and metrics. */
int sld_decide_engine_new(sld_daemon_t *d, sld_engine_t **out);

#endif
