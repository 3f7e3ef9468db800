/* grpc_stats.c -- Envoy ratelimit's per-rule stats (see grpc_stats.h).
 *
 * A worker's table is open addressing over twice its bound of slots, so a
 * probe always ends. Its worker is the only one to fill a slot; it
 * publishes an entry whole (release) before the scrape can see it
 * (acquire), and entries are freed only with the tables.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_stats.h"

#define SLOTS (2 * SLD_GRPC_STATS_MAX)

static const char *const stat_names[SLD_STAT_N] = {"total_hits", "within_limit", "near_limit", "over_limit",
                                                    "shadow_mode"};

typedef struct entry {
    uint64_t hash;
    size_t domain_len, rule_len;
    _Atomic uint64_t n[SLD_STAT_N];
    char names[];              /* domain, NUL, rule, NUL */
} entry_t;

typedef struct table {
    _Atomic(entry_t *) slots[SLOTS];
    size_t used, detailed;     /* the worker's own */
    _Atomic(entry_t *) overflow;
} table_t;

struct sld_grpc_stats {
    uint32_t workers;
    table_t *tables[];
};

sld_grpc_hits_t sld_grpc_hits_classify(uint64_t limit, uint64_t used_before, uint64_t hits, bool allowed,
                                       bool limited, bool shadow) {
    sld_grpc_hits_t h = {{0}};
    h.n[SLD_STAT_TOTAL] = hits;
    if (limited || !allowed) {
        h.n[SLD_STAT_OVER] = hits;
        h.n[SLD_STAT_SHADOW] = allowed && shadow ? hits : 0;
        return h;
    }
    h.n[SLD_STAT_WITHIN] = hits;
    /* the reference: floor(limit * ratio); the hits past it are near */
    uint64_t near = limit / 100 * SLD_GRPC_NEAR_LIMIT_PERCENT + limit % 100 * SLD_GRPC_NEAR_LIMIT_PERCENT / 100;
    uint64_t after = used_before > UINT64_MAX - hits ? UINT64_MAX : used_before + hits;
    if (after > near)
        h.n[SLD_STAT_NEAR] = after - (used_before > near ? used_before : near);
    return h;
}

sld_grpc_stats_t *sld_grpc_stats_new(uint32_t workers) {
    sld_grpc_stats_t *s = calloc(1, sizeof *s + workers * sizeof(table_t *));
    if (s == NULL)
        return NULL;
    s->workers = workers;
    for (uint32_t w = 0; w < workers; w++) {
        if ((s->tables[w] = calloc(1, sizeof(table_t))) == NULL) {
            sld_grpc_stats_free(s);
            return NULL;
        }
    }
    return s;
}

void sld_grpc_stats_free(sld_grpc_stats_t *s) {
    if (s == NULL)
        return;
    for (uint32_t w = 0; w < s->workers; w++) {
        table_t *t = s->tables[w];
        if (t == NULL)
            continue;
        for (size_t i = 0; i < SLOTS; i++)
            free(atomic_load(&t->slots[i]));
        free(atomic_load(&t->overflow));
        free(t);
    }
    free(s);
}

static uint64_t hash_of(const char *domain, size_t dlen, const char *rule, size_t rlen) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < dlen; i++)
        h = (h ^ (unsigned char)domain[i]) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (size_t i = 0; i < rlen; i++)
        h = (h ^ (unsigned char)rule[i]) * 1099511628211ull;
    return h;
}

static entry_t *entry_new(const char *domain, size_t dlen, const char *rule, size_t rlen, uint64_t hash) {
    entry_t *e = calloc(1, sizeof *e + dlen + rlen + 2);
    if (e == NULL)
        return NULL;
    e->hash = hash;
    e->domain_len = dlen;
    e->rule_len = rlen;
    memcpy(e->names, domain, dlen);
    memcpy(e->names + dlen + 1, rule, rlen);
    return e;
}

static bool same(const entry_t *e, uint64_t hash, const char *domain, size_t dlen, const char *rule, size_t rlen) {
    return e->hash == hash && e->domain_len == dlen && e->rule_len == rlen && memcmp(e->names, domain, dlen) == 0 &&
           memcmp(e->names + dlen + 1, rule, rlen) == 0;
}

/* The entry of (domain, rule) in t, made when there is room (may_add;
 * then *added says so); NULL when there is none. */
