/* test_snapshot.c -- snapshots (src/store/snapshot.c and the memory store's
 * save/load): a round trip keeps every decision; a truncated, damaged,
 * foreign or mismatched file loads nothing and never crashes. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "rig.h"
#include "store/snapshot.h"

static char dir[64];

static int make_dir(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sluice-snap-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int remove_dir(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return getenv("KEEP") || system(cmd) == 0 ? 0 : -1;
}

static const char *path_of(const char *name) {
    static char p[4][128];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

/* Every algorithm, blocks included, several limits in one policy. */
static const sl_limit_t all_kinds[] = {
    {.algorithm = SL_GCRA, .limit = 10, .period = SEC(60), .burst = 4},
    {.algorithm = SL_TOKEN_BUCKET, .limit = 20, .period = SEC(60)},
    {.algorithm = SL_LEAKY_BUCKET, .limit = 5, .period = SEC(10), .burst = 8},
    {.algorithm = SL_FIXED_WINDOW, .limit = 30, .period = SEC(60)},
    {.algorithm = SL_SLIDING_LOG, .limit = 25, .period = SEC(60)},
    {.algorithm = SL_SLIDING_LOG, .limit = 400, .period = MIN(120)}, /* 64-bit entries */
    {.algorithm = SL_SLIDING_WINDOW, .limit = 35, .period = SEC(60)},
    {.algorithm = SL_SLIDING_WINDOW, .limit = 45, .period = SEC(60), .precision = 60},
};
#define KINDS (sizeof all_kinds / sizeof all_kinds[0])

static rig_t *rig_all_kinds(uint64_t seed) {
    rig_t *r = calloc(1, sizeof *r);
    sl_memory_options_t mo = {.shards = 8, .seed = seed};
    assert_int_equal(sl_store_memory_new(&mo, &r->store), SL_OK);
    sl_limiter_options_t lo = {.clock = rig_clock, .clock_ctx = r};
    assert_int_equal(sl_limiter_new(r->store, &lo, &r->limiter), SL_OK);
    sl_policy_config_t cfg = {.name = "all", .limits = all_kinds, .nlimits = KINDS};
    assert_int_equal(sl_policy_new(&cfg, &r->policy, NULL, 0), SL_OK);
    return r;
}

static void drive(rig_t *r, uint64_t *seed, int steps, int keys) {
    for (int i = 0; i < steps; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", (int)rng_below(seed, (uint64_t)keys));
        r->now += (sl_usec_t)rng_below(seed, MS(300));
        rig_check_cost(r, key, 1 + rng_below(seed, 2));
    }
}

static uint64_t states_of(rig_t *r) {
    sl_store_stats_t st;
    assert_int_equal(sl_store_stats(r->store, &st), SL_OK);
    return st.states;
}

static void round_trip_keeps_every_decision(void **state) {
    (void)state;
    uint64_t seed = 11;
    rig_t *a = rig_all_kinds(1111);
    a->now = SEC(5000);
    drive(a, &seed, 3000, 50);
    assert_int_equal(sl_store_save(a->store, path_of("snap"), a->now), SL_OK);

    rig_t *b = rig_all_kinds(2222); /* an empty store adopts the file's seed */
    size_t loaded = 0;
    assert_int_equal(sl_store_load(b->store, path_of("snap"), a->now, &loaded), SL_OK);
    assert_int_equal(sl_store_sweep(a->store, a->now, 0, NULL), SL_OK);
    assert_true(states_of(a) > 50 * 3);
    assert_int_equal(loaded, states_of(a));
    assert_int_equal(states_of(b), states_of(a));
    b->now = a->now;
    for (int i = 0; i < 3000; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", (int)rng_below(&seed, 60));
        sl_usec_t gap = (sl_usec_t)rng_below(&seed, MS(300));
        a->now += gap;
        b->now += gap;
        uint64_t cost = 1 + rng_below(&seed, 2);
        sl_decision_t da = rig_check_cost(a, key, cost), db = rig_check_cost(b, key, cost);
        assert_int_equal(da.allowed, db.allowed);
        assert_int_equal(da.remaining, db.remaining);
        assert_int_equal(da.retry_after, db.retry_after);
        assert_int_equal(da.reset_after, db.reset_after);
        assert_int_equal(da.limit_index, db.limit_index);
    }
    /* No temporary file is left behind. */
    assert_int_equal(access(path_of("snap.tmp"), F_OK), -1);
    rig_free(a);
    rig_free(b);
}

