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
 * A route's share of all this is its lane, found by the route's name, so
 * that a reload keeps it.
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
/* One route's shared state, found by the route's name: its in-flight
 * count, its waiters, its counters and histograms, and the limits in
 * force for it. A reload that keeps a route (same name) keeps its lane, so
 * its counters never go backwards and its in-flight requests still count;
 * a removed route's lane lives on while a generation that has the route
 * does (its queued and in-flight requests end under it). */
typedef struct sld_gw_lane sld_gw_lane_t;

int sld_gw_conc_new(sld_gw_conc_t **out);
/* After every lane was let go of (sld_gw_conc_unlane). */
void sld_gw_conc_free(sld_gw_conc_t *c);

/* The lane of the route named rt->name, made on first use, its limits
 * (concurrency limit and per, queue) set to rt's from now on, for every
 * request that takes a slot or a place later (those held keep them). Each
 * call holds the lane once more; NULL when out of memory. */
sld_gw_lane_t *sld_gw_conc_lane(sld_gw_conc_t *c, const sld_gw_route_t *rt);
/* Lets go of one hold of the lane; the last frees it. */
void sld_gw_conc_unlane(sld_gw_conc_t *c, sld_gw_lane_t *lane);

/* Takes a slot of the lane under its limits in force (key ignored for
 * per: route); false when the route's or key's limit is reached (or memory
 * is short). *per_key says how it was counted: give it back the same way.
 * A limit of 0 (the route has no concurrency: any more) counts the slot
 * and never refuses. */
bool sld_gw_conc_take(sld_gw_conc_t *c, sld_gw_lane_t *lane, const char *key, size_t key_len, bool *per_key);
/* Gives back a slot taken. */
void sld_gw_conc_give(sld_gw_conc_t *c, sld_gw_lane_t *lane, bool per_key, const char *key, size_t key_len);

/* A place among the route's waiters: false when `queue` are waiting. */
bool sld_gw_conc_enter(sld_gw_lane_t *lane);
void sld_gw_conc_leave(sld_gw_lane_t *lane);

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

void sld_gw_count(sld_gw_lane_t *lane, sld_gw_count_t what);
/* A delayed request's delay, into the route's histogram. */
void sld_gw_count_delay(sld_gw_lane_t *lane, sl_usec_t delay);
/* The time an upstream took to the head of its answer, into the route's histogram. */
void sld_gw_count_latency(sld_gw_lane_t *lane, sl_usec_t took);
/* The series of g's routes, lanes[i] route i's, in the Prometheus text
 * format: the routes of the generation in force, so a removed route's
 * series are gone from the reload on. */
void sld_gw_conc_write_metrics(const sld_gw_config_t *g, sld_gw_lane_t *const *lanes, sld_buf_t *out);

#endif
