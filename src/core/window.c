/* window.c -- the counter algorithms: fixed_window and sliding_window.
 *
 * fixed_window counts cost per window floor(now/period); the state is the
 * window's end (= when it has recovered) and the count.
 *
 * sliding_window with precision N splits the period into N sub-windows of
 * length s and keeps N+1 counters, indexed by sub-window number modulo N+1.
 * The window (now - period, now] covers the current sub-window and the N-1
 * before it entirely, and the oldest one (N sub-windows back) by the fraction
 * (s - elapsed)/s of it that still lies inside:
 *     estimate = floor(oldest * (s - elapsed) / s) + sum(the N newest)
 * N = 1 is the two-window estimate of the articles: floor(prev * (1 -
 * elapsed/period)) + cur. Its two counters fit in the slot's word; larger N
 * uses a COUNTERS block. The state's expire_at is (j + N + 1) * s for the
 * newest sub-window j: the moment every counter has slid out.
 *
 * Not here: validation (limit.c), storage, clocks.
 */
#include <string.h>

#include "arith.h"
#include "limit.h"

/* ---- fixed_window ---------------------------------------------------------- */

typedef struct fixed_view {
    uint64_t count;
    sl_usec_t end;  /* end of the window the request falls in */
    bool ahead;     /* reservations hold later windows: this one and every
                       one before the last (which ends at `end` and holds
                       `count`) are full */
} fixed_view_t;

/* The end of the last window a reservation made at `now` may hold. */
static sl_usec_t held_end(const sl__limit_t *l, sl_usec_t now) {
    return ((now + l->wait_max) / l->period + 1) * l->period;
}

/* The end of the fixed window holding the moment t. */
static sl_usec_t window_end(const sl__limit_t *l, sl_usec_t t) {
    return (t / l->period + 1) * l->period;
}

/* A stored window that starts after now means the clock went back (unless
 * reservations hold it, within their reach): the count moves to the window
 * of now. */
static fixed_view_t fixed_view(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now) {
    fixed_view_t f;
    sl_usec_t end_now = window_end(l, now);
    f.ahead = false;
    if (cell->expire_at <= now) {
        f.count = 0;
        f.end = end_now;
        return f;
    }
    if (cell->expire_at > end_now) {
        if ((cell->word & SL__HELD) && cell->expire_at <= held_end(l, now)) {
            f.ahead = true;
        } else {
            cell->expire_at = end_now;
            cell->dirty = true;
        }
    }
    f.count = cell->word & ~SL__HELD;
    f.end = cell->expire_at;
    return f;
}

/* Until the first window at or after the last held one with room for cost. */
static sl_usec_t held_retry(const sl__limit_t *l, const fixed_view_t *f, sl_usec_t now,
                            uint64_t cost) {
    return (f->count <= l->capacity - cost ? f->end - l->period : f->end) - now;
}

static void fixed_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now,
                         uint64_t cost, sl__verdict_t *v) {
    fixed_view_t f = fixed_view(l, cell, now);
    if (f.ahead) {
        v->allowed = false;
        v->delay = 0;
        v->remaining_now = v->remaining_charged = 0;
        v->reset_now = v->reset_charged = f.end - now;
        v->retry_after = cost > l->capacity ? SL_NEVER : held_retry(l, &f, now, cost);
        return;
    }
    v->remaining_now = sl__sat_sub_u64(l->capacity, f.count);
    v->reset_now = f.count > 0 ? f.end - now : 0;
    v->delay = 0;
    if (cost <= l->capacity && f.count <= l->capacity - cost) {
        v->allowed = true;
        v->retry_after = 0;
        v->remaining_charged = l->capacity - f.count - cost;
        v->reset_charged = f.count + cost > 0 ? f.end - now : 0;
    } else {
        v->allowed = false;
        v->retry_after = cost > l->capacity ? SL_NEVER : f.end - now;
        v->remaining_charged = v->remaining_now;
        v->reset_charged = v->reset_now;
    }
}

static void fixed_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    fixed_view_t f = fixed_view(l, cell, now);
    cell->expire_at = f.end;
    /* Counted to the last window held (a denied count_denied request). Any
     * count above capacity denies every cost alike: kept small, as the
     * Redis script keeps it, clear of the SL__HELD bit. */
    uint64_t count = sl__sat_add_u64(f.count, cost);
    cell->word = count > l->capacity ? l->capacity + 1 : count;
    if (f.ahead)
        cell->word |= SL__HELD;
}

