/* charge_journal.c -- write-back mode's journal of charges (see
 * charge_journal.h).
 *
 * A hash table of the keys charged lately, one entry per (policy, key):
 * `pending` holds what was charged since the last round was taken, `sent`
 * what a sync in flight carries. One lock covers the table, the dirty list
 * and the counts; the workers take it under the memory store's key lock.
 * An entry with nothing to sync for SLD_JOURNAL_IDLE_ROUNDS rounds goes.
 */
#include "server/engine/charge_journal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/arith.h"
#include "store/journal.h"

struct sld_charge_journal {
    pthread_mutex_t lock;        /* the table, the dirty list, pending and sent */
    sld_journal_entry_t **buckets;
    size_t nbuckets;             /* a power of two */
    size_t count;
    size_t unsynced;             /* entries dirty or in flight */
    sld_journal_entry_t *dirty;
    sl_usec_t interval;          /* store.sync_interval, us */
    _Atomic bool offline;        /* the last sync got no answer */
    _Atomic uint64_t dropped;
};

typedef sld_journal_entry_t entry_t;

static uint64_t hash_of(const sl_policy_t *p, const void *key, size_t key_len) {
    return XXH3_64bits_withSeed(key, key_len, p->id);
}

static entry_t *lookup(sld_charge_journal_t *j, const sl_policy_t *p, const void *key,
                       size_t key_len, uint64_t h) {
    size_t name_len = strlen(p->name);
    for (entry_t *e = j->buckets[h & (j->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->policy_id == p->id && e->key_len == key_len &&
            e->name_len == name_len && memcmp(e->bytes, p->name, name_len) == 0 &&
            memcmp(e->bytes + name_len, key, key_len) == 0)
            return e;
    return NULL;
}

static void grow(sld_charge_journal_t *j) {
    size_t n = j->nbuckets * 2;
    entry_t **b = calloc(n, sizeof *b);
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < j->nbuckets; i++) {
        for (entry_t *e = j->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(j->buckets);
    j->buckets = b;
    j->nbuckets = n;
}

static uint64_t sum(const uint64_t *v, size_t n) {
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t = sl__sat_add_u64(t, v[i]);
    return t;
}

static size_t counts_bytes(const entry_t *e) { return e->cap * sizeof(uint64_t); }

static void count_dropped(sld_charge_journal_t *j, uint64_t n) {
    atomic_fetch_add_explicit(&j->dropped, n, memory_order_relaxed);
}

/* Puts e on the dirty list (under the lock), keeping the unsynced count. */
static void make_dirty(sld_charge_journal_t *j, entry_t *e) {
    if (e->dirty)
        return;
    if (!e->in_flight)
        j->unsynced++;
    e->dirty = true;
    e->dirty_next = j->dirty;
    j->dirty = e;
}

/* Its sync is over (under the lock). */
static void land(sld_charge_journal_t *j, entry_t *e) {
    if (e->in_flight && !e->dirty)
        j->unsynced--;
    e->in_flight = false;
}

/* Counts e's charges by p's limits: a reload may have reordered, added or
 * removed limits since they were made. Charges of a limit p no longer has
 * go, and so do those of limits beyond the entry's room (a reload that took
 * a policy past 4 limits, until the key's entry is renewed). Under the lock. */
static void remap(sld_charge_journal_t *j, entry_t *e, const sl_policy_t *p) {
    size_t n = p->nlimits < e->cap ? p->nlimits : e->cap;
    bool same = e->nlimits == n;
    for (size_t i = 0; same && i < n; i++)
        same = e->ids[i] == p->limits[i].id;
    if (same)
        return;
    uint64_t pending[SL_MAX_LIMITS] = {0}, sent[SL_MAX_LIMITS] = {0}, doubt[SL_MAX_LIMITS] = {0};
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < e->nlimits; k++) {
            if (e->ids[k] == p->limits[i].id) {
                pending[i] = e->pending[k];
                sent[i] = e->sent[k];
                doubt[i] = e->doubt[k];
            }
        }
    }
    count_dropped(j, sum(e->pending, e->cap) + sum(e->sent, e->cap) - sum(pending, n) - sum(sent, n));
    memcpy(e->pending, pending, counts_bytes(e));
    memcpy(e->sent, sent, counts_bytes(e));
    memcpy(e->doubt, doubt, counts_bytes(e));
    e->nlimits = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        e->ids[i] = p->limits[i].id;
}

static entry_t *entry_new(sld_charge_journal_t *j, const sl_policy_t *p, const void *key,
                          size_t key_len, uint64_t h) {
    size_t name_len = strlen(p->name);
    uint32_t cap = p->nlimits <= 4 ? 4 : SL_MAX_LIMITS;
    entry_t *e = calloc(1, sizeof *e + 4 * cap * sizeof(uint64_t) + name_len + key_len);
    if (e == NULL)
        return NULL;
    e->cap = cap;
    e->ids = e->tail;
    e->pending = e->tail + cap;
    e->sent = e->tail + 2 * cap;
    e->doubt = e->tail + 3 * cap;
    e->bytes = (char *)(e->tail + 4 * cap);
    e->hash = h;
    e->policy_id = p->id;
    e->name_len = name_len;
    e->key_len = key_len;
    memcpy(e->bytes, p->name, name_len);
    memcpy(e->bytes + name_len, key, key_len);
    e->nlimits = (uint32_t)(p->nlimits < cap ? p->nlimits : cap);
    for (size_t i = 0; i < e->nlimits; i++)
        e->ids[i] = p->limits[i].id;
    e->next = j->buckets[h & (j->nbuckets - 1)];
    j->buckets[h & (j->nbuckets - 1)] = e;
    if (++j->count > j->nbuckets)
        grow(j);
    return e;
}

/* ---- the workers' side: the store's hooks ------------------------------------------------ */

/* sl__journal_fn */
static void on_charge(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                      uint32_t costed, uint64_t cost, sl_usec_t now) {
    sld_charge_journal_t *j = ctx;
    uint64_t h = hash_of(p, key, key_len);
    pthread_mutex_lock(&j->lock);
    entry_t *e = lookup(j, p, key, key_len, h);
    if (e == NULL && j->count < SLD_JOURNAL_MAX_KEYS)
        e = entry_new(j, p, key, key_len, h);
    if (e == NULL) {
        pthread_mutex_unlock(&j->lock);
        count_dropped(j, cost);
        return;
    }
    remap(j, e, p);
    if (e->pending_since == 0)
        e->pending_since = now > 0 ? now : 1;
    for (size_t i = 0; i < e->nlimits; i++)
        if (costed & (1u << i))
            e->pending[i] = sl__sat_add_u64(e->pending[i], cost);
    e->idle = 0;
    make_dirty(j, e);
    pthread_mutex_unlock(&j->lock);
}

/* sl__unsynced_fn: what the key charged here that Redis has not merged. */
static void unsynced_of(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                        uint64_t *unsynced, sl_usec_t *retry_after) {
    sld_charge_journal_t *j = ctx;
    *retry_after = j->interval;
    /* Redis away: no sync would make room, so this daemon decides alone on
     * its whole copy until Redis is back (docs/distributed.md) */
    if (atomic_load_explicit(&j->offline, memory_order_relaxed))
        return;
    pthread_mutex_lock(&j->lock);
    entry_t *e = lookup(j, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        remap(j, e, p);
        for (size_t i = 0; i < e->nlimits; i++)
            unsynced[i] = sl__sat_add_u64(e->pending[i], e->sent[i]);
    }
    pthread_mutex_unlock(&j->lock);
}

/* What was sent is in the imported state now, so it stops counting as
 * unsynced here, under the lock the next decision of the key waits for. */
void sld_charge_journal_pending(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                                uint64_t *costs, sl_usec_t *since) {
    sld_charge_journal_t *j = ctx;
    pthread_mutex_lock(&j->lock);
    entry_t *e = lookup(j, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        remap(j, e, p);
        memcpy(costs, e->pending, e->nlimits * sizeof *costs);
        *since = e->pending_since;
        memset(e->sent, 0, counts_bytes(e));
        e->sent_since = 0;
    }
    pthread_mutex_unlock(&j->lock);
}

void sld_charge_journal_attach(sld_charge_journal_t *j, sl_store_t *s) {
    sl__memory_journal(s, on_charge, unsynced_of, j);
}

void sld_charge_journal_detach(sl_store_t *s) {
    sl__memory_journal(s, NULL, NULL, NULL);
}

void sld_charge_journal_set_offline(sld_charge_journal_t *j, bool offline) {
    atomic_store_explicit(&j->offline, offline, memory_order_relaxed);
}

void sld_charge_journal_forget(sld_charge_journal_t *j, const sl_policy_t *p, const void *key,
                               size_t key_len) {
    pthread_mutex_lock(&j->lock);
    entry_t *e = lookup(j, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        memset(e->pending, 0, counts_bytes(e));
        e->pending_since = 0;
        e->reset = true; /* the sync drops what is in flight and forgets Redis's copy */
        make_dirty(j, e); /* so that it gets to see the flag */
    }
    pthread_mutex_unlock(&j->lock);
}

sld_journal_entry_t *sld_charge_journal_find(sld_charge_journal_t *j, const sl_policy_t *p,
                                             const void *key, size_t key_len) {
    pthread_mutex_lock(&j->lock);
    entry_t *e = lookup(j, p, key, key_len, hash_of(p, key, key_len));
    pthread_mutex_unlock(&j->lock);
    return e;
}

/* ---- the sync's side ------------------------------------------------------------------------ */

size_t sld_charge_journal_take(sld_charge_journal_t *j, size_t max, sld_journal_entry_t **round) {
    size_t taken = 0;
    *round = NULL;
    pthread_mutex_lock(&j->lock);
    for (entry_t **at = &j->dirty; *at && taken < max;) {
        entry_t *e = *at;
        if (e->in_flight) { /* its sync is still out: it goes next round */
            at = &e->dirty_next;
            continue;
        }
        taken++;
        *at = e->dirty_next;
        e->dirty = false;
        e->in_flight = true;
        memcpy(e->sent, e->pending, counts_bytes(e));
        memset(e->pending, 0, counts_bytes(e));
        e->sent_since = e->pending_since;
        e->pending_since = 0;
        e->round_next = *round;
        *round = e;
    }
    pthread_mutex_unlock(&j->lock);
    return taken;
}

bool sld_charge_journal_sending(sld_charge_journal_t *j, sld_journal_entry_t *e, const sl_policy_t *p,
                                uint64_t *sent, sl_usec_t *since) {
    pthread_mutex_lock(&j->lock);
    remap(j, e, p);
    bool reset = e->reset;
    if (reset) { /* what was taken before the reset goes with it */
        memset(e->sent, 0, counts_bytes(e));
        e->sent_since = 0;
        e->known = false;
        e->ndoubt = 0;
    }
    memcpy(sent, e->sent, e->nlimits * sizeof *sent);
    *since = e->sent_since;
    e->reset = false;
    pthread_mutex_unlock(&j->lock);
    return reset;
}

void sld_charge_journal_written(sld_charge_journal_t *j, sld_journal_entry_t *e) {
    pthread_mutex_lock(&j->lock);
    memset(e->sent, 0, counts_bytes(e)); /* the import did, unless it failed */
    e->sent_since = 0;
    e->ndoubt = 0;
    land(j, e);
    pthread_mutex_unlock(&j->lock);
}

void sld_charge_journal_give_back(sld_charge_journal_t *j, sld_journal_entry_t *e) {
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < e->cap; i++) {
        e->pending[i] = sl__sat_add_u64(e->pending[i], e->sent[i]);
        e->sent[i] = 0;
    }
    if (e->sent_since && (e->pending_since == 0 || e->sent_since < e->pending_since))
        e->pending_since = e->sent_since;
    e->sent_since = 0;
    make_dirty(j, e);
    land(j, e);
    pthread_mutex_unlock(&j->lock);
}

