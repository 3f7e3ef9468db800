/* test_write_back_bound.c -- the bound of write-back mode, on what it is
 * built on (src/store/cells.c, the journal hooks and import of
 * store_memory.c, sl__policy_force), with simulated daemons and no Redis:
 * a state survives the trip through bytes exactly, charges are journaled,
 * and daemons that decide locally and merge every sync interval admit no
 * more than the documented bound over an exact limiter. The journal
 * module is test_charge_journal.c, the sync with Redis test_write_back.c. */
#include "rig.h"
#include "store/journal.h"

#define KEY "k"

static sl_limit_t algorithm_limit(int a) {
    sl_limit_t l = {.algorithm = (sl_algorithm_t)a, .limit = 20, .period = SEC(1)};
    if (a == SL_GCRA)
        l.burst = 4;
    if (a == SL_SLIDING_WINDOW)
        l.precision = 4;
    return l;
}

/* ---- a node: a memory store whose journal sums what was charged -------------------- */

typedef struct node {
    rig_t *rig;
    uint64_t pending[SL_MAX_LIMITS];
    sl_usec_t since; /* the first pending charge */
    int journaled;
} node_t;

static void on_charge(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                      uint32_t costed, uint64_t cost, sl_usec_t now) {
    node_t *n = ctx;
    (void)key;
    (void)key_len;
    n->journaled++;
    if (n->since == 0)
        n->since = now;
    for (size_t i = 0; i < sl_policy_limit_count(p); i++)
        if (costed & (1u << i))
            n->pending[i] += cost;
}

static void take_pending(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                         uint64_t *costs, sl_usec_t *since) {
    node_t *n = ctx;
    (void)key;
    (void)key_len;
    for (size_t i = 0; i < sl_policy_limit_count(p); i++)
        costs[i] = n->pending[i];
    *since = n->since;
}

static void unsynced_of(void *ctx, const sl_policy_t *p, const void *key, size_t key_len,
                        uint64_t *unsynced, sl_usec_t *retry_after) {
    sl_usec_t since;
    take_pending(ctx, p, key, key_len, unsynced, &since);
    *retry_after = MS(10);
}

static void node_init(node_t *n, const sl_limit_t *limits, size_t nlimits, uint32_t nodes) {
    memset(n, 0, sizeof *n);
    n->rig = rig_limits(limits, nlimits, SL_MODE_HARD);
    sl__policy_write_back(n->rig->policy, nodes, MS(10));
    sl__memory_journal(n->rig->store, on_charge, unsynced_of, n);
}

/* The sync of one node, with no request in flight: its charges go into the
 * shared bytes, the merged state comes back. */
static void node_sync(node_t *n, unsigned char **shared, size_t *shared_len) {
    unsigned char *merged;
    size_t merged_len;
    assert_int_equal(sl__cells_merge(n->rig->policy, *shared, *shared_len, n->pending, n->since,
                                     n->rig->now, &merged, &merged_len, NULL),
                     SL_OK);
    free(*shared);
    *shared = merged;
    *shared_len = merged_len;
    memset(n->pending, 0, sizeof n->pending);
    n->since = 0;
    sl__cell_t cells[SL_MAX_LIMITS];
    assert_int_equal(sl__cells_decode(n->rig->policy, merged, merged_len, cells), SL_OK);
    assert_int_equal(sl__memory_import(n->rig->store, n->rig->policy, KEY, 1, cells, n->rig->now,
                                       take_pending, n),
                     SL_OK);
}

static bool node_check(node_t *n, uint64_t cost) {
    sl_decision_t d;
    assert_int_equal(sl_check(n->rig->limiter, n->rig->policy, KEY, 1, cost, &d), SL_OK);
    return d.allowed;
}

/* ---- the state as bytes ---------------------------------------------------------------- */

/* A node that syncs after every request puts its state into the shared
 * bytes exactly: a second node that imports them then decides every
 * following request as the first does, for every algorithm (log and
 * counter blocks included). */