void sl__fixed_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl__verdict_t *v) {
    fixed_decide(l, cell, now, cost, v);
    if (v->allowed || cost > l->capacity)
        return;
    fixed_view_t f = fixed_view(l, cell, now);
    /* the window it would run in: the last one held (or now's) if it has
     * room, else the one after it */
    sl_usec_t start = f.count <= l->capacity - cost && f.ahead ? f.end - l->period : f.end;
    sl_usec_t wait = max_wait < l->wait_max ? max_wait : l->wait_max;
    if (start - now > wait) {
        v->retry_after = start - now - wait; /* until this wait would be enough */
        return;
    }
    v->allowed = true;
    v->retry_after = 0;
    v->delay = start - now;
    v->remaining_charged = 0;
    v->reset_charged = start + l->period - now;
}

void sl__fixed_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                              uint64_t cost) {
    fixed_view_t f = fixed_view(l, cell, now);
    sl_usec_t end_at = window_end(l, at); /* the window it runs in */
    uint64_t count = end_at == f.end ? sl__sat_add_u64(f.count, cost) : cost;
    /* windows skipped before end_at now count as full: conservative */
    cell->expire_at = end_at;
    cell->word = count & ~SL__HELD;
    if (end_at > window_end(l, now))
        cell->word |= SL__HELD;
}

bool sl__fixed_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t at, uint64_t cost) {
    uint64_t count = cell->word & ~SL__HELD;
    if (cell->expire_at != window_end(l, at) || count < cost)
        return false;
    cell->word = (count - cost) | (cell->word & SL__HELD);
    return true;
}

/* ---- sliding_window ---------------------------------------------------------- */

typedef struct slide_view {
    uint32_t *ctr;    /* ring of m = precision + 1 counters */
    uint32_t m;
    int64_t j;        /* current sub-window number */
    sl_usec_t e;      /* elapsed in it, us */
    uint64_t oldest;  /* counter of sub-window j - N, weighted by (s - e)/s */
    uint64_t newest;  /* sum of sub-windows j-N+1 .. j */
    uint32_t local[2];
} slide_view_t;

static void reverse(uint32_t *a, uint32_t n) {
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t t = a[i];
        a[i] = a[n - 1 - i];
        a[n - 1 - i] = t;
    }
}

/* Sub-window k sits at k mod m; moving every sub-window back by r places is
 * a rotation of the ring. */
static void rotate_left(uint32_t *a, uint32_t m, uint32_t r) {
    if (r == 0)
        return;
    reverse(a, r);
    reverse(a + r, m - r);
    reverse(a, m);
}

/* Brings the counters up to sub-window j: counters of sub-windows that have
 * slid out are cleared. The two counters of precision 1 are a copy of the
 * word; larger precisions are rotated in their block, which changes nothing
 * a later decision sees. */
static void slide_view(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, slide_view_t *w) {
    w->m = l->precision + 1;
    bool inline_ctr = l->precision == 1;
    if (inline_ctr) {
        w->local[0] = (uint32_t)cell->word;
        w->local[1] = (uint32_t)(cell->word >> 32);
        w->ctr = w->local;
    } else {
        w->ctr = cell->block ? cell->block->data : NULL;
    }
    int64_t j = now / l->sub;
    if (cell->expire_at <= now || w->ctr == NULL) {
        if (w->ctr)
            memset(w->ctr, 0, sizeof *w->ctr * w->m);
        w->j = j;
        w->e = now - j * l->sub;
    } else {
        int64_t last = cell->expire_at / l->sub - w->m; /* newest sub-window stored */
        if (j < last) {
            /* The clock went back: the counters move back with it. */
            rotate_left(w->ctr, w->m, (uint32_t)((last - j) % w->m));
            cell->expire_at = (j + w->m) * l->sub;
            if (inline_ctr)
                cell->word = (uint64_t)w->local[0] | (uint64_t)w->local[1] << 32;
            cell->dirty = true;
            last = j;
        }
        w->j = j;
        w->e = now - j * l->sub;
        for (int64_t k = last + 1; k <= j && k <= last + w->m; k++)
            w->ctr[k % w->m] = 0;
    }
    uint64_t total = 0;
    if (w->ctr)
        for (uint32_t i = 0; i < w->m; i++)
            total += w->ctr[i];
    w->oldest = w->ctr ? w->ctr[(w->j + 1) % w->m] : 0;
    w->newest = total - w->oldest;
}

