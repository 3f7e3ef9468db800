/* gateway_access_log.h -- the gateway's access log (gateway.access_log):
 * one JSON line per request the gateway answered, to a file or stderr.
 *
 *   {"time":"2026-11-26T01:35:43.123Z","route":"api","method":"GET",
 *    "path":"/api/x?y=1","host":"api.example.com","client":"127.0.0.1",
 *    "status":200,"decision":"forwarded","delay_ms":0.012,
 *    "upstream_ms":1.204,"bytes":123,"request_id":null}
 *
 * What the client sent is written as a JSON string (invalid UTF-8 as
 * U+FFFD) and bounded (the path at 1024 bytes, then "path_truncated":true).
 * Each worker appends its lines to a buffer of its own and writes it with
 * one write() per turn of its loop (O_APPEND, a file descriptor per
 * worker), so a line never waits for a disk and lines of one worker keep
 * their order. Files are opened again after every reload (SIGHUP): the
 * logrotate way, mv then SIGHUP.
 *
 * The decision comes from the gateway's hooks, noted on the request (an
 * h2o request variable) and read when libh2o logs the request, after its
 * last byte.
 *
 * Not here: deciding (gateway.c), the configuration (gateway_config.h).
 */
#ifndef SL_SERVER_GATEWAY_ACCESS_LOG_H
#define SL_SERVER_GATEWAY_ACCESS_LOG_H

#include <stdatomic.h>

#include <h2o.h>

#include "server/gateway/gateway_config.h"
#include "server/observe/stats.h"

typedef enum sld_gw_decision {
    SLD_GW_LOG_NONE,           /* answered without a decision: no route, no key, an error */
    SLD_GW_LOG_FORWARDED,      /* passed at once (or after a wait for a concurrency slot) */
    SLD_GW_LOG_DELAYED,        /* held for its moment (excess: delay), then forwarded */
    SLD_GW_LOG_REJECTED,       /* refused by a policy, or the delay queue full */
    SLD_GW_LOG_SHADOW,         /* over a policy and forwarded (excess: shadow) */
    SLD_GW_LOG_BUSY,           /* no concurrency slot, or no place to wait for one */
    SLD_GW_LOG_UPSTREAM_ERROR  /* forwarded; the upstream could not be reached or timed out */
} sld_gw_decision_t;

/* Adds the log to a worker's path when g has one (nothing otherwise); its
 * file is opened on each worker's loop, and checked here so that a start
 * with a file that cannot be opened fails saying so. stats: the daemon's,
 * whose reload counts say when to open the file again; *on: whether the
 * routes in force log at all (a reload may turn the log off, and on again).
 * SL_EIO, SL_ENOMEM. */
int sld_gw_access_log_register(h2o_pathconf_t *path, const sld_gw_config_t *g, sld_stats_t *stats,
                               const atomic_bool *on, char *err, size_t err_len);

/* The request matched route (NULL: none); the log's own checks are made
 * here, and the later hooks cost a look-up when it is off. */
void sld_gw_access_begin(h2o_req_t *req, const sld_gw_config_t *g, const sld_gw_route_t *route);
/* What the limiter decided (delayed, rejected, shadow, busy). */
void sld_gw_access_decision(h2o_req_t *req, sld_gw_decision_t what);
/* The request is handed to the upstream now (its wait ends). Where
 * sld_gw_forward() writes the time to the upstream's head, in microseconds
 * (left at -1 when none came); NULL when the request has no note. */
int64_t *sld_gw_access_forwarded(h2o_req_t *req);

#endif
