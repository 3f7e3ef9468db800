/* write_back.c -- write-back mode's sync with Redis (see write_back.h):
 * every store.sync_interval, a round of the keys charged here is merged
 * onto the shared state and written back with a compare-and-set.
 *
 * A sync of one key: merge what the journal sent (charge_journal.h) onto
 * the cached shared state, write it with sync.lua if Redis still holds the
 * cached version; if another daemon wrote first, its state comes back in
 * the reply and the merge is redone on it (a few times at most, then the
 * charges wait for the next round). Once written, the merged state is
 * imported into the memory store with what was charged since on top,
 * under the key's lock. A sync whose answer is lost may have been written:
 * the journal remembers its version, so that its charges are not counted
 * twice when a later conflict shows it landed.
 *
 * Not here: the journal of charges and its lock (charge_journal.c), the
 * merge itself (store/cells.c), the call and its reply (store/redis/sync_cas.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server/base/log.h"
#include "server/engine/remote.h"
#include "store/redis/client.h"
#include "store/redis/cluster.h"
#include "store/redis/url.h"
#include "store/redis/sync_cas.h"
#include "store/journal.h"
#include "server/engine/charge_journal.h"
#include "server/engine/write_back.h"

#define MAX_ATTEMPTS 4           /* compare-and-sets of one key per round */
#define MAX_PER_ROUND 8192       /* keys synced per round */
#define SWEEP_EVERY 64           /* rounds between sweeps of idle entries */
#define KEY_PREFIX "sl:w:{"
#define VERSION_BYTES SLD_JOURNAL_VERSION_BYTES

_Static_assert(SLD_JOURNAL_VERSION_BYTES == SL__REDIS_CAS_VERSION_BYTES, "one version size");

typedef sld_journal_entry_t entry_t;

typedef const struct sld_runtime runtime_t; /* opaque: reached through w->rt */

struct sld_write_back {
    sld_runtime_hooks_t rt;          /* the policies in force, the clock */
    sl_store_t *store;               /* the memory store the journal is on */
    uv_loop_t *loop;
    uv_timer_t tick;
    sl__redis_client_t *client;
    sld_charge_journal_t *journal;   /* what the workers charged */
    uint64_t rounds;
    sl_usec_t interval;              /* store.sync_interval */
    uint64_t version_seed;           /* random per daemon */
    uint64_t version_count;
    bool stopping;
    bool cluster;                    /* calls hold one slot's keys */
    _Atomic uint64_t syncs, conflicts, failures;
    _Atomic sl_usec_t last_sync;
};

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
static const sl_policy_t *policy_of(const sld_write_back_t *w, runtime_t *rt, const entry_t *e) {
    find_t f = {e->bytes, e->name_len, e->policy_id, NULL};
    sld_policies_each(w->rt.policies(rt), match, &f);
    return f.found;
}

/* ---- syncs (the main loop's side) ------------------------------------------------------------ */