static void shared_state_decides_alike(void **state) {
    (void)state;
    for (int a = 0; a < SL_ALGORITHM_COUNT; a++) {
        sl_limit_t l = algorithm_limit(a);
        node_t one, two;
        node_init(&one, &l, 1, 1);
        node_init(&two, &l, 1, 1);
        unsigned char *shared = NULL;
        size_t shared_len = 0;
        uint64_t seed = 7 + (uint64_t)a;
        one.rig->now = SEC(100);
        for (int i = 0; i < 60; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            one.rig->now += (sl_usec_t)(seed >> 33) % MS(40);
            node_check(&one, 1 + (seed >> 60) % 3);
            node_sync(&one, &shared, &shared_len);
        }
        assert_true(shared_len > 0);
        two.rig->now = one.rig->now;
        node_sync(&two, &shared, &shared_len);
        int allowed = 0;
        for (int i = 0; i < 200; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            one.rig->now += (sl_usec_t)(seed >> 33) % MS(30);
            two.rig->now = one.rig->now;
            uint64_t cost = 1 + (seed >> 60) % 3;
            bool first = node_check(&one, cost);
            assert_int_equal(first, node_check(&two, cost));
            allowed += first;
        }
        assert_true(allowed > 10 && allowed < 200); /* the trace did hit the limit */
        free(shared);
        rig_free(one.rig);
        rig_free(two.rig);
    }
}

/* Bytes that are not a state give SL_ECORRUPT and fresh cells, never a
 * crash: they come from a server anyone on the network may write to. */
static void garbage_is_refused(void **state) {
    (void)state;
    sl_limit_t l = algorithm_limit(SL_SLIDING_LOG);
    node_t n;
    node_init(&n, &l, 1, 1);
    n.rig->now = SEC(10);
    node_check(&n, 3);
    unsigned char *good;
    size_t len;
    assert_int_equal(sl__cells_merge(n.rig->policy, NULL, 0, n.pending, 0, n.rig->now, &good,
                                     &len, NULL),
                     SL_OK);
    sl__cell_t cells[SL_MAX_LIMITS];
    for (size_t cut = 0; cut < len; cut++) { /* every truncation */
        int rc = sl__cells_decode(n.rig->policy, good, cut, cells);
        assert_true(rc == SL_OK || rc == SL_ECORRUPT);
        if (rc == SL_ECORRUPT)
            assert_null(cells[0].block);
        sl__cells_release(cells, 1);
    }
    unsigned char bad[64];
    memset(bad, 0xff, sizeof bad);
    bad[0] = 1;
    assert_int_equal(sl__cells_decode(n.rig->policy, bad, sizeof bad, cells), SL_ECORRUPT);
    bad[0] = 9; /* another version */
    assert_int_equal(sl__cells_decode(n.rig->policy, bad, sizeof bad, cells), SL_ECORRUPT);
    /* merge onto garbage: the charges still count, on a fresh state */
    unsigned char *out;
    size_t out_len;
    uint64_t one[SL_MAX_LIMITS] = {2};
    assert_int_equal(sl__cells_merge(n.rig->policy, bad, sizeof bad, one, 0, n.rig->now, &out,
                                     &out_len, NULL),
                     SL_ECORRUPT);
    assert_int_equal(sl__cells_decode(n.rig->policy, out, out_len, cells), SL_OK);
    assert_int_equal(cells[0].block->count, 2);
    sl__cells_release(cells, 1);
    free(out);
    free(good);
    rig_free(n.rig);
}

/* Daemons on two configurations of one policy (a rolling change) keep
 * each other's limits: a merge carries the records it does not know. */
