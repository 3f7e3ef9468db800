/* test_sliding_window.c -- sliding_window counters, precision 1 and N. */
#include "rig.h"

/* The articles' example: 7 per minute, 5 in the previous minute, 3 in this
 * one, a request 30% into it: 3 + floor(5 * 0.7) = 6, it passes. */
static void the_articles_example(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 7, .period = MIN(1)});
    for (int i = 0; i < 5; i++)
        assert_true(rig_allowed_at(r, SEC(10 + i), "u"));
    for (int i = 0; i < 3; i++)
        assert_true(rig_allowed_at(r, SEC(61 + i), "u"));
    r->now = SEC(78); /* 30% into the second minute */
    sl_decision_t d = rig_peek_cost(r, "u", 1);
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 1);
    d = rig_check(r, "u");
    assert_true(d.allowed);
    assert_int_equal(d.remaining, 0);
    d = rig_check(r, "u");
    assert_false(d.allowed);
    /* floor(5 * (60 - e) / 60) drops to 2 once 5 * (60 - e) / 60 < 3: just
     * after e = 24 s (at 24 s it is exactly 3). */
    assert_int_equal(d.retry_after, SEC(84) + 1 - SEC(78));
    assert_false(rig_allowed_at(r, SEC(84), "u"));
    assert_true(rig_allowed_at(r, SEC(84) + 1, "u"));
    rig_free(r);
}

static void reset_after_two_windows(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 2, .period = SEC(10)});
    r->now = SEC(3);
    sl_decision_t d = rig_check(r, "u");
    assert_int_equal(d.reset_after, SEC(20) - SEC(3));
    assert_true(rig_check(r, "u").allowed);
    d = rig_check(r, "u");
    assert_false(d.allowed);
    /* In the next window the 2 weigh (10 - e)/10: one fits once
     * floor(2 * (10 - e) / 10) <= 1, i.e. from e = 1 us on. */
    assert_int_equal(d.retry_after, SEC(10) + 1 - SEC(3));
    r->now = SEC(20);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 2);
    rig_free(r);
}

/* 60 sub-windows of a minute over an hour: the articles' "60 counters". */
static void sixty_sub_windows(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 500, .period = MIN(60), .precision = 60});
    /* 10 requests in each of the first 50 minutes. */
    for (int m = 0; m < 50; m++)
        for (int i = 0; i < 10; i++)
            assert_true(rig_allowed_at(r, MIN(m) + SEC(i), "u"));
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.allowed);
    /* Minute 0 starts to slide out just after 60:00. */
    assert_int_equal(d.retry_after, MIN(60) + 1 - (MIN(49) + SEC(9)));
    /* At 60:00 minute 0 is the oldest sub-window with full weight... */
    assert_false(rig_allowed_at(r, MIN(60), "u"));
    /* ... and one tenth of the way through 60:06 its weight is 9/10. */
    r->now = MIN(60) + SEC(6);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 1);
    rig_free(r);
}

static void precision_must_divide_the_period(void **state) {
    (void)state;
    const char *why = NULL;
    sl_limit_t l = {.algorithm = SL_SLIDING_WINDOW, .limit = 10, .period = SEC(10), .precision = 7};
    assert_int_equal(sl_limit_validate(&l, &why), SL_EINVAL);
    assert_non_null(strstr(why, "multiple"));
    l.precision = 65537;
    l.period = 65537;
    assert_int_equal(sl_limit_validate(&l, &why), SL_ERANGE);
}

static void time_going_backwards(void **state) {
    (void)state;
    for (uint32_t precision = 1; precision <= 10; precision += 9) {
        rig_t *r = rig_one((sl_limit_t){.algorithm = SL_SLIDING_WINDOW, .limit = 2, .period = SEC(10), .precision = precision});
        r->now = MIN(100) + SEC(5);
        assert_true(rig_check(r, "u").allowed);
        assert_true(rig_check(r, "u").allowed);
        r->now = MIN(40) + SEC(5);
        sl_decision_t d = rig_check(r, "u");
        assert_false(d.allowed);
        assert_true(d.retry_after <= SEC(20));
        r->now += d.retry_after;
        assert_true(rig_check(r, "u").allowed);
        rig_free(r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_articles_example),
        cmocka_unit_test(reset_after_two_windows),
        cmocka_unit_test(sixty_sub_windows),
        cmocka_unit_test(precision_must_divide_the_period),
        cmocka_unit_test(time_going_backwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
