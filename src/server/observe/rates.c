/* rates.c -- per-second rings of decisions, per worker and policy (rates.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/observe/rates.h"
#include "sluice.h"

typedef struct second {
    _Atomic int64_t at;                 /* the second it counts (now_us / 1e6); -1: none */
    _Atomic uint32_t n[SLD_RATE_COLUMNS];
} second_t;

typedef struct ring {
    second_t s[SLD_RATES_SECONDS];
} ring_t;

struct sld_rates {
    uint32_t workers, slots;
    _Atomic(ring_t *) *rings;           /* [worker * slots + slot] */
};

int sld_rates_new(uint32_t workers, uint32_t slots, sld_rates_t **out) {
    if (workers == 0 || slots == 0)
        return SL_EINVAL;
    sld_rates_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return SL_ENOMEM;
    r->workers = workers;
    r->slots = slots;
    r->rings = calloc((size_t)workers * slots, sizeof *r->rings);
    if (r->rings == NULL) {
        free(r);
        return SL_ENOMEM;
    }
    *out = r;
    return SL_OK;
}

void sld_rates_free(sld_rates_t *r) {
    if (r == NULL)
        return;
    for (size_t i = 0; i < (size_t)r->workers * r->slots; i++)
        free(atomic_load(&r->rings[i]));
    free(r->rings);
    free(r);
}

/* A worker's first decision under a slot: its ring, all seconds unused.
 * Out of line, so the note itself saves no registers for it. */
__attribute__((noinline)) static ring_t *ring_new(_Atomic(ring_t *) *at) {
    ring_t *ring = malloc(sizeof *ring);
    if (ring == NULL)
        return NULL;
    for (size_t i = 0; i < SLD_RATES_SECONDS; i++) {
        atomic_init(&ring->s[i].at, -1);
        for (size_t k = 0; k < SLD_RATE_COLUMNS; k++)
            atomic_init(&ring->s[i].n[k], 0);
    }
    atomic_store_explicit(at, ring, memory_order_release); /* only its worker writes it */
    return ring;
}

/* Worker w's counts of `slot` for second sec, emptied first when they
 * still hold an older second; NULL without memory for the ring. */
static second_t *second_of(sld_rates_t *r, uint32_t w, uint32_t slot, int64_t sec) {
    _Atomic(ring_t *) *at = &r->rings[(size_t)w * r->slots + slot];
    ring_t *ring = atomic_load_explicit(at, memory_order_acquire);
    if (ring == NULL && (ring = ring_new(at)) == NULL)
        return NULL;
    second_t *s = &ring->s[sec % SLD_RATES_SECONDS];
    if (atomic_load_explicit(&s->at, memory_order_relaxed) != sec) {
        for (size_t k = 0; k < SLD_RATE_COLUMNS; k++)
            atomic_store_explicit(&s->n[k], 0, memory_order_relaxed);
        atomic_store_explicit(&s->at, sec, memory_order_release);
    }
    return s;
}

void sld_rates_note(sld_rates_t *r, uint32_t w, uint32_t slot, sld_result_t result, bool delayed,
                    int64_t now_us) {
    if (now_us >= 0)
        sld_rates_note_second(r, w, slot, result, delayed, now_us / 1000000);
}

void sld_rates_note_second(sld_rates_t *r, uint32_t w, uint32_t slot, sld_result_t result,
                           bool delayed, int64_t sec) {
    if (w >= r->workers || slot >= r->slots || sec < 0 || result >= SLD_RESULTS)
        return;
    second_t *s = second_of(r, w, slot, sec);
    if (s == NULL)
        return;
    uint32_t v = atomic_load_explicit(&s->n[result], memory_order_relaxed);
    atomic_store_explicit(&s->n[result], v + 1, memory_order_relaxed);
    if (delayed) {
        v = atomic_load_explicit(&s->n[SLD_RATE_DELAYED], memory_order_relaxed);
        atomic_store_explicit(&s->n[SLD_RATE_DELAYED], v + 1, memory_order_relaxed);
    }
}

void sld_rates_add_second(sld_rates_t *r, uint32_t w, uint32_t slot, int64_t sec,
                          const uint32_t n[SLD_RATE_COLUMNS]) {
    if (w >= r->workers || slot >= r->slots || sec < 0)
        return;
    second_t *s = second_of(r, w, slot, sec);
    if (s == NULL)
        return;
    for (size_t k = 0; k < SLD_RATE_COLUMNS; k++)
        if (n[k]) {
            uint32_t v = atomic_load_explicit(&s->n[k], memory_order_relaxed);
            atomic_store_explicit(&s->n[k], v + n[k], memory_order_relaxed);
        }
}

int sld_rates_read(sld_rates_t *r, uint32_t slot, int64_t now_us, uint32_t seconds,
                   uint64_t (*out)[SLD_RATE_COLUMNS]) {
    if (seconds > SLD_RATES_SECONDS)
        seconds = SLD_RATES_SECONDS;
    memset(out, 0, sizeof *out * seconds);
    if (slot >= r->slots || now_us < 0)
        return 0;
    int64_t now = now_us / 1000000;
    int any = 0;
    for (uint32_t w = 0; w < r->workers; w++) {
        ring_t *ring = atomic_load_explicit(&r->rings[(size_t)w * r->slots + slot], memory_order_acquire);
        if (ring == NULL)
            continue;
        any = 1;
        for (uint32_t i = 0; i < seconds; i++) {
            int64_t sec = now - seconds + i;
            if (sec < 0)
                continue;
            second_t *s = &ring->s[sec % SLD_RATES_SECONDS];
            if (atomic_load_explicit(&s->at, memory_order_acquire) != sec)
                continue;
            for (size_t k = 0; k < SLD_RATE_COLUMNS; k++)
                out[i][k] += atomic_load_explicit(&s->n[k], memory_order_relaxed);
        }
    }
    return any;
}