static void merge_keeps_other_limits(void **state) {
    (void)state;
    sl_limit_t old_limit = {.algorithm = SL_FIXED_WINDOW, .limit = 10, .period = SEC(60)};
    sl_limit_t new_limit = {.algorithm = SL_FIXED_WINDOW, .limit = 20, .period = SEC(60)};
    sl_policy_t *old_p, *new_p;
    sl_policy_config_t a = {.name = "p", .limits = &old_limit, .nlimits = 1};
    sl_policy_config_t b = {.name = "p", .limits = &new_limit, .nlimits = 1};
    assert_int_equal(sl_policy_new(&a, &old_p, NULL, 0), SL_OK);
    assert_int_equal(sl_policy_new(&b, &new_p, NULL, 0), SL_OK);
    sl_usec_t now = SEC(600);
    unsigned char *one, *two;
    size_t one_len, two_len;
    uint64_t three[SL_MAX_LIMITS] = {3}, five[SL_MAX_LIMITS] = {5};
    sl_usec_t until = 0;
    assert_int_equal(sl__cells_merge(old_p, NULL, 0, three, 0, now, &one, &one_len, NULL), SL_OK);
    assert_int_equal(sl__cells_merge(new_p, one, one_len, five, 0, now, &two, &two_len, &until), SL_OK);
    assert_true(until >= SEC(660));
    sl__cell_t cells[SL_MAX_LIMITS];
    assert_int_equal(sl__cells_decode(old_p, two, two_len, cells), SL_OK);
    assert_int_equal(cells[0].word, 3); /* the old configuration's count, kept */
    assert_int_equal(sl__cells_decode(new_p, two, two_len, cells), SL_OK);
    assert_int_equal(cells[0].word, 5);
    free(one);
    free(two);
    sl_policy_free(old_p);
    sl_policy_free(new_p);
}

/* The journal hears of charges of write-back policies only, with what
 * each limit was charged; peeks and denials without count_denied charge
 * nothing. */
static void journal_hears_charges(void **state) {
    (void)state;
    sl_limit_t limits[2] = {{.algorithm = SL_FIXED_WINDOW, .limit = 2, .period = SEC(1)},
                            {.algorithm = SL_GCRA, .limit = 10, .period = SEC(1), .burst = 9,
                             .count_denied = true}};
    node_t n;
    node_init(&n, limits, 2, 1);
    n.rig->now = SEC(1);
    sl_decision_t d;
    assert_int_equal(sl_peek(n.rig->limiter, n.rig->policy, KEY, 1, 1, &d), SL_OK);
    assert_int_equal(n.journaled, 0);
    assert_true(node_check(&n, 1));
    assert_true(node_check(&n, 1));
    assert_false(node_check(&n, 1)); /* the window denies; count_denied charges the gcra */
    assert_int_equal(n.journaled, 3);
    assert_int_equal(n.pending[0], 2);
    assert_int_equal(n.pending[1], 3);
    /* another policy on the same store is not journaled */
    sl_policy_t *other;
    sl_policy_config_t pc = {.name = "other", .limits = limits, .nlimits = 1};
    assert_int_equal(sl_policy_new(&pc, &other, NULL, 0), SL_OK);
    assert_int_equal(sl_check(n.rig->limiter, other, KEY, 1, 1, &d), SL_OK);
    assert_int_equal(n.journaled, 3);
    sl_policy_free(other);
    rig_free(n.rig);
}

/* Importing keeps the charges made since the sync was sent: they are
 * charged on top of the merged state. */
static void import_keeps_later_charges(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_FIXED_WINDOW, .limit = 5, .period = SEC(10)};
    node_t n;
    node_init(&n, &l, 1, 1);
    n.rig->now = SEC(10);
    unsigned char *shared = NULL;
    size_t len = 0;
    uint64_t others[SL_MAX_LIMITS] = {2}; /* another daemon admitted two */
    assert_int_equal(sl__cells_merge(n.rig->policy, NULL, 0, others, 0, n.rig->now, &shared, &len,
                                     NULL),
                     SL_OK);
    assert_true(node_check(&n, 1)); /* charged here while the sync is in flight */
    sl__cell_t cells[SL_MAX_LIMITS];
    assert_int_equal(sl__cells_decode(n.rig->policy, shared, len, cells), SL_OK);
    assert_int_equal(sl__memory_import(n.rig->store, n.rig->policy, KEY, 1, cells, n.rig->now,
                                       take_pending, &n),
                     SL_OK);
    sl_decision_t d;
    assert_int_equal(sl_peek(n.rig->limiter, n.rig->policy, KEY, 1, 1, &d), SL_OK);
    assert_int_equal(d.remaining, 2); /* 5 - 2 elsewhere - 1 here */
    free(shared);
    rig_free(n.rig);
}

