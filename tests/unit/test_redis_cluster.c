/* test_redis_cluster.c -- Cluster routing helpers (src/store/redis/cluster.c):
 * CRC16 vectors, hash tags as the Cluster spec defines them, CLUSTER SLOTS
 * replies built by hand, MOVED and ASK error texts. */
#include <hiredis/hiredis.h>

#include "rig.h"
#include "store/redis/cluster.h"

static void crc16_vectors(void **state) {
    (void)state;
    assert_int_equal(sl__redis_crc16("123456789", 9), 0x31C3); /* the spec's check value */
    assert_int_equal(sl__redis_crc16("", 0), 0);
    assert_int_equal(sl__redis_crc16("A", 1), 0x58E5);
    /* slots redis-cli CLUSTER KEYSLOT gives */
    assert_int_equal(sl__redis_key_slot("foo", 3), 12182);
    assert_int_equal(sl__redis_key_slot("bar", 3), 5061);
    assert_int_equal(sl__redis_key_slot("hello", 5), 866);
    assert_int_equal(sl__redis_key_slot("", 0), 0);
}

/* The bitwise definition, to check the table against. */
static uint16_t crc16_bitwise(const unsigned char *p, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

static void crc16_table(void **state) {
    (void)state;
    unsigned char buf[64];
    uint32_t x = 12345;
    for (int round = 0; round < 1000; round++) {
        size_t len = (size_t)(round % 64);
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (unsigned char)(x >> 16);
        }
        assert_int_equal(sl__redis_crc16(buf, len), crc16_bitwise(buf, len));
    }
}

static void hash_tags(void **state) {
    (void)state;
    uint16_t user = sl__redis_key_slot("user1000", 8);
    /* the tag is hashed alone */
    assert_int_equal(sl__redis_key_slot("{user1000}.following", 20), user);
    assert_int_equal(sl__redis_key_slot("{user1000}.followers", 20), user);
    assert_int_equal(sl__redis_key_slot("x{user1000}y", 12), user);
    /* only the first '{' counts, and the first '}' after it */
    assert_int_equal(sl__redis_key_slot("foo{{bar}}zap", 13), sl__redis_key_slot("{bar", 4));
    assert_int_equal(sl__redis_key_slot("foo{bar}{zap}", 13), sl__redis_key_slot("bar", 3));
    /* an empty tag, or no '}', hashes the whole key */
    assert_int_equal(sl__redis_key_slot("foo{}{bar}", 10),
                     sl__redis_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(sl__redis_key_slot("foo{bar", 7), sl__redis_crc16("foo{bar", 7) & 16383);
    assert_int_equal(sl__redis_key_slot("}foo{", 5), sl__redis_crc16("}foo{", 5) & 16383);
    /* binary keys */
    assert_int_equal(sl__redis_key_slot("a\0{b}", 5), sl__redis_key_slot("b", 1));
}

/* ---- hand-built replies --------------------------------------------------------- */

static redisReply *mk(int type) {
    redisReply *r = calloc(1, sizeof *r);
    r->type = type;
    return r;
}
static redisReply *mk_int(long long v) {
    redisReply *r = mk(REDIS_REPLY_INTEGER);
    r->integer = v;
    return r;
}
static redisReply *mk_str(const char *s) {
    redisReply *r = mk(REDIS_REPLY_STRING);
    r->len = strlen(s);
    r->str = malloc(r->len + 1);
    memcpy(r->str, s, r->len + 1);
    return r;
}
static redisReply *mk_arr(size_t n, ...) {
    redisReply *r = mk(REDIS_REPLY_ARRAY);
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof *r->element);
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}
static redisReply *mk_node(const char *host, long long port) {
    return mk_arr(3, mk_str(host), mk_int(port), mk_str("0123456789abcdef"));
}