static void recovered_states_are_skipped(void **state) {
    (void)state;
    uint64_t seed = 12;
    rig_t *a = rig_all_kinds(1);
    a->now = SEC(100);
    drive(a, &seed, 500, 20);
    assert_int_equal(sl_store_save(a->store, path_of("old"), a->now), SL_OK);
    rig_t *b = rig_all_kinds(1);
    size_t loaded = 99;
    /* Three hours later even the 2-hour log has recovered. */
    assert_int_equal(sl_store_load(b->store, path_of("old"), a->now + MIN(180), &loaded), SL_OK);
    assert_int_equal(loaded, 0);
    assert_int_equal(states_of(b), 0);
    /* Ten minutes later only the 2-hour log remains. */
    assert_int_equal(sl_store_load(b->store, path_of("old"), a->now + MIN(10), &loaded), SL_OK);
    assert_int_equal(loaded, 20);
    rig_free(a);
    rig_free(b);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void spill(const char *path, const unsigned char *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* A load that fails leaves the store exactly as it was. */
static void expect_rejected(rig_t *b, const char *path, int err) {
    size_t loaded = 77;
    int rc = sl_store_load(b->store, path, SEC(1), &loaded);
    if (rc != err)
        fail_msg("expected %s, got %s", sl_errname(err), sl_errname(rc));
    assert_int_equal(loaded, 77);
    assert_int_equal(states_of(b), 0);
}

static void every_truncation_and_every_damaged_byte(void **state) {
    (void)state;
    uint64_t seed = 13;
    rig_t *a = rig_all_kinds(3);
    drive(a, &seed, 40, 3);
    assert_int_equal(sl_store_save(a->store, path_of("good"), a->now), SL_OK);
    size_t len;
    unsigned char *buf = slurp(path_of("good"), &len);
    assert_true(len > 500);
    rig_t *b = rig_all_kinds(4);
    for (size_t cut = 0; cut < len; cut++) {
        spill(path_of("cut"), buf, cut);
        expect_rejected(b, path_of("cut"), cut >= 8 ? SL_ECORRUPT : SL_EFORMAT);
    }
    for (size_t at = 0; at < len; at++) {
        buf[at] ^= 0x20;
        spill(path_of("flip"), buf, len);
        expect_rejected(b, path_of("flip"), at < 8 || (at >= 8 && at < 12) ? SL_EFORMAT : SL_ECORRUPT);
        buf[at] ^= 0x20;
    }
    /* Garbage after a valid file. */
    unsigned char *longer = malloc(len + 5);
    memcpy(longer, buf, len);
    memcpy(longer + len, "extra", 5);
    spill(path_of("long"), longer, len + 5);
    expect_rejected(b, path_of("long"), SL_ECORRUPT);
    free(longer);
    free(buf);
    rig_free(a);
    rig_free(b);
}

/* Rewrites the checksum so that only the structure can tell. */
static void reseal(unsigned char *buf, size_t len) {
    uint64_t sum = XXH3_64bits(buf, len - 16);
    for (int i = 0; i < 8; i++)
        buf[len - 16 + i] = (unsigned char)(sum >> (8 * i));
}

static void foreign_and_unreadable_files(void **state) {
    (void)state;
    rig_t *b = rig_all_kinds(5);
    spill(path_of("text"), (const unsigned char *)"# not a snapshot\nkey=value\n", 27);
    expect_rejected(b, path_of("text"), SL_EFORMAT);
    spill(path_of("empty"), (const unsigned char *)"", 0);
    expect_rejected(b, path_of("empty"), SL_EFORMAT);
    expect_rejected(b, path_of("missing"), SL_EIO);
    expect_rejected(b, dir, SL_EIO);

    /* A future version, properly sealed. */
    rig_t *a = rig_all_kinds(6);
    rig_check(a, "x");
    assert_int_equal(sl_store_save(a->store, path_of("v1"), a->now), SL_OK);
    size_t len;
    unsigned char *buf = slurp(path_of("v1"), &len);
    buf[8] = 2;
    reseal(buf, len);
    spill(path_of("v2"), buf, len);
    expect_rejected(b, path_of("v2"), SL_EFORMAT);
    buf[8] = 1;
    /* A record count that lies, properly sealed. */
    buf[len - 24] ^= 1;
    reseal(buf, len);
    spill(path_of("count"), buf, len);
    expect_rejected(b, path_of("count"), SL_ECORRUPT);
    buf[len - 24] ^= 1;
    /* A block that claims more entries than it has, properly sealed: walk
     * the records (inline 28 bytes, block 36 + entries) to the first block. */
    size_t rec = 40;
    while (rec + 28 <= len - 24 && buf[rec] != 1)
        rec += 28;
    assert_int_equal(buf[rec], 1);
    buf[rec + 24] = 0xff;
    buf[rec + 25] = 0xff;
    reseal(buf, len);
    spill(path_of("cap"), buf, len);
    expect_rejected(b, path_of("cap"), SL_ECORRUPT);
    free(buf);

    /* Saving where it cannot write fails cleanly. */
    assert_int_equal(sl_store_save(a->store, "/nonexistent-dir/snap", a->now), SL_EIO);
    rig_free(a);
    rig_free(b);
}

static void seeds(void **state) {
    (void)state;
    rig_t *a = rig_all_kinds(7);
    assert_true(rig_check(a, "x").allowed);
    assert_int_equal(sl_store_save(a->store, path_of("seed7"), a->now), SL_OK);
    /* A store with states of its own under another seed refuses it. */
    rig_t *b = rig_all_kinds(8);
    rig_check(b, "y");
    uint64_t before = states_of(b);
    size_t loaded = 5;
    assert_int_equal(sl_store_load(b->store, path_of("seed7"), 0, &loaded), SL_ESEED);
    assert_int_equal(states_of(b), before);
    /* The same seed merges. */
    rig_t *c = rig_all_kinds(7);
    rig_check(c, "y");
    assert_int_equal(sl_store_load(c->store, path_of("seed7"), 0, &loaded), SL_OK);
    assert_int_equal(states_of(c), 2 * KINDS);
    assert_int_equal(rig_check(c, "x").remaining, rig_check(a, "x").remaining);
    rig_free(a);
    rig_free(b);
    rig_free(c);
}

/* A record whose tag is right but whose block is of another kind (only a
 * forged file can say so) is dropped when met, not trusted. */
static void forged_block_kinds(void **state) {
    (void)state;
    rig_t *a = rig_all_kinds(9);
    a->now = SEC(10);
    for (int i = 0; i < 5; i++)
        rig_check(a, "x");
    assert_int_equal(sl_store_save(a->store, path_of("real"), a->now), SL_OK);
    sl__snapshot_t snap;
    assert_int_equal(sl__snapshot_read(path_of("real"), 0, &snap), SL_OK);
    sl__snapshot_writer_t *w;
    assert_int_equal(sl__snapshot_begin(path_of("forged"), snap.seed, a->now, &w), SL_OK);
    sl__block_t *odd = calloc(1, sl__block_size(SL__BLOCK_LOG32, 3));
    sl__block_init(odd, SL__BLOCK_LOG32, 3);
    odd->count = 3;
    for (size_t i = 0; i < snap.count; i++) {
        sl__record_t r = snap.records[i];
        if (r.block) {
            r.block = odd; /* every block becomes a small log */
        } else {
            r.block = odd; /* inline states claim a block too */
        }
        assert_int_equal(sl__snapshot_add(w, &r), SL_OK);
    }
    assert_int_equal(sl__snapshot_finish(w), SL_OK);
    free(odd);
    sl__snapshot_release(&snap);

    rig_t *b = rig_all_kinds(10);
    assert_int_equal(sl_store_load(b->store, path_of("forged"), a->now, NULL), SL_OK);
    b->now = a->now;
    /* The forged log fits one limit (the 60 s log, whose 3 entries now
     * stand for 3 admissions); every other state is discarded as new. */
    sl_decision_t d = rig_check(b, "x");
    assert_true(d.allowed);
    rig_free(a);
    rig_free(b);
}

/* A disk that fills up after `room` more bytes. */
static size_t room;

static ssize_t full_disk_write(int fd, const void *buf, size_t n) {
    if (room == 0) {
        errno = ENOSPC;
        return -1;
    }
    size_t k = n < room ? n : room; /* a short write first, as the kernel does */
    room -= k;
    return write(fd, buf, k);
}

static size_t temporaries(void) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* A failed save names the system's reason in errno (not just SL_EIO) and
 * leaves the previous snapshot byte for byte, with no temporary file. */
static void save_errors_keep_the_previous_snapshot(void **state) {
    (void)state;
    uint64_t seed = 21;
    rig_t *a = rig_all_kinds(7);
    a->now = SEC(100);
    drive(a, &seed, 50, 5);
    assert_int_equal(sl_store_save(a->store, path_of("keep"), a->now), SL_OK);
    size_t before_len;
    unsigned char *before = slurp(path_of("keep"), &before_len);
    drive(a, &seed, 3000, 500);

    size_t sizes[] = {0, 10, 40, 5000, before_len + 100};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        room = sizes[i];
        sl__snapshot_write_fn = full_disk_write;
        errno = 0;
        int rc = sl_store_save(a->store, path_of("keep"), a->now);
        int why = errno;
        sl__snapshot_write_fn = write;
        assert_int_equal(rc, SL_EIO);
        if (why != ENOSPC)
            fail_msg("room %zu: errno %d (%s), expected ENOSPC", sizes[i], why, strerror(why));
        size_t len;
        unsigned char *now = slurp(path_of("keep"), &len);
        assert_int_equal(len, before_len);
        assert_memory_equal(now, before, len);
        free(now);
        assert_int_equal(temporaries(), 0);
    }
    /* a path under a regular file, a missing directory */
    errno = 0;
    assert_int_equal(sl_store_save(a->store, path_of("keep/under"), a->now), SL_EIO);
    assert_int_equal(errno, ENOTDIR);
    errno = 0;
    assert_int_equal(sl_store_save(a->store, path_of("none/snap"), a->now), SL_EIO);
    assert_int_equal(errno, ENOENT);
    /* reading: errno says why too */
    rig_t *b = rig_all_kinds(8);
    errno = 0;
    assert_int_equal(sl_store_load(b->store, dir, SEC(1), NULL), SL_EIO);
    assert_int_equal(errno, EISDIR);
    errno = 0;
    assert_int_equal(sl_store_load(b->store, path_of("missing"), SEC(1), NULL), SL_EIO);
    assert_int_equal(errno, ENOENT);
    free(before);
    rig_free(a);
    rig_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_keeps_every_decision),
        cmocka_unit_test(recovered_states_are_skipped),
        cmocka_unit_test(every_truncation_and_every_damaged_byte),
        cmocka_unit_test(foreign_and_unreadable_files),
        cmocka_unit_test(seeds),
        cmocka_unit_test(forged_block_kinds),
        cmocka_unit_test(save_errors_keep_the_previous_snapshot),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