void sld_charge_journal_lost(sld_charge_journal_t *j, sld_journal_entry_t *e,
                             const unsigned char *version) {
    if (e->ndoubt == 0) { /* later lost syncs carry these charges and more */
        pthread_mutex_lock(&j->lock);
        memcpy(e->doubt, e->sent, counts_bytes(e));
        pthread_mutex_unlock(&j->lock);
    }
    if (e->ndoubt < SLD_JOURNAL_MAX_DOUBTS)
        memcpy(e->doubt_versions[e->ndoubt++], version, SLD_JOURNAL_VERSION_BYTES);
    sld_charge_journal_give_back(j, e);
}

bool sld_charge_journal_settle(sld_charge_journal_t *j, sld_journal_entry_t *e,
                               const void *value, size_t len) {
    bool landed = false;
    for (uint8_t k = 0; k < e->ndoubt && len >= SLD_JOURNAL_VERSION_BYTES; k++)
        landed = landed || memcmp(value, e->doubt_versions[k], SLD_JOURNAL_VERSION_BYTES) == 0;
    e->ndoubt = 0;
    if (!landed)
        return false; /* not written, or written over: it goes again (counted twice at worst) */
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < e->cap; i++)
        e->sent[i] -= e->sent[i] < e->doubt[i] ? e->sent[i] : e->doubt[i];
    pthread_mutex_unlock(&j->lock);
    return true;
}