static void cluster_slots(void **state) {
    (void)state;
    sl__redis_slot_map_t *map = malloc(sizeof *map);
    const char *why = NULL;
    /* three masters with a replica each, one master owning two ranges */
    redisReply *r = mk_arr(
        4, mk_arr(4, mk_int(0), mk_int(5460), mk_node("127.0.0.1", 7000), mk_node("127.0.0.1", 7003)),
        mk_arr(4, mk_int(5461), mk_int(10922), mk_node("127.0.0.1", 7001),
               mk_node("127.0.0.1", 7004)),
        mk_arr(3, mk_int(10923), mk_int(16000), mk_node("", 7002)),
        mk_arr(3, mk_int(16001), mk_int(16383), mk_node("127.0.0.1", 7000)));
    assert_int_equal(sl__redis_parse_cluster_slots(r, "10.1.1.1", map, &why), 0);
    assert_int_equal(map->n_masters, 3);
    assert_int_equal(map->assigned, 16384);
    assert_string_equal(map->masters[map->slot[0]].host, "127.0.0.1");
    assert_int_equal(map->masters[map->slot[0]].port, 7000);
    assert_int_equal(map->masters[map->slot[5460]].port, 7000);
    assert_int_equal(map->masters[map->slot[5461]].port, 7001);
    assert_int_equal(map->masters[map->slot[10923]].port, 7002);
    assert_string_equal(map->masters[map->slot[10923]].host, "10.1.1.1"); /* unknown endpoint */
    assert_int_equal(map->slot[16383], map->slot[0]);
    freeReplyObject(r);

    /* partial coverage */
    r = mk_arr(1, mk_arr(3, mk_int(100), mk_int(199), mk_node("h", 1)));
    assert_int_equal(sl__redis_parse_cluster_slots(r, NULL, map, &why), 0);
    assert_int_equal(map->assigned, 100);
    assert_int_equal(map->slot[99], SL__REDIS_NO_NODE);
    assert_int_equal(map->slot[200], SL__REDIS_NO_NODE);
    freeReplyObject(r);

    /* an empty cluster */
    r = mk_arr(0);
    assert_int_equal(sl__redis_parse_cluster_slots(r, NULL, map, &why), 0);
    assert_int_equal(map->assigned, 0);
    freeReplyObject(r);

    /* wrong shapes */
    struct {
        redisReply *r;
        const char *needle;
    } bad[] = {
        {mk_str("x"), "not an array"},
        {mk(REDIS_REPLY_ERROR), "cluster mode off"},
        {mk_arr(1, mk_int(1)), "a range is not"},
        {mk_arr(1, mk_arr(2, mk_int(0), mk_int(1))), "a range is not"},
        {mk_arr(1, mk_arr(3, mk_int(5), mk_int(4), mk_node("h", 1))), "out of bounds"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(16384), mk_node("h", 1))), "out of bounds"},
        {mk_arr(1, mk_arr(3, mk_int(-1), mk_int(1), mk_node("h", 1))), "out of bounds"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(1), mk_node("h", 0))), "port"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(1), mk_node("h", 65536))), "port"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(1), mk_node("", 1))), "no usable host"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(1), mk_arr(1, mk_str("h")))), "not [host, port"},
        {mk_arr(1, mk_arr(3, mk_int(0), mk_int(1), mk_arr(2, mk_int(1), mk_int(1)))),
         "not [host, port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        assert_int_equal(sl__redis_parse_cluster_slots(bad[i].r, NULL, map, &why), SL_EINVAL);
        if (why == NULL || strstr(why, bad[i].needle) == NULL)
            fail_msg("case %zu: '%s' does not say '%s'", i, why ? why : "(null)", bad[i].needle);
        freeReplyObject(bad[i].r);
    }
    assert_int_equal(sl__redis_parse_cluster_slots(NULL, NULL, map, &why), SL_EINVAL);
    free(map);
}

static void redirects(void **state) {
    (void)state;
    sl__redis_redirect_t rd;
#define PARSE(s) sl__redis_parse_redirect(s, strlen(s), &rd)
    assert_int_equal(PARSE("MOVED 3999 127.0.0.1:6381"), SL__REDIS_REDIRECT_MOVED);
    assert_int_equal(rd.slot, 3999);
    assert_string_equal(rd.to.host, "127.0.0.1");
    assert_int_equal(rd.to.port, 6381);
    assert_int_equal(PARSE("ASK 16383 10.0.0.2:7000"), SL__REDIS_REDIRECT_ASK);
    assert_int_equal(rd.slot, 16383);
    assert_string_equal(rd.to.host, "10.0.0.2");
    assert_int_equal(PARSE("MOVED 0 ::1:7000"), SL__REDIS_REDIRECT_MOVED);
    assert_string_equal(rd.to.host, "::1");
    assert_int_equal(rd.to.port, 7000);
    assert_int_equal(PARSE("MOVED 1 [::1]:7000"), SL__REDIS_REDIRECT_MOVED);
    assert_string_equal(rd.to.host, "::1");
    assert_int_equal(PARSE("MOVED 1 :7000"), SL__REDIS_REDIRECT_MOVED); /* unknown endpoint */
    assert_string_equal(rd.to.host, "");
    static const char *const none[] = {
        "ERR unknown command", "NOSCRIPT No matching script", "MOVED", "MOVED ", "MOVED x h:1",
        "MOVED 16384 h:1", "MOVED 1 h", "MOVED 1 h:", "MOVED 1 h:0", "MOVED 1 h:65536",
        "MOVED 1 h:1x", "MOVED 1  h:1", "MOVED 1h:1", "ASK 1 h:1 extra", "moved 1 h:1",
        "MOVED 1234567 h:1",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        if (PARSE(none[i]) != SL__REDIS_REDIRECT_NONE)
            fail_msg("'%s' read as a redirect", none[i]);
    /* every prefix of a valid one is refused or read within bounds */
    const char *full = "MOVED 3999 127.0.0.1:6381";
    for (size_t n = 0; n <= strlen(full); n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, full, n);
        sl__redis_parse_redirect(copy, n, &rd);
        free(copy);
    }
#undef PARSE
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_vectors),
        cmocka_unit_test(crc16_table),
        cmocka_unit_test(hash_tags),
        cmocka_unit_test(cluster_slots),
        cmocka_unit_test(redirects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
