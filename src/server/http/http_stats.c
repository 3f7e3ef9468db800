/* http_stats.c -- GET /v1/stats: who is being limited, right now. Per
 * policy, decisions per second over the last 15 minutes (observe/rates.h)
 * and the heavy hitters by requests and by denials over the last minute
 * and hour (observe/heavy_hitters.h), each with what it has left now; the
 * store's state; the gateway's routes when there is a gateway. JSON,
 * behind the admin token when one is configured (docs/protocol.md,
 * docs/operations.md).
 *
 * A heavy key's remaining / retry_after is a peek (sl_peek: nothing
 * charged, nothing counted) into this daemon's memory store. With the
 * Redis store in strict mode that memory holds only the fallback's state,
 * and a peek through the engine would wait on Redis, so they are null
 * there, as for hashed or hidden keys (the key is not known) and cut ones.
 *
 * Not here: the /status page (http_status_page.c), which reads this.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include "server/http/http_api.h"  /* the daemon's state, as every HTTP route sees it */
#include "server/engine/engine.h"
#include "server/engine/policies.h"
#include "server/http/http_config.h"
#include "server/http/http_json.h"
#include "server/http/http_routes.h"
#include "server/observe/extra_metrics.h"
#include "server/observe/heavy_hitters.h"
#include "server/observe/rates.h"
#include "server/observe/route_figures.h"
#include "core/policy.h"

#define TOP_N 10

static const char *const keys_names[] = {"show", "hash", "hide"};

/* Where a heavy key's state can be peeked at: the policy (its tier for
 * this key) when this daemon's memory decides it, else NULL. */
typedef struct peeker {
    sld_daemon_t *d;
    const sld_runtime_t *rt;
    const char *policy;           /* NULL: not a configured policy (CL.THROTTLE's) */
    sld_hh_keys_t keys;           /* the heavy hitters' keys: show, hash or hide */
} peeker_t;

static void peek_json(sld_buf_t *b, const peeker_t *pk, const sld_hh_entry_t *e) {
    sl_decision_t dec;
    const sl_policy_t *p = NULL;
    if (pk->policy && pk->keys == SLD_HH_SHOW && !e->truncated)
        p = sld_policies_find(pk->rt->policies, pk->policy, strlen(pk->policy), e->key, e->key_len,
                              NULL, NULL);
    if (p && pk->d->remote && !(pk->d->write_back && p->write_back))
        p = NULL; /* Redis strict: the truth is in Redis */
    if (p == NULL || sl_peek(pk->d->limiter, p, e->key, e->key_len, 1, &dec) != SL_OK) {
        sld_buf_printf(b, ", \"remaining\": null, \"retry_after\": null");
        return;
    }
    sld_buf_printf(b, ", \"remaining\": %" PRIu64, dec.remaining);
    if (dec.retry_after == SL_NEVER)
        sld_buf_printf(b, ", \"retry_after\": null");
    else
        sld_buf_printf(b, ", \"retry_after\": %.3f", (double)dec.retry_after / 1e6);
}

static void top_json(sld_buf_t *b, const peeker_t *pk, uint32_t slot, sld_hh_window_t win,
                     sld_hh_what_t what, int64_t now) {
    sld_hh_t *hh = pk->d->heavy;
    sld_hh_entry_t top[TOP_N];
    uint64_t total, bound;
    size_t n = sld_hh_top(hh, slot, win, what, now, top, TOP_N, &total, &bound);
    sld_buf_printf(b, "{\"total\": %" PRIu64 ", \"bound\": %" PRIu64 ", \"top\": [", total, bound);
    for (size_t i = 0; i < n; i++) {
        sld_buf_printf(b, "%s{\"key\": ", i ? ", " : "");
        if (sld_hh_options(hh).keys == SLD_HH_HIDE)
            sld_buf_printf(b, "null");
        else
            sld_json_string(b, top[i].key, top[i].key_len);
        sld_buf_printf(b, ", \"count\": %" PRIu64 ", \"truncated\": %s", top[i].count,
                       top[i].truncated ? "true" : "false");
        peek_json(b, pk, &top[i]);
        sld_buf_printf(b, "}");
    }
    sld_buf_printf(b, "]}");
}

