/* test_decimal.c -- integers as decimal text (src/server/base/decimal.c):
 * every digit count, each side of every power of ten, the extremes of both
 * types, against snprintf; nothing written past the returned end. */
#include <inttypes.h>
#include <stdio.h>

#include "rig.h"
#include "server/base/decimal.h"

#define GUARD '#'

static void same_as_printf_u64(uint64_t v) {
    char want[32], got[SLD_DEC_MAX + 8];
    snprintf(want, sizeof want, "%" PRIu64, v);
    memset(got, GUARD, sizeof got);
    char *end = sld_dec_u64(got, v);
    assert_int_equal((size_t)(end - got), strlen(want));
    assert_memory_equal(got, want, strlen(want));
    assert_int_equal(*end, GUARD);
}

static void same_as_printf_i64(int64_t v) {
    char want[32], got[SLD_DEC_MAX + 8];
    snprintf(want, sizeof want, "%" PRId64, v);
    memset(got, GUARD, sizeof got);
    char *end = sld_dec_i64(got, v);
    assert_true(end - got <= SLD_DEC_MAX);
    assert_int_equal((size_t)(end - got), strlen(want));
    assert_memory_equal(got, want, strlen(want));
    assert_int_equal(*end, GUARD);
}

static void u64_every_length(void **state) {
    (void)state;
    for (uint64_t v = 0; v < 1000; v++)
        same_as_printf_u64(v);
    uint64_t p = 1;
    for (int i = 0; i < 20; i++) { /* 1, 10, ... 10^19, each side */
        same_as_printf_u64(p - 1);
        same_as_printf_u64(p);
        same_as_printf_u64(p + 1);
        if (i < 19) {
            same_as_printf_u64(p * 10 - 1); /* 9..9 */
            p *= 10;
        }
    }
    same_as_printf_u64(UINT64_MAX);
    same_as_printf_u64(UINT64_MAX - 1);
    same_as_printf_u64((uint64_t)INT64_MAX + 1);
    char got[SLD_DEC_MAX];
    assert_int_equal(sld_dec_u64(got, UINT64_MAX) - got, SLD_DEC_MAX);
}

static void u64_seeded_walk(void **state) {
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        same_as_printf_u64(x >> (x % 64)); /* every magnitude */
    }
}

static void i64_signs(void **state) {
    (void)state;
    for (int64_t v = -1000; v <= 1000; v++)
        same_as_printf_i64(v);
    same_as_printf_i64(INT64_MAX);
    same_as_printf_i64(INT64_MIN);
    same_as_printf_i64(INT64_MIN + 1);
    same_as_printf_i64(-1000000);
    same_as_printf_i64(-999999);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(u64_every_length),
        cmocka_unit_test(u64_seeded_walk),
        cmocka_unit_test(i64_signs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
