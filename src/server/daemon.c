/* daemon.c -- the daemon's clock (see daemon.h). */
#include "daemon.h"

sl_usec_t sld_now(sld_daemon_t *d) {
    return d->test_clock ? atomic_load(&d->test_now) : sl_clock_realtime(NULL);
}
