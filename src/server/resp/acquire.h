/* acquire.h -- SL.ACQUIRE and CL.ACQUIRE: decisions that wait, as BLPOP
 * does. The request reserves a place (sl_reserve: admitted now or at a
 * moment within its TIMEOUT, holding that place, else denied now with
 * nothing charged); an admitted request whose place is later has its reply
 * held on a timer on the worker's loop, in its place among the connection's
 * replies, and sent when the moment comes. A client that goes away stops
 * its timer and gives its place back where that is exact
 * (server/state/held_place.h; not CL.ACQUIRE's ad-hoc policies).
 *
 * Not here: the commands' table and the policy lookups (commands.c), what
 * a reply says (commands.c writes it, through the function given).
 */
#ifndef SL_SERVER_RESP_ACQUIRE_H
#define SL_SERVER_RESP_ACQUIRE_H

#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/engine/engine.h"
#include "server/resp/client.h"
#include "server/resp/resp.h"
#include "sluice.h"

/* Writes the reply of a decision (or of error rc) of reply kind `kind`. */
typedef void (*sld_acquire_write_fn)(sld_buf_t *out, int kind, int rc, const sl_decision_t *d);

/* Parses the options after an acquire's fixed arguments, argv[from..argc):
 * TIMEOUT ms (required, 0..3600000) and, when cost is not NULL, COST n
 * (n >= 0; *cost keeps its value without it). Returns NULL, or the text of
 * the error reply. */
const char *sld_acquire_options(const sld_arg_t *argv, size_t argc, size_t from, int64_t *cost,
                                sl_usec_t *wait);

/* Decides r as a reservation within `wait` (r->flags and r->max_wait are
 * set here) and replies write(out, kind, ...): at once when it is admitted
 * now, denied or an error; else when its delay has passed, in its place
 * among the connection's replies. */
void sld_acquire(sld_client_t *c, sld_request_t *r, sl_usec_t wait, int kind,
                 sld_acquire_write_fn write);

#endif