typedef struct job {
    sld_write_back_t *w;
    entry_t *e;
    runtime_t *rt;               /* pinned while the job lives */
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
#define BATCH_KEYS SL__REDIS_CAS_MAX

typedef struct batch {
    sld_write_back_t *w;
    size_t n;
    job_t *jobs[BATCH_KEYS];
} batch_t;

static void send_job(job_t *j);

static void end_job(job_t *j) {
    j->w->rt.pin(j->rt, -1);
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
    sl__cell_t cells[SL_MAX_LIMITS];
    if (sl__cells_decode(j->p, e->shared, e->shared_len, cells) == SL_OK)
        sl__memory_import(w->store, j->p, e->bytes + e->name_len, e->key_len, cells,
                          w->rt.now(w->rt.ctx), sld_charge_journal_pending, w->journal);
    sld_charge_journal_written(w->journal, e);
    atomic_fetch_add_explicit(&w->syncs, 1, memory_order_relaxed);
    atomic_store_explicit(&w->last_sync, sl_clock_realtime(NULL), memory_order_relaxed);
}

static void send_delete(sld_write_back_t *w, const sl_policy_t *p, const entry_t *e);

/* A reset came while the sync was out: what it carried is dropped, and
 * the state it may have written goes too. */
static bool reset_meanwhile(job_t *j) {
    if (!sld_charge_journal_reset_meanwhile(j->w->journal, j->e))
        return false;
    send_delete(j->w, j->p, j->e);
    return true;
}

/* One key's answer to its compare-and-set. */
static void on_answer(job_t *j, sl__redis_cas_answer_t answer, const void *data, size_t len) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    if (answer != SL__REDIS_CAS_LOST)
        sld_charge_journal_set_offline(w->journal, false);
    if (reset_meanwhile(j)) {
        end_job(j);
        return;
    }
    switch (answer) {
    case SL__REDIS_CAS_WRITTEN:
        written(j);
        end_job(j);
        return;
    case SL__REDIS_CAS_CONFLICT:
        /* another daemon wrote first (or our own lost write): merge onto it */
        atomic_fetch_add_explicit(&w->conflicts, 1, memory_order_relaxed);
        sld_charge_journal_settle(w->journal, e, data, len);
        set_shared(e, data, len);
        e->known = true;
        if (++j->attempts < MAX_ATTEMPTS && !w->stopping) {
            send_job(j);
            return;
        }
        break;
    case SL__REDIS_CAS_REFUSED: /* an error reply: the script did not write */
        atomic_fetch_add_explicit(&w->failures, 1, memory_order_relaxed);
        if (data)
            sld_warn("store: write-back sync refused by Redis: %.*s", (int)(len > 200 ? 200 : len),
                     (const char *)data);
        e->known = false; /* read it again next time */
        break;
    case SL__REDIS_CAS_LOST: /* no answer: it may have been written; the next sync finds out */
        atomic_fetch_add_explicit(&w->failures, 1, memory_order_relaxed);
        sld_charge_journal_set_offline(w->journal, true);
        sld_charge_journal_lost(w->journal, e, j->version); /* and gives it back */
        end_job(j);
        return;
    }
    sld_charge_journal_give_back(w->journal, e);
    end_job(j);
}

