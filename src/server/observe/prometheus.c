/* prometheus.c -- a snapshot as Prometheus text (see prometheus.h). */
#include <string.h>

#include "server/observe/extra_metrics.h"
#include "server/observe/prometheus.h"

static void family(sld_buf_t *out, const char *name, const char *type, const char *help) {
    sld_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: policy names ([A-Za-z0-9_.-]) need nothing, but an error
 * text may hold anything. */
static void label_value(sld_buf_t *out, const char *v) {
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            sld_buf_printf(out, "\\%c", *c);
        else
            sld_buf_printf(out, "%c", *c == '\n' || *c == '\r' ? ' ' : *c);
    }
}

static void decisions(const sld_snapshot_t *s, sld_buf_t *out) {
    family(out, "sluice_decisions_total", "counter", "Decisions, by policy and result.");
    static const sld_result_t order[] = {SLD_ALLOWED, SLD_DENIED, SLD_LIMITED};
    for (size_t i = 0; i < s->counts.npolicies; i++) {
        const sld_policy_counts_t *p = &s->counts.policies[i];
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
            sld_buf_printf(out, "sluice_decisions_total{policy=\"%s\",result=\"%s\"} %llu\n", p->name,
                           sld_result_names[order[k]], (unsigned long long)p->n[order[k]]);
    }
}

static void latency(const sld_snapshot_t *s, sld_buf_t *out) {
    family(out, "sluice_decision_duration_seconds", "histogram", "Time to decide, sampled one in 64.");
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= SLD_LATENCY_BUCKETS; b++) {
        cumulative += s->counts.latency[b];
        if (b < SLD_LATENCY_BUCKETS)
            sld_buf_printf(out, "sluice_decision_duration_seconds_bucket{le=\"%g\"} %llu\n",
                           (double)sld_metrics_bucket_ns[b] / 1e9, (unsigned long long)cumulative);
        else
            sld_buf_printf(out, "sluice_decision_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                           (unsigned long long)cumulative);
    }
    sld_buf_printf(out, "sluice_decision_duration_seconds_sum %.9f\nsluice_decision_duration_seconds_count %llu\n",
                   (double)s->counts.latency_sum_ns / 1e9, (unsigned long long)s->counts.latency_count);
}

static void http(const sld_snapshot_t *s, sld_buf_t *out) {
    family(out, "sluice_http_responses_total", "counter", "HTTP responses, by status.");
    for (size_t i = 0; i < SLD_HTTP_STATUSES; i++)
        sld_buf_printf(out, "sluice_http_responses_total{code=\"%d\"} %llu\n", sld_metrics_statuses[i],
                       (unsigned long long)s->counts.http[i]);
    sld_buf_printf(out, "sluice_http_responses_total{code=\"other\"} %llu\n",
                   (unsigned long long)s->counts.http[SLD_HTTP_STATUSES]);
}

static double number(const sld_stat_t *r, const char *at) {
    switch (r->kind) {
    case SLD_V_U64: return (double)*(const uint64_t *)at;
    case SLD_V_I64: return (double)*(const int64_t *)at;
    case SLD_V_BOOL: return *(const bool *)at;
    case SLD_V_USEC: return (double)*(const sl_usec_t *)at / 1e6;
    case SLD_V_DOUBLE: return *(const double *)at;
    default: return 1; /* text: the value is in the label */
    }
}

static void row(const sld_stat_t *r, const sld_snapshot_t *s, sld_buf_t *out) {
    const char *at = (const char *)s + r->offset;
    sld_buf_printf(out, "%s", r->metric);
    if (r->kind == SLD_V_TEXT || r->kind == SLD_V_CHARS) {
        sld_buf_printf(out, "{%s=\"", r->label);
        label_value(out, r->kind == SLD_V_TEXT ? *(const char *const *)at : at);
        sld_buf_printf(out, "\"}");
    } else if (r->label) {
        sld_buf_printf(out, "{%s}", r->label);
    }
    sld_buf_printf(out, " %.17g\n", number(r, at));
}

void sld_prometheus_render(const sld_snapshot_t *s, sld_buf_t *out) {
    decisions(s, out);
    latency(s, out);
    http(s, out);
    const char *last = NULL; /* the family whose HELP and TYPE were written last */
    for (size_t i = 0; i < sld_stat_count; i++) {
        const sld_stat_t *r = &sld_stat_table[i];
        if (r->metric == NULL || !sld_stat_shows(r, s))
            continue;
        if (last == NULL || strcmp(last, r->metric) != 0)
            family(out, r->metric, r->type, r->help);
        last = r->metric;
        row(r, s, out);
    }
    sld_metrics_extra_render(out); /* the gateway's series, when it runs */
}
