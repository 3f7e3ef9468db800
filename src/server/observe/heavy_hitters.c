/* heavy_hitters.c -- Space-Saving sketches per worker, policy and minute,
 * merged on read (heavy_hitters.h). */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/observe/heavy_hitters.h"
#include "sluice.h"

typedef struct counter {
    uint64_t hash;                /* FNV-1a of the whole key */
    uint64_t count;
    uint8_t len;                  /* bytes kept in key */
    bool truncated;
    char key[SLD_HH_KEY_MAX];
} counter_t;

/* The counters, an index of them by hash (linear probing, 2k..4k slots,
 * counter + 1, 0 = empty) so a known key is found without a scan, and a
 * cursor for the least counter: counts only grow, so the counters at the
 * least count are found in turn, each pass over them O(k). */
typedef struct sketch {
    uint32_t used;                /* counters in use, <= k */
    uint32_t cursor;              /* where the search for the least resumes */
    uint64_t least;               /* no counter is below it (when used == k) */
    uint64_t total;               /* N: updates */
    counter_t *c;                 /* [k] */
    uint16_t *index;              /* [mask + 1] */
} sketch_t;

/* One minute of one (worker, slot). */
typedef struct minute {
    int64_t index;                /* now_us / 60 s; -1: never used */
    sketch_t s[2];                /* by sld_hh_what_t */
} minute_t;

typedef struct ring {
    minute_t m[SLD_HH_MINUTES];
} ring_t;

/* A spin lock, not a mutex: the owner takes it on every note and finds it
 * free but while a reader copies this worker's sketches (a few hundred
 * KiB at most); a pthread mutex cost ~130 instructions a note. The
 * sampling's state is apart (sld_hh_sampler_t, the owner's alone). */
typedef struct worker {
    _Alignas(64) atomic_flag lock;
    ring_t **rings;               /* [slots], NULL until used */
} worker_t;

static void lock(worker_t *w) {
    while (atomic_flag_test_and_set_explicit(&w->lock, memory_order_acquire))
        sched_yield();
}

static void unlock(worker_t *w) { atomic_flag_clear_explicit(&w->lock, memory_order_release); }

struct sld_hh {
    sld_hh_head_t head;           /* first: sld_hh_weight reads it inline */
    uint32_t slots, k, mask;
    sld_hh_keys_t keys;
    worker_t *w;
    _Atomic uint64_t dropped;
};

#define MINUTE_US INT64_C(60000000)

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h;
}

int sld_hh_new(uint32_t workers, uint32_t slots, const sld_hh_options_t *o, sld_hh_t **out) {
    uint32_t k = o && o->counters ? o->counters : SLD_HH_COUNTERS_DEFAULT;
    if (workers == 0 || slots == 0 || k > SLD_HH_COUNTERS_MAX)
        return SL_EINVAL;
    sld_hh_t *hh = calloc(1, sizeof *hh);
    if (hh == NULL)
        return SL_ENOMEM;
    uint32_t size = 16;
    while (size < 2 * k)
        size *= 2;
    *hh = (sld_hh_t){.head = {.workers = workers, .sample_above = o ? o->sample_above : 0},
                     .slots = slots, .k = k, .mask = size - 1, .keys = o ? o->keys : SLD_HH_SHOW};
    /* sizeof *hh->w is a multiple of its 64-byte alignment */
    hh->w = aligned_alloc(_Alignof(worker_t), workers * sizeof *hh->w);
    hh->head.samplers = aligned_alloc(_Alignof(sld_hh_sampler_t), workers * sizeof *hh->head.samplers);
    if (hh->w == NULL || hh->head.samplers == NULL) {
        free(hh->w);
        free(hh->head.samplers);
        free(hh);
        return SL_ENOMEM;
    }
    for (uint32_t i = 0; i < workers; i++) {
        atomic_flag_clear(&hh->w[i].lock);
        hh->head.samplers[i] = (sld_hh_sampler_t){
            .second = -1, .rng = UINT64_C(0x9E3779B97F4A7C15) * (i + 1)}; /* odd multiples: never 0 */
        hh->w[i].rings = calloc(slots, sizeof *hh->w[i].rings);
        if (hh->w[i].rings == NULL) {
            hh->head.workers = i + 1;
            sld_hh_free(hh);
            return SL_ENOMEM;
        }
    }
    *out = hh;
    return SL_OK;
}

static void ring_free(ring_t *r) {
    if (r == NULL)
        return;
    free(r->m[0].s[0].c); /* one block for every counter of the ring */
    free(r->m[0].s[0].index);
    free(r);
}

void sld_hh_free(sld_hh_t *hh) {
    if (hh == NULL)
        return;
    for (uint32_t i = 0; i < hh->head.workers; i++) {
        for (uint32_t s = 0; hh->w[i].rings && s < hh->slots; s++)
            ring_free(hh->w[i].rings[s]);
        free(hh->w[i].rings);
    }
    free(hh->w);
    free(hh->head.samplers);
    free(hh);
}

