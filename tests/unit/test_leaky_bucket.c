/* test_leaky_bucket.c -- leaky_bucket as a meter and as a shaper (queue). */
#include "rig.h"

/* Outflow 1 per second, room for 3. */
static const sl_limit_t meter = {.algorithm = SL_LEAKY_BUCKET, .limit = 1, .period = SEC(1), .burst = 3};

static void meter_admits_while_there_is_room(void **state) {
    (void)state;
    rig_t *r = rig_one(meter);
    for (int i = 0; i < 3; i++) {
        sl_decision_t d = rig_check(r, "k");
        assert_true(d.allowed);
        assert_int_equal(d.delay, 0);
    }
    sl_decision_t d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(1));
    assert_true(rig_allowed_at(r, SEC(1), "k"));
    assert_false(rig_allowed_at(r, SEC(1), "k"));
    /* Leaked empty after 3 s. */
    r->now = SEC(4);
    assert_int_equal(rig_peek_cost(r, "k", 1).remaining, 3);
    rig_free(r);
}

static void shaper_delays_and_denies_when_full(void **state) {
    (void)state;
    sl_limit_t shaper = meter;
    shaper.shaper = true;
    rig_t *r = rig_one(shaper);
    /* A burst: the first goes at once, the next wait their turn. */
    assert_int_equal(rig_check(r, "k").delay, 0);
    sl_decision_t d = rig_check(r, "k");
    assert_true(d.allowed);
    assert_int_equal(d.delay, SEC(1));
    d = rig_check(r, "k");
    assert_true(d.allowed);
    assert_int_equal(d.delay, SEC(2));
    /* The queue is full. */
    d = rig_check(r, "k");
    assert_false(d.allowed);
    assert_int_equal(d.delay, 0);
    assert_int_equal(d.retry_after, SEC(1));
    /* One has left: room for one more, at the back of the queue. */
    r->now = SEC(1);
    d = rig_check(r, "k");
    assert_true(d.allowed);
    assert_int_equal(d.delay, SEC(2));
    /* Half a second later the queue is still full. */
    r->now = MS(1500);
    assert_false(rig_check(r, "k").allowed);
    /* Requests spaced at the outflow rate are never delayed. */
    r->now = SEC(10);
    for (int i = 0; i < 10; i++) {
        d = rig_check(r, "k");
        assert_true(d.allowed);
        assert_int_equal(d.delay, 0);
        r->now += SEC(1);
    }
    rig_free(r);
}

static void shaper_applies_to_leaky_bucket_only(void **state) {
    (void)state;
    const char *why = NULL;
    sl_limit_t bad = {.algorithm = SL_TOKEN_BUCKET, .limit = 1, .period = SEC(1), .shaper = true};
    assert_int_equal(sl_limit_validate(&bad, &why), SL_EINVAL);
    assert_non_null(strstr(why, "shaper"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(meter_admits_while_there_is_room),
        cmocka_unit_test(shaper_delays_and_denies_when_full),
        cmocka_unit_test(shaper_applies_to_leaky_bucket_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
