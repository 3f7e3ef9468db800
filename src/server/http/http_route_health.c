/* http_route_health.c -- GET /healthz (the process answers) and GET /readyz
 * (it should be sent traffic: not stopping, and the shared store up), for
 * load balancers and orchestrators (docs/operations.md).
 */
#include <stdatomic.h>

#include "server/http/http_api.h"  /* the daemon's state, as every HTTP route sees it */
#include "server/engine/engine.h"
#include "server/http/http_routes.h"

/* 503 with the reason while the shared store is down. */
static bool store_down_reply(sld_daemon_t *d, sld_http_reply_t *r) {
    sld_store_status_t st;
    sld_engine_status(d->engine, &st);
    if (st.up)
        return false;
    sld_http_text_reply(r, 503, "store unavailable: deciding by on_store_failure\n");
    sld_buf_printf(&r->body, "%s\n", st.last_error[0] ? st.last_error : "no answer yet");
    return true;
}

static void healthz(const sld_http_call_t *c) { sld_http_text_reply(c->reply, 200, "ok\n"); }

static void readyz(const sld_http_call_t *c) {
    if (atomic_load(&c->d->stopping))
        sld_http_text_reply(c->reply, 503, "stopping\n");
    else if (!store_down_reply(c->d, c->reply))
        sld_http_text_reply(c->reply, 200, "ready\n");
}

const sld_http_route_t sld_http_health_routes[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/healthz", healthz, 0},
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/readyz", readyz, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