static void rates_json(sld_buf_t *b, sld_rates_t *rates, uint32_t slot, int64_t now) {
    static _Thread_local uint64_t per[SLD_RATES_SECONDS][SLD_RATE_COLUMNS];
    sld_rates_read(rates, slot, now, SLD_RATES_SECONDS, per);
    static const int order[] = {SLD_ALLOWED, SLD_LIMITED, SLD_DENIED, SLD_RATE_DELAYED};
    sld_buf_printf(b, "{");
    for (size_t k = 0; k < 4; k++) {
        sld_buf_printf(b, "%s\"%s\": [", k ? ", " : "",
                       order[k] == SLD_RATE_DELAYED ? "delayed" : sld_result_names[order[k]]);
        for (size_t i = 0; i < SLD_RATES_SECONDS; i++)
            sld_buf_printf(b, "%s%" PRIu64, i ? "," : "", per[i][order[k]]);
        sld_buf_printf(b, "]");
    }
    sld_buf_printf(b, "}");
}

static void store_json(sld_buf_t *b, sld_daemon_t *d, int64_t wall) {
    sl_store_stats_t ms = {0};
    sl_store_stats(d->store, &ms);
    sld_store_status_t st;
    sld_engine_status(d->engine, &st);
    int64_t snap = atomic_load(&d->stats.snapshot_last_at);
    sld_buf_printf(b, "{\"describe\": ");
    sld_json_string(b, st.describe ? st.describe : "memory", strlen(st.describe ? st.describe : "memory"));
    sld_buf_printf(b,
                   ", \"memory\": {\"states\": %" PRIu64 ", \"bytes\": %" PRIu64
                   ", \"max_memory\": %" PRIu64 ", \"evictions\": %" PRIu64 "}",
                   ms.states, ms.bytes, ms.max_memory, ms.evictions);
    if (snap > 0)
        sld_buf_printf(b, ", \"snapshot_age_seconds\": %.3f", (double)(wall - snap) / 1e6);
    else
        sld_buf_printf(b, ", \"snapshot_age_seconds\": null");
    sld_buf_printf(b, ", \"shared\": %s, \"up\": %s", st.shared ? "true" : "false", st.up ? "true" : "false");
    if (st.shared)
        sld_buf_printf(b,
                       ", \"breaker_open\": %s, \"calls\": %" PRIu64 ", \"failures\": %" PRIu64
                       ", \"timeouts\": %" PRIu64 ", \"reconnects\": %" PRIu64
                       ", \"latency\": {\"count\": %" PRIu64 ", \"sum_seconds\": %.6f}",
                       st.breaker_open ? "true" : "false", st.calls, st.failures, st.timeouts,
                       st.reconnects, st.latency_count, (double)st.latency_sum_us / 1e6);
    if (st.write_back)
        sld_buf_printf(b, ", \"write_back\": {\"keys\": %" PRIu64 ", \"unsynced\": %" PRIu64
                          ", \"last_sync\": %" PRId64 "}",
                       st.wb_keys, st.wb_unsynced, st.wb_last_sync);
    sld_buf_printf(b, "}");
}

/* The gateway's routes, from its /metrics series; null without a gateway. */
static void routes_json(sld_buf_t *b) {
    sld_buf_t text = {0};
    sld_metrics_extra_render_gateway(&text);
    static _Thread_local sld_route_figures_t routes[SLD_ROUTES_SHOWN];
    size_t n = text.failed ? 0 : sld_route_figures_parse(text.data, text.len, routes, SLD_ROUTES_SHOWN);
    sld_buf_free(&text);
    if (n == 0) {
        sld_buf_printf(b, "null");
        return;
    }
    sld_buf_printf(b, "[");
    for (size_t i = 0; i < n; i++) {
        const sld_route_figures_t *r = &routes[i];
        sld_buf_printf(b, "%s{\"name\": ", i ? ", " : "");
        sld_json_string(b, r->name, strlen(r->name));
        if (r->has_inflight)
            sld_buf_printf(b, ", \"inflight\": %" PRIu64, r->inflight);
        else
            sld_buf_printf(b, ", \"inflight\": null");
        sld_buf_printf(b, ", \"queue_depth\": %" PRIu64 ", \"requests\": {", r->queue_depth);
        for (size_t k = 0; k < SLD_ROUTE_RESULTS; k++)
            sld_buf_printf(b, "%s\"%s\": %" PRIu64, k ? ", " : "", sld_route_result_names[k], r->requests[k]);
        sld_buf_printf(b, "}, \"upstream_errors\": {\"502\": %" PRIu64 ", \"504\": %" PRIu64 "}"
                          ", \"upstream\": {\"count\": %" PRIu64 ", \"sum_seconds\": %.6f}}",
                       r->errors_502, r->errors_504, r->upstream_count, r->upstream_sum);
    }
    sld_buf_printf(b, "]");
}

