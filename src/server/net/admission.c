/* admission.c -- counting connections against max_connections (see admission.h). */
#include "server/net/admission.h"

bool sld_conn_admit(sld_daemon_t *d) {
    atomic_fetch_add(&d->stats.connections_received, 1);
    int64_t now_connected = atomic_fetch_add(&d->stats.connected, 1) + 1;
    if (now_connected <= (int64_t)sld_runtime(d)->cfg->max_connections)
        return true;
    atomic_fetch_add(&d->stats.connections_rejected, 1);
    atomic_fetch_sub(&d->stats.connected, 1);
    return false;
}

void sld_conn_release(sld_daemon_t *d) { atomic_fetch_sub(&d->stats.connected, 1); }
