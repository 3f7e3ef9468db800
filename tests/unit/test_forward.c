/* test_forward.c -- forward-auth keys (src/server/keys/forward.c): trusted-proxy
 * the client's address behind trusted proxies, IPv6 grouping, and the key
 * (the CIDRs themselves: test_cidr.c).
 * Header values are handed over as exact-length heap copies without a NUL,
 * so ASan catches any read past a span; X-Forwarded-For inputs are also run
 * at every truncated length. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>

#include "rig.h"
#include "addr_rig.h"
#include "server/keys/forward.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The proxies every client-address test trusts. */
static const char *const trusted_list[] = {"10.0.0.0/8", "192.168.0.0/16", "2001:db8:ffff::/48",
                                           "::1/128", "127.0.0.1/32"};
static sld_cidrs_t *trusted;

static int group_setup(void **state) {
    (void)state;
    char err[256] = "";
    return sld_cidrs_parse((char *const *)trusted_list, LEN(trusted_list), &trusted, err,
                           sizeof err);
}

static int group_teardown(void **state) {
    (void)state;
    sld_cidrs_free(trusted);
    return 0;
}

/* ---- helpers ------------------------------------------------------------- */


/* A request whose header values are exact-length heap copies. */
typedef struct req {
    sld_forwarded_t in;
    struct sockaddr_storage peer;
    void *owned[16];
    size_t nowned;
    const char *names[4];   /* for header:<Name> */
    sld_span_t values[4];
    size_t nheaders;
} req_t;

static sld_span_t own_len(req_t *r, const char *s, size_t n) {
    if (s == NULL)
        return (sld_span_t){NULL, 0};
    assert_true(r->nowned < LEN(r->owned));
    char *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, s, n);
    r->owned[r->nowned++] = p;
    return (sld_span_t){p, n};
}

static sld_span_t own(req_t *r, const char *s) { return own_len(r, s, s ? strlen(s) : 0); }

static sld_span_t lookup(void *ctx, const char *name, size_t len) {
    req_t *r = ctx;
    for (size_t i = 0; i < r->nheaders; i++)
        if (strlen(r->names[i]) == len && strncasecmp(r->names[i], name, len) == 0)
            return r->values[i];
    return (sld_span_t){NULL, 0};
}

static void req_init(req_t *r, const char *peer) {
    memset(r, 0, sizeof *r);
    r->in.peer = peer ? sa(&r->peer, peer) : NULL;
    r->in.header = lookup;
    r->in.header_ctx = r;
}

static void req_header(req_t *r, const char *name, const char *value) {
    assert_true(r->nheaders < LEN(r->names));
    r->names[r->nheaders] = name;
    r->values[r->nheaders++] = own(r, value);
}

static void req_free(req_t *r) {
    for (size_t i = 0; i < r->nowned; i++)
        free(r->owned[i]);
    r->nowned = 0;
}

/* The client's address as text, "" for none. */
static const char *client(const char *peer, const char *xff, const char *xri, uint32_t prefix) {
    static char out[128];
    req_t r;
    req_init(&r, peer);
    r.in.x_forwarded_for = own(&r, xff);
    r.in.x_real_ip = own(&r, xri);
    memset(out, 0x5A, sizeof out);
    size_t n = sld_client_ip(&r.in, trusted, prefix, out, sizeof out);
    req_free(&r);
    if (n == 0)
        return "";
    assert_int_equal(out[n], '\0');
    assert_int_equal(strlen(out), n);
    return out;
}

static void check_client(const char *peer, const char *xff, const char *xri, uint32_t prefix,
                         const char *want) {
    const char *got = client(peer, xff, xri, prefix);
    if (strcmp(got, want) != 0)
        fail_msg("peer %s, X-Forwarded-For \"%s\", X-Real-IP \"%s\", /%u: got \"%s\", want \"%s\"",
                 peer ? peer : "(none)", xff ? xff : "(none)", xri ? xri : "(none)",
                 (unsigned)prefix, got, want);
}

/* The key for attrs, into a static buffer; "" with *why set on failure. */
static const char *key_of(req_t *r, const char *const *attrs, size_t n, const char **why) {
    static char out[512];
    const char *w = "(unset)";
    size_t len = sld_forward_key(&r->in, trusted, 64, (char *const *)attrs, n, out, sizeof out, &w);
    if (why)
        *why = w;
    if (len == 0) {
        assert_non_null(w);
        assert_int_equal(out[0], '\0');
        return "";
    }
    assert_null(w);
    assert_int_equal(strlen(out), len);
    return out;
}

