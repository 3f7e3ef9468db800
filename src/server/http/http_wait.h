/* http_wait.h -- wait= on /v1/check and /v1/auth/<policy>: a decision that
 * waits. The request reserves a place (sl_reserve, through the engine);
 * when it is admitted at a later moment, its answer (200 and the rate limit
 * headers) is written at once and held on a timer of the worker's loop
 * until then; a request that could not pass within the wait gets its 429
 * at once, charged nothing. A client that goes away stops its timer and
 * gives its place back where that is exact (server/state/held_place.h).
 *
 * Not here: parsing /v1/check's wait (http_check.c), the routes, the wire.
 */
#ifndef SL_SERVER_HTTP_WAIT_H
#define SL_SERVER_HTTP_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "server/http/http_decide.h"

/* Decides `cost` for `key` waiting at most `wait` us (wait <= 0: as
 * sld_http_decide) and answers in c->reply now, or through *c->later when
 * the answer is held. A store that cannot wait, or a policy of algorithms
 * that cannot (sliding_window, sliding_log), is a 400 naming wait. */
void sld_http_decide_wait(const sld_http_call_t *c, const sld_http_decision_t *f, sld_span_t key,
                          uint64_t cost, int64_t wait);

/* Worker `worker` is stopping: the answers it holds go now, as 503 (their
 * places were not reached), rather than keep the stop waiting. */
void sld_http_wait_release(uint32_t worker);

/* The wait= parameter of the request's query string (forward-auth's), or
 * -1 without one. False after a 400 when it is not a duration up to 1h. */
bool sld_http_query_wait(const sld_http_call_t *c, int64_t *wait);

#endif
