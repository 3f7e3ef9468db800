/* gateway_concurrency.h -- the gateway's concurrency limits (a route's
 * `concurrency: {limit: N, per: route|key}`): how many requests of a route,
 * or of one key on a route, are in flight to the upstream, shared by every
 * worker.
 *
 * per: route counts in one atomic counter per route; per: key in a table
 * of (route, key) counts under one mutex, an entry living while its count
 * is above 0. Also the number of requests waiting per route (the route's
 * `queue` bound), across workers, and the route's counters, which it
 * writes as the gateway's /metrics series (server/observe/extra_metrics.h).
 *
 * Not here: the waiting itself (a FIFO per worker and its timer,
 * gateway.c), the configuration (gateway_config.h).
 */
#ifndef SL_SERVER_GATEWAY_CONCURRENCY_H
#define SL_SERVER_GATEWAY_CONCURRENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/gateway/gateway_config.h"

typedef struct sld_gw_conc sld_gw_conc_t;

/* For the routes of g (kept by reference: g outlives it). SL_ENOMEM. */
int sld_gw_conc_new(const sld_gw_config_t *g, sld_gw_conc_t **out);
void sld_gw_conc_free(sld_gw_conc_t *c);

/* Takes a slot of route (key ignored for per: route): false when the
 * route's or key's limit is reached (or memory is short). */
bool sld_gw_conc_take(sld_gw_conc_t *c, size_t route, const char *key, size_t key_len);
/* Gives back a slot taken. */
void sld_gw_conc_give(sld_gw_conc_t *c, size_t route, const char *key, size_t key_len);

/* A place among the route's waiters: false when `queue` are waiting. */
bool sld_gw_conc_enter(sld_gw_conc_t *c, size_t route);
void sld_gw_conc_leave(sld_gw_conc_t *c, size_t route);

/* What happened to a request of a route, counted. */
typedef enum sld_gw_count {
    SLD_GW_FORWARDED,    /* handed to the upstream (shadowed excess too) */
    SLD_GW_DELAYED,      /* held for its moment (excess: delay) */
    SLD_GW_REJECTED,     /* refused by a policy, or the delay queue full */
    SLD_GW_BUSY,         /* no concurrency slot (or no place to wait for one) */
    SLD_GW_BAD_GATEWAY,  /* the upstream failed: 502 */
    SLD_GW_TIMED_OUT,    /* the upstream timed out: 504 */
    SLD_GW_NCOUNTS
} sld_gw_count_t;

void sld_gw_count(sld_gw_conc_t *c, size_t route, sld_gw_count_t what);
/* A delayed request's delay, into the route's histogram. */
void sld_gw_count_delay(sld_gw_conc_t *c, size_t route, sl_usec_t delay);
/* The time an upstream took to the head of its answer, into the route's histogram. */
void sld_gw_count_latency(sld_gw_conc_t *c, size_t route, sl_usec_t took);
/* The routes' series in the Prometheus text format (ctx: the sld_gw_conc_t). */
void sld_gw_conc_write_metrics(void *ctx, sld_buf_t *out);

#endif
