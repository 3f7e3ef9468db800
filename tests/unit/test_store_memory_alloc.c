/* test_store_memory_alloc.c -- the memory store's max_memory covers all it
 * allocates: filled far past the cap, used_memory never passes max_memory,
 * and it equals what the store really holds from the allocator.
 *
 * The program is linked with -Wl,--wrap for malloc, calloc, realloc,
 * aligned_alloc, free, mmap and munmap (tests/CMakeLists.txt), so every
 * allocation the library makes passes through the counters below, which
 * price it by the allocator's rounding on their own (the same rule the
 * store models, written out again here: 8-byte header, 16-byte steps, 32 at
 * least; whole pages for mmap). Only allocations made while `counting` is on
 * are tracked; a free of one of them is counted whenever it happens.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "rig.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

#define TRACK (1u << 20) /* open addressing, far more than live allocations */

static struct {
    void *p;
    size_t cost;
} live[TRACK];
static bool counting;
static size_t live_bytes, live_count, untracked_frees;

static size_t heap_price(size_t n) {
    size_t c = (n + 8 + 15) / 16 * 16;
    return c < 32 ? 32 : c;
}

static size_t page_price(size_t n) { return (n + 4095) / 4096 * 4096; }

static size_t slot_of(const void *p) {
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 44) & (TRACK - 1);
}

static void track(void *p, size_t cost) {
    if (p == NULL || !counting)
        return;
    size_t i = slot_of(p);
    while (live[i].p)
        i = (i + 1) & (TRACK - 1);
    live[i].p = p;
    live[i].cost = cost;
    live_bytes += cost;
    live_count++;
}

/* Forgets p (backward-shift deletion); false if it was not tracked. */
static bool untrack(void *p) {
    if (p == NULL)
        return true;
    size_t i = slot_of(p);
    while (live[i].p && live[i].p != p)
        i = (i + 1) & (TRACK - 1);
    if (live[i].p == NULL)
        return false;
    live_bytes -= live[i].cost;
    live_count--;
    live[i].p = NULL;
    for (size_t j = (i + 1) & (TRACK - 1); live[j].p; j = (j + 1) & (TRACK - 1)) {
        size_t home = slot_of(live[j].p);
        bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            live[i] = live[j];
            live[j].p = NULL;
            i = j;
        }
    }
    return true;
}

void *__wrap_malloc(size_t n) {
    void *p = __real_malloc(n);
    track(p, heap_price(n));
    return p;
}

void *__wrap_calloc(size_t k, size_t n) {
    void *p = __real_calloc(k, n);
    track(p, heap_price(k * n));
    return p;
}

void *__wrap_realloc(void *old, size_t n) {
    bool was = old && untrack(old);
    void *p = __real_realloc(old, n);
    if (was || counting) {
        bool c = counting;
        counting = true;
        track(p, heap_price(n));
        counting = c;
    }
    return p;
}

void *__wrap_aligned_alloc(size_t a, size_t n) {
    void *p = __real_aligned_alloc(a, n);
    track(p, heap_price(n));
    return p;
}

void __wrap_free(void *p) {
    if (!untrack(p))
        untracked_frees++;
    __real_free(p);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = __real_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED)
        track(p, page_price(len));
    return p;
}

int __wrap_munmap(void *addr, size_t len) {
    untrack(addr);
    return __real_munmap(addr, len);
}

static uint64_t used(sl_store_t *s) {
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(s, &st), SL_OK);
    return st.bytes;
}

/* Runs `checks` checks of cost 1 + i % costs on keys i % keys against a
 * store capped at `cap` with `limits`, checking the cap and the accounting
 * every `every` checks. */
static void fill_keys(size_t cap, uint32_t shards, const sl_limit_t *limits, size_t nlimits, int checks,
                      int every, int keys, int costs) {
    live_bytes = live_count = 0;
    counting = true;
    sl_store_t *store;
    sl_memory_options_t mo = {.max_memory = cap, .shards = shards, .seed = 99};
    assert_int_equal(sl_store_memory_new(&mo, &store), SL_OK);
    counting = false;
    /* the policy and the limiter are not the store's */
    rig_t r = {.now = SEC(1000), .store = store};
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = &r};
    assert_int_equal(sl_limiter_new(store, &lo, &r.limiter), SL_OK);
    sl_policy_config_t pc = {.name = "fill", .limits = limits, .nlimits = nlimits};
    assert_int_equal(sl_policy_new(&pc, &r.policy, NULL, 0), SL_OK);

    if (used(store) != live_bytes)
        fail_msg("new store: used_memory %zu, really allocated %zu", (size_t)used(store), live_bytes);
    counting = true;
    uint64_t most = 0;
    for (int i = 0; i < checks; i++) {
        char key[32];
        snprintf(key, sizeof key, "key-%d", i % keys);
        r.now += 10;
        sl_decision_t d;
        int rc = sl_check(r.limiter, r.policy, key, strlen(key), 1 + (uint64_t)(i % costs), &d);
        if (rc != SL_OK && rc != SL_EFULL)
            fail_msg("check %d: %s", i, sl_errname(rc));
        if (i % every == 0 || i == checks - 1) {
            uint64_t u = used(store);
            most = u > most ? u : most;
            if (u > cap)
                fail_msg("after %d keys: used_memory %zu > max_memory %zu", i + 1, (size_t)u, cap);
            if (u != live_bytes)
                fail_msg("after %d keys: used_memory %zu, really allocated %zu (%zu allocations)",
                         i + 1, (size_t)u, live_bytes, live_count);
        }
    }
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(store, &st), SL_OK);
    print_message("cap %zu, %u shards: %d checks, %llu states kept, %llu evicted, used at most %llu "
                  "(%.1f%% of the cap)\n", cap, shards, checks, (unsigned long long)st.states,
                  (unsigned long long)st.evictions, (unsigned long long)most, 100.0 * (double)most / (double)cap);
    assert_true(st.evictions > 0); /* far past the cap indeed */
    counting = false;
    sl_limiter_free(r.limiter);
    sl_policy_free(r.policy);
    counting = true;
    sl_store_free(store);
    counting = false;
    assert_int_equal(live_count, 0); /* and everything goes back */
    assert_int_equal(live_bytes, 0);
}

