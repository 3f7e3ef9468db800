/* test_transaction.c -- the MULTI queue (src/server/resp/transaction.c):
 * commands come back as queued, in order, byte for byte; the bounds (count,
 * bytes, arguments) fail the queue and free what it held; a failed queue
 * keeps nothing and hands nothing back. */
#include "rig.h"
#include "server/resp/transaction.h"

#define ARG(s) ((sld_arg_t){(s), sizeof(s) - 1})

static void queued_in_order(void **state) {
    (void)state;
    sld_tx_t *tx = sld_tx_new();
    assert_non_null(tx);
    sld_arg_t a[] = {ARG("CL.THROTTLE"), ARG("k\0ey"), ARG("1"), ARG("2"), ARG("60")};
    sld_arg_t b[] = {ARG("PING")};
    sld_arg_t c[] = {ARG("ECHO"), ARG("")};
    assert_int_equal(sld_tx_add(tx, a, 5, 1024), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, b, 1, 1024), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, c, 2, 1024), SLD_TX_QUEUED);
    assert_int_equal(tx->n, 3);
    const sld_arg_t *want[] = {a, b, c};
    size_t wantc[] = {5, 1, 2};
    sld_arg_t argv[SLD_TX_MAX_ARGS];
    size_t pos = 0, argc, k = 0;
    while (sld_tx_next(tx, &pos, argv, &argc)) {
        assert_true(k < 3);
        assert_int_equal(argc, wantc[k]);
        for (size_t i = 0; i < argc; i++) {
            assert_int_equal(argv[i].len, want[k][i].len);
            assert_memory_equal(argv[i].ptr, want[k][i].ptr, argv[i].len);
            assert_true(argv[i].ptr != want[k][i].ptr || argv[i].len == 0); /* a copy */
        }
        k++;
    }
    assert_int_equal(k, 3);
    assert_false(tx->failed);
    sld_tx_free(tx);
    sld_tx_free(NULL);
}

static void empty_queue(void **state) {
    (void)state;
    sld_tx_t *tx = sld_tx_new();
    sld_arg_t argv[SLD_TX_MAX_ARGS];
    size_t pos = 0, argc;
    assert_false(sld_tx_next(tx, &pos, argv, &argc));
    assert_int_equal(tx->n, 0);
    sld_tx_free(tx);
}

static void bounded_in_commands(void **state) {
    (void)state;
    sld_tx_t *tx = sld_tx_new();
    sld_arg_t ping[] = {ARG("PING")};
    for (int i = 0; i < SLD_TX_MAX_COMMANDS; i++)
        assert_int_equal(sld_tx_add(tx, ping, 1, 1 << 20), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, ping, 1, 1 << 20), SLD_TX_TOO_MANY);
    assert_true(tx->failed);
    assert_int_equal(tx->cmds.len, 0); /* what it held is freed */
    assert_int_equal(sld_tx_add(tx, ping, 1, 1 << 20), SLD_TX_FAILED);
    sld_arg_t argv[SLD_TX_MAX_ARGS];
    size_t pos = 0, argc;
    assert_false(sld_tx_next(tx, &pos, argv, &argc));
    sld_tx_free(tx);
}

static void bounded_in_bytes(void **state) {
    (void)state;
    sld_tx_t *tx = sld_tx_new();
    sld_arg_t ten[] = {ARG("ECHO"), ARG("123456")}; /* 10 bytes of arguments */
    assert_int_equal(sld_tx_add(tx, ten, 2, 25), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, ten, 2, 25), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, ten, 2, 25), SLD_TX_TOO_BIG);
    assert_true(tx->failed);
    sld_tx_free(tx);
    /* one command alone over the bound */
    tx = sld_tx_new();
    assert_int_equal(sld_tx_add(tx, ten, 2, 9), SLD_TX_TOO_BIG);
    sld_tx_free(tx);
    /* exactly at the bound is fine */
    tx = sld_tx_new();
    assert_int_equal(sld_tx_add(tx, ten, 2, 10), SLD_TX_QUEUED);
    sld_tx_free(tx);
}

static void bounded_in_arguments(void **state) {
    (void)state;
    sld_arg_t many[SLD_TX_MAX_ARGS + 1];
    for (size_t i = 0; i <= SLD_TX_MAX_ARGS; i++)
        many[i] = ARG("x");
    sld_tx_t *tx = sld_tx_new();
    assert_int_equal(sld_tx_add(tx, many, SLD_TX_MAX_ARGS, 1024), SLD_TX_QUEUED);
    assert_int_equal(sld_tx_add(tx, many, SLD_TX_MAX_ARGS + 1, 1024), SLD_TX_TOO_BIG);
    sld_tx_free(tx);
    tx = sld_tx_new();
    assert_int_equal(sld_tx_add(tx, many, 0, 1024), SLD_TX_TOO_BIG);
    sld_tx_free(tx);
}

static void failed_by_the_caller(void **state) {
    (void)state;
    sld_tx_t *tx = sld_tx_new();
    sld_arg_t ping[] = {ARG("PING")};
    assert_int_equal(sld_tx_add(tx, ping, 1, 64), SLD_TX_QUEUED);
    sld_tx_fail(tx);
    assert_true(tx->failed);
    assert_int_equal(sld_tx_add(tx, ping, 1, 64), SLD_TX_FAILED);
    sld_arg_t argv[SLD_TX_MAX_ARGS];
    size_t pos = 0, argc;
    assert_false(sld_tx_next(tx, &pos, argv, &argc));
    sld_tx_free(tx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queued_in_order),
        cmocka_unit_test(empty_queue),
        cmocka_unit_test(bounded_in_commands),
        cmocka_unit_test(bounded_in_bytes),
        cmocka_unit_test(bounded_in_arguments),
        cmocka_unit_test(failed_by_the_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
