/* test_resp.c -- the RESP parser and reply encoders (src/server/resp/resp.c).
 * Every input is parsed from a copy that ends on a guard page, and every
 * truncated prefix of every valid input must say "need more". */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>

#include "rig.h"
#include "server/resp/resp.h"

static const sld_resp_limits_t limits = {.max_args = 8, .max_bulk = 64, .max_inline = 128};

/* A copy of data whose last byte is followed by an unreadable page. */
static const char *guarded(const char *data, size_t len, void **map, size_t *maplen) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    char *base = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(base != MAP_FAILED);
    assert_int_equal(mprotect(base + (pages - 1) * page, page, PROT_NONE), 0);
    char *p = base + (pages - 1) * page - len;
    memcpy(p, data, len);
    *map = base;
    *maplen = pages * page;
    return p;
}

static ssize_t parse(const char *data, size_t len, sld_arg_t *argv, size_t *argc, size_t *need,
                     const char **why) {
    void *map;
    size_t maplen;
    const char *p = guarded(data, len, &map, &maplen);
    ssize_t rc = sld_resp_parse(p, len, &limits, argv, argc, need, why);
    /* argv points into the copy: check it before unmapping */
    for (size_t i = 0; rc > 0 && i < *argc; i++) {
        assert_true(argv[i].ptr >= p && argv[i].ptr + argv[i].len <= p + len);
        argv[i].ptr = data + (argv[i].ptr - p);
    }
    munmap(map, maplen);
    return rc;
}

typedef struct good {
    const char *in;
    size_t len;          /* 0 = strlen */
    size_t consumed;
    size_t argc;
    const char *args[4];
} good_t;

static const good_t goods[] = {
    {"*1\r\n$4\r\nPING\r\n", 0, 14, 1, {"PING"}},
    {"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", 0, 20, 2, {"ECHO", ""}},
    {"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\nbc\r\n", 0, 31, 3, {"SET", "k", "a\r\nbc"}},
    {"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", 0, 14, 1, {"PING"}}, /* pipelined: one at a time */
    {"*0\r\n", 0, 4, 0, {NULL}},
    {"*-1\r\n", 0, 5, 0, {NULL}},
    {"PING\r\n", 0, 6, 1, {"PING"}},
    {"PING\n", 0, 5, 1, {"PING"}},
    {"  cl.throttle  k\t1 2 3 \r\n", 0, 25, 5, {"cl.throttle", "k", "1", "2"}},
    {"\r\n", 0, 2, 0, {NULL}},
    {"*2\r\n$3\r\na\0b\r\n$1\r\n\0\r\n", 20, 20, 2, {NULL}},
    /* two-digit and zero-padded lengths (the short headers' fast path) */
    {"*02\r\n$12\r\nabcdefghijkl\r\n$03\r\nxyz\r\n", 0, 34, 2, {"abcdefghijkl", "xyz"}},
};

static void valid_inputs_and_every_prefix(void **state) {
    (void)state;
    for (size_t g = 0; g < sizeof goods / sizeof goods[0]; g++) {
        const good_t *c = &goods[g];
        size_t len = c->len ? c->len : strlen(c->in);
        sld_arg_t argv[8];
        size_t argc, need;
        const char *why = NULL;
        ssize_t rc = parse(c->in, len, argv, &argc, &need, &why);
        if (rc != (ssize_t)c->consumed)
            fail_msg("case %zu: consumed %zd, expected %zu (%s)", g, rc, c->consumed, why ? why : "");
        assert_int_equal(argc, c->argc);
        for (size_t i = 0; i < argc && i < 4 && c->args[i]; i++) {
            assert_int_equal(argv[i].len, strlen(c->args[i]));
            assert_memory_equal(argv[i].ptr, c->args[i], argv[i].len);
        }
        for (size_t cut = 0; cut < c->consumed; cut++) {
            rc = parse(c->in, cut, argv, &argc, &need, &why);
            if (rc != SLD_RESP_NEED_MORE)
                fail_msg("case %zu cut at %zu: %zd, expected need-more", g, cut, rc);
            assert_true(need == 0 || (need > cut && need <= c->consumed));
        }
    }
}

static void binary_arguments(void **state) {
    (void)state;
    sld_arg_t argv[8];
    size_t argc, need;
    const char *why;
    const char in[] = "*2\r\n$3\r\na\0b\r\n$1\r\n\0\r\n";
    assert_int_equal(parse(in, sizeof in - 1, argv, &argc, &need, &why), 20);
    assert_int_equal(argv[0].len, 3);
    assert_memory_equal(argv[0].ptr, "a\0b", 3);
    assert_int_equal(argv[1].len, 1);
}

