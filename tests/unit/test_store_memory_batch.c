/* test_store_memory_batch.c -- the memory store's batch (evaluate_batch,
 * src/store/store_memory_batch.c) behind sl_check_batch(): a batch decides
 * exactly what the same requests decide one by one with sl_check() on a
 * twin store, over random keys, costs, shard counts and policies, with the
 * fake clock; the first error stops it with nothing after it charged; a
 * write-back policy journals the same charges in the same order; a thread
 * holding a group decides without its lock; two threads batching on one
 * hot key admit exactly the limit. */
#include <pthread.h>

#include "rig.h"
#include "core/policy.h"
#include "store/group.h"
#include "store/journal.h"

enum { POOL = 60, N = 200, ROUNDS = 30 };

/* A store and a limiter on a clock the test sets. */
typedef struct side {
    sl_store_t *store;
    sl_limiter_t *limiter;
} side_t;

static sl_usec_t read_clock(void *ctx) { return *(const sl_usec_t *)ctx; }

static side_t side_new(uint32_t shards, sl_usec_t *clock) {
    side_t s;
    sl_memory_options_t mo = {.shards = shards, .seed = 777};
    assert_int_equal(sl_store_memory_new(&mo, &s.store), SL_OK);
    sl_limiter_options_t lo = {.clock = read_clock, .clock_ctx = clock};
    assert_int_equal(sl_limiter_new(s.store, &lo, &s.limiter), SL_OK);
    return s;
}

static void side_free(side_t *s) {
    sl_limiter_free(s->limiter);
    sl_store_free(s->store);
}

static sl_policy_t *policy_new(const sl_limit_t *limits, size_t n, sl_mode_t mode, sl_limit_t pool) {
    sl_policy_config_t cfg = {.name = "batch", .limits = limits, .nlimits = n, .mode = mode,
                              .soft_percent = mode == SL_MODE_SOFT ? 20 : 0, .pool = pool};
    sl_policy_t *p = NULL;
    char why[256] = "";
    if (sl_policy_new(&cfg, &p, why, sizeof why) != SL_OK)
        fail_msg("policy rejected: %s", why);
    return p;
}

static void assert_same(const sl_decision_t *a, const sl_decision_t *b) {
    assert_int_equal(a->allowed, b->allowed);
    assert_int_equal(a->limited, b->limited);
    assert_int_equal(a->limit, b->limit);
    assert_int_equal(a->remaining, b->remaining);
    assert_int_equal(a->reset_after, b->reset_after);
    assert_int_equal(a->retry_after, b->retry_after);
    assert_int_equal(a->delay, b->delay);
    assert_int_equal(a->limit_index, b->limit_index);
}

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static char keys[POOL][16];

/* n requests on keys of the pool (key 0 is the empty key, NULL), costs 0..3. */
static void fill(sl_request_t *reqs, size_t n, uint64_t *rng) {
    for (int k = 1; k < POOL; k++)
        snprintf(keys[k], sizeof keys[k], "key:%d", k);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next(rng);
        /* a few hot keys, so that runs of one shard (and of one key) occur */
        unsigned k = (unsigned)(r % 4 == 0 ? r % 3 : r % POOL);
        reqs[i] = (sl_request_t){k ? keys[k] : NULL, k ? strlen(keys[k]) : 0, (r >> 32) % 4};
    }
}

/* reqs[0..n) as one batch on `batch` (inside a group of every shard when
 * `grouped`), then one by one with sl_check() on `single`: the same
 * decisions, every field. */
static void batch_then_single(const side_t *batch, const side_t *single, const sl_policy_t *p,
                              const sl_request_t *reqs, size_t n, bool grouped) {
    sl_decision_t out[N];
    memset(out, 0xA5, sizeof out);
    size_t done = 0;
    if (grouped)
        assert_int_equal(sl__limiter_group_begin(batch->limiter, NULL, 0, true), SL_OK);
    assert_int_equal(sl_check_batch(batch->limiter, p, reqs, n, out, &done), SL_OK);
    if (grouped)
        sl__limiter_group_end(batch->limiter);
    assert_int_equal(done, n);
    for (size_t i = 0; i < n; i++) {
        sl_decision_t d;
        assert_int_equal(sl_check(single->limiter, p, reqs[i].key, reqs[i].key_len, reqs[i].cost, &d),
                         SL_OK);
        assert_same(&out[i], &d);
    }
}

/* The batch on one store, the same requests one by one on its twin, round
 * after round with the clock moving. */
