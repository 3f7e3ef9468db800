/* decimal.c -- integers as decimal text (see decimal.h).
 *
 * The length is counted first, so the digits go straight to their place,
 * two at a time from a table of "00".."99": about a third of the divisions
 * of one digit at a time, and no copy from a scratch array.
 */
#include <string.h>

#include "server/base/decimal.h"

static const char pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static unsigned digits(uint64_t v) {
    unsigned n = 1;
    for (uint64_t t = 10; n < SLD_DEC_MAX && v >= t; t *= 10)
        n++;
    return n;
}

char *sld_dec_u64(char *dst, uint64_t v) {
    char *end = dst + digits(v), *p = end;
    while (v >= 100) {
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        p -= 2;
        memcpy(p, pairs + k, 2);
    }
    if (v >= 10)
        memcpy(p - 2, pairs + v * 2, 2);
    else
        p[-1] = (char)('0' + v);
    return end;
}

char *sld_dec_i64(char *dst, int64_t v) {
    if (v >= 0)
        return sld_dec_u64(dst, (uint64_t)v);
    *dst = '-';
    return sld_dec_u64(dst + 1, 0 - (uint64_t)v);
}
