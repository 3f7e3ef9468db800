/* test_errors.c -- the one error table (include/sluice.h SL_ERROR_TABLE,
 * src/core/errors.c): every code has its own value, name and message; the
 * values already published never change (they are the ABI), new codes come
 * at the end. */
#include "rig.h"

typedef struct code {
    int value;
    const char *name;    /* "SL_" #name, as the table spells it */
    const char *message;
} code_t;

static const code_t table[] = {
#define X(name, value, msg) {value, "SL_" #name, msg},
    SL_ERROR_TABLE(X)
#undef X
};
#define NCODES (sizeof table / sizeof table[0])

static void every_code_has_its_name_and_message(void **state) {
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        assert_true(table[i].value < 0);
        assert_string_equal(sl_errname(table[i].value), table[i].name);
        assert_string_equal(sl_strerror(table[i].value), table[i].message);
        assert_string_not_equal(sl_strerror(table[i].value), "unknown error");
        assert_string_not_equal(sl_strerror(table[i].value), sl_strerror(SL_OK));
    }
    assert_string_equal(sl_errname(SL_OK), "SL_OK");
    assert_string_equal(sl_strerror(SL_OK), "success");
}

/* One meaning per code: no two share a value, a name or a message. */
static void codes_are_distinct(void **state) {
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        for (size_t k = 0; k < i; k++) {
            assert_int_not_equal(table[i].value, table[k].value);
            assert_string_not_equal(table[i].name, table[k].name);
            assert_string_not_equal(table[i].message, table[k].message);
        }
    }
}

/* The numbers are the ABI: the first nine as published, the later ones
 * after them, with no gap. */
static void values_never_move(void **state) {
    (void)state;
    const int published[] = {SL_EINVAL, SL_ENOMEM, SL_ERANGE, SL_EIO, SL_EFORMAT,
                             SL_ECORRUPT, SL_ESEED, SL_EFULL, SL_ENOTSUP};
    for (size_t i = 0; i < sizeof published / sizeof published[0]; i++)
        assert_int_equal(published[i], -(int)(i + 1));
    for (size_t i = 0; i < NCODES; i++)
        assert_int_equal(table[i].value, -(int)(i + 1));
    assert_int_equal(SL_ENOENT, -10);
    assert_int_equal(SL_ETOOMANY, -11);
    assert_int_equal(SL_ENOCONFIG, -12);
    assert_string_equal(sl_strerror(SL_ENOENT), "no such policy");
    assert_string_equal(sl_strerror(SL_ETOOMANY), "too many distinct parameter sets");
}

static void unknown_codes(void **state) {
    (void)state;
    assert_string_equal(sl_strerror(-(int)NCODES - 1), "unknown error");
    assert_string_equal(sl_errname(-(int)NCODES - 1), "SL_UNKNOWN");
    assert_string_equal(sl_strerror(1), "unknown error");
    assert_string_equal(sl_errname(1), "SL_UNKNOWN");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_its_name_and_message),
        cmocka_unit_test(codes_are_distinct),
        cmocka_unit_test(values_never_move),
        cmocka_unit_test(unknown_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
