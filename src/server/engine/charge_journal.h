/* charge_journal.h -- write-back mode's journal of charges: per (policy,
 * key), what this daemon charged that Redis has not merged yet.
 *
 * It is the memory store's journal (the hooks of store/journal.h): the
 * workers add every charge of a write-back policy to `pending`, under the
 * store's key lock, and ask what is still unsynced before charging. The
 * sync (write_back.c) takes a round of entries (pending becomes sent),
 * and tells the journal what became of each: written, given back, lost in
 * flight, reset meanwhile.
 *
 * An entry's counts are the journal's, under its lock (itself taken under
 * the memory store's key lock, never the other way round); the fields
 * marked "the sync's" below belong to the main loop that syncs.
 *
 * Not here: Redis, the compare-and-set, merging (write_back.c and
 * store/cells.c), the daemon.
 */
#ifndef SL_SERVER_ENGINE_CHARGE_JOURNAL_H
#define SL_SERVER_ENGINE_CHARGE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "core/policy.h"

#define SLD_JOURNAL_VERSION_BYTES 8  /* a shared state's version, as Redis keeps it */
#define SLD_JOURNAL_MAX_DOUBTS 4     /* lost answers remembered per key */
#define SLD_JOURNAL_MAX_KEYS (1u << 20) /* entries; beyond, charges stay local (counted dropped) */

typedef struct sld_journal_entry {
    struct sld_journal_entry *next;       /* in its bucket */
    struct sld_journal_entry *dirty_next; /* in the list of entries with pending charges */
    struct sld_journal_entry *round_next; /* in a round taken by the sync (the sync's) */
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
    uint64_t *pending;           /* charged since the last round was taken */
    uint64_t *sent;              /* carried by the sync in flight */
    uint64_t *doubt;             /* what a sync whose answer was lost carried */
    sl_usec_t pending_since;     /* when the first pending charge was made, 0 = none */
    sl_usec_t sent_since;
    /* syncs whose answers were lost since the last known state: any of
     * them may have been written (each carried at least `doubt`) */
    uint8_t ndoubt;
    unsigned char doubt_versions[SLD_JOURNAL_MAX_DOUBTS][SLD_JOURNAL_VERSION_BYTES];
    /* the sync's: the shared state as last seen in Redis, so that a key
     * only this daemon charges syncs in one round trip */
    bool known;                  /* version and shared are what Redis held */
    unsigned char version[SLD_JOURNAL_VERSION_BYTES];
    bool has_version;            /* false: Redis had no such key */
    unsigned char *shared;       /* malloc'd; freed with the entry */
    size_t shared_len;
    size_t name_len, key_len;
    char *bytes;                 /* the policy's name, then the key */
    uint64_t tail[];
} sld_journal_entry_t;

typedef struct sld_charge_journal sld_charge_journal_t;

/* An empty journal; `interval` (us) is the sync interval a denied key is
 * told to wait. SL_ENOMEM. */
int sld_charge_journal_new(sl_usec_t interval, sld_charge_journal_t **out);
/* Frees the journal and every entry (call after sld_charge_journal_detach). */
void sld_charge_journal_free(sld_charge_journal_t *j);

/* Makes j the journal of the memory store s (before any decision), or
 * removes it. */
void sld_charge_journal_attach(sld_charge_journal_t *j, sl_store_t *s);
void sld_charge_journal_detach(sl_store_t *s);

/* An sl__pending_fn (ctx: the journal) for sl__memory_import() of a state
 * that includes what was sent: reports what was charged since, and stops
 * counting what was sent as unsynced. */
void sld_charge_journal_pending(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                                uint64_t *costs, sl_usec_t *since);

/* The last sync got no answer (Redis away): keys then decide alone on their
 * whole copy instead of waiting for room (docs/distributed.md). */
void sld_charge_journal_set_offline(sld_charge_journal_t *j, bool offline);

/* ---- the sync's side (the main loop) ------------------------------------------------ */

/* Takes up to `max` dirty entries not in flight for a round: their pending
 * charges become sent. Returns how many, linked by round_next from *round. */
size_t sld_charge_journal_take(sld_charge_journal_t *j, size_t max, sld_journal_entry_t **round);

/* What e's sync carries, counted by p's limits (sent[i] zeroed by the
 * caller, at least SL_MAX_LIMITS), and since when. True when the key was
 * reset since: then nothing is carried and the shared state is to be
 * forgotten (and deleted). */
bool sld_charge_journal_sending(sld_charge_journal_t *j, sld_journal_entry_t *e, const sl_policy_t *p,
                                uint64_t *sent, sl_usec_t *since);

/* e's sync was written (its state imported): sent is in Redis now. */
void sld_charge_journal_written(sld_charge_journal_t *j, sld_journal_entry_t *e);
/* e's sync did not land: sent goes back to pending, for the next round. */
void sld_charge_journal_give_back(sld_charge_journal_t *j, sld_journal_entry_t *e);
/* e's sync, of shared version `version`, got no answer: it may have been
 * written. Remembered, so that a later conflict that answers with that
 * version does not count its charges twice. Then give it back. */
void sld_charge_journal_lost(sld_charge_journal_t *j, sld_journal_entry_t *e,
                             const unsigned char *version);
/* A conflict answered with the state `value` (version first): when that is
 * one of e's lost syncs, what it carried is taken off sent (it is in Redis
 * already) and true. The lost syncs are forgotten either way. */
bool sld_charge_journal_settle(sld_charge_journal_t *j, sld_journal_entry_t *e,
                               const void *value, size_t len);
/* A reset came while e's sync was out: true, and what it carried is
 * dropped (the caller deletes what it may have written). */
bool sld_charge_journal_reset_meanwhile(sld_charge_journal_t *j, sld_journal_entry_t *e);
/* e's policy is gone: what it carries is dropped. */
void sld_charge_journal_drop(sld_charge_journal_t *j, sld_journal_entry_t *e);
/* Frees e (taken for a round): its key gets a new entry at its next
 * charge; what it held is dropped. */
void sld_charge_journal_retire(sld_charge_journal_t *j, sld_journal_entry_t *e);
/* Ages the entries by `rounds` rounds; those with nothing to sync for
 * SLD_JOURNAL_IDLE_ROUNDS go. */
#define SLD_JOURNAL_IDLE_ROUNDS 100
void sld_charge_journal_sweep(sld_charge_journal_t *j, uint32_t rounds);

/* Forgets what the journal holds of (p, key): a reset key starts afresh
 * (the sync drops what is in flight and deletes Redis's copy). */
void sld_charge_journal_forget(sld_charge_journal_t *j, const sl_policy_t *p, const void *key,
                               size_t key_len);

typedef struct sld_charge_journal_stats {
    uint64_t keys;      /* entries */
    uint64_t unsynced;  /* ... with charges Redis has not merged yet */
    uint64_t dropped;   /* charges given up: journal full, or policy gone */
} sld_charge_journal_stats_t;

void sld_charge_journal_stats(sld_charge_journal_t *j, sld_charge_journal_stats_t *out);

/* The entry of (p, key), or NULL (for tests; the entry may change under a
 * concurrent charge). */
sld_journal_entry_t *sld_charge_journal_find(sld_charge_journal_t *j, const sl_policy_t *p,
                                             const void *key, size_t key_len);

#endif