bool sld_charge_journal_reset_meanwhile(sld_charge_journal_t *j, sld_journal_entry_t *e) {
    pthread_mutex_lock(&j->lock);
    bool reset = e->reset;
    if (reset) {
        e->reset = false;
        memset(e->sent, 0, counts_bytes(e));
        e->sent_since = 0;
        land(j, e);
        e->known = false;
        e->ndoubt = 0;
    }
    pthread_mutex_unlock(&j->lock);
    return reset;
}

void sld_charge_journal_drop(sld_charge_journal_t *j, sld_journal_entry_t *e) {
    pthread_mutex_lock(&j->lock);
    uint64_t lost = sum(e->sent, e->cap);
    memset(e->sent, 0, counts_bytes(e));
    land(j, e);
    pthread_mutex_unlock(&j->lock);
    count_dropped(j, lost);
}

void sld_charge_journal_retire(sld_charge_journal_t *j, sld_journal_entry_t *e) {
    pthread_mutex_lock(&j->lock);
    for (entry_t **at = &j->dirty; e->dirty && *at; at = &(*at)->dirty_next) {
        if (*at == e) {
            *at = e->dirty_next;
            break;
        }
    }
    for (entry_t **at = &j->buckets[e->hash & (j->nbuckets - 1)]; *at; at = &(*at)->next) {
        if (*at == e) {
            *at = e->next;
            break;
        }
    }
    j->count--;
    if (e->dirty || e->in_flight)
        j->unsynced--;
    count_dropped(j, sum(e->pending, e->cap) + sum(e->sent, e->cap));
    pthread_mutex_unlock(&j->lock);
    free(e->shared);
    free(e);
}

