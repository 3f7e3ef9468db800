/* test_cidr.c -- IP addresses and CIDR ranges (src/server/base/cidr.c): the
 * one parser of "ADDR/PREFIX" (its faults, for the configuration's messages,
 * and the list's own messages), and membership, IPv4-mapped addresses
 * included. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "rig.h"
#include "addr_rig.h"
#include "server/base/cidr.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))


/* The faults sld_cidr_parse() reports, with the parts of the text the
 * configuration quotes in its messages. */
static void cidr_faults(void **state) {
    (void)state;
    sld_cidr_t c;
    sld_cidr_error_t why;
    assert_int_equal(sld_cidr_parse("10.0.0.0/8", &c, &why), SL_OK);
    assert_true(c.v4);
    assert_int_equal(c.bits, 8);
    assert_int_equal(sld_cidr_parse("::ffff:10.0.0.0/104", &c, NULL), SL_OK);
    assert_true(c.v4);
    assert_int_equal(c.bits, 8);
    assert_int_equal(sld_cidr_parse("192.168.1.1", &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_NO_PREFIX);
    assert_int_equal(sld_cidr_parse("300.1.1.1/32", &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_BAD_ADDRESS);
    assert_false(why.v6);
    assert_int_equal(why.host_len, 9);
    assert_int_equal(sld_cidr_parse("2001:db8::g/64", &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_BAD_ADDRESS);
    assert_true(why.v6);
    assert_int_equal(sld_cidr_parse("10.0.0.0/33", &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_BAD_PREFIX);
    assert_string_equal(why.prefix, "33");
    assert_int_equal(why.max_bits, 32);
    assert_int_equal(sld_cidr_parse("::/129", &c, &why), SL_EINVAL);
    assert_int_equal(why.max_bits, 128);
    assert_int_equal(sld_cidr_parse("2001:db8::1/32", &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_HOST_BITS);
    assert_int_equal(why.bits, 32);
    assert_string_equal(why.network, "2001:db8::");
    /* longer than any address before the '/' */
    char longer[80];
    memset(longer, '1', sizeof longer);
    memcpy(longer + 60, "/8", 3);
    assert_int_equal(sld_cidr_parse(longer, &c, &why), SL_EINVAL);
    assert_int_equal(why.fault, SLD_CIDR_BAD_ADDRESS);
    assert_int_equal(why.host_len, 60);
}

/* ---- CIDRs --------------------------------------------------------------- */

static void cidrs_parse_good(void **state) {
    (void)state;
    static const char *const good[] = {
        "10.0.0.0/8",    "0.0.0.0/0",        "192.168.1.1/32",     "255.255.255.255/32",
        "10.128.0.0/9",  "172.16.0.0/12",    "10.0.0.0/08",        "::1/128",
        "::/0",          "2001:db8::/32",    "fe80::/10",          "2001:db8::1/128",
        "8000::/1",      "2001:db8::/127",   "::ffff:10.0.0.0/104", "::ffff:0.0.0.0/96",
        "::/80",
    };
    for (size_t i = 0; i < LEN(good); i++) {
        sld_cidrs_t *c = (sld_cidrs_t *)&c; /* must be overwritten */
        char err[256] = "";
        int rc = sld_cidrs_parse((char *const *)&good[i], 1, &c, err, sizeof err);
        if (rc != SL_OK)
            fail_msg("\"%s\" refused: %s", good[i], err);
        assert_non_null(c);
        sld_cidrs_free(c);
    }
    /* All at once; and none at all, which contains nothing. */
    sld_cidrs_t *c = NULL;
    assert_int_equal(sld_cidrs_parse((char *const *)good, LEN(good), &c, NULL, 0), SL_OK);
    sld_cidrs_free(c);
    assert_int_equal(sld_cidrs_parse(NULL, 0, &c, NULL, 0), SL_OK);
    struct sockaddr_storage st;
    assert_false(sld_cidrs_contains(c, sa(&st, "10.0.0.1")));
    assert_false(sld_cidrs_contains(c, sa(&st, "::1")));
    sld_cidrs_free(c);
    sld_cidrs_free(NULL);
}

static void cidrs_parse_bad(void **state) {
    (void)state;
    typedef struct bad {
        const char *in;
        const char *says;  /* a part of the message besides the entry */
    } bad_t;
    static const bad_t bad[] = {
        /* no prefix */
        {"10.0.0.0", "expected a CIDR"},
        {"::1", "expected a CIDR"},
        {"", "expected a CIDR"},
        /* prefix not a number, or out of range */
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/33", "from 0 to 32"},
        {"10.0.0.0/100", "from 0 to 32"},
        {"10.0.0.0/1000", "prefix length"},
        {"::/129", "from 0 to 128"},
        {"10.0.0.0/-1", "prefix length"},
        {"10.0.0.0/+8", "prefix length"},
        {"10.0.0.0/8 ", "prefix length"},
        {"10.0.0.0/ 8", "prefix length"},
        {"10.0.0.0/8/8", "prefix length"},
        {"10.0.0.0/0x8", "prefix length"},
        {"::1/128/1", "prefix length"},
        /* not an address */
        {"/8", "not an IPv4 address"},
        {"host/8", "not an IPv4 address"},
        {"10.0.0/8", "not an IPv4 address"},
        {"1.2.3.4.5/32", "not an IPv4 address"},
        {"256.0.0.0/8", "not an IPv4 address"},
        {" 10.0.0.0/8", "not an IPv4 address"},
        {"10.0.0.0 /8", "not an IPv4 address"},
        {"[::1]/128", "not an IPv6 address"},
        {"fe80::1%eth0/128", "not an IPv6 address"},
        {"2001:db8:::/48", "not an IPv6 address"},
        {"2001:db8::g/64", "not an IPv6 address"},
        {"10.0.0.0:80/8", "not an IPv6 address"},
        /* bits set after the prefix */
        {"10.1.2.3/8", "did you mean 10.0.0.0/8?"},
        {"192.168.1.1/31", "did you mean 192.168.1.0/31?"},
        {"0.0.0.1/0", "did you mean 0.0.0.0/0?"},
        {"2001:db8::1/64", "did you mean 2001:db8::/64?"},
        {"2001:db8::1/127", "did you mean 2001:db8::/127?"},
        {"::ffff:10.1.0.0/104", "did you mean ::ffff:10.0.0.0/104?"},
    };
    for (size_t i = 0; i < LEN(bad); i++) {
        /* a good entry first: the error must name the bad one */
        const char *list[] = {"10.0.0.0/8", bad[i].in};
        sld_cidrs_t *c = (sld_cidrs_t *)&c;
        char err[256] = "", named[128];
        int rc = sld_cidrs_parse((char *const *)list, 2, &c, err, sizeof err);
        if (rc != SL_EINVAL)
            fail_msg("\"%s\" accepted (rc %d)", bad[i].in, rc);
        assert_null(c);
        snprintf(named, sizeof named, "\"%s\"", bad[i].in);
        if (strstr(err, named) == NULL || strstr(err, bad[i].says) == NULL)
            fail_msg("\"%s\": message \"%s\" should name it and say \"%s\"", bad[i].in, err,
                     bad[i].says);
        /* no message buffer is fine too */
        assert_int_equal(sld_cidrs_parse((char *const *)list, 2, &c, NULL, 0), SL_EINVAL);
    }
}

static void cidrs_parse_edges(void **state) {
    (void)state;
    char err[64] = "";
    sld_cidrs_t *c = NULL;
    /* a NULL entry, a NULL list, no out */
    const char *with_null[] = {"10.0.0.0/8", NULL};
    assert_int_equal(sld_cidrs_parse((char *const *)with_null, 2, &c, err, sizeof err), SL_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "CIDR 1"));
    assert_int_equal(sld_cidrs_parse(NULL, 1, &c, err, sizeof err), SL_EINVAL);
    assert_int_equal(sld_cidrs_parse((char *const *)with_null, 1, NULL, err, sizeof err),
                     SL_EINVAL);
    /* a long, unprintable entry is quoted cut and cleaned, in a small buffer */
    char longer[600];
    memset(longer, '1', sizeof longer);
    longer[3] = '\n';
    longer[sizeof longer - 1] = '\0';
    const char *one[] = {longer};
    assert_int_equal(sld_cidrs_parse((char *const *)one, 1, &c, err, sizeof err), SL_EINVAL);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_memory_equal(err, "\"111?111", 8);
    char big[256];
    assert_int_equal(sld_cidrs_parse((char *const *)one, 1, &c, big, sizeof big), SL_EINVAL);
    assert_non_null(strstr(big, "...\""));
    assert_true(strlen(big) < 160);
}

static void cidrs_contains(void **state) {
    (void)state;
    static const char *const list[] = {"10.0.0.0/8",         "192.168.1.128/25", "203.0.113.7/32",
                                       "2001:db8:1::/48",    "2001:db8:2::/127", "fe80::/9",
                                       "::ffff:100.64.0.0/106"};
    sld_cidrs_t *c = NULL;
    assert_int_equal(sld_cidrs_parse((char *const *)list, LEN(list), &c, NULL, 0), SL_OK);
    typedef struct probe {
        const char *addr;
        bool in;
    } probe_t;
    static const probe_t probes[] = {
        {"10.0.0.0", true},         {"10.255.255.255", true},   {"9.255.255.255", false},
        {"11.0.0.0", false},        {"192.168.1.128", true},    {"192.168.1.255", true},
        {"192.168.1.127", false},   {"203.0.113.7", true},      {"203.0.113.6", false},
        {"203.0.113.8", false},     {"100.64.0.1", true},       {"100.127.255.255", true},
        {"100.128.0.0", false},     {"2001:db8:1::1", true},    {"2001:db8:1:ffff::", true},
        {"2001:db8:2::", true},     {"2001:db8:2::1", true},    {"2001:db8:2::2", false},
        {"2001:db8:3::", false},    {"fe80::1", true},          {"fe80:ffff::", true},
        {"fe00::", false},          {"::1", false},
        /* IPv4-mapped peers are IPv4: they match IPv4 entries */
        {"::ffff:10.1.2.3", true},  {"::ffff:11.1.2.3", false}, {"::ffff:100.64.0.9", true},
        {"::ffff:203.0.113.7", true},
        /* an address that merely ends like an IPv4 one is not mapped */
        {"::10.1.2.3", false},      {"64:ff9b::10.1.2.3", false},
    };
    for (size_t i = 0; i < LEN(probes); i++) {
        struct sockaddr_storage st;
        if (sld_cidrs_contains(c, sa(&st, probes[i].addr)) != probes[i].in)
            fail_msg("%s: want %s", probes[i].addr, probes[i].in ? "in" : "out");
        assert_false(sld_cidrs_contains(NULL, sa(&st, probes[i].addr)));
    }
    assert_false(sld_cidrs_contains(c, NULL));
    struct sockaddr_storage unix_peer = {0};
    unix_peer.ss_family = AF_UNIX;
    assert_false(sld_cidrs_contains(c, (const struct sockaddr *)&unix_peer));
    sld_cidrs_free(c);

    /* "::/0" is every IPv6 peer, not IPv4 ones; "0.0.0.0/0" the other way round. */
    static const char *const all6[] = {"::/0"}, *const all4[] = {"0.0.0.0/0"};
    struct sockaddr_storage st;
    assert_int_equal(sld_cidrs_parse((char *const *)all6, 1, &c, NULL, 0), SL_OK);
    assert_true(sld_cidrs_contains(c, sa(&st, "2001:db8::1")));
    assert_false(sld_cidrs_contains(c, sa(&st, "10.0.0.1")));
    assert_false(sld_cidrs_contains(c, sa(&st, "::ffff:10.0.0.1")));
    sld_cidrs_free(c);
    assert_int_equal(sld_cidrs_parse((char *const *)all4, 1, &c, NULL, 0), SL_OK);
    assert_true(sld_cidrs_contains(c, sa(&st, "10.0.0.1")));
    assert_true(sld_cidrs_contains(c, sa(&st, "::ffff:8.8.8.8")));
    assert_false(sld_cidrs_contains(c, sa(&st, "2001:db8::1")));
    sld_cidrs_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cidr_faults),
        cmocka_unit_test(cidrs_parse_good),
        cmocka_unit_test(cidrs_parse_bad),
        cmocka_unit_test(cidrs_parse_edges),
        cmocka_unit_test(cidrs_contains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