/* Fills a store capped at `cap` with `keys` keys of `limits`, each checked
 * once at cost 1 to 3. */
static void fill(size_t cap, uint32_t shards, const sl_limit_t *limits, size_t nlimits, int keys,
                 int every) {
    fill_keys(cap, shards, limits, nlimits, keys, every, keys, 3);
}

static const sl_limit_t gcra[] = {{.algorithm = SL_GCRA, .limit = 10, .period = SEC(60), .burst = 4}};
static const sl_limit_t logs[] = {
    {.algorithm = SL_SLIDING_LOG, .limit = 50, .period = SEC(600)},
    {.algorithm = SL_SLIDING_WINDOW, .limit = 100, .period = SEC(600), .precision = 10},
    {.algorithm = SL_FIXED_WINDOW, .limit = 100, .period = SEC(600)},
};

static void default_shards_inline_states(void **state) {
    (void)state;
    fill(1u << 20, 0, gcra, 1, 80000, 97); /* 1 MiB holds ~55,000 */
}

static void many_shards_blocks(void **state) {
    (void)state;
    fill(1u << 20, 256, logs, 3, 25000, 89);
}

/* sliding_log rings in their slabs at the cap: keys come back with costs
 * up to 61, so that their rings grow through every size class (4, 8, ...,
 * 64, 200, of two timestamp widths) and free records of the smaller ones,
 * and chunks fill, empty and go back while CLOCK evicts. */
static const sl_limit_t rings[] = {
    {.algorithm = SL_SLIDING_LOG, .limit = 200, .period = SEC(600)},
    {.algorithm = SL_SLIDING_LOG, .limit = 100, .period = SEC(86400)},
};

static void slab_rings_at_cap(void **state) {
    (void)state;
    fill_keys(1u << 20, 16, rings, 2, 60000, 101, 3000, 61);
    fill_keys(256u << 10, 1, rings, 1, 20000, 37, 1500, 61);
}

/* States too large to pack: each has a 16-byte record out of line, counted
 * and evicted like a block's. */
static const sl_limit_t wide[] = {{.algorithm = SL_GCRA, .limit = 999999, .period = SEC(2592000), .burst = 4}};

static void out_of_line_states(void **state) {
    (void)state;
    fill(1u << 20, 0, wide, 1, 40000, 97); /* 1 MiB holds ~16,000 */
}

static void large_tables(void **state) {
    (void)state;
    fill(4u << 20, 4, gcra, 1, 300000, 997); /* tables of many pages; 4 MiB holds ~230,000 */
}

/* ---- states too large to pack in a store at max_memory ------------------------ */

static void free_parts(rig_t *r) {
    sl_policy_free(r->policy);
    sl_limiter_free(r->limiter);
    sl_store_free(r->store);
}

/* A one-shard store whose budget is a 128-slot table and `slack` bytes,
 * filled with 400 small (packed) keys, so that the table has taken all it
 * could and less than a growth step is left; r->policy is `second`. */
static rig_t *full_of_small(rig_t *r, size_t slack, const sl_limit_t *second) {
    sl_store_t *probe; /* what the store's headers cost: an empty store less its table */
    sl_memory_options_t po = {.shards = 1, .seed = 7};
    assert_int_equal(sl_store_memory_new(&po, &probe), SL_OK);
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(probe, &st), SL_OK);
    sl_store_free(probe);
    size_t fixed = (size_t)st.bytes - heap_price(16 * 16);
    sl_memory_options_t mo = {.shards = 1, .seed = 7, .max_memory = fixed + heap_price(128 * 16) + slack};
    assert_int_equal(sl_store_memory_new(&mo, &r->store), SL_OK);
    r->now = SEC(1000);
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = r};
    assert_int_equal(sl_limiter_new(r->store, &lo, &r->limiter), SL_OK);
    sl_policy_config_t small = {.name = "small", .limits = gcra, .nlimits = 1};
    assert_int_equal(sl_policy_new(&small, &r->policy, NULL, 0), SL_OK);
    for (int i = 0; i < 400; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        r->now += 10;
        rig_check(r, key);
    }
    assert_int_equal(sl_store_stats(r->store, &st), SL_OK);
    assert_true(st.evictions > 0);
    sl_policy_free(r->policy);
    sl_policy_config_t wide_pc = {.name = "wide", .limits = second, .nlimits = 1};
    assert_int_equal(sl_policy_new(&wide_pc, &r->policy, NULL, 0), SL_OK);
    return r;
}