static void differential(const sl_policy_t *p, uint32_t shards, uint64_t seed) {
    sl_usec_t now = SEC(1000);
    side_t batch = side_new(shards, &now), single = side_new(shards, &now);
    sl_request_t reqs[N];
    for (int round = 0; round < ROUNDS; round++) {
        now += (sl_usec_t)(next(&seed) % MS(400));
        fill(reqs, N, &seed);
        batch_then_single(&batch, &single, p, reqs, N, false);
    }
    sl_store_stats_t a, b;
    assert_int_equal(sl_store_stats(batch.store, &a), SL_OK);
    assert_int_equal(sl_store_stats(single.store, &b), SL_OK);
    assert_int_equal(a.states, b.states);
    side_free(&batch);
    side_free(&single);
}

static const sl_limit_t no_pool;

static void same_as_one_by_one(void **state) {
    (void)state;
    const sl_limit_t gcra = {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 4};
    const sl_limit_t many[] = {
        {.algorithm = SL_GCRA, .limit = 8, .period = SEC(1), .burst = 2},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 40, .period = SEC(10)},
        {.algorithm = SL_FIXED_WINDOW, .limit = 60, .period = SEC(20), .count_denied = true},
        {.algorithm = SL_SLIDING_LOG, .limit = 12, .period = SEC(3)},
    };
    const sl_limit_t shaper = {.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(1), .burst = 8,
                               .shaper = true};
    const sl_limit_t bucket = {.algorithm = SL_TOKEN_BUCKET, .limit = 6, .period = SEC(1)};
    const sl_limit_t pool = {.algorithm = SL_TOKEN_BUCKET, .limit = 20, .period = SEC(1)};
    const sl_limit_t sub = {.algorithm = SL_SLIDING_WINDOW, .limit = 30, .period = SEC(6), .precision = 6};
    sl_policy_t *policies[] = {
        policy_new(&gcra, 1, SL_MODE_HARD, no_pool),
        policy_new(many, 4, SL_MODE_HARD, no_pool),
        policy_new(&shaper, 1, SL_MODE_HARD, no_pool),
        policy_new(&bucket, 1, SL_MODE_SOFT, no_pool),
        policy_new(many, 2, SL_MODE_SHADOW, no_pool),
        policy_new(&bucket, 1, SL_MODE_ELASTIC, pool), /* the limiter's own path */
        policy_new(&sub, 1, SL_MODE_HARD, no_pool),
    };
    const uint32_t shard_counts[] = {1, 4, 256};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        for (size_t s = 0; s < sizeof shard_counts / sizeof shard_counts[0]; s++)
            differential(policies[i], shard_counts[s], 1000 * i + s);
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        sl_policy_free(policies[i]);
}

/* A key NULL with a length stops the batch there: what came before is
 * decided and charged, nothing after it is. */
static void error_stops_the_batch(void **state) {
    (void)state;
    sl_usec_t now = SEC(50);
    side_t s = side_new(4, &now);
    const sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = SEC(60)};
    sl_policy_t *p = policy_new(&l, 1, SL_MODE_HARD, no_pool);
    sl_request_t reqs[8];
    char names[8][8];
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof names[i], "e%d", i);
        reqs[i] = (sl_request_t){names[i], strlen(names[i]), 1};
    }
    reqs[5] = (sl_request_t){NULL, 3, 1};
    sl_decision_t out[8];
    size_t done = 99;
    assert_int_equal(sl_check_batch(s.limiter, p, reqs, 8, out, &done), SL_EINVAL);
    assert_int_equal(done, 5);
    for (int i = 0; i < 8; i++) {
        if (i == 5)
            continue;
        sl_decision_t d;
        assert_int_equal(sl_peek(s.limiter, p, names[i], strlen(names[i]), 1, &d), SL_OK);
        assert_int_equal(d.remaining, i < 5 ? 2 : 3); /* of 3: one charged, or none */
    }
    /* An empty batch decides nothing, and a NULL done is fine. */
    assert_int_equal(sl_check_batch(s.limiter, p, reqs, 0, NULL, &done), SL_OK);
    assert_int_equal(done, 0);
    assert_int_equal(sl_check_batch(s.limiter, p, reqs, 5, out, NULL), SL_OK);
    sl_policy_free(p);
    side_free(&s);
}

/* ---- write-back: the journal sees the same charges in the same order --------- */

typedef struct entry {
    char key[16];
    uint32_t costed;
    uint64_t cost;
    sl_usec_t now;
} entry_t;

typedef struct journal {
    entry_t e[4 * N * ROUNDS];
    size_t n;
} journal_t;

static void journal(void *ctx, const sl_policy_t *p, const void *key, size_t key_len, uint32_t costed,
                    uint64_t cost, sl_usec_t now) {
    (void)p;
    journal_t *j = ctx;
    assert_true(j->n < sizeof j->e / sizeof j->e[0]);
    entry_t *e = &j->e[j->n++];
    memset(e->key, 0, sizeof e->key);
    memcpy(e->key, key, key_len < sizeof e->key ? key_len : sizeof e->key - 1);
    e->costed = costed;
    e->cost = cost;
    e->now = now;
}

