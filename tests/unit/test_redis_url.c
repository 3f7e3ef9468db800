/* test_redis_url.c -- Redis URL parsing (src/store/redis/url.c): every
 * scheme, IPv6, percent-decoding, limits, and a clear message for each way
 * a URL can be wrong. Every valid URL's truncated prefixes must either parse
 * or fail with a message, never crash (they run under ASan). */
#include "rig.h"
#include "store/redis/url.h"

static sl__redis_url_t parse_ok(const char *s) {
    sl__redis_url_t u;
    char err[256] = "";
    int rc = sl__redis_url_parse(s, strlen(s), &u, err, sizeof err);
    if (rc != 0)
        fail_msg("'%s' refused: %s", s, err);
    return u;
}

static void parse_bad(const char *s, const char *needle) {
    sl__redis_url_t u;
    char err[256] = "";
    int rc = sl__redis_url_parse(s, strlen(s), &u, err, sizeof err);
    if (rc != SL_EINVAL)
        fail_msg("'%s' accepted, expected an error with '%s'", s, needle);
    if (strstr(err, needle) == NULL)
        fail_msg("'%s': error '%s' does not say '%s'", s, err, needle);
}

static void standalone(void **state) {
    (void)state;
    sl__redis_url_t u = parse_ok("redis://127.0.0.1:6380");
    assert_int_equal(u.kind, SL__REDIS_STANDALONE);
    assert_int_equal(u.n_nodes, 1);
    assert_string_equal(u.nodes[0].host, "127.0.0.1");
    assert_int_equal(u.nodes[0].port, 6380);
    assert_false(u.has_user);
    assert_false(u.has_password);
    assert_int_equal(u.db, 0);

    u = parse_ok("redis://localhost");
    assert_string_equal(u.nodes[0].host, "localhost");
    assert_int_equal(u.nodes[0].port, 6379);

    u = parse_ok("REDIS://h:1/15");
    assert_int_equal(u.db, 15);
    u = parse_ok("redis://h:1/");
    assert_int_equal(u.db, 0);

    u = parse_ok("redis://:s3cret@h:6379/2");
    assert_false(u.has_user);
    assert_true(u.has_password);
    assert_string_equal(u.password, "s3cret");
    assert_int_equal(u.db, 2);

    u = parse_ok("redis://alice:p%40ss%3Aw%2Fd@h:6379");
    assert_true(u.has_user);
    assert_string_equal(u.user, "alice");
    assert_int_equal(u.user_len, 5);
    assert_string_equal(u.password, "p@ss:w/d");
    assert_int_equal(u.password_len, 8);

    /* the last '@' ends the user info */
    u = parse_ok("redis://bob:a@b@h:1");
    assert_string_equal(u.password, "a@b");
    assert_string_equal(u.nodes[0].host, "h");

    /* a decoded NUL is kept, with its length */
    u = parse_ok("redis://u:a%00b@h:1");
    assert_int_equal(u.password_len, 3);
    assert_memory_equal(u.password, "a\0b", 3);
}

static void ipv6(void **state) {
    (void)state;
    sl__redis_url_t u = parse_ok("redis://[::1]:7000/3");
    assert_string_equal(u.nodes[0].host, "::1");
    assert_int_equal(u.nodes[0].port, 7000);
    assert_int_equal(u.db, 3);
    u = parse_ok("redis://[fe80::1:2]");
    assert_string_equal(u.nodes[0].host, "fe80::1:2");
    assert_int_equal(u.nodes[0].port, 6379);
    u = parse_ok("redis-cluster://[::1]:7000,[::1]:7001,10.0.0.1:7002");
    assert_int_equal(u.n_nodes, 3);
    assert_string_equal(u.nodes[1].host, "::1");
    assert_int_equal(u.nodes[1].port, 7001);
    assert_string_equal(u.nodes[2].host, "10.0.0.1");
    parse_bad("redis://::1:6379", "brackets");
    parse_bad("redis://[::1:6379", "without ']'");
    parse_bad("redis://[]:1", "empty IPv6");
    parse_bad("redis://[zz::1]:1", "not allowed in an IPv6");
    parse_bad("redis://[::1]x", "':port' after ']'");
    parse_bad("redis://[127.0.0.1]:1", "not an IPv6");
}

