/* test_throttle.c -- the table of CL.THROTTLE / GCRA policies
 * (src/server/engine/throttle.c): one policy per distinct parameter set
 * (shared by threads that race to create it), the bound on distinct sets,
 * and one node's share. */
#include <pthread.h>

#include "rig.h"
#include "server/engine/throttle.h"

static void test_one_policy_per_parameter_set(void **state) {
    (void)state;
    sld_throttles_t *t;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    const sl_policy_t *p1, *p2, *p3, *local;
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p1, &local), SL_OK);
    assert_ptr_equal(local, p1); /* one node: its share is the whole limit */
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p2, NULL), SL_OK);
    assert_ptr_equal(p1, p2);
    assert_int_equal(sld_throttles_get(t, 14, 2000000000, &p3, NULL), SL_OK);
    assert_ptr_not_equal(p1, p3);
    const sl_limit_t *l = sl_policy_limit(p1, 0);
    assert_int_equal(l->algorithm, SL_GCRA);
    assert_int_equal(l->burst, 15);
    /* 1000 per interval_ns microseconds: an emission interval of interval_ns ns */
    assert_int_equal(l->limit, 1000);
    assert_int_equal(l->period, 2000000000);
    sld_throttles_free(t);
}

static void test_list_every_set(void **state) {
    (void)state;
    sld_throttles_t *t;
    assert_int_equal(sld_throttles_new(2, &t), SL_OK);
    const sl_policy_t *got[8], *locals[8], *p[3], *l[3];
    assert_int_equal(sld_throttles_list(t, got, locals, 8), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sld_throttles_get(t, 10 + i, 1000000000, &p[i], &l[i]), SL_OK);
    assert_int_equal(sld_throttles_list(t, got, locals, 8), 3);
    for (int i = 0; i < 3; i++) { /* each set once, with its own share */
        int seen = 0;
        for (int k = 0; k < 3; k++)
            if (got[k] == p[i]) {
                seen++;
                assert_ptr_equal(locals[k], l[i]);
                assert_ptr_not_equal(locals[k], got[k]);
            }
        assert_int_equal(seen, 1);
    }
    assert_int_equal(sld_throttles_list(t, got, locals, 2), 2); /* bounded by max */
    sld_throttles_free(t);
}

static void test_distinct_sets_are_bounded(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    for (int64_t i = 0; i < SLD_THROTTLE_MAX_SETS; i++)
        assert_int_equal(sld_throttles_get(t, i, 1000000, &p, NULL), SL_OK);
    assert_int_equal(sld_throttles_get(t, SLD_THROTTLE_MAX_SETS, 1000000, &p, NULL), SL_ETOOMANY);
    /* a set already known still answers when the table is full */
    assert_int_equal(sld_throttles_get(t, 7, 1000000, &p, NULL), SL_OK);
    assert_int_equal(sl_policy_limit(p, 0)->burst, 7);
    sld_throttles_free(t);
}

static void test_out_of_range_parameters(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p = NULL;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    /* burst x interval beyond the library's range: refused, nothing kept */
    assert_int_not_equal(sld_throttles_get(t, INT64_MAX / 2, INT64_MAX / 2, &p, NULL), SL_OK);
    assert_int_equal(sld_throttles_get(t, 1, 1000, &p, NULL), SL_OK);
    sld_throttles_free(t);
}

static void test_one_node_share(void **state) {
    (void)state;
    sld_throttles_t *t;
    const sl_policy_t *p, *local;
    assert_int_equal(sld_throttles_new(3, &t), SL_OK);
    assert_int_equal(sld_throttles_get(t, 15, 2000000000, &p, &local), SL_OK);
    assert_ptr_not_equal(p, local);
    /* three nodes: each gets a third of the rate and (15 + 1) / 3 - 1 = 4 of the burst */
    assert_int_equal(sl_policy_limit(local, 0)->period, INT64_C(6000000000));
    assert_int_equal(sl_policy_limit(local, 0)->burst, 4);
    /* a burst smaller than the nodes: no burst, never a negative one */
    assert_int_equal(sld_throttles_get(t, 1, 2000000000, &p, &local), SL_OK);
    assert_int_equal(sl_policy_limit(local, 0)->burst, 0);
    /* an interval whose share is beyond the library's range: the node keeps the whole limit */
    assert_int_equal(sld_throttles_get(t, 0, INT64_C(1) << 60, &p, &local), SL_OK);
    assert_ptr_equal(p, local);
    sld_throttles_free(t);
}

typedef struct racer {
    sld_throttles_t *t;
    const sl_policy_t *seen[64];
} racer_t;

static void *race(void *arg) {
    racer_t *r = arg;
    for (int i = 0; i < 64; i++)
        if (sld_throttles_get(r->t, i, 1000000 + i, &r->seen[i], NULL) != SL_OK)
            r->seen[i] = NULL;
    return NULL;
}

static void test_threads_racing_share_one_policy(void **state) {
    (void)state;
    sld_throttles_t *t;
    assert_int_equal(sld_throttles_new(1, &t), SL_OK);
    racer_t racers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        racers[i].t = t;
        assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    for (int k = 0; k < 64; k++) {
        assert_non_null(racers[0].seen[k]);
        for (int i = 1; i < 4; i++)
            assert_ptr_equal(racers[0].seen[k], racers[i].seen[k]);
    }
    sld_throttles_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_policy_per_parameter_set),
        cmocka_unit_test(test_list_every_set),
        cmocka_unit_test(test_distinct_sets_are_bounded),
        cmocka_unit_test(test_out_of_range_parameters),
        cmocka_unit_test(test_one_node_share),
        cmocka_unit_test(test_threads_racing_share_one_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
