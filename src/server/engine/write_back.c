/* write_back.c -- write-back mode: the journal and the syncs (see
 * write_back.h).
 *
 * The journal is a hash table of the keys charged lately, one entry per
 * (policy, key): `pending` holds what was charged since the last sync was
 * sent, `sent` what a sync in flight carries. Workers add to `pending`
 * under the table's lock (itself taken under the memory store's key lock,
 * never the other way round). The main loop owns the rest of an entry: the
 * shared state as last seen in Redis (its version and bytes), so that a key
 * only this daemon charges syncs in one round trip.
 *
 * A sync of one key: merge `sent` onto the cached shared state, write it
 * with sync.lua if Redis still holds the cached version; if another daemon
 * wrote first, its state comes back in the reply and the merge is redone
 * on it (a few times at most, then the charges wait for the next round).
 * Once written, the merged state is imported into the memory store with
 * `pending` charged on top, under the key's lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/hiredis.h>
#include <xxhash.h>

#include "server/base/log.h"
#include "server/engine/remote.h"
#include "server/daemon/runtime.h"
#include "core/arith.h"
#include "store/redis/client.h"
#include "store/redis/cluster.h"
#include "store/redis/url.h"
#include "store/redis/script.h"
#include "store/journal.h"
#include "server/engine/write_back.h"

#define MAX_KEYS (1u << 20)      /* journal entries; beyond, charges stay local */
#define MAX_ATTEMPTS 4           /* compare-and-sets of one key per round */
#define MAX_PER_ROUND 8192       /* keys synced per round */
#define IDLE_ROUNDS 100          /* an entry with nothing to sync this long goes */
#define SWEEP_EVERY 64           /* rounds between sweeps of idle entries */
#define KEY_PREFIX "sl:w:{"
#define VERSION_BYTES 8
#define MAX_DOUBTS 4             /* lost answers remembered per key */

typedef struct entry {
    struct entry *next;          /* in its bucket */
    struct entry *dirty_next;    /* in the list of entries with pending charges */
    struct entry *round_next;    /* in a round being sent (the main loop's own) */
    uint64_t hash;
    uint64_t policy_id;          /* sl_policy_t.id: tells a pool from its policy */
    bool dirty;                  /* on the dirty list */
    bool in_flight;              /* a sync carries `sent` */
    uint32_t idle;               /* rounds without charges */
    bool reset;                  /* SL.RESET meanwhile: drop what is in flight */
    uint32_t nlimits;            /* counted in ids[0..nlimits) */
    uint32_t cap;                /* room in each array: 4, or SL_MAX_LIMITS */
    /* per limit, in the entry's tail (a key costs what its policy needs) */
    uint64_t *ids;               /* the limits the counts below are for */
    uint64_t *pending;
    uint64_t *sent;
    uint64_t *doubt;             /* what a sync whose answer was lost carried */
    sl_usec_t pending_since;     /* when the first pending charge was made, 0 = none */
    sl_usec_t sent_since;
    /* syncs whose answers were lost since the last known state: any of
     * them may have been written (each carried at least `doubt`) */
    uint8_t ndoubt;
    unsigned char doubt_versions[MAX_DOUBTS][VERSION_BYTES];
    /* the main loop's own */
    bool known;                  /* version and shared are what Redis held */
    unsigned char version[VERSION_BYTES];
    bool has_version;            /* false: Redis had no such key */
    unsigned char *shared;
    size_t shared_len;
    size_t name_len, key_len;
    char *bytes;                 /* name, then key, after the arrays */
    uint64_t tail[];
} entry_t;

struct sld_write_back {
    sld_daemon_t *d;
    uv_loop_t *loop;
    uv_timer_t tick;
    sl__redis_client_t *client;
    pthread_mutex_t lock;        /* the table, the dirty list, pending and sent */
    entry_t **buckets;
    size_t nbuckets;
    size_t count;
    size_t unsynced;             /* entries dirty or in flight */
    entry_t *dirty;
    uint64_t rounds;
    sl_usec_t interval;          /* store.sync_interval */
    uint64_t version_seed;       /* random per daemon */
    uint64_t version_count;
    bool stopping;
    bool cluster;                /* calls hold one slot's keys */
    _Atomic bool offline;        /* the last sync got no answer */
    _Atomic uint64_t syncs, conflicts, failures, dropped;
    _Atomic sl_usec_t last_sync;
};