static entry_t *find(table_t *t, const char *domain, size_t dlen, const char *rule, size_t rlen, bool may_add,
                     bool *added) {
    *added = false;
    uint64_t hash = hash_of(domain, dlen, rule, rlen);
    for (size_t i = hash % SLOTS;; i = (i + 1) % SLOTS) {
        entry_t *e = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (e != NULL) {
            if (same(e, hash, domain, dlen, rule, rlen))
                return e;
            continue;
        }
        if (!may_add || t->used >= SLD_GRPC_STATS_MAX)
            return NULL;
        if ((e = entry_new(domain, dlen, rule, rlen, hash)) == NULL)
            return NULL;
        atomic_store_explicit(&t->slots[i], e, memory_order_release);
        t->used++;
        *added = true;
        return e;
    }
}

void sld_grpc_stats_count(sld_grpc_stats_t *s, uint32_t worker, const char *domain, size_t domain_len,
                          const char *rule, size_t rule_len, const char *fallback, size_t fallback_len,
                          bool detailed, const sld_grpc_hits_t *h) {
    if (s == NULL || worker >= s->workers)
        return;
    table_t *t = s->tables[worker];
    bool added;
    entry_t *e = find(t, domain, domain_len, rule, rule_len, !detailed || t->detailed < SLD_GRPC_STATS_MAX_DETAILED,
                      &added);
    t->detailed += detailed && added;
    if (e == NULL && detailed)
        e = find(t, domain, domain_len, fallback, fallback_len, true, &added);
    if (e == NULL) {
        e = atomic_load_explicit(&t->overflow, memory_order_relaxed);
        if (e == NULL) {
            static const char name[] = "_overflow";
            if ((e = entry_new("", 0, name, sizeof name - 1, 0)) == NULL)
                return;
            atomic_store_explicit(&t->overflow, e, memory_order_release);
        }
    }
    for (int k = 0; k < SLD_STAT_N; k++)
        if (h->n[k])
            atomic_fetch_add_explicit(&e->n[k], h->n[k], memory_order_relaxed);
}

static int by_name(const void *a, const void *b) {
    const entry_t *x = *(entry_t *const *)a, *y = *(entry_t *const *)b;
    int c = strcmp(x->names, y->names);
    return c ? c : strcmp(x->names + x->domain_len + 1, y->names + y->domain_len + 1);
}

static void label_value(sld_buf_t *out, const char *v) {
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            sld_buf_printf(out, "\\%c", *c);
        else if (*c == '\n')
            sld_buf_append_lit(out, "\\n");
        else
            sld_buf_append(out, c, 1);
    }
}

void sld_grpc_stats_write(void *ctx, sld_buf_t *out) {
    sld_grpc_stats_t *s = ctx;
    size_t cap = (size_t)s->workers * (SLD_GRPC_STATS_MAX + 1), n = 0;
    entry_t **all = malloc((cap ? cap : 1) * sizeof *all);
    if (all == NULL)
        return;
    for (uint32_t w = 0; w < s->workers; w++) {
        table_t *t = s->tables[w];
        for (size_t i = 0; i < SLOTS && n < cap; i++) {
            entry_t *e = atomic_load_explicit(&t->slots[i], memory_order_acquire);
            if (e != NULL)
                all[n++] = e;
        }
        entry_t *e = atomic_load_explicit(&t->overflow, memory_order_acquire);
        if (e != NULL && n < cap)
            all[n++] = e;
    }
    if (n > 0) {
        qsort(all, n, sizeof *all, by_name);
        sld_buf_append_lit(out, "# HELP sluice_rls_hits_total Hits of Envoy ratelimit's rules (rls:), by domain, "
                                "rule (the stat name) and stat (the reference's name)\n"
                                "# TYPE sluice_rls_hits_total counter\n");
    }
    for (size_t i = 0; i < n;) {
        uint64_t sum[SLD_STAT_N] = {0};
        size_t j = i;
        for (; j < n && by_name(&all[i], &all[j]) == 0; j++)
            for (int k = 0; k < SLD_STAT_N; k++)
                sum[k] += atomic_load_explicit(&all[j]->n[k], memory_order_relaxed);
        for (int k = 0; k < SLD_STAT_N; k++) {
            sld_buf_append_lit(out, "sluice_rls_hits_total{domain=\"");
            label_value(out, all[i]->names);
            sld_buf_append_lit(out, "\",rule=\"");
            label_value(out, all[i]->names + all[i]->domain_len + 1);
            sld_buf_printf(out, "\",stat=\"%s\"} ", stat_names[k]);
            sld_buf_append_u64(out, sum[k]);
            sld_buf_append_lit(out, "\n");
        }
        i = j;
    }
    free(all);
}
