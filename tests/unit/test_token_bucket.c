/* test_token_bucket.c -- token_bucket against hand-computed traces and an
 * independent model of the textbook bucket (tokens and last refill). */
#include "rig.h"

/* The articles' bucket: 4 tokens, refilled 4 per minute (one every 15 s). */
static void bucket_of_four(void **state) {
    (void)state;
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 4, .period = MIN(1)});
    for (int i = 0; i < 4; i++) {
        sl_decision_t d = rig_check(r, "u");
        assert_true(d.allowed);
        assert_int_equal(d.limit, 4);
        assert_int_equal(d.remaining, 3 - i);
    }
    sl_decision_t d = rig_check(r, "u");
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(15));
    assert_int_equal(d.reset_after, SEC(60));
    assert_false(rig_allowed_at(r, SEC(15) - 1, "u"));
    assert_true(rig_allowed_at(r, SEC(15), "u"));
    assert_false(rig_allowed_at(r, SEC(15), "u"));
    /* 45 s later three tokens are back, not more. */
    r->now = SEC(60);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 3);
    assert_true(rig_check(r, "u").allowed);
    assert_true(rig_check(r, "u").allowed);
    assert_true(rig_check(r, "u").allowed);
    assert_false(rig_check(r, "u").allowed);
    /* A bucket never holds more than its capacity. */
    r->now = SEC(3600);
    assert_int_equal(rig_peek_cost(r, "u", 1).remaining, 4);
    rig_free(r);
}

static void capacity_apart_from_rate(void **state) {
    (void)state;
    /* 1 per second, room for 10. */
    rig_t *r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = 1, .period = SEC(1), .burst = 10});
    assert_true(rig_check_cost(r, "u", 10).allowed);
    sl_decision_t d = rig_check_cost(r, "u", 3);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, SEC(3));
    d = rig_check_cost(r, "u", 11);
    assert_int_equal(d.retry_after, SL_NEVER);
    rig_free(r);
}

/* The textbook bucket with exact rational tokens: tokens * period as an
 * integer, refilled by limit per microsecond. */
__extension__ typedef __int128 i128;

typedef struct model {
    uint64_t limit, capacity;
    int64_t period;
    i128 scaled; /* tokens * period */
    int64_t last;
} model_t;

static bool model_take(model_t *m, int64_t now, uint64_t cost) {
    if (now > m->last) {
        m->scaled += (i128)(now - m->last) * m->limit;
        m->last = now;
    }
    i128 full = (i128)m->capacity * m->period;
    if (m->scaled > full)
        m->scaled = full;
    if (m->scaled < (i128)cost * m->period)
        return false;
    m->scaled -= (i128)cost * m->period;
    return true;
}

static void matches_the_textbook_model(void **state) {
    (void)state;
    uint64_t seed = 7;
    for (int round = 0; round < 40; round++) {
        uint64_t limit = 1 + rng_below(&seed, 50);
        sl_usec_t period = 1 + (sl_usec_t)rng_below(&seed, SEC(5));
        uint64_t capacity = 1 + rng_below(&seed, 20);
        rig_t *r = rig_one((sl_limit_t){.algorithm = SL_TOKEN_BUCKET, .limit = limit, .period = period, .burst = capacity});
        model_t m = {limit, capacity, period, (i128)capacity * period, 0};
        for (int i = 0; i < 2000; i++) {
            r->now += (sl_usec_t)rng_below(&seed, (uint64_t)(2 * period / limit + 2));
            uint64_t cost = 1 + rng_below(&seed, capacity + 1);
            bool expect = model_take(&m, r->now, cost);
            sl_decision_t d = rig_check_cost(r, "k", cost);
            if (d.allowed != expect)
                fail_msg("round %d step %d: limit %lu period %ld capacity %lu cost %lu: got %d", round,
                         i, (unsigned long)limit, (long)period, (unsigned long)capacity,
                         (unsigned long)cost, d.allowed);
            /* remaining counts the whole tokens left */
            assert_int_equal(d.remaining, (uint64_t)(m.scaled / period));
        }
        rig_free(r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bucket_of_four),
        cmocka_unit_test(capacity_apart_from_rate),
        cmocka_unit_test(matches_the_textbook_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