/* ---- the client's address ------------------------------------------------ */

static void client_untrusted_peer(void **state) {
    (void)state;
    /* Anyone can send these headers: from an untrusted peer they mean nothing. */
    check_client("203.0.113.7", "1.1.1.1", NULL, 64, "203.0.113.7");
    check_client("203.0.113.7", "1.1.1.1, 10.0.0.1", "2.2.2.2", 64, "203.0.113.7");
    check_client("203.0.113.7", NULL, "2.2.2.2", 64, "203.0.113.7");
    check_client("2001:db8:5:6:7:8:9:a", "1.1.1.1", NULL, 64, "2001:db8:5:6::/64");
    check_client("::ffff:198.51.100.4", "1.1.1.1", NULL, 64, "198.51.100.4");
    check_client("11.0.0.1", "1.1.1.1", NULL, 64, "11.0.0.1");  /* just outside 10/8 */
    /* no peer: nothing to trust, no address */
    check_client(NULL, "1.1.1.1", "2.2.2.2", 64, "");
    check_client(NULL, NULL, NULL, 64, "");
}

typedef struct xff_case {
    const char *xff;
    const char *want;
} xff_case_t;

static const xff_case_t xff_cases[] = {
    /* one proxy, then several; spoofed entries left of the client ignored */
    {"203.0.113.7", "203.0.113.7"},
    {"198.51.100.1, 203.0.113.7", "203.0.113.7"},
    {"203.0.113.7, 10.0.0.2, 192.168.3.4", "203.0.113.7"},
    {"198.51.100.1,203.0.113.7,10.0.0.2", "203.0.113.7"},
    {"198.51.100.1, 203.0.113.7, 10.0.0.2, 127.0.0.1, ::1", "203.0.113.7"},
    /* every entry trusted: the leftmost */
    {"10.0.0.5, 10.0.0.6", "10.0.0.5"},
    {"10.0.0.5", "10.0.0.5"},
    /* garbage stops the walk: the last good address, or the peer */
    {"198.51.100.1, unknown, 10.0.0.2", "10.0.0.2"},
    {"198.51.100.1, unknown", "10.0.0.1"},
    {"203.0.113.7, garbage", "10.0.0.1"},
    {"_hidden, 10.0.0.2", "10.0.0.2"},
    {"203.0.113.7 10.0.0.2", "10.0.0.1"},
    {"fe80::1%eth0", "10.0.0.1"},
    {"1.2.3.4:99999", "10.0.0.1"},
    {"1.2.3.4:", "10.0.0.1"},
    {"1.2.3.4:80x", "10.0.0.1"},
    {"1.2.3.4:123456", "10.0.0.1"},
    {"[::1", "10.0.0.1"},
    {"[::1]x", "10.0.0.1"},
    {"[::1]:", "10.0.0.1"},
    {"[1.2.3.4]", "10.0.0.1"},
    {"[]", "10.0.0.1"},
    {"::ffff:1.2.3.4:80", "10.0.0.1"},
    {"\"203.0.113.7\"", "10.0.0.1"},
    {"203.0.113.007", "10.0.0.1"},
    {"203.0.113.7.", "10.0.0.1"},
    /* ports and brackets */
    {"203.0.113.7:5678", "203.0.113.7"},
    {"203.0.113.7:0", "203.0.113.7"},
    {"203.0.113.7:65535", "203.0.113.7"},
    {"[2001:db8:5:6::1]:80", "2001:db8:5:6::/64"},
    {"[2001:db8:5:6::1]", "2001:db8:5:6::/64"},
    {"2001:db8:5:6::1", "2001:db8:5:6::/64"},
    {"198.51.100.1, [2001:db8:5:6::1]:443, [::1]:80, 10.0.0.2:8080", "2001:db8:5:6::/64"},
    {"[::1]:80, 10.0.0.2", "::/64"},
    /* spaces, tabs and empty entries */
    {"  203.0.113.7  ,\t10.0.0.2 ", "203.0.113.7"},
    {", ,203.0.113.7,,", "203.0.113.7"},
    {"203.0.113.7,\t,  , 10.0.0.2,", "203.0.113.7"},
    /* IPv4-mapped entries are IPv4, trusted as such */
    {"::ffff:203.0.113.7", "203.0.113.7"},
    {"203.0.113.7, ::ffff:10.0.0.9", "203.0.113.7"},
    {"[::ffff:10.0.0.9]:80", "10.0.0.9"},
    /* trusted IPv6 proxies */
    {"2001:db8:1::1, 2001:db8:ffff::2", "2001:db8:1::/64"},
    {"2001:db8:ffff::3, 2001:db8:ffff::2", "2001:db8:ffff::/64"},
};