static void sentinel(void **state) {
    (void)state;
    sl__redis_url_t u = parse_ok("sentinel://u:p@10.0.0.1:26379,10.0.0.2,[::1]:5000/mymaster?db=4");
    assert_int_equal(u.kind, SL__REDIS_SENTINEL);
    assert_int_equal(u.n_nodes, 3);
    assert_int_equal(u.nodes[1].port, 26379); /* the sentinel default */
    assert_int_equal(u.nodes[2].port, 5000);
    assert_string_equal(u.master, "mymaster");
    assert_int_equal(u.db, 4);
    assert_string_equal(u.user, "u");
    u = parse_ok("sentinel://s:1/m");
    assert_int_equal(u.db, 0);
    parse_bad("sentinel://s:1", "master name");
    parse_bad("sentinel://s:1/", "master name");
    assert_false(u.has_sentinel_password);
    parse_bad("sentinel://s:1/m?database=1", "db=N");
    parse_bad("sentinel://s:1/m?db=x", "database 'x'");
    /* the sentinels' own credentials, percent-decoded, options in any order */
    u = parse_ok("sentinel://u:p@s:1/m?sentinel_password=s%40cret&db=2&sentinel_user=watcher");
    assert_true(u.has_sentinel_password && u.has_sentinel_user);
    assert_string_equal(u.sentinel_password, "s@cret");
    assert_int_equal(u.sentinel_password_len, 6);
    assert_string_equal(u.sentinel_user, "watcher");
    assert_int_equal(u.db, 2);
    assert_string_equal(u.password, "p"); /* the master's stay the master's */
    u = parse_ok("sentinel://s:1/m?sentinel_password=");
    assert_true(u.has_sentinel_password);
    assert_int_equal(u.sentinel_password_len, 0);
    parse_bad("sentinel://s:1/m?sentinel_user=w", "sentinel_user needs sentinel_password");
    parse_bad("sentinel://s:1/m?sentinel_password=%zz", "two hex digits");
    parse_bad("sentinel://s:1/m?db=1&", "got ''");
    parse_bad("sentinel://s:1/m/x", "master name: '/'");
}

static void cluster(void **state) {
    (void)state;
    sl__redis_url_t u = parse_ok("redis-cluster://:pw@127.0.0.1:7000,127.0.0.1:7001");
    assert_int_equal(u.kind, SL__REDIS_CLUSTER);
    assert_int_equal(u.n_nodes, 2);
    assert_string_equal(u.password, "pw");
    parse_ok("redis-cluster://h:1/");
    parse_bad("redis-cluster://h:1/2", "database 0");
    parse_bad("redis-cluster://h:1,,h:2", "host 2 is empty");
    parse_bad("redis-cluster://h:1,", "host 2 is empty");
}

static void bad_urls(void **state) {
    (void)state;
    parse_bad("", "empty");
    parse_bad("rediss://h:1", "TLS");
    parse_bad("http://h:1", "unknown scheme 'http'");
    parse_bad("127.0.0.1:6379", "not a Redis URL");
    parse_bad("redis://", "no host");
    parse_bad("redis://u:p@", "no host");
    parse_bad("redis://h:0", "port '0'");
    parse_bad("redis://h:65536", "port '65536'");
    parse_bad("redis://h:", "port ''");
    parse_bad("redis://h:12x", "port '12x'");
    parse_bad("redis://h:1:2", "more than one ':'");
    parse_bad("redis://h h:1", "space");
    parse_bad("redis://h\x01:1", "control");
    parse_bad("redis://h:1/x", "database 'x'");
    parse_bad("redis://h:1/1000000", "database");
    parse_bad("redis://h:1/-1", "database");
    parse_bad("redis://h:1?db=2", "no '?' options");
    parse_bad("redis://h:1#frag", "fragment");
    parse_bad("redis://a:1,b:2", "one host");
    parse_bad("redis://user@h:1", "without a password");
    parse_bad("redis://u:@h:1", "empty password");
    parse_bad("redis://u:%4@h:1", "two hex digits");
    parse_bad("redis://u:%zz@h:1", "two hex digits");
    parse_bad("redis://u:p%@h:1", "two hex digits");
    parse_bad("redis://h_$:1", "'$' is not allowed");
    parse_bad("redis://u:pa/ss@h:1", "percent-encode '/'");
    parse_bad("sentinel://u:p?q@h:1/m", "percent-encode");
}

