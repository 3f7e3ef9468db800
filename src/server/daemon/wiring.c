/* wiring.c -- the daemon's state handed to the engine's parts (see
 * wiring.h): its runtime and clock as hooks, the store kinds' context. */
#include "server/daemon/wiring.h"
#include "server/daemon/runtime.h"
#include "server/engine/decide.h"
#include "server/engine/rules.h"
#include "server/engine/write_back.h"

static const sld_runtime_t *hook_current(void *ctx) { return sld_runtime(ctx); }

static const sld_config_t *hook_config(const sld_runtime_t *rt) { return rt->cfg; }

static const sld_policies_t *hook_policies(const sld_runtime_t *rt) { return rt->policies; }

static void hook_pin(const sld_runtime_t *rt, int delta) {
    if (delta > 0)
        atomic_fetch_add(&((sld_runtime_t *)rt)->pins, 1);
    else
        atomic_fetch_sub(&((sld_runtime_t *)rt)->pins, 1);
}

static int hook_check(void *ctx, sld_config_t *cfg, char *err, size_t err_len) {
    sld_runtime_t *rt = NULL;
    int rc = sld_runtime_build(ctx, cfg, 0, &rt, err, err_len);
    if (rc != SL_OK) {
        sld_config_free(cfg);
        return rc;
    }
    sld_runtime_free(rt); /* and cfg with it */
    return SL_OK;
}

static int hook_apply(void *ctx, sld_config_t *cfg, const char *why, char *err, size_t err_len) {
    return sld_runtime_apply(ctx, cfg, why, err, err_len, NULL);
}

static sl_usec_t hook_now(void *ctx) { return sld_now(ctx); }

static void hook_batch_begin(void *ctx) { sld_batch_begin(ctx); }

sld_runtime_hooks_t sld_daemon_runtime_hooks(sld_daemon_t *d) {
    return (sld_runtime_hooks_t){.ctx = d, .current = hook_current, .config = hook_config,
                                 .policies = hook_policies, .pin = hook_pin, .check = hook_check,
                                 .apply = hook_apply, .now = hook_now};
}

int sld_daemon_engine_new(sld_daemon_t *d) {
    d->decide = (sld_decide_ctx_t){.limiter = d->limiter, .remote = d->remote, .write_back = d->write_back,
                                   .metrics = d->metrics, .stats = &d->stats, .heavy = d->heavy, .rates = d->rates,
                                   .rt = sld_daemon_runtime_hooks(d), .batch_begin = hook_batch_begin,
                                   .batch_end = sld_batch_end};
    return sld_decide_engine_new(&d->decide, &d->engine);
}

int sld_daemon_write_back_start(sld_daemon_t *d, uv_loop_t *loop) {
    sld_runtime_hooks_t rt = sld_daemon_runtime_hooks(d);
    return sld_write_back_start(&rt, d->store, d->remote, loop, &d->write_back);
}

int sld_daemon_rules_start(sld_daemon_t *d, uv_loop_t *loop) {
    sld_runtime_hooks_t rt = sld_daemon_runtime_hooks(d);
    return sld_rules_start(&rt, d->remote, loop, &d->rules);
}