static void stats(const sld_http_call_t *c) {
    sld_daemon_t *d = c->d;
    if (sld_http_admin_token(c->rt->cfg) != NULL && !sld_http_admin_gate(c))
        return; /* 401 replied */
    if (d->metrics == NULL || d->heavy == NULL || d->rates == NULL) {
        sld_http_error(c->reply, 404, "not_found", NULL, "statistics are off");
        return;
    }
    sld_counts_t counts;
    if (sld_metrics_read(d->metrics, &counts) != SL_OK) {
        sld_http_error(c->reply, 500, "internal", NULL, "out of memory");
        return;
    }
    int64_t now = sld_now(d);
    sld_buf_t *b = &c->reply->body;
    sld_http_json_reply(c->reply, 200);
    sld_hh_options_t ho = sld_hh_options(d->heavy);
    sld_buf_printf(b, "{\"now\": %" PRId64 ", \"seconds\": %d, \"heavy_hitters\": {\"keys\": \"%s\", "
                      "\"counters\": %" PRIu32 "}, \"policies\": [",
                   now, SLD_RATES_SECONDS, keys_names[ho.keys], ho.counters);
    size_t shown = 0;
    for (size_t i = 0; i < counts.npolicies && i + 1 < SLD_METRIC_SLOTS; i++) {
        const sld_policy_counts_t *p = &counts.policies[i];
        if (p->n[SLD_ALLOWED] + p->n[SLD_LIMITED] + p->n[SLD_DENIED] == 0)
            continue; /* compiled but never decided: nothing to show */
        uint32_t slot = (uint32_t)i;
        peeker_t pk = {.d = d, .rt = c->rt, .policy = slot == d->throttle_slot ? NULL : p->name,
                        .keys = ho.keys};
        sld_buf_printf(b, "%s{\"name\": ", shown++ ? ", " : "");
        sld_json_string(b, p->name, strlen(p->name));
        sld_buf_printf(b, ", \"totals\": {\"allowed\": %" PRIu64 ", \"limited\": %" PRIu64
                          ", \"denied\": %" PRIu64 "}, \"per_second\": ",
                       p->n[SLD_ALLOWED], p->n[SLD_LIMITED], p->n[SLD_DENIED]);
        rates_json(b, d->rates, slot, now);
        sld_buf_printf(b, ", \"heavy_hitters\": {");
        static const char *const win_names[] = {"minute", "hour"};
        for (int w = 0; w < 2; w++) {
            sld_buf_printf(b, "%s\"%s\": {\"requests\": ", w ? ", " : "", win_names[w]);
            top_json(b, &pk, slot, (sld_hh_window_t)w, SLD_HH_REQUESTS, now);
            sld_buf_printf(b, ", \"denials\": ");
            top_json(b, &pk, slot, (sld_hh_window_t)w, SLD_HH_DENIALS, now);
            sld_buf_printf(b, "}");
        }
        sld_buf_printf(b, "}}");
    }
    sld_buf_printf(b, "], \"store\": ");
    store_json(b, d, sl_clock_realtime(NULL));
    sld_buf_printf(b, ", \"routes\": ");
    routes_json(b);
    sld_buf_printf(b, "}\n");
    sld_counts_free(&counts);
}

const sld_http_route_t sld_http_stats_routes[] = {
    {SLD_M_GET | SLD_M_HEAD, SLD_MATCH_EXACT, "/v1/stats", stats, 0},
    {0, SLD_MATCH_EXACT, NULL, NULL, 0},
};