/* ---- the journal (workers' side) --------------------------------------------------------- */

static uint64_t hash_of(const sl_policy_t *p, const void *key, size_t key_len) {
    return XXH3_64bits_withSeed(key, key_len, p->id);
}

static entry_t *lookup(sld_write_back_t *w, const sl_policy_t *p, const void *key,
                       size_t key_len, uint64_t h) {
    size_t name_len = strlen(p->name);
    for (entry_t *e = w->buckets[h & (w->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->policy_id == p->id && e->key_len == key_len &&
            e->name_len == name_len && memcmp(e->bytes, p->name, name_len) == 0 &&
            memcmp(e->bytes + name_len, key, key_len) == 0)
            return e;
    return NULL;
}

static void grow(sld_write_back_t *w) {
    size_t n = w->nbuckets * 2;
    entry_t **b = calloc(n, sizeof *b);
    if (b == NULL)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (entry_t *e = w->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(w->buckets);
    w->buckets = b;
    w->nbuckets = n;
}

static uint64_t sum(const uint64_t *v, size_t n) {
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t = sl__sat_add_u64(t, v[i]);
    return t;
}

static size_t counts_bytes(const entry_t *e) { return e->cap * sizeof(uint64_t); }

/* Puts e on the dirty list (under the lock), keeping the unsynced count. */
static void make_dirty(sld_write_back_t *w, entry_t *e) {
    if (e->dirty)
        return;
    if (!e->in_flight)
        w->unsynced++;
    e->dirty = true;
    e->dirty_next = w->dirty;
    w->dirty = e;
}

/* Its sync is over (under the lock). */
static void land(sld_write_back_t *w, entry_t *e) {
    if (e->in_flight && !e->dirty)
        w->unsynced--;
    e->in_flight = false;
}

/* Counts e's charges by p's limits: a reload may have reordered, added or
 * removed limits since they were made. Charges of a limit p no longer has
 * go, and so do those of limits beyond the entry's room (a reload that took
 * a policy past 4 limits, until the key's entry is renewed). Under the lock. */
static void remap(sld_write_back_t *w, entry_t *e, const sl_policy_t *p) {
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
    atomic_fetch_add_explicit(&w->dropped,
                              sum(e->pending, e->cap) + sum(e->sent, e->cap) - sum(pending, n) - sum(sent, n),
                              memory_order_relaxed);
    memcpy(e->pending, pending, counts_bytes(e));
    memcpy(e->sent, sent, counts_bytes(e));
    memcpy(e->doubt, doubt, counts_bytes(e));
    e->nlimits = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        e->ids[i] = p->limits[i].id;
}

static void on_charge(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                      uint32_t costed, uint64_t cost, sl_usec_t now) {
    sld_write_back_t *w = ctx;
    uint64_t h = hash_of(p, key, key_len);
    pthread_mutex_lock(&w->lock);
    entry_t *e = lookup(w, p, key, key_len, h);
    if (e == NULL && w->count < MAX_KEYS) {
        size_t name_len = strlen(p->name);
        uint32_t cap = p->nlimits <= 4 ? 4 : SL_MAX_LIMITS;
        e = calloc(1, sizeof *e + 4 * cap * sizeof(uint64_t) + name_len + key_len);
        if (e) {
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
            e->next = w->buckets[h & (w->nbuckets - 1)];
            w->buckets[h & (w->nbuckets - 1)] = e;
            if (++w->count > w->nbuckets)
                grow(w);
        }
    }
    if (e == NULL) {
        pthread_mutex_unlock(&w->lock);
        atomic_fetch_add_explicit(&w->dropped, cost, memory_order_relaxed);
        return;
    }
    remap(w, e, p);
    if (e->pending_since == 0)
        e->pending_since = now > 0 ? now : 1;
    for (size_t i = 0; i < e->nlimits; i++)
        if (costed & (1u << i))
            e->pending[i] = sl__sat_add_u64(e->pending[i], cost);
    e->idle = 0;
    make_dirty(w, e);
    pthread_mutex_unlock(&w->lock);
}

/* sl__pending_fn, during the import of a written state: what the key was
 * charged since its sync was sent. What was sent is in the state now, so
 * it stops counting as unsynced here, under the lock the next decision
 * of the key waits for. */
static void pending_of(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                       uint64_t *costs, sl_usec_t *since) {
    sld_write_back_t *w = ctx;
    pthread_mutex_lock(&w->lock);
    entry_t *e = lookup(w, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        remap(w, e, p);
        memcpy(costs, e->pending, e->nlimits * sizeof *costs);
        *since = e->pending_since;
        memset(e->sent, 0, counts_bytes(e));
        e->sent_since = 0;
    }
    pthread_mutex_unlock(&w->lock);
}

/* sl__unsynced_fn: what the key charged here that Redis has not merged. */
static void unsynced_of(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                        uint64_t *unsynced, sl_usec_t *retry_after) {
    sld_write_back_t *w = ctx;
    *retry_after = w->interval;
    /* Redis away: no sync would make room, so this daemon decides alone on
     * its whole copy until Redis is back (docs/distributed.md) */
    if (atomic_load_explicit(&w->offline, memory_order_relaxed))
        return;
    pthread_mutex_lock(&w->lock);
    entry_t *e = lookup(w, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        remap(w, e, p);
        for (size_t i = 0; i < e->nlimits; i++)
            unsynced[i] = sl__sat_add_u64(e->pending[i], e->sent[i]);
    }
    pthread_mutex_unlock(&w->lock);
}

/* ---- keys and policies ------------------------------------------------------------------------ */

size_t sld_write_back_key(const sl_policy_t *p, const void *key, size_t key_len, char *buf,
                          size_t cap) {
    size_t name_len = strlen(p->name);
    size_t n = sizeof KEY_PREFIX - 1 + name_len + 1 + key_len + 1;
    if (buf == NULL || n > cap)
        return n;
    char *at = buf;
    memcpy(at, KEY_PREFIX, sizeof KEY_PREFIX - 1);
    at += sizeof KEY_PREFIX - 1;
    memcpy(at, p->name, name_len);
    at += name_len;
    *at++ = p->is_pool ? '\1' : '\0'; /* a pool is a state of its own */
    memcpy(at, key, key_len);
    at += key_len;
    *at = '}';
    return n;
}

typedef struct find {
    const char *name;
    size_t name_len;
    uint64_t id;
    const sl_policy_t *found;
} find_t;

static int match(void *ctx, const sl_policy_t *p) {
    find_t *f = ctx;
    if (strlen(p->name) != f->name_len || memcmp(p->name, f->name, f->name_len) != 0)
        return 0;
    if (p->id == f->id)
        f->found = p;
    else if (p->pool && p->pool->id == f->id)
        f->found = p->pool;
    return f->found != NULL;
}

/* The policy (or pool) an entry was journaled for, as the runtime has it
 * now; NULL when a reload removed it. */
static const sl_policy_t *policy_of(const sld_runtime_t *rt, const entry_t *e) {
    find_t f = {e->bytes, e->name_len, e->policy_id, NULL};
    sld_policies_each(rt->policies, match, &f);
    return f.found;
}

/* ---- syncs (the main loop's side) ------------------------------------------------------------ */

typedef struct job {
    sld_write_back_t *w;
    entry_t *e;
    sld_runtime_t *rt;           /* pinned while the job lives */
    const sl_policy_t *p;
    int attempts;
    unsigned char version[VERSION_BYTES];
    unsigned char *merged;       /* what was sent: the new shared state */
    size_t merged_len;
    /* the compare-and-set, as prepare_job() made it */
    char *key;
    size_t key_len;
    unsigned slot;               /* Cluster: the key's slot */
    bool expect;                 /* false: merged onto no key */
    unsigned char expected[VERSION_BYTES];
    char ttl[24];
} job_t;

/* Compare-and-sets sent in one call (one Cluster slot). */
#define BATCH_KEYS 64

typedef struct batch {
    sld_write_back_t *w;
    size_t n;
    job_t *jobs[BATCH_KEYS];
} batch_t;

static void send_job(job_t *j);

/* Back to pending: the charges go with the next round. */
static void give_back(sld_write_back_t *w, entry_t *e) {
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < e->cap; i++) {
        e->pending[i] = sl__sat_add_u64(e->pending[i], e->sent[i]);
        e->sent[i] = 0;
    }
    if (e->sent_since && (e->pending_since == 0 || e->sent_since < e->pending_since))
        e->pending_since = e->sent_since;
    e->sent_since = 0;
    make_dirty(w, e);
    land(w, e);
    pthread_mutex_unlock(&w->lock);
}

static void end_job(job_t *j) {
    atomic_fetch_sub(&j->rt->pins, 1);
    free(j->merged);
    free(j->key);
    free(j);
}

static void set_shared(entry_t *e, const unsigned char *value, size_t len) {
    free(e->shared);
    e->shared = NULL;
    e->shared_len = 0;
    e->has_version = len >= VERSION_BYTES;
    if (!e->has_version)
        return;
    memcpy(e->version, value, VERSION_BYTES);
    if (len > VERSION_BYTES && (e->shared = malloc(len - VERSION_BYTES)) != NULL) {
        memcpy(e->shared, value + VERSION_BYTES, len - VERSION_BYTES);
        e->shared_len = len - VERSION_BYTES;
    }
}

static void written(job_t *j) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    free(e->shared);
    e->shared = j->merged;
    e->shared_len = j->merged_len;
    j->merged = NULL;
    memcpy(e->version, j->version, VERSION_BYTES);
    e->has_version = e->shared_len > 0; /* an empty state was deleted */
    e->known = true;
    e->ndoubt = 0;
    sl__cell_t cells[SL_MAX_LIMITS];
    if (sl__cells_decode(j->p, e->shared, e->shared_len, cells) == SL_OK)
        sl__memory_import(w->d->store, j->p, e->bytes + e->name_len, e->key_len, cells,
                          sld_now(w->d), pending_of, w);
    pthread_mutex_lock(&w->lock);
    memset(e->sent, 0, counts_bytes(e)); /* pending_of did, unless the import failed */
    e->sent_since = 0;
    land(w, e);
    pthread_mutex_unlock(&w->lock);
    atomic_fetch_add_explicit(&w->syncs, 1, memory_order_relaxed);
    atomic_store_explicit(&w->last_sync, sl_clock_realtime(NULL), memory_order_relaxed);
}

static void send_delete(sld_write_back_t *w, const sl_policy_t *p, const entry_t *e);

/* A reset came while the sync was out: what it carried is dropped, and
 * the state it may have written goes too. */
static bool reset_meanwhile(job_t *j) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    pthread_mutex_lock(&w->lock);
    bool reset = e->reset;
    if (reset) {
        e->reset = false;
        memset(e->sent, 0, counts_bytes(e));
        e->sent_since = 0;
        land(w, e);
    }
    pthread_mutex_unlock(&w->lock);
    if (reset) {
        e->known = false;
        e->ndoubt = 0;
        send_delete(w, j->p, e);
    }
    return reset;
}