void sld_charge_journal_sweep(sld_charge_journal_t *j, uint32_t rounds) {
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < j->nbuckets; i++) {
        for (entry_t **at = &j->buckets[i]; *at;) {
            entry_t *e = *at;
            if (!e->dirty && !e->in_flight && (e->idle += rounds) >= SLD_JOURNAL_IDLE_ROUNDS) {
                *at = e->next;
                free(e->shared);
                free(e);
                j->count--;
            } else {
                at = &e->next;
            }
        }
    }
    pthread_mutex_unlock(&j->lock);
}

/* ---- life ------------------------------------------------------------------------------------ */

int sld_charge_journal_new(sl_usec_t interval, sld_charge_journal_t **out) {
    sld_charge_journal_t *j = calloc(1, sizeof *j);
    if (j == NULL || (j->buckets = calloc(1024, sizeof *j->buckets)) == NULL) {
        free(j);
        return SL_ENOMEM;
    }
    j->nbuckets = 1024;
    j->interval = interval;
    pthread_mutex_init(&j->lock, NULL);
    *out = j;
    return SL_OK;
}

void sld_charge_journal_free(sld_charge_journal_t *j) {
    if (j == NULL)
        return;
    for (size_t i = 0; i < j->nbuckets; i++) {
        for (entry_t *e = j->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e->shared);
            free(e);
        }
    }
    free(j->buckets);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

void sld_charge_journal_stats(sld_charge_journal_t *j, sld_charge_journal_stats_t *out) {
    out->dropped = atomic_load(&j->dropped);
    pthread_mutex_lock(&j->lock);
    out->keys = j->count;
    out->unsynced = j->unsynced;
    pthread_mutex_unlock(&j->lock);
}