static void limits(void **state) {
    (void)state;
    char buf[4096];
    /* 16 hosts fit, 17 do not */
    strcpy(buf, "redis-cluster://h:1");
    for (int i = 2; i <= 16; i++)
        sprintf(buf + strlen(buf), ",h:%d", i);
    assert_int_equal(parse_ok(buf).n_nodes, 16);
    strcat(buf, ",h:17");
    parse_bad(buf, "more than 16 hosts");
    /* a 255-byte host fits, 256 does not */
    strcpy(buf, "redis://");
    memset(buf + 8, 'a', 255);
    strcpy(buf + 8 + 255, ":1");
    assert_int_equal(strlen(parse_ok(buf).nodes[0].host), 255);
    memset(buf + 8, 'a', 256);
    strcpy(buf + 8 + 256, ":1");
    parse_bad(buf, "longer than 255");
    /* a 256-byte password fits, 257 does not (decoded size counts) */
    strcpy(buf, "redis://u:");
    for (int i = 0; i < 256; i++)
        strcat(buf, "%41");
    strcat(buf, "@h:1");
    assert_int_equal(parse_ok(buf).password_len, 256);
    strcpy(buf, "redis://u:");
    for (int i = 0; i < 257; i++)
        strcat(buf, "A");
    strcat(buf, "@h:1");
    parse_bad(buf, "password is longer than 256");
    /* the whole URL */
    char *big = malloc(SL__REDIS_URL_MAX_LEN + 2);
    memset(big, 'a', SL__REDIS_URL_MAX_LEN + 1);
    memcpy(big, "redis://", 8);
    sl__redis_url_t u;
    char err[128];
    assert_int_equal(sl__redis_url_parse(big, SL__REDIS_URL_MAX_LEN + 1, &u, err, sizeof err),
                     SL_EINVAL);
    assert_non_null(strstr(err, "longer than"));
    free(big);
    /* no error buffer is fine */
    assert_int_equal(sl__redis_url_parse("x", 1, &u, NULL, 0), SL_EINVAL);
}

/* Every prefix of every valid URL: parses or fails with a message. */
static void prefixes(void **state) {
    (void)state;
    static const char *const urls[] = {
        "redis://alice:p%40ss@[::1]:7000/3",
        "sentinel://u:p@10.0.0.1:26379,10.0.0.2,[::1]:5000/mymaster?db=4",
        "redis-cluster://:pw@127.0.0.1:7000,127.0.0.1:7001",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        size_t len = strlen(urls[i]);
        for (size_t n = 0; n <= len; n++) {
            char *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
            memcpy(copy, urls[i], n);
            sl__redis_url_t u;
            char err[200] = "";
            int rc = sl__redis_url_parse(copy, n, &u, err, sizeof err);
            if (rc != 0)
                assert_true(rc == SL_EINVAL && err[0] != '\0');
            free(copy);
        }
    }
    assert_string_equal(sl__redis_kind_name(SL__REDIS_CLUSTER), "redis-cluster");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standalone), cmocka_unit_test(ipv6),     cmocka_unit_test(sentinel),
        cmocka_unit_test(cluster),    cmocka_unit_test(bad_urls), cmocka_unit_test(limits),
        cmocka_unit_test(prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
