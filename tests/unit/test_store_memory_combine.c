/* test_store_memory_combine.c -- decisions combined under a shard's lock
 * (src/store/store_memory_combine.c): a request published while the lock
 * is held by someone who serves nobody (a group) is still decided, exactly
 * once, and the group's own thread decides without waiting on itself. */
#include <pthread.h>
#include <sched.h>

#include "rig.h"
#include "store/group.h"
#include "store/store_memory_private.h"

typedef struct waiter {
    rig_t *rig;
    int iterations;
    uint64_t allowed;
} waiter_t;

static void *waiter_run(void *arg) {
    waiter_t *w = arg;
    for (int i = 0; i < w->iterations; i++) {
        sl_decision_t d;
        assert_int_equal(sl_check(w->rig->limiter, w->rig->policy, "hot", 3, 1, &d), SL_OK);
        w->allowed += d.allowed;
    }
    return NULL;
}

static shard_t *hot_shard(rig_t *r) {
    memory_store_t *m = (memory_store_t *)r->store;
    return &m->shards[sl__mem_shard_of_key(m, r->policy, "hot", 3)];
}

/* Two threads publish while a group holds the key's shard; the group ends
 * without serving them, and they are decided all the same: the limit
 * passes exactly. */
static void published_while_a_group_holds(void **state) {
    (void)state;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        sl_limit_t l = {.algorithm = (sl_algorithm_t)a, .limit = 700, .period = MIN(600)};
        if (a == SL_GCRA)
            l.burst = 699;
        if (a == SL_SLIDING_WINDOW)
            l.precision = 10;
        rig_t *r = rig_one(l);
        r->now = SEC(5);
        sl__group_key_t key = {r->policy, "hot", 3};
        assert_int_equal(sl__limiter_group_begin(r->limiter, &key, 1, false), SL_OK);
        pthread_t tid[2];
        waiter_t w[2];
        for (int t = 0; t < 2; t++) {
            w[t] = (waiter_t){.rig = r, .iterations = 500};
            assert_int_equal(pthread_create(&tid[t], NULL, waiter_run, &w[t]), 0);
        }
        /* both stuck on their first decision: published, or blocked on the lock */
        while (atomic_load(&hot_shard(r)->pending) == NULL)
            sched_yield();
        /* the group's own thread decides under the lock it holds */
        sl_decision_t d;
        assert_int_equal(sl_check(r->limiter, r->policy, "hot", 3, 1, &d), SL_OK);
        assert_true(d.allowed);
        sl__limiter_group_end(r->limiter);
        for (int t = 0; t < 2; t++)
            assert_int_equal(pthread_join(tid[t], NULL), 0);
        assert_int_equal(w[0].allowed + w[1].allowed, 699);
        assert_null(atomic_load(&hot_shard(r)->pending));
        rig_free(r);
    }
}

/* Many threads on one key of a two-limit policy (one with an out-of-line
 * log, allocated by whichever thread runs the decision): exact totals. */
static void combined_across_limits(void **state) {
    (void)state;
    sl_limit_t ls[2] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 900, .period = MIN(60)},
        {.algorithm = SL_GCRA, .limit = 1000, .period = MIN(60), .burst = 999},
    };
    rig_t *r = rig_limits(ls, 2, SL_MODE_HARD);
    r->now = SEC(7);
    pthread_t tid[4];
    waiter_t w[4];
    for (int t = 0; t < 4; t++) {
        w[t] = (waiter_t){.rig = r, .iterations = 3000};
        assert_int_equal(pthread_create(&tid[t], NULL, waiter_run, &w[t]), 0);
    }
    uint64_t total = 0;
    for (int t = 0; t < 4; t++) {
        assert_int_equal(pthread_join(tid[t], NULL), 0);
        total += w[t].allowed;
    }
    assert_int_equal(total, 900);
    rig_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(published_while_a_group_holds),
        cmocka_unit_test(combined_across_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