/* Keys whose name ends in 7 have charges not synced yet: their share is
 * smaller (deny_for_share), the same way in both stores. */
static void unsynced(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                     uint64_t *out, sl_usec_t *retry_after) {
    (void)ctx;
    (void)p;
    if (key_len > 0 && ((const char *)key)[key_len - 1] == '7') {
        out[0] = 2;
        *retry_after = MS(250);
    }
}

static void write_back_journals_the_same(void **state) {
    (void)state;
    sl_usec_t now = SEC(1000);
    side_t batch = side_new(4, &now), single = side_new(4, &now);
    static journal_t jb, js;
    jb.n = js.n = 0;
    sl__memory_journal(batch.store, journal, unsynced, &jb);
    sl__memory_journal(single.store, journal, unsynced, &js);
    const sl_limit_t l = {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 5};
    sl_policy_t *p = policy_new(&l, 1, SL_MODE_HARD, no_pool);
    sl__policy_write_back(p, 2, MS(100));
    uint64_t seed = 5;
    sl_request_t reqs[N];
    for (int round = 0; round < ROUNDS; round++) {
        now += MS(30);
        fill(reqs, N, &seed);
        batch_then_single(&batch, &single, p, reqs, N, false);
    }
    assert_true(jb.n > 0);
    assert_int_equal(jb.n, js.n);
    for (size_t i = 0; i < jb.n; i++) {
        assert_string_equal(jb.e[i].key, js.e[i].key);
        assert_int_equal(jb.e[i].costed, js.e[i].costed);
        assert_int_equal(jb.e[i].cost, js.e[i].cost);
        assert_int_equal(jb.e[i].now, js.e[i].now);
    }
    sl_policy_free(p);
    side_free(&batch);
    side_free(&single);
}

/* A thread holding every shard in a group decides its batch without
 * taking (or waiting on) a lock it holds already. */
static void inside_a_group(void **state) {
    (void)state;
    sl_usec_t now = SEC(1000);
    side_t batch = side_new(4, &now), single = side_new(4, &now);
    const sl_limit_t l = {.algorithm = SL_SLIDING_WINDOW, .limit = 9, .period = SEC(2)};
    sl_policy_t *p = policy_new(&l, 1, SL_MODE_HARD, no_pool);
    uint64_t seed = 9;
    sl_request_t reqs[N];
    for (int round = 0; round < 5; round++) {
        now += MS(300);
        fill(reqs, N, &seed);
        batch_then_single(&batch, &single, p, reqs, N, true);
    }
    sl_policy_free(p);
    side_free(&batch);
    side_free(&single);
}

/* ---- two threads, one hot key ------------------------------------------------------ */

enum { HOT_LIMIT = 3000, HOT_BATCHES = 400, HOT_BATCH = 32 };

typedef struct hot {
    sl_limiter_t *limiter;
    const sl_policy_t *p;
    uint64_t allowed;
} hot_t;

static void *hot_run(void *arg) {
    hot_t *h = arg;
    sl_request_t reqs[HOT_BATCH];
    sl_decision_t out[HOT_BATCH];
    for (int i = 0; i < HOT_BATCH; i++)
        reqs[i] = (sl_request_t){i % 8 ? "hot" : "warm", i % 8 ? 3 : 4, 1};
    for (int b = 0; b < HOT_BATCHES; b++) {
        size_t done = 0;
        assert_int_equal(sl_check_batch(h->limiter, h->p, reqs, HOT_BATCH, out, &done), SL_OK);
        assert_int_equal(done, HOT_BATCH);
        for (int i = 0; i < HOT_BATCH; i++)
            h->allowed += out[i].allowed && reqs[i].key_len == 3;
    }
    return NULL;
}

/* Runs under one lock acquisition, requests handed to the holder when the
 * lock is taken: the hot key admits exactly its limit, never one more. */
static void two_threads_one_hot_key(void **state) {
    (void)state;
    sl_usec_t now = SEC(1000);
    side_t s = side_new(256, &now);
    const sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = HOT_LIMIT, .period = MIN(60)};
    sl_policy_t *p = policy_new(&l, 1, SL_MODE_HARD, no_pool);
    hot_t h[2] = {{s.limiter, p, 0}, {s.limiter, p, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hot_run, &h[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(h[0].allowed + h[1].allowed, HOT_LIMIT);
    sl_policy_free(p);
    side_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_as_one_by_one),
        cmocka_unit_test(error_stops_the_batch),
        cmocka_unit_test(write_back_journals_the_same),
        cmocka_unit_test(inside_a_group),
        cmocka_unit_test(two_threads_one_hot_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
