/* test_redis_quorum.c -- Sentinel by quorum, the pure part
 * (src/store/redis/quorum.c): reading SENTINEL get-master-addr-by-name
 * replies, and the master a strict majority of the configured sentinels
 * name. The real sentinels are in tests/integration/test_distributed.py
 * (SentinelQuorum).
 */
#include "rig.h"

#include <hiredis/hiredis.h>

#include "store/redis/quorum.h"

static sl__redis_sentinel_answer_t said(const char *host, uint16_t port) {
    sl__redis_sentinel_answer_t a = {.ok = true};
    snprintf(a.master.host, sizeof a.master.host, "%s", host);
    a.master.port = port;
    return a;
}

static sl__redis_sentinel_answer_t silent(const char *why) {
    sl__redis_sentinel_answer_t a = {.ok = false};
    snprintf(a.why, sizeof a.why, "%s", why);
    return a;
}

static void majority(void **state) {
    (void)state;
    size_t votes;
    sl__redis_sentinel_answer_t a[5];
    /* one of one */
    a[0] = said("10.0.0.1", 6379);
    assert_int_equal(sl__redis_sentinel_majority(a, 1, 1, &votes), 0);
    assert_int_equal(votes, 1);
    /* two of three agree, the odd one listed first */
    a[0] = said("10.0.0.9", 6379);
    a[1] = said("10.0.0.1", 6379);
    a[2] = said("10.0.0.1", 6379);
    assert_int_equal(sl__redis_sentinel_majority(a, 3, 3, &votes), 1);
    assert_int_equal(votes, 2);
    /* same host, other port: another master */
    a[2] = said("10.0.0.1", 6380);
    assert_int_equal(sl__redis_sentinel_majority(a, 3, 3, &votes), -1);
    assert_int_equal(votes, 1);
    /* one answer of three is no majority, even if the others are silent */
    a[0] = said("10.0.0.1", 6379);
    a[1] = silent("no reply");
    a[2] = silent("connect refused");
    assert_int_equal(sl__redis_sentinel_majority(a, 3, 3, &votes), -1);
    assert_int_equal(votes, 1);
    /* two of four is not more than half */
    a[1] = said("10.0.0.1", 6379);
    a[3] = silent("no reply");
    assert_int_equal(sl__redis_sentinel_majority(a, 4, 4, &votes), -1);
    a[2] = said("10.0.0.1", 6379);
    assert_int_equal(sl__redis_sentinel_majority(a, 4, 4, &votes), 0);
    assert_int_equal(votes, 3);
    /* nobody answers */
    for (int i = 0; i < 5; i++)
        a[i] = silent("no reply");
    assert_int_equal(sl__redis_sentinel_majority(a, 5, 5, &votes), -1);
    assert_int_equal(votes, 0);
    /* the report names each sentinel and what it said */
    sl__redis_addr_t s[2] = {{"127.0.0.1", 26379}, {"::1", 26380}};
    a[0] = said("10.0.0.1", 6379);
    a[1] = silent("authentication: WRONGPASS");
    char buf[256];
    assert_string_equal(sl__redis_sentinel_report(a, s, 2, buf, sizeof buf),
                        "127.0.0.1:26379 says 10.0.0.1:6379, ::1:26380: authentication: WRONGPASS");
    char tiny[8];
    assert_int_equal(strlen(sl__redis_sentinel_report(a, s, 2, tiny, sizeof tiny)), 7);
}

/* A reply built by hand, as hiredis would hand it over. */
static redisReply *str(const char *s) {
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_STRING;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static redisReply *pair(const char *host, const char *port) {
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_ARRAY;
    r->elements = 2;
    r->element = calloc(2, sizeof *r->element);
    r->element[0] = str(host);
    r->element[1] = str(port);
    return r;
}

static void parse(void **state) {
    (void)state;
    sl__redis_addr_t a;
    const char *why = NULL;
    redisReply *r = pair("10.0.0.1", "6379");
    assert_int_equal(sl__redis_parse_master_addr(r, &a, &why), 0);
    assert_string_equal(a.host, "10.0.0.1");
    assert_int_equal(a.port, 6379);
    freeReplyObject(r);
    const char *bad_ports[] = {"0", "65536", "12x", "", "-1"};
    for (size_t i = 0; i < sizeof bad_ports / sizeof bad_ports[0]; i++) {
        r = pair("10.0.0.1", bad_ports[i]);
        assert_int_equal(sl__redis_parse_master_addr(r, &a, &why), -1);
        freeReplyObject(r);
    }
    r = pair("", "6379");
    assert_int_equal(sl__redis_parse_master_addr(r, &a, &why), -1);
    freeReplyObject(r);
    redisReply nil = {.type = REDIS_REPLY_NIL};
    assert_int_equal(sl__redis_parse_master_addr(&nil, &a, &why), -1);
    assert_string_equal(why, "unknown master name");
    char msg[] = "NOAUTH HELLO must be called with the client already authenticated";
    redisReply err = {.type = REDIS_REPLY_ERROR, .str = msg, .len = sizeof msg - 1};
    assert_int_equal(sl__redis_parse_master_addr(&err, &a, &why), -1);
    assert_string_equal(why, msg);
    assert_int_equal(sl__redis_parse_master_addr(NULL, &a, &why), -1);
    assert_string_equal(why, "no reply");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(majority),
        cmocka_unit_test(parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
