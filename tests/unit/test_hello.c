/* test_hello.c -- HELLO's arguments and reply (src/server/resp/hello.c),
 * against what redis-server 7.0 answers to the same commands. */
#include "rig.h"
#include "server/resp/hello.h"

#define ARG(s) ((sld_arg_t){(s), sizeof(s) - 1})

static const char *parse(const sld_arg_t *argv, size_t argc, sld_hello_t *h) {
    static char err[160];
    return sld_hello_parse(argv, argc, h, err, sizeof err);
}

static void versions(void **state) {
    (void)state;
    sld_hello_t h;
    sld_arg_t alone[] = {ARG("HELLO")};
    assert_null(parse(alone, 1, &h));
    assert_int_equal(h.proto, 0); /* the protocol stays */
    sld_arg_t two[] = {ARG("HELLO"), ARG("2")}, three[] = {ARG("hello"), ARG("3")};
    assert_null(parse(two, 2, &h));
    assert_int_equal(h.proto, 2);
    assert_null(parse(three, 2, &h));
    assert_int_equal(h.proto, 3);
    assert_null(h.user);
    assert_null(h.name);
    sld_arg_t four[] = {ARG("HELLO"), ARG("4")}, one[] = {ARG("HELLO"), ARG("1")};
    assert_string_equal(parse(four, 2, &h), "NOPROTO unsupported protocol version");
    assert_string_equal(parse(one, 2, &h), "NOPROTO unsupported protocol version");
    sld_arg_t word[] = {ARG("HELLO"), ARG("x")}, huge[] = {ARG("HELLO"), ARG("99999999999999999999")};
    assert_string_equal(parse(word, 2, &h), "ERR Protocol version is not an integer or out of range");
    assert_string_equal(parse(huge, 2, &h), "ERR Protocol version is not an integer or out of range");
}

static void options(void **state) {
    (void)state;
    sld_hello_t h;
    sld_arg_t all[] = {ARG("HELLO"), ARG("3"), ARG("auth"), ARG("default"), ARG("pw"),
                       ARG("SETNAME"), ARG("me")};
    assert_null(parse(all, 7, &h));
    assert_int_equal(h.proto, 3);
    assert_int_equal(h.user->len, 7);
    assert_memory_equal(h.user->ptr, "default", 7);
    assert_memory_equal(h.pass->ptr, "pw", 2);
    assert_memory_equal(h.name->ptr, "me", 2);
    sld_arg_t reversed[] = {ARG("HELLO"), ARG("2"), ARG("SETNAME"), ARG("me"), ARG("AUTH"),
                            ARG("u"), ARG("p")};
    assert_null(parse(reversed, 7, &h));
    assert_memory_equal(h.user->ptr, "u", 1);
    sld_arg_t short_auth[] = {ARG("HELLO"), ARG("3"), ARG("AUTH"), ARG("u")};
    assert_string_equal(parse(short_auth, 4, &h), "ERR Syntax error in HELLO option 'AUTH'");
    sld_arg_t no_name[] = {ARG("HELLO"), ARG("3"), ARG("SETNAME")};
    assert_string_equal(parse(no_name, 3, &h), "ERR Syntax error in HELLO option 'SETNAME'");
    sld_arg_t other[] = {ARG("HELLO"), ARG("3"), ARG("FOO")};
    assert_string_equal(parse(other, 3, &h), "ERR Syntax error in HELLO option 'FOO'");
    sld_arg_t spaced[] = {ARG("HELLO"), ARG("3"), ARG("SETNAME"), ARG("a b")};
    assert_string_equal(parse(spaced, 4, &h),
                        "ERR Client names cannot contain spaces, newlines or special characters.");
    sld_arg_t newline[] = {ARG("HELLO"), ARG("3"), ARG("SETNAME"), ARG("a\n")};
    assert_non_null(parse(newline, 4, &h));
}

static void reply_in_both_protocols(void **state) {
    (void)state;
    sld_buf_t b = {0};
    sld_hello_reply(&b, SLD_PROTO_3, 7);
    char want[512];
    int n = snprintf(want, sizeof want,
                     "%%7\r\n$6\r\nserver\r\n$6\r\nsluice\r\n$7\r\nversion\r\n$%zu\r\n%s\r\n"
                     "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                     "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
                     strlen(SL_VERSION_STRING), SL_VERSION_STRING);
    assert_int_equal(b.len, (size_t)n);
    assert_memory_equal(b.data, want, b.len);
    sld_buf_reset(&b);
    sld_hello_reply(&b, SLD_PROTO_2, 7);
    want[0] = '*'; /* a flat array of 14 in RESP2, proto 2 */
    memmove(want + 3, want + 2, (size_t)n - 2);
    want[1] = '1', want[2] = '4';
    char *proto = strstr(want, "proto\r\n:3");
    proto[8] = '2';
    assert_int_equal(b.len, (size_t)n + 1);
    assert_memory_equal(b.data, want, b.len);
    sld_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(versions),
        cmocka_unit_test(options),
        cmocka_unit_test(reply_in_both_protocols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