/* Counter of sub-window k; sub-windows outside [j - N, j] hold nothing. */
static uint64_t counter(const slide_view_t *w, int64_t k) {
    if (w->ctr == NULL || k > w->j || k < w->j - (int64_t)(w->m - 1))
        return 0;
    return w->ctr[((k % w->m) + w->m) % w->m];
}

static uint64_t weighted(uint64_t count, sl_usec_t s, sl_usec_t e) {
    return (uint64_t)((sl__u128)count * (uint64_t)(s - e) / (uint64_t)s);
}

static uint64_t slide_estimate(const sl__limit_t *l, const slide_view_t *w) {
    return weighted(w->oldest, l->sub, w->e) + w->newest;
}

/* Smallest elapsed e in [0, s) at which floor(p * (s - e) / s) <= k, or s if
 * none: p*(s-e) < (k+1)*s  <=>  s - e <= ((k+1)*s - 1) / p. */
static sl_usec_t first_elapsed(uint64_t p, uint64_t k, sl_usec_t s) {
    if (p == 0)
        return 0;
    sl__u128 span = ((sl__u128)(k + 1) * (uint64_t)s - 1) / p;
    if (span >= (sl__u128)(uint64_t)s)
        return 0;
    return s - (sl_usec_t)span;
}

/* Until a request of `cost` passes, walking the sub-windows ahead with no new
 * traffic. The estimate only falls, and is 0 once all m have slid out. */
static sl_usec_t slide_retry(const sl__limit_t *l, const slide_view_t *w, uint64_t cost) {
    sl_usec_t now = w->j * l->sub + w->e;
    uint64_t oldest = w->oldest, newest = w->newest;
    for (uint32_t step = 0; step < w->m; step++) {
        int64_t i = w->j + step;
        if (newest + cost <= l->capacity) {
            sl_usec_t e = first_elapsed(oldest, l->capacity - cost - newest, l->sub);
            if (step == 0 && e < w->e)
                e = w->e;
            if (e < l->sub)
                return i * l->sub + e - now;
        }
        /* Into sub-window i+1: sub-window i+1-N becomes the oldest. */
        uint64_t next = counter(w, i + 1 - l->precision);
        oldest = next;
        newest -= next;
    }
    return (w->j + w->m) * l->sub - now;
}

/* Until every counter has slid out: the newest non-zero sub-window k is gone
 * from the window at the end of sub-window k + N. */
static sl_usec_t slide_reset(const sl__limit_t *l, const slide_view_t *w, uint64_t extra) {
    sl_usec_t now = w->j * l->sub + w->e;
    if (extra > 0)
        return (w->j + w->m) * l->sub - now;
    for (uint32_t back = 0; back < w->m; back++)
        if (counter(w, w->j - back) != 0)
            return (w->j - back + w->m) * l->sub - now;
    return 0;
}

static void slide_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                         sl__verdict_t *v) {
    slide_view_t w;
    slide_view(l, cell, now, &w);
    uint64_t est = slide_estimate(l, &w);
    v->remaining_now = sl__sat_sub_u64(l->capacity, est);
    v->reset_now = slide_reset(l, &w, 0);
    v->delay = 0;
    if (cost <= l->capacity && est <= l->capacity - cost) {
        v->allowed = true;
        v->retry_after = 0;
        v->remaining_charged = l->capacity - est - cost;
        v->reset_charged = slide_reset(l, &w, cost);
    } else {
        v->allowed = false;
        v->retry_after = cost > l->capacity ? SL_NEVER : slide_retry(l, &w, cost);
        v->remaining_charged = v->remaining_now;
        v->reset_charged = v->reset_now;
    }
}

static void slide_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    slide_view_t w;
    slide_view(l, cell, now, &w);
    uint32_t *c = &w.ctr[w.j % w.m];
    *c = sl__sat_add_u32(*c, cost);
    cell->expire_at = (w.j + w.m) * l->sub;
    if (l->precision == 1)
        cell->word = (uint64_t)w.local[0] | (uint64_t)w.local[1] << 32;
}

/* ---- entry points ---------------------------------------------------------- */

void sl__window_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl__verdict_t *v) {
    if (l->precision == 0)
        fixed_decide(l, cell, now, cost, v);
    else
        slide_decide(l, cell, now, cost, v);
}

void sl__window_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost) {
    if (l->precision == 0)
        fixed_commit(l, cell, now, cost);
    else
        slide_commit(l, cell, now, cost);
}