/* ---- the bound ---------------------------------------------------------------------- */

/* `nodes` daemons each offered one request per millisecond on one key for
 * `seconds`, syncing every `interval`: what they admit together. */
static uint64_t run_nodes(const sl_limit_t *l, uint32_t nodes, uint32_t debt_nodes, int seconds,
                          sl_usec_t interval, int per_ms) {
    node_t n[4];
    unsigned char *shared = NULL;
    size_t shared_len = 0;
    for (uint32_t i = 0; i < nodes; i++) {
        node_init(&n[i], l, 1, debt_nodes);
        n[i].rig->now = SEC(1000);
    }
    uint64_t admitted = 0;
    for (sl_usec_t t = 0; t < SEC(seconds); t += MS(1)) {
        for (uint32_t i = 0; i < nodes; i++) {
            n[i].rig->now = SEC(1000) + t;
            for (int k = 0; k < per_ms; k++)
                admitted += node_check(&n[i], 1);
            /* the nodes' syncs are spread over the interval */
            if ((t + (sl_usec_t)i * interval / nodes / MS(1) * MS(1)) % interval == 0)
                node_sync(&n[i], &shared, &shared_len);
        }
    }
    for (uint32_t i = 0; i < nodes; i++)
        rig_free(n[i].rig);
    free(shared);
    return admitted;
}

/* docs/distributed.md's bound: over an exact limiter, N daemons admit at
 * most (N-1) x (capacity + rate x interval) more, in all, because what
 * they admitted between syncs is charged as debt when it meets in the
 * shared state. Without that debt (store.nodes 1) every daemon would
 * admit the whole rate. */
static void over_admission_is_bounded(void **state) {
    (void)state;
    const uint32_t nodes = 3;
    const int seconds = 20;
    const sl_usec_t interval = MS(10);
    sl_limit_t gcra = {.algorithm = SL_GCRA, .limit = 100, .period = SEC(1), .burst = 9};
    uint64_t exact = 10 + 100 * seconds; /* capacity + rate x time */
    uint64_t bound = (nodes - 1) * (10 + 100 * interval / SEC(1));
    uint64_t got = run_nodes(&gcra, nodes, nodes, seconds, interval, 1);
    print_message("gcra 100/s burst 10, %u nodes, sync 10 ms, %d s: admitted %lu, exact %lu, "
                  "bound %lu\n", nodes, seconds, (unsigned long)got, (unsigned long)exact,
                  (unsigned long)(exact + bound));
    assert_true(got <= exact + bound);
    assert_true(got + 100 * interval / SEC(1) * nodes >= exact); /* and not much fewer */
    uint64_t forgiven = run_nodes(&gcra, nodes, 1, seconds, interval, 1);
    assert_true(forgiven > 2 * exact);

    /* windows start afresh at every boundary: the bound holds per window */
    sl_limit_t window = {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(1)};
    got = run_nodes(&window, nodes, nodes, seconds, interval, 1);
    print_message("fixed_window 100/s: admitted %lu, exact %lu, bound %lu\n", (unsigned long)got,
                  (unsigned long)(100 * seconds),
                  (unsigned long)(seconds * (100 + (nodes - 1) * 10)));
    assert_true(got <= (uint64_t)seconds * (100 + (nodes - 1) * 10));

    /* hammered (50 per ms per daemon): each daemon spends its share,
     * ceil(100 / 3) + 100 x 20 ms / 1 s = 36, before it syncs, so a window
     * passes at most (N-1) x 36 more than its limit */
    got = run_nodes(&window, nodes, nodes, seconds, interval, 50);
    print_message("fixed_window hammered: admitted %lu, exact %lu, bound %lu\n", (unsigned long)got,
                  (unsigned long)(100 * seconds), (unsigned long)(seconds * (100 + (nodes - 1) * 36)));
    assert_true(got <= (uint64_t)seconds * (100 + (nodes - 1) * 36));
    assert_true(got >= (uint64_t)seconds * 100);
    got = run_nodes(&gcra, nodes, nodes, seconds, interval, 50);
    print_message("gcra hammered: admitted %lu, exact %lu\n", (unsigned long)got, (unsigned long)exact);
    assert_true(got <= exact + (nodes - 1) * (4 + 100 * interval / SEC(1)));
}

