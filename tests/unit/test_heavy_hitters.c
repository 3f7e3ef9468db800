/* test_heavy_hitters.c -- the heavy-hitter sketches (src/server/observe/
 * heavy_hitters.c) against exact counts of seeded Zipf traces, on a fake
 * clock for the minute and hour windows. */
#include "rig.h"
#include "server/observe/heavy_hitters.h"

#define KEYS 5000
#define T0 (MIN(60) * 24 * 7) /* some Monday: far from 0 */

/* xorshift64*: the same trace on every run */
static uint64_t next_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* sqrt by Newton's steps: the unit tests link no libm */
static double root2(double x) {
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 60; i++)
        r = (r + x / r) / 2;
    return r;
}

/* i^s for s in quarters (1, 1.25, 1.5, ...) */
static double quarter_pow(double i, int quarters) {
    double r = 1, q = root2(root2(i));
    for (int n = 0; n < quarters; n++)
        r *= q;
    return r;
}

/* A Zipf(quarters / 4) sampler over [0, KEYS) by its cumulative table. */
typedef struct zipf {
    double cdf[KEYS];
    uint64_t seed;
} zipf_t;

static void zipf_init(zipf_t *z, int quarters, uint64_t seed) {
    double sum = 0;
    for (int i = 0; i < KEYS; i++)
        sum += 1.0 / quarter_pow(i + 1, quarters);
    double acc = 0;
    for (int i = 0; i < KEYS; i++) {
        acc += 1.0 / quarter_pow(i + 1, quarters) / sum;
        z->cdf[i] = acc;
    }
    z->seed = seed;
}