/* Whether `value` (a conflict's answer) is a write whose answer was lost:
 * then what it carried is in Redis already and must not go again. */
static bool doubt_settled(sld_write_back_t *w, entry_t *e, const redisReply *value) {
    bool landed = false;
    for (uint8_t k = 0; k < e->ndoubt && value->len >= VERSION_BYTES; k++)
        landed = landed || memcmp(value->str, e->doubt_versions[k], VERSION_BYTES) == 0;
    e->ndoubt = 0;
    if (!landed)
        return false; /* not written, or written over: it goes again (counted twice at worst) */
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < e->cap; i++)
        e->sent[i] -= e->sent[i] < e->doubt[i] ? e->sent[i] : e->doubt[i];
    pthread_mutex_unlock(&w->lock);
    return true;
}

/* One key's answer: r is its part of the batch's reply ({1} or {0,
 * value}), or the whole reply when that is an error. */
static void on_reply(job_t *j, sl__redis_status_t status, const redisReply *r) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    if (status == SL__REDIS_OK)
        atomic_store_explicit(&w->offline, false, memory_order_relaxed);
    if (reset_meanwhile(j)) {
        end_job(j);
        return;
    }
    bool ok = status == SL__REDIS_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
              r->element[0]->type == REDIS_REPLY_INTEGER;
    if (ok && r->element[0]->integer == 1) {
        written(j);
        end_job(j);
        return;
    }
    if (ok && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        /* another daemon wrote first (or our own lost write): merge onto it */
        atomic_fetch_add_explicit(&w->conflicts, 1, memory_order_relaxed);
        doubt_settled(w, e, r->element[1]);
        set_shared(e, (const unsigned char *)r->element[1]->str, r->element[1]->len);
        e->known = true;
        if (++j->attempts < MAX_ATTEMPTS && !w->stopping) {
            send_job(j);
            return;
        }
    } else if (status == SL__REDIS_OK) { /* an error reply: the script did not write */
        atomic_fetch_add_explicit(&w->failures, 1, memory_order_relaxed);
        if (r && r->type == REDIS_REPLY_ERROR)
            sld_warn("store: write-back sync refused by Redis: %.*s", (int)(r->len > 200 ? 200 : r->len),
                     r->str);
        e->known = false; /* read it again next time */
    } else { /* no answer: it may have been written; the next sync finds out */
        atomic_fetch_add_explicit(&w->failures, 1, memory_order_relaxed);
        atomic_store_explicit(&w->offline, true, memory_order_relaxed);
        if (e->ndoubt == 0) { /* later lost syncs carry these charges and more */
            pthread_mutex_lock(&w->lock);
            memcpy(e->doubt, e->sent, counts_bytes(e));
            pthread_mutex_unlock(&w->lock);
        }
        if (e->ndoubt < MAX_DOUBTS)
            memcpy(e->doubt_versions[e->ndoubt++], j->version, VERSION_BYTES);
    }
    give_back(w, e);
    end_job(j);
}

