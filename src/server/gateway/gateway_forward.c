/* gateway_forward.c -- the fields and the latency of a forwarded request
 * (see gateway_forward.h).
 *
 * The response's side is a prefilter of the request (libh2o calls it when
 * the response's head is set up, before the gateway's filter): it is the
 * moment the upstream's head came, and the place to add fields to it.
 *
 * Not here: deciding, proxying (libh2o), the histogram (gateway_concurrency.c).
 */
#include <string.h>
#include <time.h>

#include "server/gateway/gateway_forward.h"
#include "server/http/http_ratelimit.h"

static const sld_http_header_id_t ids[SLD_GW_NFIELDS] = {
    SLD_H_RATELIMIT_POLICY, SLD_H_RATELIMIT, SLD_H_X_RATELIMIT_LIMIT, SLD_H_X_RATELIMIT_REMAINING,
    SLD_H_X_RATELIMIT_RESET};
/* lower case: what libh2o's header lists hold */
static const struct {
    const char *base;
    size_t len;
} lower[SLD_GW_NFIELDS] = {{H2O_STRLIT("ratelimit-policy")}, {H2O_STRLIT("ratelimit")},
                           {H2O_STRLIT("x-ratelimit-limit")}, {H2O_STRLIT("x-ratelimit-remaining")},
                           {H2O_STRLIT("x-ratelimit-reset")}};

void sld_gw_fields_note(sld_gw_fields_t *f, size_t i, h2o_req_t *req, sld_http_reply_t *scratch,
                        const char *name, const sl_policy_t *p, uint32_t soft_percent, const sl_decision_t *dec,
                        const sl_limit_report_t *lr) {
    if (i >= SLD_GW_MAX_POLICIES)
        return;
    sld_http_reply_reset(scratch);
    sld_http_rate_headers(scratch, name, p, soft_percent, dec, lr);
    if (scratch->values.failed)
        return; /* out of memory: forwarded without them */
    f->policy[i].set = true;
    f->policy[i].remaining = dec->remaining;
    for (size_t k = 0; k < SLD_GW_NFIELDS; k++) {
        f->policy[i].values[k] = h2o_iovec_init(NULL, 0);
        for (size_t h = 0; h < scratch->nheaders; h++)
            if (scratch->headers[h].id == ids[k])
                f->policy[i].values[k] =
                    h2o_strdup(&req->pool, scratch->values.data + scratch->headers[h].off, scratch->headers[h].len);
    }
}

/* The value of field k over the policies decided: the items of each for the
 * lists, the binding policy's (fewest remaining) for the X- fields. */
static h2o_iovec_t joined(const sld_gw_fields_t *f, size_t n, size_t k, h2o_mem_pool_t *pool) {
    n = n < SLD_GW_MAX_POLICIES ? n : SLD_GW_MAX_POLICIES;
    if (k >= 2) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (f->policy[i].set && (best == n || f->policy[i].remaining < f->policy[best].remaining))
                best = i;
        return best < n ? f->policy[best].values[k] : h2o_iovec_init(NULL, 0);
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        if (f->policy[i].set && f->policy[i].values[k].len)
            len += f->policy[i].values[k].len + 2;
    if (len == 0)
        return h2o_iovec_init(NULL, 0);
    char *out = h2o_mem_alloc_pool(pool, len), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (!f->policy[i].set || f->policy[i].values[k].len == 0)
            continue;
        if (o != out)
            o = (memcpy(o, ", ", 2), o + 2);
        memcpy(o, f->policy[i].values[k].base, f->policy[i].values[k].len);
        o += f->policy[i].values[k].len;
    }
    return h2o_iovec_init(out, (size_t)(o - out));
}

static void add_fields(h2o_mem_pool_t *pool, h2o_headers_t *headers, const h2o_iovec_t *values) {
    for (size_t k = 0; k < SLD_GW_NFIELDS; k++)
        if (values[k].len)
            h2o_add_header_by_str(pool, headers, lower[k].base, lower[k].len, 0,
                                  sld_http_header_names[ids[k]], values[k].base, values[k].len);
}

const h2o_iovec_t *sld_gw_proxy_error(h2o_req_t *req) {
    for (size_t i = 0; i < req->error_logs.size; i++)
        if (strcmp(req->error_logs.entries[i].module, "lib/core/proxy.c") == 0)
            return &req->error_logs.entries[i].msg;
    return NULL;
}

typedef struct forward_prefilter {
    h2o_req_prefilter_t super;
    sld_gw_lane_t *lane;       /* the route's */
    sl_usec_t *upstream_us; /* the access log's note of it, or NULL */
    struct timespec start;
    bool client;
    h2o_iovec_t values[SLD_GW_NFIELDS];
} forward_prefilter_t;

static sl_usec_t since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (sl_usec_t)(now.tv_sec - start->tv_sec) * SL_USEC_PER_SEC + (now.tv_nsec - start->tv_nsec) / 1000;
}

static void on_response_head(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot) {
    forward_prefilter_t *pf = (forward_prefilter_t *)self;
    /* libh2o's own 502 (no connection, timeout) is not an upstream's answer:
     * it is counted with the upstream errors instead */
    if (!(req->res.status == 502 && sld_gw_proxy_error(req) != NULL)) {
        sl_usec_t took = since(&pf->start);
        sld_gw_count_latency(pf->lane, took);
        if (pf->upstream_us)
            *pf->upstream_us = took;
    }
    if (pf->client)
        add_fields(&req->pool, &req->res.headers, pf->values);
    h2o_setup_next_prefilter(self, req, slot);
}

sld_gw_lane_t *sld_gw_forwarded_route(h2o_req_t *req) {
    for (h2o_req_prefilter_t *p = req->prefilters; p; p = p->next)
        if (p->on_setup_ostream == on_response_head)
            return ((forward_prefilter_t *)p)->lane;
    return NULL;
}

void sld_gw_forward(h2o_req_t *req, h2o_handler_t *proxy, const sld_gw_fields_t *f, size_t npolicies,
                    const sld_gw_headers_t *h, sld_gw_lane_t *lane, sl_usec_t *upstream_us) {
    forward_prefilter_t *pf = (forward_prefilter_t *)h2o_add_prefilter(req, sizeof *pf);
    pf->super.on_setup_ostream = on_response_head;
    pf->lane = lane;
    pf->upstream_us = upstream_us;
    pf->client = h->client;
    for (size_t k = 0; k < SLD_GW_NFIELDS; k++)
        pf->values[k] = joined(f, npolicies, k, &req->pool);
    if (h->upstream) {
        for (size_t k = 0; k < SLD_GW_NFIELDS; k++) {
            ssize_t at;
            while ((at = h2o_find_header_by_str(&req->headers, lower[k].base, lower[k].len, -1)) != -1)
                h2o_delete_header(&req->headers, at);
        }
        add_fields(&req->pool, &req->headers, pf->values);
    }
    clock_gettime(CLOCK_MONOTONIC, &pf->start);
    proxy->on_req(proxy, req);
}