static void client_behind_proxies(void **state) {
    (void)state;
    for (size_t i = 0; i < LEN(xff_cases); i++) {
        check_client("10.0.0.1", xff_cases[i].xff, NULL, 64, xff_cases[i].want);
        /* X-Real-IP does not matter when there is an X-Forwarded-For */
        check_client("10.0.0.1", xff_cases[i].xff, "198.51.100.99", 64, xff_cases[i].want);
    }
    /* the peer itself may be any trusted form */
    check_client("2001:db8:ffff::1", "203.0.113.9", NULL, 64, "203.0.113.9");
    check_client("::ffff:10.0.0.1", "203.0.113.9", NULL, 64, "203.0.113.9");
    check_client("::1", "203.0.113.9, ::1", NULL, 64, "203.0.113.9");
    check_client("10.0.0.1", "203.0.113.9, 10.0.0.2", NULL, 64, "203.0.113.9");
}

/* Every truncated X-Forwarded-For still gives an address, reading nothing past its end. */
static void client_every_prefix(void **state) {
    (void)state;
    for (size_t i = 0; i < LEN(xff_cases); i++) {
        size_t len = strlen(xff_cases[i].xff);
        for (size_t n = 0; n <= len; n++) {
            req_t r;
            req_init(&r, "10.0.0.1");
            r.in.x_forwarded_for = own_len(&r, xff_cases[i].xff, n);
            r.in.x_real_ip = own_len(&r, "203.0.113.1", 5);
            char out[64];
            assert_true(sld_client_ip(&r.in, trusted, 64, out, sizeof out) > 0);
            req_free(&r);
        }
    }
}

/* At most 64 entries are looked at, from the right. */
static void client_hop_bound(void **state) {
    (void)state;
    char xff[2048];
    size_t n = (size_t)snprintf(xff, sizeof xff, "198.51.100.1");
    for (unsigned i = 0; i < 63; i++)
        n += (size_t)snprintf(xff + n, sizeof xff - n, ", 10.0.1.%u", i);
    check_client("10.0.0.1", xff, NULL, 64, "198.51.100.1"); /* 64 entries: all seen */
    char longer[2100];
    snprintf(longer, sizeof longer, "%s, 10.0.1.63", xff);
    check_client("10.0.0.1", longer, NULL, 64, "10.0.1.0"); /* the 65th is not */
}

/* Several X-Forwarded-For lines reach forward.c joined, the client's own
 * line first and however long (the HTTP front once passed only the first
 * line of a list over 8 KiB: the client's chosen address became the key).
 * The length of what the client wrote changes nothing. */
static void client_long_list(void **state) {
    (void)state;
    size_t cap = 64 * 1024;
    char *xff = malloc(cap);
    assert_non_null(xff);
    size_t n = 0;
    for (unsigned i = 0; n + 64 < cap - 64; i++)
        n += (size_t)snprintf(xff + n, cap - n, "198.51.100.%u, ", i % 250);
    snprintf(xff + n, cap - n, "192.0.2.77, 203.0.113.7, 10.0.0.9");
    check_client("10.0.0.1", xff, NULL, 64, "203.0.113.7");
    snprintf(xff + n, cap - n, "192.0.2.77,203.0.113.7");
    check_client("10.0.0.1", xff, NULL, 64, "203.0.113.7");
    free(xff);
}