static void next_version(sld_write_back_t *w, unsigned char *out) {
    uint64_t v = w->version_seed ^ (++w->version_count * UINT64_C(0x9e3779b97f4a7c15));
    for (int i = 0; i < VERSION_BYTES; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static void on_deleted(void *arg, sl__redis_status_t status, const redisReply *r) {
    (void)arg;
    (void)status;
    (void)r;
}

/* DEL of the key's shared state, on the connection the syncs use, so that
 * it comes before any sync sent after it. */
static void send_delete(sld_write_back_t *w, const sl_policy_t *p, const entry_t *e) {
    size_t n = sld_write_back_key(p, e->bytes + e->name_len, e->key_len, NULL, 0);
    char *key = malloc(n);
    if (key == NULL)
        return;
    sld_write_back_key(p, e->bytes + e->name_len, e->key_len, key, n);
    const char *argv[2] = {"DEL", key};
    size_t argvlen[2] = {3, n};
    sl__redis_client_send(w->client, key, n, 2, argv, argvlen, NULL, 0, on_deleted, NULL);
    free(key);
}

/* A job that could not be sent: its charges go back to pending. */
static void fail_job(job_t *j, int st) {
    sld_write_back_t *w = j->w;
    atomic_fetch_add_explicit(&w->failures, 1, memory_order_relaxed);
    if (st > 0) /* down, or the breaker is open */
        atomic_store_explicit(&w->offline, true, memory_order_relaxed);
    give_back(w, j->e);
    end_job(j);
}

/* Merges the job's charges onto the entry's shared state and makes the
 * compare-and-set's arguments. False (the job failed and is gone) when
 * that cannot be done. */
static bool prepare_job(job_t *j) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    sl_usec_t now = sld_now(w->d), recovered = 0;
    free(j->merged);
    j->merged = NULL;
    free(j->key);
    j->key = NULL;
    uint64_t sent[SL_MAX_LIMITS] = {0};
    pthread_mutex_lock(&w->lock);
    remap(w, e, j->p);
    memcpy(sent, e->sent, e->nlimits * sizeof *sent);
    sl_usec_t since = e->sent_since;
    bool reset = e->reset;
    if (reset) { /* what was taken before the reset goes with it */
        memset(e->sent, 0, counts_bytes(e));
        memset(sent, 0, sizeof sent);
        e->sent_since = since = 0;
    }
    e->reset = false;
    pthread_mutex_unlock(&w->lock);
    /* charges older than two rounds (kept through an outage) count as made
     * two rounds ago: earlier would credit them refill they may not have had */
    if (since > 0 && since < now - 2 * w->interval)
        since = now - 2 * w->interval;
    if (reset) { /* the key was reset since its last sync: start from nothing, on one connection */
        e->known = false;
        e->ndoubt = 0;
        send_delete(w, j->p, e);
    }
    int rc = sl__cells_merge(j->p, e->known ? e->shared : NULL, e->known ? e->shared_len : 0, sent,
                             since, now, &j->merged, &j->merged_len, &recovered);
    if (rc == SL_ECORRUPT) {
        sld_warn("store: write-back state of a key of policy %s was unreadable; replaced", j->p->name);
        rc = SL_OK;
    }
    j->key_len = sld_write_back_key(j->p, e->bytes + e->name_len, e->key_len, NULL, 0);
    j->key = malloc(j->key_len);
    if (rc != SL_OK || j->key == NULL) {
        fail_job(j, -1);
        return false;
    }
    sld_write_back_key(j->p, e->bytes + e->name_len, e->key_len, j->key, j->key_len);
    j->slot = sl__redis_key_slot(j->key, j->key_len);
    /* a little longer than the state lives, for daemons whose clocks run behind */
    long long ms = (long long)((recovered > now ? recovered - now : 0) / 1000) + 1000;
    snprintf(j->ttl, sizeof j->ttl, "%lld", ms);
    next_version(w, j->version);
    /* not known: assume a new key; if Redis has one, it says so and sends it */
    j->expect = e->known && e->has_version;
    if (j->expect)
        memcpy(j->expected, e->version, VERSION_BYTES);
    return true;
}

static void on_batch_reply(void *arg, sl__redis_status_t status, const redisReply *r) {
    batch_t *b = arg;
    bool parts = status == SL__REDIS_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements == b->n;
    for (size_t i = 0; i < b->n; i++)
        on_reply(b->jobs[i], status, parts ? r->element[i] : r);
    free(b);
}

/* Sends jobs[0..n) (prepared, one slot) as one call of sync.lua. */
static void send_batch(sld_write_back_t *w, job_t **jobs, size_t n) {
    batch_t *b = malloc(sizeof *b);
    const char **argv = malloc((3 + 5 * n) * sizeof *argv);
    size_t *argvlen = malloc((3 + 5 * n) * sizeof *argvlen);
    int st = -1;
    if (b && argv && argvlen) {
        char count[8];
        snprintf(count, sizeof count, "%zu", n);
        argv[0] = "EVALSHA";
        argvlen[0] = 7;
        argv[1] = sl__redis_sync_lua_sha1;
        argvlen[1] = 40;
        argv[2] = count;
        argvlen[2] = strlen(count);
        for (size_t i = 0; i < n; i++) {
            job_t *j = jobs[i];
            size_t k = 3 + i, a = 3 + n + 4 * i;
            argv[k] = j->key;
            argvlen[k] = j->key_len;
            argv[a] = j->expect ? (const char *)j->expected : "";
            argvlen[a] = j->expect ? VERSION_BYTES : 0;
            argv[a + 1] = (const char *)j->version;
            argvlen[a + 1] = VERSION_BYTES;
            argv[a + 2] = j->merged ? (const char *)j->merged : "";
            argvlen[a + 2] = j->merged_len;
            argv[a + 3] = j->ttl;
            argvlen[a + 3] = strlen(j->ttl);
            b->jobs[i] = j;
        }
        b->w = w;
        b->n = n;
        st = sl__redis_client_send(w->client, jobs[0]->key, jobs[0]->key_len, (int)(3 + 5 * n), argv,
                                   argvlen, sl__redis_sync_lua, sl__redis_sync_lua_len, on_batch_reply, b);
    }
    free(argv);
    free(argvlen);
    if (st == 0)
        return;
    free(b);
    for (size_t i = 0; i < n; i++)
        fail_job(jobs[i], st);
}

/* One key again (after a lost race): merge and send, with the policy as
 * the runtime has it now (a reload may have come since the round). */
static void send_job(job_t *j) {
    sld_runtime_t *rt = (sld_runtime_t *)sld_runtime(j->w->d);
    if (rt != j->rt) {
        const sl_policy_t *p = policy_of(rt, j->e);
        if (p == NULL || p->nlimits > j->e->cap) {
            fail_job(j, -1);
            return;
        }
        atomic_fetch_add(&rt->pins, 1);
        atomic_fetch_sub(&j->rt->pins, 1);
        j->rt = rt;
        j->p = p;
    }
    if (prepare_job(j))
        send_batch(j->w, &j, 1);
}

static int by_slot(const void *a, const void *b) {
    unsigned x = (*(job_t *const *)a)->slot, y = (*(job_t *const *)b)->slot;
    return x < y ? -1 : x > y;
}

/* Sends a round's prepared jobs, BATCH_KEYS per call; in a Cluster a call
 * holds one slot's keys. */
static void send_round(sld_write_back_t *w, job_t **jobs, size_t n) {
    if (n == 0)
        return;
    if (w->cluster)
        qsort(jobs, n, sizeof *jobs, by_slot);
    for (size_t i = 0; i < n;) {
        size_t k = 1;
        while (i + k < n && k < BATCH_KEYS && (!w->cluster || jobs[i + k]->slot == jobs[i]->slot))
            k++;
        send_batch(w, jobs + i, k);
        i += k;
    }
}

/* Frees entries with nothing to sync for IDLE_ROUNDS rounds. */
static void sweep(sld_write_back_t *w) {
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (entry_t **at = &w->buckets[i]; *at;) {
            entry_t *e = *at;
            if (!e->dirty && !e->in_flight && (e->idle += SWEEP_EVERY) >= IDLE_ROUNDS) {
                *at = e->next;
                free(e->shared);
                free(e);
                w->count--;
            } else {
                at = &e->next;
            }
        }
    }
    pthread_mutex_unlock(&w->lock);
}