/* One daemon alone bursting: it spends its share, then denies until its
 * charges are synced (retry_after: the journal's next sync), then goes on.
 * A high rate with a small burst still passes its rate: the share covers
 * what the limit refills over two sync intervals. */
static void share_paces_a_burst(void **state) {
    (void)state;
    sl_limit_t l = {.algorithm = SL_TOKEN_BUCKET, .limit = 30, .period = SEC(60)};
    node_t n;
    node_init(&n, &l, 1, 3);
    n.rig->now = SEC(100);
    unsigned char *shared = NULL;
    size_t len = 0;
    int passed = 0;
    for (int i = 0; i < 15; i++)
        passed += node_check(&n, 1);
    assert_int_equal(passed, 11); /* 30 / 3 nodes + 30 x 20 ms / 60 s, rounded up */
    sl_decision_t d;
    assert_int_equal(sl_check(n.rig->limiter, n.rig->policy, KEY, 1, 1, &d), SL_OK);
    assert_false(d.allowed);
    assert_int_equal(d.retry_after, MS(10));
    assert_int_equal(d.remaining, 0);
    node_sync(&n, &shared, &len);
    for (int i = 0; i < 15; i++)
        passed += node_check(&n, 1);
    assert_int_equal(passed, 22);
    node_sync(&n, &shared, &len);
    node_sync(&n, &shared, &len);
    for (int i = 0; i < 15; i++)
        passed += node_check(&n, 1);
    assert_int_equal(passed, 30); /* the whole capacity, over three syncs */
    /* a cost above the share passes when nothing is unsynced */
    n.rig->now += SEC(60);
    node_sync(&n, &shared, &len);
    assert_true(node_check(&n, 20));
    assert_false(node_check(&n, 1));
    free(shared);
    rig_free(n.rig);

    /* gcra 1000/s, no burst (capacity 1), 3 nodes: share 1 + 20 = 21 */
    sl_limit_t fast = {.algorithm = SL_GCRA, .limit = 1000, .period = SEC(1)};
    node_init(&n, &fast, 1, 3);
    shared = NULL;
    len = 0;
    n.rig->now = SEC(100);
    passed = 0;
    for (sl_usec_t t = 0; t < SEC(1); t += 100) { /* one request per 0.1 ms */
        n.rig->now = SEC(100) + t;
        passed += node_check(&n, 1);
        if (t % MS(10) == 0)
            node_sync(&n, &shared, &len);
    }
    print_message("gcra 1000/s alone: %d passed in 1 s\n", passed);
    assert_true(passed >= 990 && passed <= 1001); /* the whole rate, alone */
    free(shared);
    rig_free(n.rig);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shared_state_decides_alike),
        cmocka_unit_test(garbage_is_refused),
        cmocka_unit_test(merge_keeps_other_limits),
        cmocka_unit_test(journal_hears_charges),
        cmocka_unit_test(import_keeps_later_charges),
        cmocka_unit_test(over_admission_is_bounded),
        cmocka_unit_test(share_paces_a_burst),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