static ring_t *ring_new(uint32_t k, uint32_t mask) {
    ring_t *r = malloc(sizeof *r);
    counter_t *all = malloc(sizeof *all * k * 2 * SLD_HH_MINUTES);
    uint16_t *index = calloc((size_t)(mask + 1) * 2 * SLD_HH_MINUTES, sizeof *index);
    if (r == NULL || all == NULL || index == NULL) {
        free(r);
        free(all);
        free(index);
        return NULL;
    }
    for (size_t i = 0; i < SLD_HH_MINUTES; i++) {
        r->m[i].index = -1;
        for (size_t j = 0; j < 2; j++)
            r->m[i].s[j] = (sketch_t){.c = all + (i * 2 + j) * k,
                                      .index = index + (i * 2 + j) * (mask + 1)};
    }
    return r;
}

static void sketch_clear(sketch_t *s, uint32_t mask) {
    s->used = s->cursor = 0;
    s->least = 0;
    s->total = 0;
    memset(s->index, 0, sizeof *s->index * (mask + 1));
}

/* Takes counter `victim`'s entry out of the index (backward-shift deletion:
 * no tombstones, probes stay short). */
static void index_remove(sketch_t *s, uint32_t mask, uint32_t victim) {
    uint32_t i = (uint32_t)s->c[victim].hash & mask;
    while (s->index[i] != victim + 1)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; s->index[j] != 0; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)s->c[s->index[j] - 1].hash & mask;
        /* move j's entry into the hole at i unless its home lies in (i, j] */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->index[i] = s->index[j];
            i = j;
        }
    }
    s->index[i] = 0;
}

/* The least counter: the next one at s->least from the cursor; when none is
 * left at that count, the least count is raised to the true least. */
static uint32_t least_counter(sketch_t *s, uint32_t k) {
    uint64_t lowest = UINT64_MAX;
    uint32_t at = 0;
    for (uint32_t n = 0; n < k; n++) {
        uint32_t i = s->cursor + n < k ? s->cursor + n : s->cursor + n - k;
        if (s->c[i].count <= s->least) {
            s->cursor = i;
            return i;
        }
        if (s->c[i].count < lowest) {
            lowest = s->c[i].count;
            at = i;
        }
    }
    s->least = lowest;
    s->cursor = at;
    return at;
}

/* Space-Saving's update, weighted: bump the key's counter by `weight`, or
 * give it the least one's place with that count plus the weight. */
static void sketch_add(sketch_t *s, uint32_t k, uint32_t mask, uint64_t hash, const void *key,
                       size_t len, bool by_hash, uint32_t weight) {
    size_t kept = len > SLD_HH_KEY_MAX ? SLD_HH_KEY_MAX : len;
    s->total += weight;
    uint32_t slot = (uint32_t)hash & mask;
    for (; s->index[slot] != 0; slot = (slot + 1) & mask) {
        counter_t *c = &s->c[s->index[slot] - 1];
        if (c->hash == hash &&
            (by_hash || (c->len == kept && c->truncated == (len > kept) &&
                         memcmp(c->key, key, kept) == 0))) {
            c->count += weight;
            return;
        }
    }
    counter_t *c;
    uint64_t base = 0;
    uint32_t at;
    if (s->used < k) {
        at = s->used++;
    } else {
        at = least_counter(s, k);
        base = s->c[at].count;
        index_remove(s, mask, at);
        slot = (uint32_t)hash & mask; /* the removal may have moved the hole */
        while (s->index[slot] != 0)
            slot = (slot + 1) & mask;
    }
    c = &s->c[at];
    s->index[slot] = (uint16_t)(at + 1);
    c->hash = hash;
    c->count = base + weight;
    c->truncated = len > kept;
    c->len = by_hash ? 0 : (uint8_t)kept;
    if (!by_hash)
        memcpy(c->key, key, kept);
}

/* The part of a note that counts: hash, lock, the minute's sketches. Kept
 * apart so that a note sampled out costs only the checks before it (no
 * saving of registers for all this). */
__attribute__((noinline)) static void note_counted(sld_hh_t *hh, worker_t *wk, uint32_t slot, const void *key,
                                                   size_t len, bool denied, int64_t now_us, uint32_t weight) {
    uint64_t hash = fnv1a(key, len);
    bool by_hash = hh->keys != SLD_HH_SHOW;
    int64_t index = now_us / MINUTE_US;
    lock(wk);
    ring_t *r = wk->rings[slot];
    if (r == NULL && (r = wk->rings[slot] = ring_new(hh->k, hh->mask)) == NULL) {
        unlock(wk);
        atomic_fetch_add_explicit(&hh->dropped, 1, memory_order_relaxed);
        return;
    }
    minute_t *m = &r->m[index % SLD_HH_MINUTES];
    if (m->index != index) { /* a new minute: this bucket's old one is past the hour */
        m->index = index;
        sketch_clear(&m->s[0], hh->mask);
        sketch_clear(&m->s[1], hh->mask);
    }
    sketch_add(&m->s[SLD_HH_REQUESTS], hh->k, hh->mask, hash, key, len, by_hash, weight);
    if (denied)
        sketch_add(&m->s[SLD_HH_DENIALS], hh->k, hh->mask, hash, key, len, by_hash, weight);
    unlock(wk);
}

