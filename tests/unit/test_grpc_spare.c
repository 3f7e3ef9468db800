/* test_grpc_spare.c -- a worker thread's spare blocks
 * (server/grpc/grpc_spare.c): a block given back serves the thread's next
 * take, two blocks taken are never the same one, blocks past the bound are
 * not kept, and what a thread keeps is freed when it ends (the ASan tree's
 * leak check). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/grpc/grpc_spare.h"

static void reused_by_the_next_take(void **state) {
    (void)state;
    char *a = sld_grpc_spare_take(100);
    assert_non_null(a);
    memset(a, 'a', 100);
    sld_grpc_spare_give(a);
    char *b = sld_grpc_spare_take(200);
    assert_ptr_equal(a, b);
    /* a second live block is another one */
    char *c = sld_grpc_spare_take(100);
    assert_non_null(c);
    assert_ptr_not_equal(b, c);
    memset(c, 'c', 100);
    sld_grpc_spare_give(b);
    sld_grpc_spare_give(c);
    sld_grpc_spare_give(NULL);
}

static void larger_than_kept(void **state) {
    (void)state;
    char *a = sld_grpc_spare_take(10);
    sld_grpc_spare_give(a);
    /* too big for the one kept: a new one, the kept one stays */
    char *big = sld_grpc_spare_take(8000);
    assert_non_null(big);
    memset(big, 'b', 8000);
    char *again = sld_grpc_spare_take(10);
    assert_true(again == a || again != big);
    sld_grpc_spare_give(big);
    sld_grpc_spare_give(again);
    /* past the bound: freed when given back (the ASan tree sees no leak) */
    char *huge = sld_grpc_spare_take(SLD_GRPC_SPARE_MAX + 1);
    assert_non_null(huge);
    memset(huge, 'h', SLD_GRPC_SPARE_MAX + 1);
    sld_grpc_spare_give(huge);
    char *kept[8];
    for (int i = 0; i < 8; i++) {
        kept[i] = sld_grpc_spare_take(10);
        assert_non_null(kept[i]);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(kept[i], kept[j]);
    }
    for (int i = 0; i < 8; i++) /* more than a thread keeps: the rest freed */
        sld_grpc_spare_give(kept[i]);
}

static void *worker(void *arg) {
    (void)arg;
    void *a = sld_grpc_spare_take(64), *b = sld_grpc_spare_take(64);
    sld_grpc_spare_give(a);
    sld_grpc_spare_give(b);
    return NULL; /* both kept: freed as the thread ends */
}

static void freed_when_the_thread_ends(void **state) {
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, worker, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reused_by_the_next_take),
        cmocka_unit_test(larger_than_kept),
        cmocka_unit_test(freed_when_the_thread_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