static int zipf_next(zipf_t *z) {
    double u = (double)(next_rand(&z->seed) >> 11) / 9007199254740992.0;
    int lo = 0, hi = KEYS - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (z->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int key_of(char *buf, int i) { return snprintf(buf, 16, "key-%d", i); }

static int key_index(const sld_hh_entry_t *e) {
    int i = -1;
    assert_int_equal(sscanf(e->key, "key-%d", &i), 1);
    return i;
}

/* Feeds n draws over `workers` workers, spread over `minutes` minutes from
 * T0; exact[] and exact_denied[] get the truth (a key denied every third
 * time it comes). */
static void feed(sld_hh_t *hh, zipf_t *z, uint32_t workers, int n, int minutes, uint64_t *exact,
                 uint64_t *exact_denied) {
    uint64_t seen[KEYS] = {0};
    for (int j = 0; j < n; j++) {
        int i = zipf_next(z);
        char key[16];
        int len = key_of(key, i);
        bool denied = ++seen[i] % 3 == 0;
        int64_t now = T0 + (int64_t)j * MIN(minutes) / n;
        sld_hh_note(hh, (uint32_t)j % workers, 0, key, (size_t)len, denied, now);
        exact[i]++;
        exact_denied[i] += denied;
    }
}

/* Every reported count within the bound of the truth, and every key whose
 * true count is over the bound among the first 10 when it is in the true
 * top 10. */
static void check_top(sld_hh_t *hh, sld_hh_what_t what, int64_t now, const uint64_t *exact,
                      uint64_t n_expected) {
    static sld_hh_entry_t top[KEYS];
    uint64_t total, bound;
    size_t got = sld_hh_top(hh, 0, SLD_HH_HOUR, what, now, top, KEYS, &total, &bound);
    assert_int_equal(total, n_expected);
    assert_int_equal(bound, total / sld_hh_options(hh).counters);
    assert_true(got > 0);
    for (size_t r = 0; r < got; r++) {
        uint64_t truth = exact[key_index(&top[r])];
        uint64_t diff = top[r].count > truth ? top[r].count - truth : truth - top[r].count;
        if (diff > bound)
            fail_msg("key-%d: reported %llu, true %llu, bound %llu", key_index(&top[r]),
                     (unsigned long long)top[r].count, (unsigned long long)truth,
                     (unsigned long long)bound);
    }
    /* the true top 10, by exact count */
    int order[KEYS];
    for (int i = 0; i < KEYS; i++)
        order[i] = i;
    for (int a = 0; a < 10; a++)
        for (int b = a + 1; b < KEYS; b++)
            if (exact[order[b]] > exact[order[a]]) {
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    size_t shown = got < 10 ? got : 10;
    for (int a = 0; a < 10; a++) {
        if (exact[order[a]] <= 2 * bound) /* share too close to the bound to promise a rank */
            continue;
        bool found = false;
        for (size_t r = 0; r < shown; r++)
            found |= key_index(&top[r]) == order[a];
        if (!found)
            fail_msg("true #%d key-%d (%llu, bound %llu) not in the reported top 10", a + 1,
                     order[a], (unsigned long long)exact[order[a]], (unsigned long long)bound);
    }
}

static void zipf_trace(int quarters, uint64_t seed, uint32_t workers, int minutes) {
    static zipf_t z;
    zipf_init(&z, quarters, seed);
    sld_hh_t *hh;
    sld_hh_options_t o = {.counters = 64};
    assert_int_equal(sld_hh_new(workers, 4, &o, &hh), SL_OK);
    static uint64_t exact[KEYS], exact_denied[KEYS];
    memset(exact, 0, sizeof exact);
    memset(exact_denied, 0, sizeof exact_denied);
    int n = 200000;
    feed(hh, &z, workers, n, minutes, exact, exact_denied);
    uint64_t denials = 0;
    for (int i = 0; i < KEYS; i++)
        denials += exact_denied[i];
    int64_t now = T0 + MIN(minutes) - 1;
    check_top(hh, SLD_HH_REQUESTS, now, exact, (uint64_t)n);
    check_top(hh, SLD_HH_DENIALS, now, exact_denied, denials);
    assert_int_equal(sld_hh_dropped(hh), 0);
    sld_hh_free(hh);
}

static void zipf_one_worker_one_minute(void **state) {
    (void)state;
    zipf_trace(5, 1, 1, 1); /* s = 1.25 */
}

static void zipf_four_workers_half_hour(void **state) {
    (void)state;
    zipf_trace(4, 42, 4, 30); /* s = 1 */
}

static void zipf_steep_many_seeds(void **state) {
    (void)state;
    for (uint64_t seed = 100; seed < 105; seed++)
        zipf_trace(6, seed, 2, 7); /* s = 1.5 */
}

/* "minute" is the current and previous minute; "hour" the last 60. */
static void windows_rotate_on_the_clock(void **state) {
    (void)state;
    sld_hh_t *hh;
    assert_int_equal(sld_hh_new(1, 1, NULL, &hh), SL_OK);
    for (int i = 0; i < 5; i++)
        sld_hh_note(hh, 0, 0, "old", 3, true, T0);
    for (int i = 0; i < 3; i++)
        sld_hh_note(hh, 0, 0, "new", 3, false, T0 + MIN(10));
    sld_hh_entry_t top[4];
    uint64_t total, bound;
    /* just after: both in the hour, only "new" in the minute */
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_REQUESTS, T0 + MIN(10), top, 4, &total,
                                &bound), 2);
    assert_string_equal(top[0].key, "old");
    assert_int_equal(top[0].count, 5);
    assert_int_equal(total, 8);
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_REQUESTS, T0 + MIN(10), top, 4,
                                &total, &bound), 1);
    assert_string_equal(top[0].key, "new");
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_DENIALS, T0 + MIN(10), top, 4,
                                &total, &bound), 0);
    /* a minute later "new" is still in the minute window, two later not */
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_REQUESTS, T0 + MIN(11), top, 4,
                                &total, &bound), 1);
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_REQUESTS, T0 + MIN(12), top, 4,
                                &total, &bound), 0);
    /* past the hour, "old" is gone, "new" is not yet */
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_REQUESTS, T0 + MIN(60), top, 4, &total,
                                &bound), 1);
    assert_string_equal(top[0].key, "new");
    /* a note 60 minutes on reuses "old"'s bucket: it starts empty */
    sld_hh_note(hh, 0, 0, "later", 5, true, T0 + MIN(60));
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_DENIALS, T0 + MIN(60), top, 4, &total,
                                &bound), 1);
    assert_string_equal(top[0].key, "later");
    assert_int_equal(total, 1);
    sld_hh_free(hh);
}

static void long_keys_are_cut_and_marked(void **state) {
    (void)state;
    sld_hh_t *hh;
    assert_int_equal(sld_hh_new(1, 1, NULL, &hh), SL_OK);
    char a[200], b[200];
    memset(a, 'x', sizeof a);
    memcpy(b, a, sizeof b);
    b[199] = 'y'; /* the same first 64 bytes: still two keys */
    sld_hh_note(hh, 0, 0, a, sizeof a, false, T0);
    sld_hh_note(hh, 0, 0, a, sizeof a, false, T0);
    sld_hh_note(hh, 0, 0, b, sizeof b, false, T0);
    sld_hh_note(hh, 0, 0, a, SLD_HH_KEY_MAX, false, T0); /* exactly 64: not cut */
    sld_hh_entry_t top[4];
    uint64_t total, bound;
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 4, &total, &bound),
                     3);
    assert_int_equal(top[0].count, 2);
    assert_true(top[0].truncated);
    assert_int_equal(top[0].key_len, SLD_HH_KEY_MAX);
    int cut = 0;
    for (int i = 0; i < 3; i++)
        cut += top[i].truncated;
    assert_int_equal(cut, 2);
    sld_hh_free(hh);
}