/* Less than a record's bytes left and no record to evict: the table gives
 * some of its room back rather than refuse the decision. */
static void wide_state_in_full_shard_decided(void **state) {
    (void)state;
    rig_t r;
    full_of_small(&r, 20, wide);
    sl_decision_t d = rig_check(&r, "big"); /* asserts SL_OK */
    assert_true(d.allowed);
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(r.store, &st), SL_OK);
    assert_true(st.bytes <= st.max_memory);
    free_parts(&r);
}

/* Room for only a few records: wide keys each spending most of their limit
 * keep their states (small unreferenced keys go instead), so asking again
 * is denied, never allowed through a lost state. */
static void wide_states_do_not_churn(void **state) {
    (void)state;
    static const sl_limit_t daily = {.algorithm = SL_FIXED_WINDOW, .limit = 100000, .period = SEC(86400)};
    static const size_t slacks[] = {100, 20}; /* room for three records; for none */
    for (size_t n = 0; n < 2; n++) {
        size_t slack = slacks[n];
        rig_t r;
        full_of_small(&r, slack, &daily);
        int again = 0;
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < 10; k++) {
                char key[32];
                snprintf(key, sizeof key, "w%d", k);
                r.now += 10;
                sl_decision_t d = rig_check_cost(&r, key, 70000); /* asserts SL_OK */
                if (round == 0)
                    assert_true(d.allowed);
                else if (d.allowed)
                    again++;
            }
        }
        if (again)
            fail_msg("slack %zu: %d of 40 re-asks allowed", slack, again);
        sl_store_stats_t st;
        assert_int_equal(sl_store_stats(r.store, &st), SL_OK);
        assert_true(st.bytes <= st.max_memory);
        free_parts(&r);
    }
}

/* A block charged in place, then a wide record that cannot fit beside it
 * (the smallest share, the key's own states pinned): the decision fails,
 * and the block keeps the expiry of what it now holds, so that a sweep
 * does not take its live content for recovered and forget it. */
static void failed_wide_record_keeps_block_expiry(void **state) {
    (void)state;
    static const sl_limit_t both[] = {
        /* a counters record of 8 + 4 * 176 bytes in a chunk of its own, 720
         * from malloc, with its slab's class directory (64) and chunk array
         * (32): 816 */
        {.algorithm = SL_SLIDING_WINDOW, .limit = 100000, .period = SEC(175), .precision = 175},
        {.algorithm = SL_FIXED_WINDOW, .limit = 100000, .period = SEC(86400)},
    };
    sl_store_t *probe;
    sl_memory_options_t po = {.shards = 1, .seed = 7};
    assert_int_equal(sl_store_memory_new(&po, &probe), SL_OK);
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(probe, &st), SL_OK);
    sl_store_free(probe);
    size_t table = heap_price(16 * 16);
    /* the least a shard may have: four minimal tables, 816 bytes beside one */
    sl_memory_options_t mo = {.shards = 1, .seed = 7, .max_memory = (size_t)st.bytes - table + 4 * table};
    rig_t r = {.now = SEC(1000)};
    assert_int_equal(sl_store_memory_new(&mo, &r.store), SL_OK);
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = &r};
    assert_int_equal(sl_limiter_new(r.store, &lo, &r.limiter), SL_OK);
    sl_policy_config_t pc = {.name = "both", .limits = both, .nlimits = 2};
    assert_int_equal(sl_policy_new(&pc, &r.policy, NULL, 0), SL_OK);
    sl_decision_t d;
    assert_int_equal(sl_check(r.limiter, r.policy, "k", 1, 70000, &d), SL_EFULL);
    assert_int_equal(sl_store_stats(r.store, &st), SL_OK);
    assert_true(st.bytes <= st.max_memory);
    r.now += SEC(1);
    assert_int_equal(sl_store_sweep(r.store, r.now, 0, NULL), SL_OK);
    d = rig_peek_cost(&r, "k", 1);
    assert_int_equal(d.remaining, 30000); /* the sliding window counted it */
    free_parts(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_shards_inline_states),
        cmocka_unit_test(many_shards_blocks),
        cmocka_unit_test(slab_rings_at_cap),
        cmocka_unit_test(out_of_line_states),
        cmocka_unit_test(large_tables),
        cmocka_unit_test(wide_state_in_full_shard_decided),
        cmocka_unit_test(wide_states_do_not_churn),
        cmocka_unit_test(failed_wide_record_keeps_block_expiry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