void sld_hh_note_weighted(sld_hh_t *hh, uint32_t w, uint32_t slot, const void *key, size_t len,
                          bool denied, int64_t now_us, uint32_t weight) {
    if (w >= hh->head.workers || slot >= hh->slots || now_us < 0) {
        atomic_fetch_add_explicit(&hh->dropped, 1, memory_order_relaxed);
        return;
    }
    note_counted(hh, &hh->w[w], slot, key, len, denied, now_us, weight);
}

void sld_hh_note(sld_hh_t *hh, uint32_t w, uint32_t slot, const void *key, size_t len,
                 bool denied, int64_t now_us) {
    if (w >= hh->head.workers || slot >= hh->slots || now_us < 0) {
        atomic_fetch_add_explicit(&hh->dropped, 1, memory_order_relaxed);
        return;
    }
    uint32_t weight = sld_hh_weight(hh, w, now_us / 1000000);
    if (weight)
        sld_hh_note_weighted(hh, w, slot, key, len, denied, now_us, weight);
}

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct gathered {
    counter_t *c;
    size_t n, cap;
    uint64_t total;
} gathered_t;

static int same_key_order(const void *a, const void *b) {
    const counter_t *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    if (x->truncated != y->truncated)
        return x->truncated ? 1 : -1;
    return memcmp(x->key, y->key, x->len);
}

static int count_order(const void *a, const void *b) {
    const counter_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return same_key_order(a, b); /* a stable, repeatable order among equals */
}

static bool gather(gathered_t *g, const sketch_t *s) {
    if (g->n + s->used > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 256;
        while (cap < g->n + s->used)
            cap *= 2;
        counter_t *c = realloc(g->c, cap * sizeof *c);
        if (c == NULL)
            return false;
        g->c = c;
        g->cap = cap;
    }
    if (s->used > 0) /* g->c may still be NULL */
        memcpy(g->c + g->n, s->c, s->used * sizeof *s->c);
    g->n += s->used;
    g->total += s->total;
    return true;
}

size_t sld_hh_top(sld_hh_t *hh, uint32_t slot, sld_hh_window_t window, sld_hh_what_t what,
                  int64_t now_us, sld_hh_entry_t *out, size_t n, uint64_t *total,
                  uint64_t *bound) {
    *total = *bound = 0;
    if (slot >= hh->slots || now_us < 0)
        return 0;
    int64_t last = now_us / MINUTE_US;
    int64_t first = last - (window == SLD_HH_MINUTE ? 1 : SLD_HH_MINUTES - 1);
    gathered_t g = {0};
    bool ok = true;
    for (uint32_t w = 0; w < hh->head.workers && ok; w++) {
        lock(&hh->w[w]);
        const ring_t *r = hh->w[w].rings[slot];
        for (size_t i = 0; r && i < SLD_HH_MINUTES && ok; i++)
            if (r->m[i].index >= first && r->m[i].index <= last)
                ok = gather(&g, &r->m[i].s[what]);
        unlock(&hh->w[w]);
    }
    size_t got = 0;
    if (ok && g.n > 0) {
        /* the same key from several sketches: one entry, counts summed */
        qsort(g.c, g.n, sizeof *g.c, same_key_order);
        size_t u = 0;
        for (size_t i = 1; i < g.n; i++) {
            if (same_key_order(&g.c[u], &g.c[i]) == 0)
                g.c[u].count += g.c[i].count;
            else
                g.c[++u] = g.c[i];
        }
        qsort(g.c, u + 1, sizeof *g.c, count_order);
        for (; got < n && got <= u; got++) {
            const counter_t *c = &g.c[got];
            sld_hh_entry_t *e = &out[got];
            e->count = c->count;
            e->truncated = c->truncated;
            if (hh->keys == SLD_HH_SHOW) {
                memcpy(e->key, c->key, c->len);
                e->key_len = c->len;
            } else if (hh->keys == SLD_HH_HASH) {
                e->key_len = (size_t)snprintf(e->key, sizeof e->key, "%016llx",
                                              (unsigned long long)c->hash);
                e->truncated = false;
            } else {
                e->key_len = 0;
                e->truncated = false;
            }
            e->key[e->key_len] = '\0';
        }
    }
    *total = g.total;
    *bound = g.total / hh->k;
    free(g.c);
    return got;
}

uint64_t sld_hh_dropped(const sld_hh_t *hh) {
    return atomic_load_explicit(&((sld_hh_t *)hh)->dropped, memory_order_relaxed);
}

sld_hh_options_t sld_hh_options(const sld_hh_t *hh) {
    return (sld_hh_options_t){.counters = hh->k, .keys = hh->keys, .sample_above = hh->head.sample_above};
}