static void client_real_ip(void **state) {
    (void)state;
    check_client("10.0.0.1", NULL, "203.0.113.7", 64, "203.0.113.7");
    check_client("10.0.0.1", NULL, " 203.0.113.7\t", 64, "203.0.113.7");
    check_client("10.0.0.1", NULL, "203.0.113.7:80", 64, "203.0.113.7");
    check_client("10.0.0.1", NULL, "2001:db8:7:8:9::1", 64, "2001:db8:7:8::/64");
    check_client("10.0.0.1", NULL, "[2001:db8:7:8:9::1]:80", 48, "2001:db8:7::/48");
    check_client("10.0.0.1", NULL, "::ffff:203.0.113.7", 64, "203.0.113.7");
    check_client("10.0.0.1", NULL, "10.0.0.3", 64, "10.0.0.3"); /* taken as given */
    /* not an address: the peer */
    check_client("10.0.0.1", NULL, "unknown", 64, "10.0.0.1");
    check_client("10.0.0.1", NULL, "", 64, "10.0.0.1");
    check_client("10.0.0.1", NULL, "203.0.113.7, 1.1.1.1", 64, "10.0.0.1");
    /* an X-Forwarded-For without entries is none */
    check_client("10.0.0.1", "", "203.0.113.7", 64, "203.0.113.7");
    check_client("10.0.0.1", " , ,", "203.0.113.7", 64, "203.0.113.7");
    check_client("10.0.0.1", "unknown", "203.0.113.7", 64, "10.0.0.1");
    /* neither header */
    check_client("10.0.0.1", NULL, NULL, 64, "10.0.0.1");
    check_client("2001:db8:ffff:1:2:3:4:5", NULL, NULL, 64, "2001:db8:ffff:1::/64");
}

static void client_ipv6_grouping(void **state) {
    (void)state;
    const char *a = "2001:db8:1:2:3:4:5:6";
    check_client(a, NULL, NULL, 64, "2001:db8:1:2::/64");
    check_client(a, NULL, NULL, 48, "2001:db8:1::/48");
    check_client(a, NULL, NULL, 56, "2001:db8:1::/56");
    check_client(a, NULL, NULL, 128, "2001:db8:1:2:3:4:5:6");
    check_client(a, NULL, NULL, 127, "2001:db8:1:2:3:4:5:6/127");
    check_client(a, NULL, NULL, 126, "2001:db8:1:2:3:4:5:4/126");
    check_client(a, NULL, NULL, 1, "::/1");
    check_client("ffff::1", NULL, NULL, 1, "8000::/1");
    check_client("2001:db8:1:2:ffff::", NULL, NULL, 65, "2001:db8:1:2:8000::/65");
    check_client("2001:db8:1:2:ffff::", NULL, NULL, 63, "2001:db8:1:2::/63");
    check_client("2001:db8:1:3:ffff::", NULL, NULL, 63, "2001:db8:1:2::/63");
    /* the prefix must be 1..128 */
    check_client(a, NULL, NULL, 0, "");
    check_client(a, NULL, NULL, 129, "");
    check_client("203.0.113.7", NULL, NULL, 0, "");
    check_client("203.0.113.7", NULL, NULL, 129, "");
    /* IPv4 is never grouped; mapped addresses are IPv4 */
    check_client("203.0.113.7", NULL, NULL, 1, "203.0.113.7");
    check_client("::ffff:203.0.113.7", NULL, NULL, 64, "203.0.113.7");
    check_client("::ffff:203.0.113.7", NULL, NULL, 128, "203.0.113.7");
    check_client("10.0.0.1", "[::ffff:203.0.113.7]:80", NULL, 48, "203.0.113.7");
}

