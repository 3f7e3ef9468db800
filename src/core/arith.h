/* arith.h -- overflow-safe integer helpers shared by the algorithms.
 *
 * Not a general math library: only what the decisions need, all inline.
 * 128-bit intermediates come from the compiler (__int128 on 64-bit targets).
 */
#ifndef SL_CORE_ARITH_H
#define SL_CORE_ARITH_H

#include <stdint.h>

__extension__ typedef unsigned __int128 sl__u128;

/* Latest instant the library accepts: year ~148,000. Clamping now to it keeps
 * now + period (period <= SL__MAX_PERIOD) inside int64. */
#define SL__MAX_TIME (INT64_C(1) << 62)
#define SL__MAX_PERIOD (INT64_C(1) << 61)

static inline uint64_t sl__sat_add_u64(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t sl__sat_sub_u64(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static inline uint32_t sl__sat_add_u32(uint32_t a, uint64_t b) {
    return b >= (uint64_t)(UINT32_MAX - a) ? UINT32_MAX : a + (uint32_t)b;
}

/* ceil(a / b) for a >= 0, b > 0. */
static inline int64_t sl__ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

static inline uint64_t sl__gcd_u64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static inline int64_t sl__max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t sl__min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline uint64_t sl__minu64(uint64_t a, uint64_t b) { return a < b ? a : b; }

#endif
