/* admission.c -- counting connections against max_connections (see admission.h). */
#include <stdlib.h>

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

void sld_conn_closed(sld_daemon_t *d, sld_acceptor_t *a, bool admitted) {
    if (admitted)
        sld_conn_release(d);
    sld_acceptor_release(a);
}

static void on_refused_closed(uv_handle_t *handle) { free(handle); }

bool sld_conn_accept(sld_daemon_t *d, sld_incoming_t *in, uv_tcp_t *tcp, const char *refusal,
                     size_t refusal_len) {
    if (sld_incoming_take(in, tcp) != 0) {
        uv_close((uv_handle_t *)tcp, on_refused_closed);
        return false;
    }
    if (!sld_conn_admit(d)) {
        sld_conn_closed(d, sld_incoming_acceptor(in), false);
        uv_buf_t b = uv_buf_init((char *)refusal, (unsigned)refusal_len);
        uv_try_write((uv_stream_t *)tcp, &b, 1);
        uv_close((uv_handle_t *)tcp, on_refused_closed);
        return false;
    }
    return true;
}
