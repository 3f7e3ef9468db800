/* decimal.c -- integers as decimal text (see decimal.h).
 *
 * The length is found first (from the bit length, no loop), so the digits
 * go straight to their place, two at a time from a table of "00".."99":
 * half the divisions of one digit at a time, in 32 bits once the number
 * fits, and no copy from a scratch array.
 */
#include <string.h>

#include "server/base/decimal.h"

static const char pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* 10^t, except 0 for t = 0, so that 0 has one digit like 1..9. */
static const uint64_t powers[SLD_DEC_MAX] = {
    0, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000, 10000000000u,
    100000000000u, 1000000000000u, 10000000000000u, 100000000000000u, 1000000000000000u,
    10000000000000000u, 100000000000000000u, 1000000000000000000u, 10000000000000000000u};

/* From the bit length: 1233/4096 is just under log10(2), so t is the
 * digit count or one less (Bit Twiddling Hacks, "integer log base 10"). */
static unsigned digits(uint64_t v) {
    unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
    unsigned t = bits * 1233 >> 12;
    return t + (v >= powers[t]);
}

char *sld_dec_u64(char *dst, uint64_t v) {
    char *end = dst + digits(v), *p = end;
    while (v > UINT32_MAX) {
        memcpy(p -= 2, pairs + v % 100 * 2, 2);
        v /= 100;
    }
    /* The rest in 32 bits: dividing by 100 is then a short multiply. */
    uint32_t u = (uint32_t)v;
    while (u >= 100) {
        memcpy(p -= 2, pairs + u % 100 * 2, 2);
        u /= 100;
    }
    if (u >= 10)
        memcpy(p - 2, pairs + u * 2, 2);
    else
        p[-1] = (char)('0' + u);
    return end;
}

char *sld_dec_i64(char *dst, int64_t v) {
    if (v >= 0)
        return sld_dec_u64(dst, (uint64_t)v);
    *dst = '-';
    return sld_dec_u64(dst + 1, 0 - (uint64_t)v);
}
