/* heavy_hitters.h -- who is being limited: per policy, the keys with the
 * most requests and the most denials over the last minute and the last
 * hour, in bounded memory.
 *
 * A Space-Saving sketch (Metwally et al.) of k counters per (worker,
 * policy slot, minute, requests|denials): a key already counted is bumped,
 * a new key takes the least counter's place and inherits its count. A ring
 * of 60 per-minute sketches per (worker, slot), allocated on the slot's
 * first decision, is merged on read: "minute" is the current and the
 * previous minute (60 to 120 s of traffic), "hour" the last 60 minutes.
 *
 * Error bound: in one sketch of k counters over N updates every count is
 * at most N/k over the truth and every key counted more than N/k times is
 * there. Merging adds counts key by key (0 where a sketch lacks the key), so
 * over a window of N updates every reported count is within N/k of the
 * truth, either way, and every key with more than N/k of them is reported.
 *
 * Sampling, under load: a worker counts every decision of a second up to
 * `sample_above` of them (all policies together), and past that one in
 * SLD_HH_SAMPLE of the rest (random gaps of mean SLD_HH_SAMPLE), each as SLD_HH_SAMPLE
 * (weighted Space-Saving: the bound above holds for the weights). A quiet
 * daemon is counted exactly; a busy one pays the sketch on one decision
 * in 16, and a key's count then also carries the sampling's error, about
 * 4 sqrt(count) either way (one standard deviation) for the sampled part.
 * sample_above 0 counts every decision.
 *
 * Threads: each worker writes only its own sketches, under its own spin lock,
 * which nobody else takes except a reader (sld_hh_top), briefly, per worker:
 * uncontended on the decision path.
 *
 * Keys are kept up to SLD_HH_KEY_MAX bytes (longer ones are cut and
 * marked); with keys "hash" a key is kept as the hex of a 64-bit hash, with
 * "hide" it is counted by that hash but never shown.
 *
 * Not here: rendering (http_stats.c), the decision path (the daemon's
 * engine hook calls sld_hh_weight and sld_hh_note_weighted).
 */
#ifndef SL_SERVER_HEAVY_HITTERS_H
#define SL_SERVER_HEAVY_HITTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLD_HH_KEY_MAX 64          /* bytes of a key kept */
#define SLD_HH_COUNTERS_DEFAULT 64 /* k */
#define SLD_HH_COUNTERS_MAX 1024
#define SLD_HH_MINUTES 60          /* the ring: one sketch pair per minute */
#define SLD_HH_SAMPLE 16           /* past sample_above a second: one in this many */
#define SLD_HH_SAMPLE_ABOVE_DEFAULT 1000 /* the daemon's: decisions a second per worker */

typedef enum sld_hh_keys {
    SLD_HH_SHOW, /* the policy's key as it came (IPv6 by prefix) */
    SLD_HH_HASH, /* the hex of its 64-bit FNV-1a hash */
    SLD_HH_HIDE, /* counted by hash, shown as nothing */
} sld_hh_keys_t;

typedef struct sld_hh_options {
    uint32_t counters;   /* k per sketch, 0: SLD_HH_COUNTERS_DEFAULT */
    sld_hh_keys_t keys;
    uint32_t sample_above; /* decisions a second per worker counted one by one; 0: all */
} sld_hh_options_t;

typedef enum sld_hh_window { SLD_HH_MINUTE, SLD_HH_HOUR } sld_hh_window_t;
typedef enum sld_hh_what { SLD_HH_REQUESTS, SLD_HH_DENIALS } sld_hh_what_t;

/* One reported key. */
typedef struct sld_hh_entry {
    char key[SLD_HH_KEY_MAX + 1]; /* NUL-terminated; may hold NULs (key_len counts) */
    size_t key_len;               /* 0 with keys "hide" */
    bool truncated;               /* the key was longer than SLD_HH_KEY_MAX */
    uint64_t count;               /* estimate: within bound of the truth */
} sld_hh_entry_t;

typedef struct sld_hh sld_hh_t;

