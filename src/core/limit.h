/* limit.h -- one compiled limit, the state it works on, and what it decides.
 *
 * The layer under policies: validation of an sl_limit_t into the form the
 * algorithms use (effective capacity, scaled rates, a stable state id), and
 * dispatch of decide/commit to the algorithm. Pure: no clock, no allocation,
 * no locks. Out-of-line state (sliding_log rings, sub-window counters) lives
 * in an sl__block_t that the caller allocates when sl__limit_block_need() asks.
 */
#ifndef SL_CORE_LIMIT_H
#define SL_CORE_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

typedef enum sl__family {
    SL__RATE,    /* gcra, token_bucket, leaky_bucket: virtual scheduling */
    SL__WINDOW,  /* fixed_window, sliding_window: counters per window */
    SL__LOG      /* sliding_log: timestamps */
} sl__family_t;

/* Largest limit of the counter algorithms (counters are 32-bit in the slot). */
#define SL__MAX_WINDOW_LIMIT UINT32_MAX
/* Largest sliding_log: 4 MiB of timestamps per key is already absurd. */
#define SL__MAX_LOG_LIMIT (UINT32_C(1) << 20)
/* Most sub-windows of a sliding_window. */
#define SL__MAX_PRECISION 65536u
/* sliding_log timestamps are 32-bit (wrapping) up to this period, 64-bit above. */
#define SL__LOG_NARROW_MAX_PERIOD (INT64_C(1) << 31)

typedef struct sl__limit {
    sl_algorithm_t algorithm;
    sl__family_t family;
    bool shaper;
    bool count_denied;
    uint64_t nominal;     /* capacity as configured, reported as the limit */
    uint64_t capacity;    /* effective capacity (soft mode adds its tolerance) */
    uint64_t rate;        /* effective units per period */
    sl_usec_t period;     /* us */
    /* SL__RATE: time is scaled by `rate` (1 unit = 1/rate us), so a request of
     * cost 1 is `period` units long and no division ever rounds. */
    int64_t tau;          /* capacity * period: the tolerance, scaled */
    int64_t debt_max;     /* largest debt kept: tau, or 2*tau with count_denied */
    int64_t debt_hold;    /* largest debt a reservation may leave: tau + wait_max*rate */
    sl_usec_t wait_max;   /* longest wait a reservation may hold, us (0: none) */
    /* SL__WINDOW */
    uint32_t precision;   /* sub-windows; 0 for fixed_window */
    sl_usec_t sub;        /* sub-window length, us */
    uint64_t id;          /* names this limit's state: policy name + effective
                             parameters, so unchanged limits keep their state */
} sl__limit_t;

/* A flag in the word of a gcra/token/leaky or fixed_window state: the state
 * holds reservations (sl__limit_reserve_commit), so it may lie as far ahead
 * of the clock as wait_max allows before it means the clock went back.
 * States without it are read exactly as before reservations existed (and as
 * the Redis scripts read them). */
#define SL__HELD (UINT64_C(1) << 63)

/* Out-of-line state. Logs are rings of timestamps, oldest at `head`:
 * LOG32 holds them modulo 2^32 us (periods up to 2^31 us, ~35 min), LOG64
 * whole. COUNTERS holds precision+1 sub-window counters indexed by
 * sub-window number modulo cap. A block describes its entries and points
 * at them: they follow it (sl__block_init) or lie where the store keeps
 * them (the memory store's slabs hold only the entries, and the block is a
 * view built for one decision). */
enum { SL__BLOCK_NONE = 0, SL__BLOCK_LOG32 = 1, SL__BLOCK_LOG64 = 2, SL__BLOCK_COUNTERS = 3 };

#define SL__MAX_BLOCK_CAP (UINT32_C(1) << 24)

typedef struct sl__block {
    uint32_t kind;
    uint32_t cap;    /* entries (LOG32/COUNTERS) or entry pairs (LOG64) */
    uint32_t head;
    uint32_t count;
    uint32_t *data;  /* cap words, or 2*cap for LOG64 */
} sl__block_t;

/* 32-bit words per entry of a block of `kind`. */
static inline uint32_t sl__block_words(uint32_t kind) { return kind == SL__BLOCK_LOG64 ? 2 : 1; }

/* Bytes of the entries of a block of `kind` with room for `cap`: worked
 * in size_t, where a 64-bit one holds 8 * UINT32_MAX. */
static inline size_t sl__block_data_bytes(uint32_t kind, uint32_t cap) {
    return 4 * (size_t)sl__block_words(kind) * cap;
}

/* The state of one limit for one key, as the store hands it over. A state
 * with expire_at <= now has fully recovered and means "new key". */
typedef struct sl__cell {
    sl_usec_t expire_at;  /* when the state has fully recovered */
    uint64_t word;        /* inline state: fraction, count or two counters */
    sl__block_t *block;   /* out-of-line state or NULL */
    bool dirty;           /* decide rebased the state (the clock went back):
                             write it back even if nothing was charged */
} sl__cell_t;

