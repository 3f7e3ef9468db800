/* daemon.c -- the daemon's clock, with the state it reads (see daemon.h):
 * the wall clock or SL.TESTCLOCK's, one read per batch. */
#include "server/state/daemon.h"

static _Thread_local sl_usec_t batch_now; /* 0 = outside a batch */

static sl_usec_t read_clock(sld_daemon_t *d) {
    return d->test_clock ? atomic_load(&d->test_now) : sl_clock_realtime(NULL);
}

sl_usec_t sld_now(sld_daemon_t *d) { return batch_now ? batch_now : read_clock(d); }

void sld_batch_begin(sld_daemon_t *d) {
    sl_usec_t t = read_clock(d);
    batch_now = t > 0 ? t : 1;
}

void sld_batch_end(void) { batch_now = 0; }
