#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "sluice.h"
static void smoke(void **state) { (void)state; assert_string_equal(sl_errname(SL_EINVAL), "SL_EINVAL"); }
int main(void) { const struct CMUnitTest t[] = {cmocka_unit_test(smoke)}; return cmocka_run_group_tests(t, NULL, NULL); }
