/* held_place.h -- a waiter's place, kept so that it can be given back when
 * the waiter leaves before its moment (SL.ACQUIRE's client gone, a wait=
 * request's client gone).
 *
 * What it keeps is by value: the policy's name (not its pointer: a reload
 * may free it while the waiter waits), the key, the cost and what the
 * reservation left (core/refund.h). Given back, the policy is looked up
 * again in the runtime in force; one a reload changed has other states
 * (other ids), so nothing of the new ones is touched. CL.ACQUIRE's
 * ad-hoc policy (origin index SIZE_MAX) is kept by pointer instead: the
 * throttle table (engine/throttle.h) keeps it until the daemon exits, after
 * every waiter, and a reload does not touch it.
 *
 * Not here: what can be given back exactly (core/refund.c), the waiting
 * itself (resp/acquire.c, http/http_wait.c).
 */
#ifndef SL_SERVER_HELD_PLACE_H
#define SL_SERVER_HELD_PLACE_H

#include <stdint.h>

#include "server/engine/engine.h"
#include "server/state/daemon.h"
#include "store/reserve.h"

typedef struct sld_held_place sld_held_place_t;

/* A copy of what reservation r (decided, its held filled) needs to be
 * given back; NULL when there is nothing to give back (held->at 0) or no
 * memory. */
sld_held_place_t *sld_held_place_new(const sld_request_t *r, const sl__held_t *held);

/* For a reservation the store answers later (sld_engine_defers): a place
 * with nothing held yet, made before the decision, whose held the request
 * points to (r->held = sld_held_place_held(hp)) so that the answer fills
 * it; freed by the front whatever the answer. NULL: no place to keep (as
 * sld_held_place_new), or no memory. */
sld_held_place_t *sld_held_place_pending(const sld_request_t *r);
sl__held_t *sld_held_place_held(sld_held_place_t *hp);

/* Gives the place back through d's engine on worker `worker`'s thread,
 * and frees hp. */
void sld_held_place_give_back(sld_daemon_t *d, uint32_t worker, sld_held_place_t *hp);

/* Frees hp (the waiter got its moment). NULL: nothing. */
void sld_held_place_free(sld_held_place_t *hp);

#endif
