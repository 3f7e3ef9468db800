/* fuzz_gateway.c -- libFuzzer target for the gateway's configuration
 * section and route matching.
 *
 * The input is a configuration file with the gateway: section registered:
 * sld_config_parse() must return SL_OK or an error with a message, never
 * crash, leak or read out of bounds. When it loads, every route must have
 * been checked (a name, http:// or https:// upstreams, policies that exist), and a few
 * requests (taken from the input's last bytes) are matched against it:
 * the route found, if any, must match and no earlier one may.
 * Build and run: make fuzz (clang, ASan + UBSan, under CTest).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/config/config.h"
#include "server/config/section.h"
#include "server/daemon/front_config.h"
#include "server/gateway/gateway_config.h"
#include "server/gateway/gateway_route.h"

static void match_some(const sld_gw_config_t *g, const uint8_t *data, size_t size) {
    static const char *const methods[] = {"GET", "POST", "DELETE", ""};
    static const char *const hosts[] = {"api.example.com", "API.example.com:8080", "[::1]:80", "", NULL};
    size_t tail = size < 64 ? size : 64;
    sld_span_t path = {(const char *)data + size - tail, tail};
    for (size_t m = 0; m < 4; m++)
        for (size_t h = 0; h < 5; h++) {
            sld_span_t method = {methods[m], strlen(methods[m])};
            sld_span_t host = {hosts[h], hosts[h] ? strlen(hosts[h]) : 0};
            const sld_gw_route_t *r = sld_gw_route_find(g, method, host, path);
            if (r && !sld_gw_route_matches(r, method, host, path))
                abort();
            for (size_t i = 0; r && &g->routes[i] != r; i++)
                if (sld_gw_route_matches(&g->routes[i], method, host, path))
                    abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int registered = -1; /* the gateway among the other fronts' keys */
    if (registered < 0)
        registered = sld_daemon_config_register();
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("fuzz.yaml", (const char *)data, size, &cfg, err, sizeof err);
    if (rc != SL_OK) {
        if (cfg != NULL || err[0] == '\0')
            abort();
        return 0;
    }
    const sld_gw_config_t *g = sld_config_section(cfg, "gateway");
    if (g != NULL) {
        if (g->nroutes == 0 || g->listen[0] == '\0' || g->nlistens == 0 || g->nlistens > SLD_GW_MAX_LISTENS ||
            strcmp(g->listen, g->listens[0].addr) != 0)
            abort();
        for (size_t i = 0; i < g->nlistens; i++) /* tls: both files, and a context made from them */
            if ((g->listens[i].tls != NULL) != (g->listens[i].cert != NULL && g->listens[i].key != NULL))
                abort();
        for (size_t i = 0; i < g->nroutes; i++) {
            const sld_gw_route_t *r = &g->routes[i];
            if (r->name == NULL || r->nupstreams == 0 || r->upstream != r->upstreams[0] || r->status < 400 ||
                r->status > 599)
                abort();
            /* every upstream http:// or https://, and the https ones have a TLS context */
            for (size_t k = 0; k < r->nupstreams; k++) {
                bool https = strncmp(r->upstreams[k], "https://", 8) == 0;
                if ((!https && strncmp(r->upstreams[k], "http://", 7) != 0) || (https && r->tls == NULL))
                    abort();
            }
            for (size_t k = 0; k < r->npolicies; k++)
                if (sld_config_policy(cfg, r->policies[k]) == NULL)
                    abort();
            /* the new keys' invariants: delay takes one policy; a limit's status is an error status */
            if (r->excess == SLD_GW_DELAY && (r->npolicies != 1 || r->max_delay <= 0))
                abort();
            if (r->concurrency.limit && (r->concurrency.status < 400 || r->concurrency.status > 599))
                abort();
        }
        match_some(g, data, size);
    }
    sld_config_free(cfg);
    return 0;
}
