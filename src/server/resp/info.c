/* info.c -- INFO and SL.STATS: the RESP front's view of the statistics.
 *
 * Both gather what the connection can see of the daemon, take one snapshot
 * (observe/snapshot.h) and reply with it; the figures and their names are
 * the snapshot's table, shared with /metrics. The handlers are declared
 * with the command table (commands.h).
 *
 * Not here: the command table (commands.c), counting and formats (observe/).
 */
#include <string.h>

#include "server/engine/engine.h"
#include "server/observe/info_sections.h"
#include "server/resp/commands.h"

#define MAX_SECTIONS 16 /* INFO arguments looked at; more name nothing new */

/* What this connection can see of the daemon, read now. */
static void gather(const sld_client_t *c, bool process, sld_figures_t *f) {
    const sld_daemon_t *d = c->d;
    const sld_runtime_t *rt = c->rt;
    *f = (sld_figures_t){.stats = &d->stats,
                         .generation = rt->generation,
                         .policies = sld_policies_count(rt->policies),
                         .started_at = d->started_at,
                         .process = process,
                         .resp_port = d->resp_port,
                         .threads = d->threads,
                         .max_connections = rt->cfg->max_connections,
                         .test_clock = d->test_clock,
                         .config_path = d->config_path,
                         .snapshot_path = rt->cfg->snapshot_path};
    for (uint32_t i = 0; i < d->ncounters; i++)
        f->commands += atomic_load_explicit(&d->counters[i].commands, memory_order_relaxed);
    sl_store_stats(d->store, &f->store);
    sld_engine_status(d->engine, &f->status);
}

/* INFO [section ...]: the process figures are read only when their
 * section is asked for (they cost a walk of /proc/self/fd). */
void sld_cmd_info(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    const char *names[MAX_SECTIONS];
    size_t lens[MAX_SECTIONS], n = 0;
    for (size_t i = 1; i < argc && n < MAX_SECTIONS; i++, n++) {
        names[n] = argv[i].ptr;
        lens[n] = argv[i].len;
    }
    unsigned mask = sld_info_sections(names, lens, n);
    sld_figures_t f;
    gather(c, (mask & (1u << SLD_SEC_PROCESS)) != 0, &f);
    sld_snapshot_t s;
    sld_buf_t b = {0};
    if (sld_snapshot_take(&s, c->d->metrics, &f) == SL_OK)
        sld_info_render(&s, mask, &b);
    else
        b.failed = true;
    sld_snapshot_free(&s);
    if (b.failed)
        sld_reply_error(c->out, "ERR out of memory");
    else
        sld_reply_verbatim(c->out, sld_proto(c), b.data ? b.data : "", b.len);
    sld_buf_free(&b);
}

static void reply_counts(sld_buf_t *out, const sld_policy_counts_t *p) {
    sld_reply_array(out, 4);
    sld_reply_bulk_str(out, p->name);
    sld_reply_int(out, (int64_t)p->n[SLD_ALLOWED]);
    sld_reply_int(out, (int64_t)p->n[SLD_DENIED]);
    sld_reply_int(out, (int64_t)p->n[SLD_LIMITED]);
}

static const sld_policy_counts_t *find(const sld_snapshot_t *s, const sld_arg_t *name) {
    for (size_t i = 0; i < s->counts.npolicies; i++) {
        const char *p = s->counts.policies[i].name;
        if (strlen(p) == name->len && memcmp(p, name->ptr, name->len) == 0)
            return &s->counts.policies[i];
    }
    return NULL;
}

/* SL.STATS [policy ...]: [[policy, allowed, denied, limited], ...], every
 * policy counted (slot order) or those named, in their order; a name never
 * counted is an error and nothing else is replied. */
void sld_cmd_sl_stats(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    sld_snapshot_t s;
    if (sld_snapshot_take(&s, c->d->metrics, NULL) != SL_OK) {
        sld_reply_error(c->out, "ERR out of memory");
        return;
    }
    for (size_t i = 1; i < argc; i++) { /* every name known before any reply */
        if (find(&s, &argv[i]) == NULL) {
            sld_reply_errorf(c->out, "ERR no decisions counted for a policy named '%.*s' "
                             "(SL.STATS without arguments lists them)",
                             (int)(argv[i].len > 64 ? 64 : argv[i].len), argv[i].ptr);
            sld_snapshot_free(&s);
            return;
        }
    }
    if (argc > 1) {
        sld_reply_array(c->out, argc - 1);
        for (size_t i = 1; i < argc; i++)
            reply_counts(c->out, find(&s, &argv[i]));
    } else {
        sld_reply_array(c->out, s.counts.npolicies);
        for (size_t i = 0; i < s.counts.npolicies; i++)
            reply_counts(c->out, &s.counts.policies[i]);
    }
    sld_snapshot_free(&s);
}
