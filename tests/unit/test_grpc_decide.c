/* test_grpc_decide.c -- what the gRPC answer takes from the HTTP front's
 * header writer without measuring it again: the name lengths
 * (sld_http_header_name_lens) are those of the names it writes, and
 * its reservation (sld_http_rate_headers_room) is the room it then uses at
 * most, so a caller's own room of that size is never grown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/http/http_ratelimit.h"

static void name_lengths_match_the_names(void **state) {
    (void)state;
    static const sld_http_header_id_t ids[] = {SLD_H_RATELIMIT_POLICY, SLD_H_RATELIMIT, SLD_H_X_RATELIMIT_LIMIT,
                                               SLD_H_X_RATELIMIT_REMAINING, SLD_H_X_RATELIMIT_RESET,
                                               SLD_H_RETRY_AFTER};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        assert_int_equal(sld_http_header_name_lens[ids[i]], strlen(sld_http_header_names[ids[i]]));
}

static void room_is_what_the_writer_needs(void **state) {
    (void)state;
    sl_limit_t limits[2] = {
        {.algorithm = SL_GCRA, .limit = 1000000, .period = SL_USEC_PER_SEC, .burst = 1000},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 1000000000, .period = 3600 * SL_USEC_PER_SEC},
    };
    sl_policy_config_t cfg = {.name = "p", .limits = limits, .nlimits = 2, .mode = SL_MODE_HARD};
    sl_policy_t *p = NULL;
    assert_int_equal(sl_policy_new(&cfg, &p, NULL, 0), SL_OK);
    const char *name = "a-policy-with-a-longer-name";
    sl_decision_t dec = {.allowed = false, .limit = UINT64_MAX, .remaining = UINT64_MAX,
                         .reset_after = INT64_MAX, .retry_after = INT64_MAX - 1};
    sl_limit_report_t lr[2] = {{.remaining = UINT64_MAX, .reset_after = INT64_MAX, .retry_after = INT64_MAX - 1},
                               {.remaining = UINT64_MAX, .reset_after = INT64_MAX}};
    size_t room = sld_http_rate_headers_room(p, strlen(name));
    char own[1024];
    assert_true(room <= sizeof own);
    sld_http_reply_t r;
    memset(&r, 0, sizeof r);
    r.values = (sld_buf_t){.data = own, .cap = room};
    sld_http_rate_headers(&r, name, p, 0, &dec, lr);
    assert_false(r.values.failed);
    assert_ptr_equal(r.values.data, own); /* never grown */
    assert_true(r.values.len <= room);
    assert_int_equal(r.nheaders, 6);
    sl_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_lengths_match_the_names),
        cmocka_unit_test(room_is_what_the_writer_needs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