/* A bulk's length is known early: the caller is told how much to wait for. */
static void need_hint(void **state) {
    (void)state;
    sld_arg_t argv[8];
    size_t argc, need;
    const char *why;
    const char in[] = "*2\r\n$4\r\nECHO\r\n$50\r\nxx";
    assert_int_equal(parse(in, sizeof in - 1, argv, &argc, &need, &why), SLD_RESP_NEED_MORE);
    assert_int_equal(need, strlen("*2\r\n$4\r\nECHO\r\n$50\r\n") + 50 + 2);
}

typedef struct bad {
    const char *in;
    const char *why;
} bad_t;

static const bad_t bads[] = {
    {"*x\r\n", "invalid multibulk length"},
    {"*1\r\n+PING\r\n", "expected '$'"},
    {"*1\r\n$x\r\n", "invalid bulk length"},
    {"*1\r\n$-1\r\n", "invalid bulk length"},
    {"*1\r\n$4\r\nPINGxx", "expected CRLF"},
    {"*9\r\n", "too many arguments"},
    {"*1\r\n$65\r\n", "argument too long"},
    {"*1\rx\n", "invalid multibulk length"},
    {"*99999999999999999999\r\n", "invalid multibulk length"},
    {"*1\r\n$99999999999999999999\r\n", "invalid bulk length"},
    {"*123456789012345678901234567890123", "invalid multibulk length"},
    {"a b c d e f g h i\r\n", "too many arguments"},
};

static void protocol_errors(void **state) {
    (void)state;
    for (size_t b = 0; b < sizeof bads / sizeof bads[0]; b++) {
        sld_arg_t argv[8];
        size_t argc, need;
        const char *why = NULL;
        ssize_t rc = parse(bads[b].in, strlen(bads[b].in), argv, &argc, &need, &why);
        if (rc != SLD_RESP_ERROR || why == NULL || strstr(why, bads[b].why) == NULL)
            fail_msg("case %zu: %zd %s, expected error '%s'", b, rc, why ? why : "-", bads[b].why);
    }
    /* An inline line longer than the limit, with no newline in sight. */
    char big[200];
    memset(big, 'a', sizeof big);
    sld_arg_t argv[8];
    size_t argc, need;
    const char *why = NULL;
    assert_int_equal(parse(big, sizeof big, argv, &argc, &need, &why), SLD_RESP_ERROR);
    assert_non_null(strstr(why, "too big inline"));
    /* ... but shorter than the limit it may still be coming. */
    assert_int_equal(parse(big, 100, argv, &argc, &need, &why), SLD_RESP_NEED_MORE);
}

static void replies(void **state) {
    (void)state;
    sld_buf_t b = {0};
    sld_reply_ok(&b);
    sld_reply_simple(&b, "PONG");
    sld_reply_error(&b, "ERR bad\r\nthing");
    sld_reply_errorf(&b, "ERR %d", 42);
    sld_reply_int(&b, -7);
    sld_reply_int(&b, INT64_MAX);
    sld_reply_bulk(&b, "a\0b", 3);
    sld_reply_bulk_str(&b, "");
    sld_reply_null(&b);
    sld_reply_array(&b, 5);
    const int64_t ints[6] = {0, 9, 10, -1, INT64_MIN, 99};
    sld_reply_ints(&b, ints, 6);
    const char want[] = "+OK\r\n+PONG\r\n-ERR bad  thing\r\n-ERR 42\r\n:-7\r\n:9223372036854775807\r\n"
                        "$3\r\na\0b\r\n$0\r\n\r\n$-1\r\n*5\r\n"
                        "*6\r\n:0\r\n:9\r\n:10\r\n:-1\r\n:-9223372036854775808\r\n:99\r\n";
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.data, want, b.len);
    assert_false(b.failed);
    sld_buf_consume(&b, 5);
    assert_memory_equal(b.data, "+PONG", 5);
    /* either side of the short forms' edges (one, two, three digits, -1) */
    sld_buf_reset(&b);
    const int64_t edges[10] = {100, 101, 999, 1000, 12345, -2, -10, -100, -1000, 1000000};
    sld_reply_ints(&b, edges, 10);
    const char want_edges[] = "*10\r\n:100\r\n:101\r\n:999\r\n:1000\r\n:12345\r\n:-2\r\n:-10\r\n"
                              ":-100\r\n:-1000\r\n:1000000\r\n";
    assert_int_equal(b.len, sizeof want_edges - 1);
    assert_memory_equal(b.data, want_edges, b.len);
    sld_buf_free(&b);
}