static void client_output_bounds(void **state) {
    (void)state;
    req_t r;
    req_init(&r, "2001:db8:1:2:3:4:5:6");
    char out[32];
    const char *want = "2001:db8:1:2::/64";
    size_t len = strlen(want);
    memset(out, 'x', sizeof out);
    assert_int_equal(sld_client_ip(&r.in, trusted, 64, out, len + 1), len);
    assert_string_equal(out, want);
    /* exactly the length: written, not terminated */
    memset(out, 'x', sizeof out);
    assert_int_equal(sld_client_ip(&r.in, trusted, 64, out, len), len);
    assert_memory_equal(out, want, len);
    assert_int_equal(out[len], 'x');
    /* shorter: nothing */
    assert_int_equal(sld_client_ip(&r.in, trusted, 64, out, len - 1), 0);
    assert_int_equal(sld_client_ip(&r.in, trusted, 64, out, 0), 0);
    assert_int_equal(sld_client_ip(&r.in, trusted, 64, NULL, 64), 0);
    assert_int_equal(sld_client_ip(NULL, trusted, 64, out, sizeof out), 0);
    /* the longest text there is */
    req_init(&r, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe");
    char big[64];
    assert_int_equal(sld_client_ip(&r.in, trusted, 127, big, sizeof big), 43);
    assert_string_equal(big, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
    /* no trusted set: the peer, whatever it sends */
    req_init(&r, "10.0.0.1");
    r.in.x_forwarded_for = own(&r, "203.0.113.7");
    assert_int_equal(sld_client_ip(&r.in, NULL, 64, out, sizeof out), 8);
    assert_string_equal(out, "10.0.0.1");
    req_free(&r);
}

/* ---- the key ------------------------------------------------------------- */

static void key_composition(void **state) {
    (void)state;
    req_t r;
    req_init(&r, "10.0.0.1");
    r.in.x_forwarded_for = own(&r, "203.0.113.7");
    r.in.user = own(&r, "alice");
    r.in.uri = own(&r, "/api//v1/items?page=2");
    r.in.method = own(&r, "post");
    req_header(&r, "X-Api-Key", "k-123");
    static const char *const all[] = {"user", "ip", "endpoint", "method", "header:X-Api-Key"};
    assert_string_equal(key_of(&r, all, LEN(all), NULL),
                        "user=alice|ip=203.0.113.7|endpoint=/api/v1/items|method=POST|"
                        "header:X-Api-Key=k-123");
    static const char *const one[] = {"ip"};
    assert_string_equal(key_of(&r, one, 1, NULL), "ip=203.0.113.7");
    /* order is the policy's */
    static const char *const swapped[] = {"method", "user"};
    assert_string_equal(key_of(&r, swapped, 2, NULL), "method=POST|user=alice");
    /* header names are looked up whatever their case */
    static const char *const lower[] = {"header:x-api-key"};
    assert_string_equal(key_of(&r, lower, 1, NULL), "header:x-api-key=k-123");
    req_free(&r);

    /* IPv6 clients are grouped in the key too */
    req_init(&r, "2001:db8:9:8:7:6:5:4");
    assert_string_equal(key_of(&r, one, 1, NULL), "ip=2001:db8:9:8::/64");
    req_free(&r);
}

static void key_user_header(void **state) {
    (void)state;
    typedef struct user_case {
        const char *value;
        const char *want;
    } user_case_t;
    static const user_case_t cases[] = {
        {"alice", "user=alice"},
        {"Bearer abc.DEF.ghi", "user=Bearer abc.DEF.ghi"},
        {"bearer abc.DEF.ghi", "user=Bearer abc.DEF.ghi"},
        {"BEARER   abc.DEF.ghi", "user=Bearer abc.DEF.ghi"},
        {"Basic YWxpY2U6c2VjcmV0", "user=Basic YWxpY2U6c2VjcmV0"}, /* not decoded */
        {"bAsIc YWxpY2U6c2VjcmV0", "user=Basic YWxpY2U6c2VjcmV0"},
        {"Basic YWxpY2U6c2VjcmV0==", "user=Basic YWxpY2U6c2VjcmV0%3D%3D"},
        {"Bearer ", "user=Bearer "},
        {"Bearer", "user=Bearer"},
        {"Bearerabc", "user=Bearerabc"},
        {"Bearer\tabc", "user=Bearer\tabc"},
        {"Digest username=\"a\"", "user=Digest username%3D\"a\""},
        {"Bear abc", "user=Bear abc"},
    };
    static const char *const attrs[] = {"user"};
    for (size_t i = 0; i < LEN(cases); i++) {
        req_t r;
        req_init(&r, "10.0.0.1");
        r.in.user = own(&r, cases[i].value);
        const char *got = key_of(&r, attrs, 1, NULL);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("user \"%s\": got \"%s\", want \"%s\"", cases[i].value, got, cases[i].want);
        req_free(&r);
    }
    /* credentials are compared as given */
    req_t a, b;
    req_init(&a, "10.0.0.1");
    req_init(&b, "10.0.0.1");
    a.in.user = own(&a, "Bearer TOKEN");
    b.in.user = own(&b, "Bearer token");
    char ka[64];
    snprintf(ka, sizeof ka, "%s", key_of(&a, attrs, 1, NULL));
    assert_string_not_equal(ka, key_of(&b, attrs, 1, NULL));
    req_free(&a);
    req_free(&b);
}

static void key_endpoint(void **state) {
    (void)state;
    typedef struct uri_case {
        const char *uri;
        const char *want;
    } uri_case_t;
    static const uri_case_t cases[] = {
        {"/a/b", "/a/b"},
        {"/a/b?x=1|2", "/a/b"},
        {"/a/b#frag", "/a/b"},
        {"/a/b?x#y", "/a/b"},
        {"/a/b#y?x", "/a/b"},
        {"/x?http://y/z", "/x"},
        {"//a///b//", "/a/b/"},
        {"/", "/"},
        {"//", "/"},
        {"?x=1", "/"},
        {"#", "/"},
        {"/a%2Fb", "/a%252Fb"},        /* escaped for the key, not decoded */
        {"/a%2f%2F/b", "/a%252f%252F/b"},
        {"/a|b=c", "/a%7Cb%3Dc"},
        {"/a/./b/../c", "/a/./b/../c"},
        {"/A/B", "/A/B"},
        {"http://evil.example/api/x?y", "/api/x"},
        {"HTTPS://evil.example:8443//api//x", "/api/x"},
        {"https://h", "/"},
        {"https://h?x", "/"},
        {"*", "*"},
        {"a/b", "a/b"},
        {"/a:b//c", "/a:b/c"},
        {"mailto:x", "mailto:x"},
        {"1http://h/x", "1http:/h/x"},
    };
    static const char *const attrs[] = {"endpoint"};
    for (size_t i = 0; i < LEN(cases); i++) {
        size_t len = strlen(cases[i].uri);
        for (size_t n = 1; n <= len; n++) { /* every prefix reads only its span */
            req_t r;
            req_init(&r, "10.0.0.1");
            r.in.uri = own_len(&r, cases[i].uri, n);
            const char *got = key_of(&r, attrs, 1, NULL);
            assert_memory_equal(got, "endpoint=", 9);
            if (n == len && strcmp(got + 9, cases[i].want) != 0)
                fail_msg("URI \"%s\": got \"%s\", want \"%s\"", cases[i].uri, got + 9,
                         cases[i].want);
            req_free(&r);
        }
    }
}

static void key_missing_values(void **state) {
    (void)state;
    typedef struct missing {
        const char *attr;
        const char *why;
    } missing_t;
    static const missing_t cases[] = {
        {"user", "no user header"},
        {"endpoint", "no X-Original-URI or X-Forwarded-Uri"},
        {"method", "no X-Original-Method or X-Forwarded-Method"},
        {"header:X-Api-Key", "a header the policy keys on is missing"},
        {"ip", "no client address"},
        {"key", "policy keys on a client-given key; use /v1/check"},
        {"cookie", "unknown key attribute"},
        {"USER", "unknown key attribute"},
        {"header:", "unknown key attribute"},
        {"", "unknown key attribute"},
    };
    for (int empty = 0; empty <= 1; empty++) {
        for (size_t i = 0; i < LEN(cases); i++) {
            req_t r;
            req_init(&r, NULL); /* no peer: no address */
            if (empty) {        /* present but empty is missing too */
                r.in.user = own(&r, "");
                r.in.uri = own(&r, "");
                r.in.method = own(&r, "");
                req_header(&r, "X-Api-Key", "");
            }
            /* the missing one after a good one: the key is not half-written */
            const char *attrs[] = {"header:Present", cases[i].attr};
            req_header(&r, "Present", "yes");
            const char *why = NULL;
            assert_string_equal(key_of(&r, attrs, 2, &why), "");
            if (strcmp(why, cases[i].why) != 0)
                fail_msg("\"%s\"%s: why \"%s\", want \"%s\"", cases[i].attr,
                         empty ? " (empty)" : "", why, cases[i].why);
            req_free(&r);
        }
    }
    /* no header callback: every header is missing */
    req_t r;
    req_init(&r, "10.0.0.1");
    r.in.header = NULL;
    static const char *const h[] = {"header:X"};
    const char *why = NULL;
    assert_string_equal(key_of(&r, h, 1, &why), "");
    assert_string_equal(why, "a header the policy keys on is missing");
    /* no attributes, a NULL one, a bad prefix for ip */
    char out[64];
    why = NULL;
    assert_int_equal(sld_forward_key(&r.in, trusted, 64, NULL, 0, out, sizeof out, &why), 0);
    assert_non_null(why);
    static const char *const with_null[] = {"ip", NULL};
    assert_int_equal(sld_forward_key(&r.in, trusted, 64, (char *const *)with_null, 2, out,
                                     sizeof out, &why), 0);
    assert_string_equal(why, "unknown key attribute");
    static const char *const ip[] = {"ip"};
    assert_int_equal(sld_forward_key(&r.in, trusted, 0, (char *const *)ip, 1, out, sizeof out,
                                     &why), 0);
    assert_string_equal(why, "ipv6_prefix must be 1 to 128");
    /* why may be NULL */
    assert_int_equal(sld_forward_key(&r.in, trusted, 64, (char *const *)h, 1, out, sizeof out,
                                     NULL), 0);
    assert_int_equal(sld_forward_key(&r.in, trusted, 64, (char *const *)ip, 1, out, sizeof out,
                                     NULL), 8 + 3);
    assert_string_equal(out, "ip=10.0.0.1");
    req_free(&r);
}

static void key_method(void **state) {
    (void)state;
    static const char *const attrs[] = {"method"};
    static const char *const in[] = {"get", "GET", "Delete", "m-search", "x|y=%"};
    static const char *const want[] = {"method=GET", "method=GET", "method=DELETE",
                                       "method=M-SEARCH", "method=X%7CY%3D%25"};
    for (size_t i = 0; i < LEN(in); i++) {
        req_t r;
        req_init(&r, "10.0.0.1");
        r.in.method = own(&r, in[i]);
        assert_string_equal(key_of(&r, attrs, 1, NULL), want[i]);
        req_free(&r);
    }
}

/* Inverse of the key's escaping, to show no two attribute sets share a key. */
static size_t unescape(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        assert_true(i + 2 < n);
        if (memcmp(s + i, "%25", 3) == 0)
            out[o++] = '%';
        else if (memcmp(s + i, "%7C", 3) == 0)
            out[o++] = '|';
        else if (memcmp(s + i, "%3D", 3) == 0)
            out[o++] = '=';
        else
            fail_msg("stray '%%' in a key");
        i += 2;
    }
    return o;
}

static void key_escaping_is_injective(void **state) {
    (void)state;
    /* the classic collisions */
    req_t a, b;
    req_init(&a, "10.0.0.1");
    a.in.user = own(&a, "a|ip=198.51.100.1");
    req_init(&b, "198.51.100.1");
    b.in.user = own(&b, "a");
    static const char *const u[] = {"user"}, *const uip[] = {"user", "ip"};
    char ka[128];
    snprintf(ka, sizeof ka, "%s", key_of(&a, u, 1, NULL));
    assert_string_equal(ka, "user=a%7Cip%3D198.51.100.1");
    assert_string_not_equal(ka, key_of(&b, uip, 2, NULL));
    req_free(&a);
    req_free(&b);

    req_init(&a, "10.0.0.1");
    req_header(&a, "X", "a|header:Y=b");
    req_init(&b, "10.0.0.1");
    req_header(&b, "X", "a");
    req_header(&b, "Y", "b");
    static const char *const x[] = {"header:X"}, *const xy[] = {"header:X", "header:Y"};
    snprintf(ka, sizeof ka, "%s", key_of(&a, x, 1, NULL));
    assert_string_not_equal(ka, key_of(&b, xy, 2, NULL));
    req_free(&a);
    req_free(&b);

    /* an escape written by the client is not the escape of a byte */
    req_init(&a, "10.0.0.1");
    req_header(&a, "X", "%7C");
    req_init(&b, "10.0.0.1");
    req_header(&b, "X", "|");
    snprintf(ka, sizeof ka, "%s", key_of(&a, x, 1, NULL));
    assert_string_equal(ka, "header:X=%257C");
    assert_string_equal(key_of(&b, x, 1, NULL), "header:X=%7C");
    req_free(&a);
    req_free(&b);

    /* random values, mostly of the bytes that matter: every key decodes back */
    static const char tricky[] = "|=%7C3D25a";
    uint64_t seed = 42;
    for (int round = 0; round < 2000; round++) {
        char vx[8], vy[8];
        size_t nx = 1 + rng_below(&seed, sizeof vx), ny = 1 + rng_below(&seed, sizeof vy);
        for (size_t i = 0; i < nx + ny; i++) {
            char ch = rng_below(&seed, 4) ? tricky[rng_below(&seed, sizeof tricky - 1)]
                                          : (char)(1 + rng_below(&seed, 255));
            if (i < nx)
                vx[i] = ch;
            else
                vy[i - nx] = ch;
        }
        req_t r;
        req_init(&r, "10.0.0.1");
        r.names[0] = "X";
        r.values[0] = own_len(&r, vx, nx);
        r.names[1] = "Y";
        r.values[1] = own_len(&r, vy, ny);
        r.nheaders = 2;
        char out[128], dec[128];
        const char *why = NULL;
        size_t len = sld_forward_key(&r.in, trusted, 64, (char *const *)xy, 2, out, sizeof out,
                                     &why);
        assert_true(len > 0);
        /* split at the one '|', each side at its one '=' */
        const char *bar = memchr(out, '|', len);
        assert_non_null(bar);
        assert_null(memchr(bar + 1, '|', len - (size_t)(bar + 1 - out)));
        const char *eq1 = memchr(out, '=', (size_t)(bar - out));
        const char *eq2 = memchr(bar + 1, '=', len - (size_t)(bar + 1 - out));
        assert_non_null(eq1);
        assert_non_null(eq2);
        assert_memory_equal(out, "header:X", (size_t)(eq1 - out));
        assert_memory_equal(bar + 1, "header:Y", (size_t)(eq2 - bar - 1));
        size_t dn = unescape(eq1 + 1, (size_t)(bar - eq1 - 1), dec);
        assert_int_equal(dn, nx);
        assert_memory_equal(dec, vx, nx);
        dn = unescape(eq2 + 1, len - (size_t)(eq2 + 1 - out), dec);
        assert_int_equal(dn, ny);
        assert_memory_equal(dec, vy, ny);
        req_free(&r);
    }
}

static void key_too_long(void **state) {
    (void)state;
    req_t r;
    req_init(&r, "10.0.0.1");
    r.in.user = own(&r, "a|b");
    static const char *const attrs[] = {"user", "ip"};
    const char *want = "user=a%7Cb|ip=10.0.0.1";
    size_t len = strlen(want);
    char out[64];
    const char *why = NULL;
    /* fits with its NUL */
    memset(out, 'x', sizeof out);
    assert_int_equal(sld_forward_key(&r.in, trusted, 64, (char *const *)attrs, 2, out, len + 1,
                                     &why), len);
    assert_null(why);
    assert_string_equal(out, want);
    /* one short, and anything shorter: "" and why */
    for (size_t cap = 0; cap <= len; cap++) {
        memset(out, 'x', sizeof out);
        why = NULL;
        assert_int_equal(sld_forward_key(&r.in, trusted, 64, (char *const *)attrs, 2, out, cap,
                                         &why), 0);
        assert_string_equal(why, "key too long");
        if (cap > 0)
            assert_int_equal(out[0], '\0');
        assert_int_equal(out[cap], 'x'); /* nothing written past cap */
    }
    /* a long user header */
    char user[300];
    memset(user, 'u', sizeof user - 1);
    user[sizeof user - 1] = '\0';
    req_t big;
    req_init(&big, "10.0.0.1");
    big.in.user = own(&big, user);
    char small[256];
    assert_int_equal(sld_forward_key(&big.in, trusted, 64, (char *const *)attrs, 1, small,
                                     sizeof small, &why), 0);
    assert_string_equal(why, "key too long");
    req_free(&big);
    req_free(&r);
}

/* The gateway's route attribute: the route's name, as any value; a request
 * that did not come through the gateway has none. */
static void route_attribute(void **state) {
    (void)state;
    static const char *const attrs[] = {"route", "method"};
    char out[128];
    const char *why = NULL;
    sld_forwarded_t in = {.route = {"api", 3}, .method = {"GET", 3}};
    size_t n = sld_forward_key(&in, trusted, 64, (char *const *)attrs, 2, out, sizeof out, &why);
    assert_int_equal(n, strlen("route=api|method=GET"));
    assert_string_equal(out, "route=api|method=GET");
    sld_forwarded_t none = {.method = {"GET", 3}};
    assert_int_equal(sld_forward_key(&none, trusted, 64, (char *const *)attrs, 2, out, sizeof out, &why), 0);
    assert_string_equal(why, "the route attribute keys gateway requests only");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_untrusted_peer),
        cmocka_unit_test(client_behind_proxies),
        cmocka_unit_test(client_every_prefix),
        cmocka_unit_test(client_hop_bound),
        cmocka_unit_test(client_long_list),
        cmocka_unit_test(client_real_ip),
        cmocka_unit_test(client_ipv6_grouping),
        cmocka_unit_test(client_output_bounds),
        cmocka_unit_test(key_composition),
        cmocka_unit_test(key_user_header),
        cmocka_unit_test(key_endpoint),
        cmocka_unit_test(key_missing_values),
        cmocka_unit_test(key_method),
        cmocka_unit_test(key_escaping_is_injective),
        cmocka_unit_test(key_too_long),
        cmocka_unit_test(route_attribute),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