/* Frees an entry taken for a round (in flight, no job), with what it
 * holds: its key gets a new entry at its next charge. */
static void retire(sld_write_back_t *w, entry_t *e) {
    pthread_mutex_lock(&w->lock);
    for (entry_t **at = &w->dirty; e->dirty && *at; at = &(*at)->dirty_next) {
        if (*at == e) {
            *at = e->dirty_next;
            break;
        }
    }
    for (entry_t **at = &w->buckets[e->hash & (w->nbuckets - 1)]; *at; at = &(*at)->next) {
        if (*at == e) {
            *at = e->next;
            break;
        }
    }
    w->count--;
    if (e->dirty || e->in_flight)
        w->unsynced--;
    atomic_fetch_add_explicit(&w->dropped, sum(e->pending, e->cap) + sum(e->sent, e->cap),
                              memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
    free(e->shared);
    free(e);
}

static void on_tick(uv_timer_t *t) {
    sld_write_back_t *w = t->data;
    sld_runtime_t *rt = (sld_runtime_t *)sld_runtime(w->d);
    entry_t *batch = NULL;
    size_t taken = 0;
    pthread_mutex_lock(&w->lock);
    /* a bounded round keeps the main loop responsive and the replies within
     * their deadline; what is left goes next round */
    for (entry_t **at = &w->dirty; *at && taken < MAX_PER_ROUND;) {
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
        e->round_next = batch;
        batch = e;
    }
    pthread_mutex_unlock(&w->lock);
    job_t **jobs = taken ? malloc(taken * sizeof *jobs) : NULL;
    size_t njobs = 0;
    while (batch) {
        entry_t *e = batch;
        batch = e->round_next;
        const sl_policy_t *p = policy_of(rt, e);
        if (p && p->nlimits > e->cap) { /* a reload outgrew the entry: a new one comes */
            retire(w, e);
            continue;
        }
        if (p == NULL) { /* a reload removed the policy: what it charged goes with it */
            uint64_t lost = 0;
            pthread_mutex_lock(&w->lock);
            lost = sum(e->sent, e->cap);
            memset(e->sent, 0, counts_bytes(e));
            land(w, e);
            pthread_mutex_unlock(&w->lock);
            atomic_fetch_add_explicit(&w->dropped, lost, memory_order_relaxed);
            continue;
        }
        job_t *j = jobs ? calloc(1, sizeof *j) : NULL;
        if (j == NULL) {
            give_back(w, e);
            continue;
        }
        atomic_fetch_add(&rt->pins, 1);
        *j = (job_t){.w = w, .e = e, .rt = rt, .p = p};
        if (prepare_job(j))
            jobs[njobs++] = j;
    }
    send_round(w, jobs, njobs);
    free(jobs);
    if (++w->rounds % SWEEP_EVERY == 0)
        sweep(w);
}

/* ---- life -------------------------------------------------------------------------------------- */

int sld_write_back_start(sld_daemon_t *d, uv_loop_t *loop, sld_write_back_t **out) {
    sld_write_back_t *w = calloc(1, sizeof *w);
    if (w == NULL || (w->buckets = calloc(1024, sizeof *w->buckets)) == NULL) {
        free(w);
        return SL_ENOMEM;
    }
    w->nbuckets = 1024;
    w->d = d;
    w->cluster = sld_remote_url(d->remote)->kind == SL__REDIS_CLUSTER;
    w->loop = loop;
    pthread_mutex_init(&w->lock, NULL);
    if (getrandom(&w->version_seed, sizeof w->version_seed, 0) != sizeof w->version_seed)
        w->version_seed = (uint64_t)sl_clock_realtime(NULL) * UINT64_C(0x9e3779b97f4a7c15);
    if (sl__redis_client_new(loop, sld_remote_url(d->remote), sld_remote_options(d->remote),
                             &w->client) != 0) {
        free(w->buckets);
        free(w);
        return SL_ENOMEM;
    }
    w->interval = sld_runtime(d)->cfg->store_sync_interval;
    uint64_t ms = (uint64_t)(w->interval / 1000);
    uv_timer_init(loop, &w->tick);
    w->tick.data = w;
    uv_timer_start(&w->tick, on_tick, ms ? ms : 1, ms ? ms : 1);
    sl__memory_journal(d->store, on_charge, unsynced_of, w);
    *out = w;
    return SL_OK;
}

static void on_client_closed(void *arg) { (void)arg; }

void sld_write_back_stop(sld_write_back_t *w) {
    if (w == NULL)
        return;
    w->stopping = true;
    uv_timer_stop(&w->tick);
    uv_close((uv_handle_t *)&w->tick, NULL);
    sl__redis_client_close(w->client, on_client_closed, w);
}

void sld_write_back_free(sld_write_back_t *w) {
    if (w == NULL)
        return;
    sl__memory_journal(w->d->store, NULL, NULL, NULL);
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (entry_t *e = w->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e->shared);
            free(e);
        }
    }
    free(w->buckets);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

void sld_write_back_stats(sld_write_back_t *w, sld_write_back_stats_t *out) {
    memset(out, 0, sizeof *out);
    if (w == NULL)
        return;
    out->syncs = atomic_load(&w->syncs);
    out->conflicts = atomic_load(&w->conflicts);
    out->failures = atomic_load(&w->failures);
    out->dropped = atomic_load(&w->dropped);
    out->last_sync = atomic_load(&w->last_sync);
    pthread_mutex_lock(&w->lock);
    out->keys = w->count;
    out->unsynced = w->unsynced;
    pthread_mutex_unlock(&w->lock);
}

void sld_write_back_forget(sld_write_back_t *w, const sl_policy_t *p, const void *key,
                           size_t key_len) {
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    entry_t *e = lookup(w, p, key, key_len, hash_of(p, key, key_len));
    if (e) {
        memset(e->pending, 0, counts_bytes(e));
        e->pending_since = 0;
        e->reset = true; /* the main loop drops what is in flight and forgets Redis's copy */
        make_dirty(w, e); /* so that it gets to see the flag */
    }
    pthread_mutex_unlock(&w->lock);
}