/* The types that differ by protocol, in RESP3 and in RESP2's fallback
 * (Redis's bytes: HELLO 3 on redis-server 7 answers "_", "%N", "~N",
 * "=N\r\ntxt:..."). */
static void resp3_replies(void **state) {
    (void)state;
    sld_buf_t b = {0};
    sld_reply_nil(&b, SLD_PROTO_3);
    sld_reply_map(&b, SLD_PROTO_3, 2);
    sld_reply_set(&b, SLD_PROTO_3, 0);
    sld_reply_verbatim(&b, SLD_PROTO_3, "# A\r\nx:1\r\n", 10);
    sld_reply_verbatim(&b, SLD_PROTO_3, "", 0);
    const char want3[] = "_\r\n%2\r\n~0\r\n=14\r\ntxt:# A\r\nx:1\r\n\r\n=4\r\ntxt:\r\n";
    assert_int_equal(b.len, sizeof want3 - 1);
    assert_memory_equal(b.data, want3, b.len);
    sld_buf_reset(&b);
    sld_reply_nil(&b, SLD_PROTO_2);
    sld_reply_map(&b, SLD_PROTO_2, 2);
    sld_reply_set(&b, SLD_PROTO_2, 3);
    sld_reply_verbatim(&b, SLD_PROTO_2, "# A\r\n", 5);
    const char want2[] = "$-1\r\n*4\r\n*3\r\n$5\r\n# A\r\n\r\n";
    assert_int_equal(b.len, sizeof want2 - 1);
    assert_memory_equal(b.data, want2, b.len);
    assert_false(b.failed);
    sld_buf_free(&b);
}

static void argument_helpers(void **state) {
    (void)state;
    sld_arg_t a = {"Cl.Throttle", 11};
    assert_true(sld_arg_is(&a, "CL.THROTTLE"));
    assert_false(sld_arg_is(&a, "CL.THROTTL"));
    int64_t v;
    sld_arg_t n = {"-1234", 5};
    assert_int_equal(sld_arg_int(&n, &v), SL_OK);
    assert_int_equal(v, -1234);
    sld_arg_t max = {"9223372036854775807", 19}, over = {"9223372036854775808", 19};
    assert_int_equal(sld_arg_int(&max, &v), SL_OK);
    assert_int_equal(v, INT64_MAX);
    assert_int_equal(sld_arg_int(&over, &v), SL_EINVAL);
    const char *bad[] = {"", "-", "1.5", " 1", "1 ", "+1", "0x10", "12a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sld_arg_t x = {bad[i], strlen(bad[i])};
        assert_int_equal(sld_arg_int(&x, &v), SL_EINVAL);
    }
}

/* Command names: every case of a-z matches, nothing else folds, and a
 * mismatch in either 8-byte step or the tail is seen. */
static void command_names(void **state) {
    (void)state;
    assert_true(sld_name_is("PING", "PING", 4));
    assert_true(sld_name_is("PING", "pInG", 4));
    assert_true(sld_name_is("CL.THROTTLE", "cl.throttle", 11));
    assert_true(sld_name_is("CL.THROTTLE", "CL.THROTTLE", 11));
    assert_true(sld_name_is("SL.TESTCLOCK", "Sl.TestClocK", 12));
    assert_false(sld_name_is("CL.THROTTLE", "CL\x0eTHROTTLE", 11)); /* '.' is not a letter */
    assert_false(sld_name_is("CL.THROTTLE", "CL.THROTTLF", 11));
    assert_false(sld_name_is("CL.THROTTLE", "DL.THROTTLE", 11));
    assert_false(sld_name_is("PING", "PIN\xe7", 4));
    assert_false(sld_name_is("SL.POLICIES", "SL_POLICIES", 11));
    assert_false(sld_name_is("[", "{", 1)); /* 0x20 apart, but '{' is not a-z */
    assert_true(sld_name_is("", "", 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(command_names),
        cmocka_unit_test(valid_inputs_and_every_prefix),
        cmocka_unit_test(binary_arguments),
        cmocka_unit_test(need_hint),
        cmocka_unit_test(protocol_errors),
        cmocka_unit_test(replies),
        cmocka_unit_test(resp3_replies),
        cmocka_unit_test(argument_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