static void next_version(sld_write_back_t *w, unsigned char *out) {
    uint64_t v = w->version_seed ^ (++w->version_count * UINT64_C(0x9e3779b97f4a7c15));
    for (int i = 0; i < VERSION_BYTES; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static void on_deleted(void *arg, sl__redis_status_t status, const struct redisReply *r) {
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
        sld_charge_journal_set_offline(w->journal, true);
    sld_charge_journal_give_back(w->journal, j->e);
    end_job(j);
}

/* Merges the job's charges onto the entry's shared state and makes the
 * compare-and-set's arguments. False (the job failed and is gone) when
 * that cannot be done. */
static bool prepare_job(job_t *j) {
    sld_write_back_t *w = j->w;
    entry_t *e = j->e;
    sl_usec_t now = w->rt.now(w->rt.ctx), recovered = 0;
    free(j->merged);
    j->merged = NULL;
    free(j->key);
    j->key = NULL;
    uint64_t sent[SL_MAX_LIMITS] = {0};
    sl_usec_t since = 0;
    bool reset = sld_charge_journal_sending(w->journal, e, j->p, sent, &since);
    /* charges older than two rounds (kept through an outage) count as made
     * two rounds ago: earlier would credit them refill they may not have had */
    if (since > 0 && since < now - 2 * w->interval)
        since = now - 2 * w->interval;
    if (reset) /* the key was reset since its last sync: start from nothing, on one connection */
        send_delete(w, j->p, e);
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

static void on_batch_answer(void *arg, size_t i, sl__redis_cas_answer_t answer,
                            sl__redis_status_t status, const void *data, size_t len) {
    batch_t *b = arg;
    (void)status;
    on_answer(b->jobs[i], answer, data, len);
    if (i + 1 == b->n)
        free(b);
}

/* Sends jobs[0..n) (prepared, one slot) as one call of sync.lua. */
static void send_batch(sld_write_back_t *w, job_t **jobs, size_t n) {
    batch_t *b = malloc(sizeof *b);
    int st = -1;
    if (b) {
        sl__redis_cas_t cas[BATCH_KEYS];
        for (size_t i = 0; i < n; i++) {
            job_t *j = jobs[i];
            cas[i] = (sl__redis_cas_t){.key = j->key, .key_len = j->key_len,
                                       .expected = j->expect ? j->expected : NULL,
                                       .version = j->version, .value = j->merged,
                                       .value_len = j->merged_len, .ttl_ms = j->ttl};
            b->jobs[i] = j;
        }
        b->w = w;
        b->n = n;
        st = sl__redis_cas_send(w->client, cas, n, on_batch_answer, b);
    }
    if (st == 0)
        return;
    free(b);
    for (size_t i = 0; i < n; i++)
        fail_job(jobs[i], st);
}

/* One key again (after a lost race): merge and send, with the policy as
 * the runtime has it now (a reload may have come since the round). */
static void send_job(job_t *j) {
    sld_write_back_t *w = j->w;
    runtime_t *rt = w->rt.current(w->rt.ctx);
    if (rt != j->rt) {
        const sl_policy_t *p = policy_of(w, rt, j->e);
        if (p == NULL || p->nlimits > j->e->cap) {
            fail_job(j, -1);
            return;
        }
        w->rt.pin(rt, +1);
        w->rt.pin(j->rt, -1);
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

static void on_tick(uv_timer_t *t) {
    sld_write_back_t *w = t->data;
    runtime_t *rt = w->rt.current(w->rt.ctx);
    entry_t *batch = NULL;
    /* a bounded round keeps the main loop responsive and the replies within
     * their deadline; what is left goes next round */
    size_t taken = sld_charge_journal_take(w->journal, MAX_PER_ROUND, &batch);
    job_t **jobs = taken ? malloc(taken * sizeof *jobs) : NULL;
    size_t njobs = 0;
    while (batch) {
        entry_t *e = batch;
        batch = e->round_next;
        const sl_policy_t *p = policy_of(w, rt, e);
        if (p && p->nlimits > e->cap) { /* a reload outgrew the entry: a new one comes */
            sld_charge_journal_retire(w->journal, e);
            continue;
        }
        if (p == NULL) { /* a reload removed the policy: what it charged goes with it */
            sld_charge_journal_drop(w->journal, e);
            continue;
        }
        job_t *j = jobs ? calloc(1, sizeof *j) : NULL;
        if (j == NULL) {
            sld_charge_journal_give_back(w->journal, e);
            continue;
        }
        w->rt.pin(rt, +1);
        *j = (job_t){.w = w, .e = e, .rt = rt, .p = p};
        if (prepare_job(j))
            jobs[njobs++] = j;
    }
    send_round(w, jobs, njobs);
    free(jobs);
    if (++w->rounds % SWEEP_EVERY == 0)
        sld_charge_journal_sweep(w->journal, SWEEP_EVERY);
}

/* ---- life -------------------------------------------------------------------------------------- */

int sld_write_back_start(const sld_runtime_hooks_t *rt, sl_store_t *store, const sld_remote_t *remote,
                         uv_loop_t *loop, sld_write_back_t **out) {
    sld_write_back_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return SL_ENOMEM;
    w->rt = *rt;
    w->store = store;
    w->cluster = sld_remote_url(remote)->kind == SL__REDIS_CLUSTER;
    w->loop = loop;
    w->interval = rt->config(rt->current(rt->ctx))->store_sync_interval;
    if (sld_charge_journal_new(w->interval, &w->journal) != SL_OK) {
        free(w);
        return SL_ENOMEM;
    }
    if (getrandom(&w->version_seed, sizeof w->version_seed, 0) != sizeof w->version_seed)
        w->version_seed = (uint64_t)sl_clock_realtime(NULL) * UINT64_C(0x9e3779b97f4a7c15);
    if (sl__redis_client_new(loop, sld_remote_url(remote), sld_remote_options(remote),
                             &w->client) != 0) {
        sld_charge_journal_free(w->journal);
        free(w);
        return SL_ENOMEM;
    }
    uint64_t ms = (uint64_t)(w->interval / 1000);
    uv_timer_init(loop, &w->tick);
    w->tick.data = w;
    uv_timer_start(&w->tick, on_tick, ms ? ms : 1, ms ? ms : 1);
    sld_charge_journal_attach(w->journal, store);
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
    sld_charge_journal_detach(w->store);
    sld_charge_journal_free(w->journal);
    free(w);
}

void sld_write_back_stats(sld_write_back_t *w, sld_write_back_stats_t *out) {
    memset(out, 0, sizeof *out);
    if (w == NULL)
        return;
    out->syncs = atomic_load(&w->syncs);
    out->conflicts = atomic_load(&w->conflicts);
    out->failures = atomic_load(&w->failures);
    out->last_sync = atomic_load(&w->last_sync);
    sld_charge_journal_stats_t js;
    sld_charge_journal_stats(w->journal, &js);
    out->dropped = js.dropped;
    out->keys = js.keys;
    out->unsynced = js.unsynced;
}

void sld_write_back_forget(sld_write_back_t *w, const sl_policy_t *p, const void *key,
                           size_t key_len) {
    if (w == NULL)
        return;
    sld_charge_journal_forget(w->journal, p, key, key_len);
}
