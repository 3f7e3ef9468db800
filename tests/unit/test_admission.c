/* test_admission.c -- one count of connections against max_connections
 * (src/server/net/admission.c), as the fronts use it: admitted up to the
 * bound, refused past it without being counted as connected, released on
 * close (sld_conn_closed: only what was admitted); the bound is read at
 * each accept (a reload changes it). */
#include "rig.h"
#include "server/net/admission.h"

typedef struct fixture {
    sld_config_t cfg;
    sld_runtime_t rt;
    sld_daemon_t d;
} fixture_t;

static fixture_t *fixture(uint32_t max_connections) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->cfg.max_connections = max_connections;
    f->rt.cfg = &f->cfg;
    atomic_store(&f->d.runtime, &f->rt);
    return f;
}

static void test_admits_up_to_the_bound(void **state) {
    (void)state;
    fixture_t *f = fixture(2);
    assert_true(sld_conn_admit(&f->d));
    assert_true(sld_conn_admit(&f->d));
    assert_int_equal(atomic_load(&f->d.stats.connected), 2);
    assert_int_equal(atomic_load(&f->d.stats.connections_received), 2);
    assert_int_equal(atomic_load(&f->d.stats.connections_rejected), 0);
    free(f);
}

static void test_refuses_past_the_bound_without_counting_it_connected(void **state) {
    (void)state;
    fixture_t *f = fixture(1);
    assert_true(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    assert_int_equal(atomic_load(&f->d.stats.connected), 1);
    assert_int_equal(atomic_load(&f->d.stats.connections_received), 3);
    assert_int_equal(atomic_load(&f->d.stats.connections_rejected), 2);
    free(f);
}

static void test_a_release_makes_room(void **state) {
    (void)state;
    fixture_t *f = fixture(1);
    assert_true(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    sld_conn_release(&f->d);
    assert_int_equal(atomic_load(&f->d.stats.connected), 0);
    assert_true(sld_conn_admit(&f->d));
    assert_int_equal(atomic_load(&f->d.stats.connected), 1);
    free(f);
}

static void test_the_bound_is_read_at_each_accept(void **state) {
    (void)state;
    fixture_t *f = fixture(1);
    assert_true(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    sld_config_t bigger = {.max_connections = 3};
    sld_runtime_t rt = {.cfg = &bigger};
    atomic_store(&f->d.runtime, &rt); /* a reload */
    assert_true(sld_conn_admit(&f->d));
    assert_true(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    assert_int_equal(atomic_load(&f->d.stats.connected), 3);
    free(f);
}

/* A front's close: its acceptor is released either way (a NULL spread
 * counts nothing, accept_spread.c), the count here only if admitted. */
static void test_a_close_releases_only_what_was_admitted(void **state) {
    (void)state;
    fixture_t *f = fixture(1);
    sld_acceptor_t a = {0};
    assert_true(sld_conn_admit(&f->d));
    assert_false(sld_conn_admit(&f->d));
    sld_conn_closed(&f->d, &a, false);
    assert_int_equal(atomic_load(&f->d.stats.connected), 1);
    sld_conn_closed(&f->d, &a, true);
    assert_int_equal(atomic_load(&f->d.stats.connected), 0);
    free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admits_up_to_the_bound),
        cmocka_unit_test(test_refuses_past_the_bound_without_counting_it_connected),
        cmocka_unit_test(test_a_release_makes_room),
        cmocka_unit_test(test_the_bound_is_read_at_each_accept),
        cmocka_unit_test(test_a_close_releases_only_what_was_admitted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