static void keys_hashed_or_hidden(void **state) {
    (void)state;
    sld_hh_t *hh;
    sld_hh_options_t o = {.keys = SLD_HH_HASH};
    assert_int_equal(sld_hh_new(1, 1, &o, &hh), SL_OK);
    sld_hh_note(hh, 0, 0, "10.0.0.1", 8, false, T0);
    sld_hh_note(hh, 0, 0, "10.0.0.1", 8, false, T0);
    sld_hh_note(hh, 0, 0, "10.0.0.2", 8, false, T0);
    sld_hh_entry_t top[4];
    uint64_t total, bound;
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 4, &total, &bound),
                     2);
    assert_int_equal(top[0].count, 2);
    assert_int_equal(top[0].key_len, 16);
    assert_null(strstr(top[0].key, "10.0"));
    sld_hh_free(hh);

    o.keys = SLD_HH_HIDE;
    assert_int_equal(sld_hh_new(1, 1, &o, &hh), SL_OK);
    sld_hh_note(hh, 0, 0, "10.0.0.1", 8, false, T0);
    sld_hh_note(hh, 0, 0, "10.0.0.2", 8, false, T0);
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 4, &total, &bound),
                     2);
    assert_int_equal(top[0].key_len, 0);
    assert_string_equal(top[0].key, "");
    sld_hh_free(hh);
}

static void bad_input_is_dropped_not_fatal(void **state) {
    (void)state;
    sld_hh_t *hh;
    sld_hh_options_t o = {.counters = SLD_HH_COUNTERS_MAX + 1};
    assert_int_equal(sld_hh_new(1, 1, &o, &hh), SL_EINVAL);
    assert_int_equal(sld_hh_new(0, 1, NULL, &hh), SL_EINVAL);
    assert_int_equal(sld_hh_new(2, 3, NULL, &hh), SL_OK);
    sld_hh_note(hh, 2, 0, "k", 1, false, T0);  /* no such worker */
    sld_hh_note(hh, 0, 3, "k", 1, false, T0);  /* no such slot */
    sld_hh_note(hh, 0, 0, "k", 1, false, -1);  /* a clock before its epoch */
    sld_hh_note(hh, 1, 2, "", 0, false, T0);   /* the empty key is a key */
    assert_int_equal(sld_hh_dropped(hh), 3);
    sld_hh_entry_t top[2];
    uint64_t total, bound;
    assert_int_equal(sld_hh_top(hh, 9, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 2, &total, &bound),
                     0);
    assert_int_equal(sld_hh_top(hh, 2, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 2, &total, &bound),
                     1);
    assert_int_equal(top[0].key_len, 0);
    assert_int_equal(sld_hh_top(hh, 1, SLD_HH_HOUR, SLD_HH_REQUESTS, T0, top, 2, &total, &bound),
                     0);
    sld_hh_free(hh);
}

/* Past sample_above notes a second a worker counts one in SLD_HH_SAMPLE,
 * each as SLD_HH_SAMPLE: exact below, close above, exact again the next
 * second. */
static void busy_seconds_are_sampled(void **state) {
    (void)state;
    sld_hh_t *hh;
    sld_hh_options_t o = {.counters = 16, .sample_above = 1000};
    assert_int_equal(sld_hh_new(1, 1, &o, &hh), SL_OK);
    assert_int_equal(sld_hh_options(hh).sample_above, 1000);
    sld_hh_entry_t top[4];
    uint64_t total, bound;
    for (int i = 0; i < 1000; i++)
        sld_hh_note(hh, 0, 0, "a", 1, false, T0 + i);
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_REQUESTS, T0, top, 4, &total, &bound), 1);
    assert_int_equal(top[0].count, 1000); /* every one, one by one */
    assert_int_equal(total, 1000);
    for (int i = 0; i < 16000; i++)
        sld_hh_note(hh, 0, 0, "a", 1, true, T0 + 1000 + i);
    sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_REQUESTS, T0, top, 4, &total, &bound);
    assert_int_equal((top[0].count - 1000) % SLD_HH_SAMPLE, 0);
    assert_true(top[0].count > 17000 - 2600 && top[0].count < 17000 + 2600); /* 5 sigma */
    sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_DENIALS, T0, top, 4, &total, &bound);
    assert_true(top[0].count > 16000 - 2600 && top[0].count < 16000 + 2600);
    /* the next second starts exact again */
    for (int i = 0; i < 10; i++)
        sld_hh_note(hh, 0, 0, "b", 1, true, T0 + SEC(1) + i);
    assert_int_equal(sld_hh_top(hh, 0, SLD_HH_MINUTE, SLD_HH_DENIALS, T0 + SEC(1), top, 4, &total, &bound), 2);
    assert_string_equal(top[1].key, "b");
    assert_int_equal(top[1].count, 10);
    sld_hh_free(hh);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(busy_seconds_are_sampled),
        cmocka_unit_test(zipf_one_worker_one_minute),
        cmocka_unit_test(zipf_four_workers_half_hour),
        cmocka_unit_test(zipf_steep_many_seeds),
        cmocka_unit_test(windows_rotate_on_the_clock),
        cmocka_unit_test(long_keys_are_cut_and_marked),
        cmocka_unit_test(keys_hashed_or_hidden),
        cmocka_unit_test(bad_input_is_dropped_not_fatal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
