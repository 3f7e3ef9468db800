/* test_http_wait.c -- the wait parameter of /v1/check (src/server/http/
 * http_check.c, read for http_wait.c): a duration up to SL_MAX_WAIT in the
 * query or the JSON body; without it, no waiting (-1). */
#include "rig.h"
#include "server/http/http_check.h"

static int query(const char *q, sld_check_request_t *out, const char **param) {
    char scratch[256];
    const char *why = NULL;
    return sld_check_parse_query(q, strlen(q), scratch, out, param, &why);
}

static int json(const char *j, sld_check_request_t *out, const char **param) {
    char scratch[256];
    const char *why = NULL;
    return sld_check_parse_json(j, strlen(j), scratch, out, param, &why);
}

static void parses_durations(void **state) {
    (void)state;
    sld_check_request_t r;
    const char *param = NULL;
    assert_int_equal(query("policy=p&key=k", &r, &param), SL_OK);
    assert_int_equal(r.wait, -1);
    assert_int_equal(query("policy=p&key=k&wait=500ms", &r, &param), SL_OK);
    assert_int_equal(r.wait, MS(500));
    assert_int_equal(query("wait=2s&policy=p", &r, &param), SL_OK);
    assert_int_equal(r.wait, SEC(2));
    assert_int_equal(query("policy=p&wait=0s", &r, &param), SL_OK);
    assert_int_equal(r.wait, 0);
    assert_int_equal(query("policy=p&wait=1h", &r, &param), SL_OK);
    assert_int_equal(r.wait, SL_MAX_WAIT);
    assert_int_equal(json("{\"policy\":\"p\",\"key\":\"k\",\"wait\":\"250ms\"}", &r, &param), SL_OK);
    assert_int_equal(r.wait, MS(250));
    assert_int_equal(json("{\"policy\":\"p\"}", &r, &param), SL_OK);
    assert_int_equal(r.wait, -1);
}

static void refuses_bad_waits(void **state) {
    (void)state;
    sld_check_request_t r;
    const char *bad_q[] = {"policy=p&wait=", "policy=p&wait=soon", "policy=p&wait=2h",
                           "policy=p&wait=-1s", "policy=p&wait=1s&wait=2s",
                           "policy=p&wait=123456789012345678901234567890123s"};
    for (size_t i = 0; i < sizeof bad_q / sizeof *bad_q; i++) {
        const char *param = NULL;
        assert_int_equal(query(bad_q[i], &r, &param), SL_EINVAL);
        assert_string_equal(param, "wait");
    }
    const char *bad_j[] = {"{\"policy\":\"p\",\"wait\":500}", "{\"policy\":\"p\",\"wait\":\"x\"}",
                           "{\"policy\":\"p\",\"wait\":\"1s\",\"wait\":\"1s\"}"};
    for (size_t i = 0; i < sizeof bad_j / sizeof *bad_j; i++) {
        const char *param = NULL;
        assert_int_equal(json(bad_j[i], &r, &param), SL_EINVAL);
        assert_string_equal(param, "wait");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_durations),
        cmocka_unit_test(refuses_bad_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