/* One worker's sampling state, its owner's alone. Public so that the
 * decision path tests it inline (sld_hh_weight): a note sampled out then
 * costs a decrement and no call. */
typedef struct sld_hh_sampler {
    _Alignas(64) int64_t second;  /* now_us / 1 s of the last note; -1: none */
    uint32_t in_second;           /* notes in that second */
    uint32_t skip;                /* sampled-out notes before the next one counted */
    uint64_t rng;                 /* xorshift64 state, never 0 */
} sld_hh_sampler_t;

/* The head of every sld_hh_t (its first member): what sld_hh_weight reads. */
typedef struct sld_hh_head {
    uint32_t workers, sample_above;
    sld_hh_sampler_t *samplers;   /* [workers] */
} sld_hh_head_t;

/* What worker w's note at `second` (now_us / 1 s) weighs: 0 (sampled
 * out: nothing to do), 1, or SLD_HH_SAMPLE (past the exact part of the
 * second: one note in SLD_HH_SAMPLE, the gaps between them drawn at random
 * from 1 .. 2 SAMPLE - 1, mean SAMPLE). w out of range: 1 (sld_hh_note_weighted
 * counts it dropped). */
static inline uint32_t sld_hh_weight(sld_hh_t *hh, uint32_t w, int64_t second) {
    const sld_hh_head_t *h = (const sld_hh_head_t *)hh;
    if (h->sample_above == 0 || w >= h->workers)
        return 1;
    sld_hh_sampler_t *s = &h->samplers[w];
    if (second != s->second) {
        s->second = second;
        s->in_second = 0;
    }
    if (++s->in_second <= h->sample_above)
        return 1;
    if (s->skip > 0) {
        s->skip--;
        return 0;
    }
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    s->skip = (uint32_t)((s->rng >> 32) % (2 * SLD_HH_SAMPLE - 1)); /* the high bits: xorshift's best */
    return SLD_HH_SAMPLE;
}

/* Sketches for `workers` workers and policy slots [0, slots): SL_OK,
 * SL_EINVAL (zero workers or slots, counters over SLD_HH_COUNTERS_MAX),
 * SL_ENOMEM. Memory per (worker, slot) used: 2 * 60 * k counters of about
 * 96 bytes (k = 64: 737 KiB), allocated on the slot's first decision. */
int sld_hh_new(uint32_t workers, uint32_t slots, const sld_hh_options_t *o, sld_hh_t **out);
void sld_hh_free(sld_hh_t *hh);

/* Worker w decided on key[0..len) under `slot` at now_us (any clock, us):
 * one request, and one denial when `denied`. Only worker w's thread calls
 * this for w. Slots out of range, and the rare failed allocation, are
 * counted in sld_hh_dropped and otherwise ignored. */
void sld_hh_note(sld_hh_t *hh, uint32_t w, uint32_t slot, const void *key, size_t len,
                 bool denied, int64_t now_us);

/* sld_hh_note in two: the weight of the note (sld_hh_weight, inline) and,
 * when not 0, the counting, here. Every note of w goes through
 * sld_hh_weight exactly once, as sld_hh_note does. */
void sld_hh_note_weighted(sld_hh_t *hh, uint32_t w, uint32_t slot, const void *key, size_t len,
                          bool denied, int64_t now_us, uint32_t weight);

/* The top n keys of `slot` over `window` ending at now_us, by count
 * descending: fills out[0..returned), *total (the updates in the window,
 * N) and *bound (N/k: how far any count may be from the truth). Any thread. */
size_t sld_hh_top(sld_hh_t *hh, uint32_t slot, sld_hh_window_t window, sld_hh_what_t what,
                  int64_t now_us, sld_hh_entry_t *out, size_t n, uint64_t *total,
                  uint64_t *bound);

/* Notes ignored (slot out of range, no memory). */
uint64_t sld_hh_dropped(const sld_hh_t *hh);
/* The options in force. */
sld_hh_options_t sld_hh_options(const sld_hh_t *hh);

#endif
