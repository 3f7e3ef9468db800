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

#include "server/engine/engine.h"
#include "server/engine/remote.h"
#include "server/engine/runtime_hooks.h"
#include "server/engine/write_back.h"
#include "server/observe/heavy_hitters.h"
#include "server/observe/metrics.h"
#include "server/observe/rates.h"
#include "server/observe/stats.h"
#include "sluice.h"

/* What the store kinds work with, built by the daemon at start (it keeps
 * it: the engine holds a pointer to it). */
typedef struct sld_decide_ctx {
    sl_limiter_t *limiter;           /* the memory store, and the fallback's */
    sld_remote_t *remote;            /* the Redis store; NULL: memory only */
    sld_write_back_t *write_back;    /* with remote: store.sync write_back */
    sld_metrics_t *metrics;          /* decisions counted for /metrics; NULL: none */
    sld_stats_t *stats;              /* decision_errors; NULL: not counted */
    sld_hh_t *heavy;                 /* heavy-hitter sketches; NULL: off */
    sld_rates_t *rates;              /* decisions per second; NULL: off */
    sld_runtime_hooks_t rt;          /* a request's runtime (pin, policies, config), the clock */
    /* Requests of one read are decided at one instant: one clock read
     * between these (rt.ctx; NULL: a clock read per decision). */
    void (*batch_begin)(void *ctx);
    void (*batch_end)(void);
} sld_decide_ctx_t;

/* The memory store, Redis strict, write-back. ctx: an sld_decide_ctx_t. */
extern const sld_store_kind_t sld_kind_memory;
extern const sld_store_kind_t sld_kind_redis;
extern const sld_store_kind_t sld_kind_write_back;

/* An engine over ctx's store: memory without ctx->remote, else Redis
 * strict, or write-back with ctx->write_back. Decisions are counted in
 * ctx's stats and metrics. ctx is kept, not copied: it must outlive the
 * engine. */
int sld_decide_engine_new(sld_decide_ctx_t *ctx, sld_engine_t **out);

#endif