typedef struct sl__verdict {
    bool allowed;
    uint64_t remaining_now;      /* unit-cost requests that pass now */
    uint64_t remaining_charged;  /* ... after charging this request (allowed) */
    sl_usec_t reset_now;         /* until recovered, as the state is */
    sl_usec_t reset_charged;     /* ... after charging this request (allowed) */
    sl_usec_t retry_after;       /* denied: until this cost passes; SL_NEVER */
    sl_usec_t delay;             /* shaper: how long the admitted request waits */
} sl__verdict_t;

/* Validates `in` and fills `out`. soft_percent scales capacity and rate.
 * On error returns SL_EINVAL/SL_ERANGE and sets *why to a static reason. */
int sl__limit_compile(const sl_limit_t *in, uint32_t soft_percent, uint64_t policy_id,
                      sl__limit_t *out, const char **why);

/* Decides a request of `cost` at `now` (0 <= now <= SL__MAX_TIME) without
 * charging it. May tidy the cell's block (drop expired log entries, clear old
 * counters): that changes no decision. A state that lies further in the
 * future than any request could have put it means the clock went back: it is
 * shifted back by the jump (at most a full limit's worth remains) and the
 * cell marked dirty, so one backward step never locks a key out for longer
 * than the limit's own period. */
void sl__limit_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                      sl__verdict_t *v);

/* Decides a reservation (sl_reserve): as sl__limit_decide, but a request
 * the limit would deny now passes when its place in the limit's schedule
 * comes within min(max_wait, wait_max); v->delay is then how long until
 * that place (a shaper's: until it leaves the queue). Only for limits with
 * wait_max > 0 (the rate family and fixed_window). */
void sl__limit_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl__verdict_t *v);

/* Charges a reservation decided by sl__limit_reserve at `now`, for a request
 * that runs at `at` (now + the policy's largest delay, within wait_max). A
 * limit whose own place comes at `at` keeps its exact schedule; one whose
 * place is earlier is charged as if the request arrived at `at`. */
void sl__limit_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                              uint64_t cost);

/* The block kind of this limit's state, SL__BLOCK_NONE for inline state. */
uint32_t sl__limit_block_kind(const sl__limit_t *l);

/* Block capacity needed to commit `cost` (called after decide), or 0 when the
 * cell's block (if any) is big enough. */
uint32_t sl__limit_block_need(const sl__limit_t *l, const sl__cell_t *cell, uint64_t cost);

/* Charges `cost` (after decide, with the block big enough). Used for admitted
 * requests and, with count_denied, for denied ones. */
void sl__limit_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost);

/* Whether `b` is the kind of block this limit's state uses (a state read
 * from a snapshot could claim anything). */
bool sl__limit_block_fits(const sl__limit_t *l, const sl__block_t *b);

/* Whether a cell read from outside (another daemon's state) is one this
 * limit's algorithm could have written: blocks are checked apart
 * (sl__block_valid, sl__limit_block_fits); this checks the rest. */
bool sl__limit_cell_valid(const sl__limit_t *l, const sl__cell_t *cell);

/* Bytes of a block of `kind` holding `cap` entries, its entries after it. */
size_t sl__block_size(uint32_t kind, uint32_t cap);
/* Prepares caller memory of sl__block_size(kind, cap) bytes as an empty
 * block whose entries follow it. */
void sl__block_init(sl__block_t *b, uint32_t kind, uint32_t cap);
/* Copies the live content of `from` into the larger, initialised `to`. */
void sl__block_move(const sl__block_t *from, sl__block_t *to);
/* Whether a block read from outside (a snapshot) is structurally sound. */
bool sl__block_valid(const sl__block_t *b);

/* Per-family entry points (gcra.c, window.c, sliding_log.c). */
void sl__rate_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                     sl__verdict_t *v);
void sl__rate_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost);
void sl__rate_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                      sl_usec_t max_wait, sl__verdict_t *v);
void sl__rate_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                             uint64_t cost);
/* Takes a reservation's cost off a state that still ends where it left it
 * (refund.c checks which); false: not exactly possible, cell unchanged. */
bool sl__rate_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost);
void sl__fixed_reserve(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl_usec_t max_wait, sl__verdict_t *v);
void sl__fixed_reserve_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, sl_usec_t at,
                              uint64_t cost);
/* Uncounts cost from the window holding `at`, if that is the state's last. */
bool sl__fixed_refund(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t at, uint64_t cost);
void sl__window_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                       sl__verdict_t *v);
void sl__window_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost);
void sl__log_decide(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost,
                    sl__verdict_t *v);
uint32_t sl__log_need(const sl__limit_t *l, const sl__cell_t *cell, uint64_t cost);
bool sl__log_valid(const sl__limit_t *l, const sl__cell_t *cell);
void sl__log_commit(const sl__limit_t *l, sl__cell_t *cell, sl_usec_t now, uint64_t cost);

#endif
