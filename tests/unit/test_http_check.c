/* test_http_check.c -- check requests from query strings and JSON bodies, and
 * JSON string literals (src/server/http/http_check.c, http_json.c).
 *
 * Every input is parsed from a copy that ends on a guard page, into a scratch
 * buffer of exactly the input's length that ends on one too. Every truncated
 * prefix of every valid input is parsed as well: a query prefix may succeed
 * (it can be a shorter valid query) or fail cleanly; a JSON prefix fails with
 * "body" until it holds the closing brace. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rig.h"
#include "server/http/http_check.h"

typedef int (*parse_fn)(const char *, size_t, char *, sld_check_request_t *, const char **,
                        const char **);

/* A copy of data (or len bytes of 0x5A when data is NULL) whose last byte is
 * followed by an unreadable page. */
static char *guarded(const char *data, size_t len, void **map, size_t *maplen) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    char *base = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(base != MAP_FAILED);
    assert_int_equal(mprotect(base + (pages - 1) * page, page, PROT_NONE), 0);
    char *p = base + (pages - 1) * page - len;
    if (data != NULL)
        memcpy(p, data, len);
    else
        memset(p, 0x5A, len);
    *map = base;
    *maplen = pages * page;
    return p;
}

/* Bytes as text: printable ASCII as is, the rest (and '\\', '|') as \xHH. */
static void put(char **w, const char *end, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n && *w + 4 < end; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '|') {
            *(*w)++ = (char)c;
        } else {
            *(*w)++ = '\\';
            *(*w)++ = 'x';
            *(*w)++ = hex[c >> 4];
            *(*w)++ = hex[c & 15];
        }
    }
}

/* Text as it is (the separators of describe()). */
static void put_str(char **w, const char *end, const char *s) {
    for (; *s != '\0' && *w + 1 < end; s++)
        *(*w)++ = *s;
}

/* A request as text: "p:<policy>|k:<key>|c:<cost>|<name>=<value>|...", no k:
 * when there is no key. */
static void describe(const sld_check_request_t *r, char *out, size_t cap) {
    char *w = out, *end = out + cap;
    put_str(&w, end, "p:");
    put(&w, end, r->policy.ptr, r->policy.len);
    if (r->has_key) {
        put_str(&w, end, "|k:");
        put(&w, end, r->key.ptr, r->key.len);
    }
    char num[24];
    snprintf(num, sizeof num, "|c:%" PRIu64, r->cost);
    put_str(&w, end, num);
    for (size_t i = 0; i < r->nattrs; i++) {
        put_str(&w, end, "|");
        put(&w, end, r->attrs[i].name.ptr, r->attrs[i].name.len);
        put_str(&w, end, "=");
        put(&w, end, r->attrs[i].value.ptr, r->attrs[i].value.len);
    }
    *w = '\0';
}

static bool span_within(sld_span_t s, const char *base, size_t len) {
    return s.ptr >= base && s.len <= len && s.ptr - base <= (ptrdiff_t)(len - s.len);
}

static bool span_ok(sld_span_t s, const char *in, const char *scratch, size_t len) {
    return s.ptr != NULL && (span_within(s, in, len) || span_within(s, scratch, len));
}

static bool known_param(const char *p) {
    static const char *const names[] = {"policy", "key", "cost", "attributes", "body", "query"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (p != NULL && strcmp(p, names[i]) == 0)
            return true;
    return false;
}

typedef struct result {
    int rc;
    const char *param;    /* on error */
    const char *why;
    char got[512];        /* on success: describe() */
    bool policy_in_input; /* on success: not decoded into scratch */
} result_t;

/* Parses a guarded copy of in[0..len) into guarded scratch and checks what
 * holds for every input: a known error, or spans inside input or scratch. */
static result_t run(parse_fn parse, const char *in, size_t len) {
    void *imap, *smap;
    size_t ilen, slen;
    const char *p = guarded(in, len, &imap, &ilen);
    char *scratch = guarded(NULL, len, &smap, &slen);
    sld_check_request_t out;
    memset(&out, 0xA5, sizeof out); /* every field must be written */
    result_t r = {.param = NULL, .why = NULL};
    r.rc = parse(p, len, scratch, &out, &r.param, &r.why);
    if (r.rc == SL_OK) {
        assert_true(span_ok(out.policy, p, scratch, len));
        assert_true(out.policy.len > 0);
        assert_true(out.nattrs <= SLD_CHECK_MAX_ATTRS);
        if (out.has_key)
            assert_true(span_ok(out.key, p, scratch, len));
        for (size_t i = 0; i < out.nattrs; i++) {
            assert_true(span_ok(out.attrs[i].name, p, scratch, len));
            assert_true(span_ok(out.attrs[i].value, p, scratch, len));
        }
        r.policy_in_input = span_within(out.policy, p, len);
        describe(&out, r.got, sizeof r.got);
    } else {
        assert_int_equal(r.rc, SL_EINVAL);
        if (!known_param(r.param) || r.why == NULL || r.why[0] == '\0')
            fail_msg("error without a known param and a reason: %s: %s", r.param ? r.param : "(null)",
                     r.why ? r.why : "(null)");
    }
    munmap(imap, ilen);
    munmap(smap, slen);
    return r;
}

typedef struct good {
    const char *in;
    const char *want;
} good_t;

typedef struct bad {
    const char *in;
    size_t len;        /* 0 = strlen */
    const char *param;
    const char *why;   /* a part of *why */
} bad_t;

static void check_good(parse_fn parse, const good_t *c, size_t n, const char *what) {
    for (size_t g = 0; g < n; g++) {
        size_t len = strlen(c[g].in);
        result_t r = run(parse, c[g].in, len);
        if (r.rc != SL_OK)
            fail_msg("%s %zu '%s': %s: %s", what, g, c[g].in, r.param, r.why);
        if (strcmp(r.got, c[g].want) != 0)
            fail_msg("%s %zu '%s':\n  got  %s\n  want %s", what, g, c[g].in, r.got, c[g].want);
    }
}

static void check_bad(parse_fn parse, const bad_t *c, size_t n, const char *what) {
    for (size_t b = 0; b < n; b++) {
        size_t len = c[b].len ? c[b].len : strlen(c[b].in);
        result_t r = run(parse, c[b].in, len);
        if (r.rc == SL_OK)
            fail_msg("%s %zu '%s': accepted as %s, expected %s: %s", what, b, c[b].in, r.got,
                     c[b].param, c[b].why);
        if (strcmp(r.param, c[b].param) != 0 || strstr(r.why, c[b].why) == NULL)
            fail_msg("%s %zu '%s':\n  got  %s: %s\n  want %s: ...%s...", what, b, c[b].in, r.param,
                     r.why, c[b].param, c[b].why);
    }
}

/* ---- query strings -------------------------------------------------------------- */

static const good_t query_goods[] = {
    {"policy=per_user&key=alice&cost=2", "p:per_user|k:alice|c:2"},
    {"policy=p", "p:p|c:1"},
    {"cost=5&key=k&policy=p", "p:p|k:k|c:5"},
    {"key=&policy=p", "p:p|k:|c:1"},
    {"policy=p&key=", "p:p|k:|c:1"},
    {"&&policy=p&&cost=0&", "p:p|c:0"},
};

#define NQUERY_GOODS (sizeof query_goods / sizeof query_goods[0])

static const good_t query_decoding[] = {
    {"policy=p&key=a+b%20c%2Fd%2f", "p:p|k:a b c/d/|c:1"},
    {"policy=p&key=%2B%2b+", "p:p|k:++ |c:1"},
    {"pol%69cy=x&%6Bey=%00", "p:x|k:\\x00|c:1"},
    {"policy=%E2%82%AC&key=%ff%FE", "p:\\xe2\\x82\\xac|k:\\xff\\xfe|c:1"},
    {"policy=a=b&key==", "p:a=b|k:=|c:1"},
    {"policy=p&key=%25%26%3D", "p:p|k:%&=|c:1"},
    {"policy=p&key=%7C%5C", "p:p|k:\\x7c\\x5c|c:1"},
    {"policy=p&cost=%31%32", "p:p|c:12"},
    {"policy=p&cost=007", "p:p|c:7"},
    {"policy=p&cost=00000000000000000000000000001", "p:p|c:1"},
    {"policy=p&cost=9223372036854775807", "p:p|c:9223372036854775807"},
    {"policy=p&key=caf\xc3\xa9", "p:p|k:caf\\xc3\\xa9|c:1"},
};

static void query_valid_and_every_prefix(void **state) {
    (void)state;
    check_good(sld_check_parse_query, query_goods, NQUERY_GOODS, "query");
    check_good(sld_check_parse_query, query_decoding, sizeof query_decoding / sizeof query_decoding[0],
               "query");
    const good_t *tables[] = {query_goods, query_decoding};
    size_t sizes[] = {NQUERY_GOODS, sizeof query_decoding / sizeof query_decoding[0]};
    for (size_t t = 0; t < 2; t++)
        for (size_t g = 0; g < sizes[t]; g++) {
            size_t len = strlen(tables[t][g].in);
            for (size_t cut = 0; cut < len; cut++)
                (void)run(sld_check_parse_query, tables[t][g].in, cut); /* either, cleanly */
        }
    /* Prefixes that are shorter queries in their own right. */
    result_t r = run(sld_check_parse_query, "policy=per_user&key=alice&cost=2", 22);
    assert_int_equal(r.rc, SL_OK);
    assert_string_equal(r.got, "p:per_user|k:al|c:1");
    r = run(sld_check_parse_query, "policy=per_user&key=alice&cost=2", 8);
    assert_int_equal(r.rc, SL_OK);
    assert_string_equal(r.got, "p:p|c:1");
    r = run(sld_check_parse_query, "policy=per_user&key=alice&cost=2", 7);
    assert_int_equal(r.rc, SL_EINVAL);
    assert_string_equal(r.param, "policy");
    r = run(sld_check_parse_query, "policy=%E2%82%AC", 9);
    assert_int_equal(r.rc, SL_EINVAL);
    assert_string_equal(r.param, "policy");
}

static const bad_t query_bads[] = {
    {"", 0, "policy", "required"},
    {"&", 0, "policy", "required"},
    {"key=a&cost=1", 0, "policy", "required"},
    {"policy=", 0, "policy", "empty"},
    {"policy", 0, "policy", "name=value"},
    {"policy=p&key", 0, "key", "name=value"},
    {"policy=p&cost", 0, "cost", "name=value"},
    {"foo", 0, "query", "unknown parameter (known: policy, key, cost, wait)"},
    {"foo=1&policy=p", 0, "query", "unknown parameter"},
    {"policy=p&cots=2", 0, "query", "unknown parameter"},
    {"Policy=p", 0, "query", "unknown parameter"},
    {"policy=p&=", 0, "query", "unknown parameter"},
    {"=x&policy=p", 0, "query", "unknown parameter"},
    {"policy=p&key%3Dk", 0, "query", "unknown parameter"},
    {"policy=p&averyveryveryveryverylongname=1", 0, "query", "unknown parameter"},
    {"po%zzlicy=p", 0, "query", "percent-escape"},
    {"policy=p&k%4", 0, "query", "percent-escape"},
    {"policy=p&policy=q", 0, "policy", "twice"},
    {"policy=p&key=a&key=a", 0, "key", "twice"},
    {"cost=1&policy=p&cost=1", 0, "cost", "twice"},
    {"policy=%G1", 0, "policy", "percent-escape"},
    {"policy=%1G", 0, "policy", "percent-escape"},
    {"policy=p&key=%4", 0, "key", "percent-escape"},
    {"policy=p&key=a%", 0, "key", "percent-escape"},
    {"policy=p&key=%%41", 0, "key", "percent-escape"},
    {"policy=p&key=%-1", 0, "key", "percent-escape"},
    {"policy=p&key=%+1", 0, "key", "percent-escape"},
    {"policy=p&cost=%3", 0, "cost", "percent-escape"},
    {"policy=p&cost=", 0, "cost", "whole number"},
    {"policy=p&cost=-1", 0, "cost", "whole number"},
    {"policy=p&cost=+1", 0, "cost", "whole number"},
    {"policy=p&cost=1+", 0, "cost", "whole number"},
    {"policy=p&cost=1.5", 0, "cost", "whole number"},
    {"policy=p&cost=1e3", 0, "cost", "whole number"},
    {"policy=p&cost=0x10", 0, "cost", "whole number"},
    {"policy=p&cost=%201", 0, "cost", "whole number"},
    {"policy=p&cost=9223372036854775808", 0, "cost", "whole number"},
    {"policy=p&cost=18446744073709551616", 0, "cost", "whole number"},
    {"policy=p&cost=99999999999999999999", 0, "cost", "whole number"},
    {"policy=p&cost=%00", 0, "cost", "whole number"},
    {"policy=p\0&cost=a", 16, "cost", "whole number"},
};

static void query_errors(void **state) {
    (void)state;
    check_bad(sld_check_parse_query, query_bads, sizeof query_bads / sizeof query_bads[0], "query");
}

/* Plain values point into the input; decoded ones into scratch. */
static void query_copies_only_what_it_decodes(void **state) {
    (void)state;
    const char q[] = "policy=per_user&key=a%20b";
    char scratch[sizeof q];
    sld_check_request_t out;
    const char *param, *why;
    assert_int_equal(sld_check_parse_query(q, sizeof q - 1, scratch, &out, &param, &why), SL_OK);
    assert_ptr_equal(out.policy.ptr, q + 7);
    assert_int_equal(out.policy.len, 8);
    assert_ptr_equal(out.key.ptr, scratch);
    assert_int_equal(out.key.len, 3);
    assert_memory_equal(out.key.ptr, "a b", 3);
    assert_true(out.has_key);
    assert_int_equal(out.cost, 1);
    assert_int_equal(out.nattrs, 0);
    /* Every value decoded: they share scratch, one after the other, within len. */
    const char all[] = "policy=%70&key=%6b%6B&cost=%31";
    char s2[sizeof all - 1];
    assert_int_equal(sld_check_parse_query(all, sizeof all - 1, s2, &out, &param, &why), SL_OK);
    assert_ptr_equal(out.policy.ptr, s2);
    assert_ptr_equal(out.key.ptr, s2 + 1);
    assert_memory_equal(s2, "pkk1", 4);
    assert_int_equal(out.cost, 1);
    /* A NULL query of length 0 is an empty query. */
    assert_int_equal(sld_check_parse_query(NULL, 0, NULL, &out, &param, &why), SL_EINVAL);
    assert_string_equal(param, "policy");
}

/* ---- JSON bodies ---------------------------------------------------------------- */

static const good_t json_goods[] = {
    {"{\"policy\":\"per_user\",\"key\":\"alice\",\"cost\":2}", "p:per_user|k:alice|c:2"},
    {"{\"policy\":\"p\"}", "p:p|c:1"},
    {" \t\r\n{ \"policy\" : \"p\" , \"key\" : \"\" , \"cost\" : 0 } \n\t\r", "p:p|k:|c:0"},
    {"{\"cost\":9223372036854775807,\"policy\":\"p\"}", "p:p|c:9223372036854775807"},
    {"{\"cost\":10,\"policy\":\"p\"}", "p:p|c:10"},
    {"{\"policy\":\"p\",\"attributes\":{\"user\":\"u\",\"ip\":\"203.0.113.7\"}}",
     "p:p|c:1|user=u|ip=203.0.113.7"},
    {"{\"attributes\" : { } ,\"policy\":\"p\"}", "p:p|c:1"},
    {"{\"policy\":\"p\",\"key\":\"k\",\"attributes\":{\"a\":\"\"},\"cost\":3}", "p:p|k:k|c:3|a="},
    {"{\"policy\":\"p\",\"attributes\":{\"1\":\"a\",\"2\":\"b\",\"3\":\"c\",\"4\":\"d\",\"5\":\"e\","
     "\"6\":\"f\",\"7\":\"g\",\"8\":\"h\"}}",
     "p:p|c:1|1=a|2=b|3=c|4=d|5=e|6=f|7=g|8=h"},
    {"{\"policy\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"}", "p:a\"b\\x5cc/d\\x08\\x0c\\x0a\\x0d\\x09|c:1"},
    {"{\"policy\":\"p\",\"key\":\"\\u00e9\\u20AC\\ud83d\\ude00\\u0000\\u0041\\uFFFF\\udbff\\udfff\"}",
     "p:p|k:\\xc3\\xa9\\xe2\\x82\\xac\\xf0\\x9f\\x98\\x80\\x00A"
     "\\xef\\xbf\\xbf\\xf4\\x8f\\xbf\\xbf|c:1"},
    {"{\"policy\":\"ab\\ncd\\u007f\",\"key\":\"x\\u0080y\"}", "p:ab\\x0acd\\x7f|k:x\\xc2\\x80y|c:1"},
    {"{\"policy\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\"}",
     "p:caf\\xc3\\xa9 \\xe2\\x82\\xac \\xf0\\x9f\\x98\\x80 \\x7f|c:1"},
    {"{\"pol\\u0069cy\":\"p\",\"\\u006bey\":\"k\"}", "p:p|k:k|c:1"},
    {"{\"policy\":\"p\",\"attributes\":{\"h\\u0065ader:X-Id\":\"v\\tw\",\"ip\":\"::1\"}}",
     "p:p|c:1|header:X-Id=v\\x09w|ip=::1"},
    {"{\"policy\":\"{\\\"policy\\\":1}\"}", "p:{\"policy\":1}|c:1"},
};

static void json_valid_and_every_prefix(void **state) {
    (void)state;
    size_t n = sizeof json_goods / sizeof json_goods[0];
    check_good(sld_check_parse_json, json_goods, n, "json");
    for (size_t g = 0; g < n; g++) {
        const char *in = json_goods[g].in;
        size_t len = strlen(in), last = len;
        while (last > 0 && strchr(" \t\r\n", in[last - 1]) != NULL)
            last--; /* in[last - 1] is the closing brace */
        for (size_t cut = 0; cut < len; cut++) {
            result_t r = run(sld_check_parse_json, in, cut);
            if (cut < last && (r.rc != SL_EINVAL || strcmp(r.param, "body") != 0))
                fail_msg("json %zu cut at %zu: %d %s, expected an error of body", g, cut, r.rc,
                         r.rc == SL_OK ? r.got : r.param);
            if (cut >= last && (r.rc != SL_OK || strcmp(r.got, json_goods[g].want) != 0))
                fail_msg("json %zu cut at %zu (only whitespace cut): %d", g, cut, r.rc);
        }
    }
}

static const bad_t json_bads[] = {
    /* not an object */
    {"", 0, "body", "empty"},
    {" \r\n\t ", 0, "body", "empty"},
    {"null", 0, "body", "object"},
    {"[]", 0, "body", "object"},
    {"[{\"policy\":\"p\"}]", 0, "body", "object"},
    {"\"policy\"", 0, "body", "object"},
    {"1", 0, "body", "object"},
    {"true", 0, "body", "object"},
    {"\xef\xbb\xbf{\"policy\":\"p\"}", 0, "body", "object"},
    {"policy=p", 0, "body", "object"},
    /* fields */
    {"{}", 0, "policy", "required"},
    {"{\"key\":\"k\"}", 0, "policy", "required"},
    {"{\"policy\":\"\"}", 0, "policy", "empty"},
    {"{\"policy\":1}", 0, "policy", "must be a string"},
    {"{\"policy\":null}", 0, "policy", "must be a string"},
    {"{\"policy\":[\"p\"]}", 0, "policy", "must be a string"},
    {"{\"policy\":{\"a\":{}}}", 0, "policy", "must be a string"},
    {"{\"policy\":}", 0, "policy", "must be a string"},
    {"{\"policy\":\"p\",\"key\":1}", 0, "key", "must be a string"},
    {"{\"policy\":\"p\",\"key\":false}", 0, "key", "must be a string"},
    {"{\"policy\":\"p\",\"foo\":1}", 0, "body", "unknown field (known: policy, key, cost, attributes, wait)"},
    {"{\"Policy\":\"p\"}", 0, "body", "unknown field"},
    {"{\"\":\"p\"}", 0, "body", "unknown field"},
    {"{\"policy\\u0000\":\"p\"}", 0, "body", "unknown field"},
    {"{\"policy\":\"p\",\"policy\":\"q\"}", 0, "policy", "twice"},
    {"{\"policy\":\"p\",\"key\":\"a\",\"key\":\"a\"}", 0, "key", "twice"},
    {"{\"cost\":1,\"policy\":\"p\",\"cost\":1}", 0, "cost", "twice"},
    {"{\"policy\":\"p\",\"attributes\":{},\"attributes\":{}}", 0, "attributes", "twice"},
    {"{\"policy\":\"p\",\"pol\\u0069cy\":\"q\"}", 0, "policy", "twice"},
    /* cost */
    {"{\"policy\":\"p\",\"cost\":\"1\"}", 0, "cost", "non-negative integer"},
    {"{\"policy\":\"p\",\"cost\":true}", 0, "cost", "non-negative integer"},
    {"{\"policy\":\"p\",\"cost\":null}", 0, "cost", "non-negative integer"},
    {"{\"policy\":\"p\",\"cost\":.5}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":e}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":}", 0, "cost", "non-negative integer"},
    {"{\"policy\":\"p\",\"cost\":-1}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":-0}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":1.0}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":0.5}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":1e3}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":1E3}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":1e+3}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":+1}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":01}", 0, "cost", "leading zeros"},
    {"{\"policy\":\"p\",\"cost\":00}", 0, "cost", "leading zeros"},
    {"{\"policy\":\"p\",\"cost\":9223372036854775808}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":18446744073709551616}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":99999999999999999999}", 0, "cost", "whole number"},
    {"{\"policy\":\"p\",\"cost\":1x}", 0, "body", "expected ',' or '}'"},
    {"{\"policy\":\"p\",\"cost\":1 2}", 0, "body", "expected ',' or '}'"},
    /* attributes */
    {"{\"policy\":\"p\",\"attributes\":[]}", 0, "attributes", "object"},
    {"{\"policy\":\"p\",\"attributes\":null}", 0, "attributes", "object"},
    {"{\"policy\":\"p\",\"attributes\":\"user\"}", 0, "attributes", "object"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":1}}", 0, "attributes", "values must be strings"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":{\"b\":\"c\"}}}", 0, "attributes",
     "values must be strings"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":[\"b\"]}}", 0, "attributes", "values must be strings"},
    {"{\"policy\":\"p\",\"attributes\":{\"\":\"x\"}}", 0, "attributes", "empty"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":\"x\",\"a\":\"y\"}}", 0, "attributes", "twice"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":\"x\",\"\\u0061\":\"y\"}}", 0, "attributes", "twice"},
    {"{\"policy\":\"p\",\"attributes\":{\"1\":\"a\",\"2\":\"b\",\"3\":\"c\",\"4\":\"d\",\"5\":\"e\","
     "\"6\":\"f\",\"7\":\"g\",\"8\":\"h\",\"9\":\"i\"}}",
     0, "attributes", "at most 8"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":\"x\",}}", 0, "body", "attribute name"},
    {"{\"policy\":\"p\",\"attributes\":{,}}", 0, "body", "attribute name"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\" \"x\"}}", 0, "body", "':'"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":\"x\" \"b\":\"y\"}}", 0, "body", "',' or '}'"},
    {"{\"policy\":\"p\",\"attributes\":{\"a\":\"x\"}", 0, "body", "end"},
    /* syntax */
    {"{", 0, "body", "end"},
    {"{\"policy\":\"p\"", 0, "body", "end"},
    {"{\"policy\":\"p\"} x", 0, "body", "trailing"},
    {"{\"policy\":\"p\"}{}", 0, "body", "trailing"},
    {"{\"policy\":\"p\"}\0", 15, "body", "trailing"},
    {"{\"policy\":\"p\",}", 0, "body", "field name"},
    {"{,\"policy\":\"p\"}", 0, "body", "field name"},
    {"{\"policy\":\"p\" \"key\":\"k\"}", 0, "body", "',' or '}'"},
    {"{\"policy\":\"p\";\"key\":\"k\"}", 0, "body", "',' or '}'"},
    {"{\"policy\" \"p\"}", 0, "body", "':'"},
    {"{\"policy\"=\"p\"}", 0, "body", "':'"},
    {"{policy:\"p\"}", 0, "body", "field name"},
    {"{'policy':'p'}", 0, "body", "field name"},
    {"{\"policy\":\"p\"\v}", 0, "body", "',' or '}'"},
    {"{\"policy\":\"p\"\f}", 0, "body", "',' or '}'"},
    {"{\"policy\":\"p\"\xc2\xa0}", 0, "body", "',' or '}'"},
    /* strings */
    {"{\"policy\":\"a\\x\"}", 0, "body", "invalid escape"},
    {"{\"policy\":\"a\\'\"}", 0, "body", "invalid escape"},
    {"{\"policy\":\"a\\U0041\"}", 0, "body", "invalid escape"},
    {"{\"policy\":\"a\\u12G4\"}", 0, "body", "\\u escape"},
    {"{\"policy\":\"a\\u123\"}", 0, "body", "\\u escape"},
    {"{\"policy\":\"a\\u\"}", 0, "body", "\\u escape"},
    {"{\"policy\":\"\\ud83d\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ude00\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ude00\\ud83d\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ud83d\\u0041\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ud83d\\ud83d\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ud83dx\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ud83d\\n\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"\\ud83d\\ude0\"}", 0, "body", "lone surrogate"},
    {"{\"policy\":\"a\tb\"}", 0, "body", "control character"},
    {"{\"policy\":\"a\nb\"}", 0, "body", "control character"},
    {"{\"policy\":\"a\0b\"}", 15, "body", "control character"},
    {"{\"policy\":\"\x1f\"}", 0, "body", "control character"},
    {"{\"policy\":\"\\u0041\x01\"}", 0, "body", "control character"},
    {"{\"policy\":\"\xff\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\x80\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xc0\x80\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xc1\xbf\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xe0\x9f\xbf\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xed\xa0\x80\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xf0\x8f\xbf\xbf\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xf4\x90\x80\x80\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xf5\x80\x80\x80\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\xe2\x82\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"\\n\xe2\x82\"}", 0, "body", "UTF-8"},
    {"{\"policy\":\"p\",\"attributes\":{\"\xff\":\"x\"}}", 0, "body", "UTF-8"},
    {"{\"policy\":\"abc", 0, "body", "unterminated"},
    {"{\"policy\":\"abc\\", 0, "body", "unterminated"},
    {"{\"policy\":\"abc\\\"}", 0, "body", "unterminated"},
    {"{\"pol", 0, "body", "unterminated"},
};

static void json_errors(void **state) {
    (void)state;
    check_bad(sld_check_parse_json, json_bads, sizeof json_bads / sizeof json_bads[0], "json");
}

static void json_copies_only_what_it_decodes(void **state) {
    (void)state;
    const char b[] = "{\"policy\":\"per_user\",\"key\":\"a\\nb\",\"attributes\":{\"ip\":\"\\u0031\"}}";
    char scratch[sizeof b - 1];
    sld_check_request_t out;
    const char *param, *why;
    assert_int_equal(sld_check_parse_json(b, sizeof b - 1, scratch, &out, &param, &why), SL_OK);
    assert_ptr_equal(out.policy.ptr, b + 11);
    assert_int_equal(out.policy.len, 8);
    assert_ptr_equal(out.key.ptr, scratch);
    assert_memory_equal(out.key.ptr, "a\nb", 3);
    assert_ptr_equal(out.attrs[0].name.ptr, strstr(b, "ip"));
    assert_ptr_equal(out.attrs[0].value.ptr, scratch + 3);
    assert_memory_equal(out.attrs[0].value.ptr, "1", 1);
    assert_int_equal(out.nattrs, 1);
    assert_int_equal(out.cost, 1);
    /* Decoding a string that is all escapes fills scratch, never more: the
     * guard page after a scratch of exactly len bytes says so. */
    const char all[] = "{\"policy\":\"\\ud83d\\ude00\\u00e9\\n\\u20ac\"}";
    result_t r = run(sld_check_parse_json, all, sizeof all - 1);
    assert_int_equal(r.rc, SL_OK);
    assert_false(r.policy_in_input);
    assert_string_equal(r.got, "p:\\xf0\\x9f\\x98\\x80\\xc3\\xa9\\x0a\\xe2\\x82\\xac|c:1");
    assert_int_equal(sld_check_parse_json(NULL, 0, NULL, &out, &param, &why), SL_EINVAL);
    assert_string_equal(param, "body");
}

/* Whitespace wherever RFC 8259 allows it (after '{', ':', ',' and every
 * string outside strings) changes nothing. */
static void json_whitespace_everywhere(void **state) {
    (void)state;
    for (size_t g = 0; g < sizeof json_goods / sizeof json_goods[0]; g++) {
        const char *in = json_goods[g].in;
        char spaced[1024];
        size_t w = 0;
        bool in_string = false, escaped = false;
        for (size_t i = 0; in[i] != '\0'; i++) {
            char c = in[i];
            spaced[w++] = c;
            if (in_string) {
                if (escaped)
                    escaped = false;
                else if (c == '\\')
                    escaped = true;
                else if (c == '"')
                    in_string = false; /* and whitespace after it, below */
                if (in_string)
                    continue;
            } else if (c == '"') {
                in_string = true;
                continue;
            }
            if (c == '{' || c == ':' || c == ',' || c == '"') {
                memcpy(spaced + w, " \r\n\t", 4);
                w += 4;
            }
        }
        result_t r = run(sld_check_parse_json, spaced, w);
        if (r.rc != SL_OK || strcmp(r.got, json_goods[g].want) != 0)
            fail_msg("json %zu spaced '%.*s': %d %s", g, (int)w, spaced, r.rc,
                     r.rc == SL_OK ? r.got : r.why);
    }
}

/* ---- JSON string literals ------------------------------------------------------- */

typedef struct lit {
    const char *in;
    size_t len;        /* 0 = strlen */
    const char *want;  /* without the quotes */
} lit_t;

#define FFFD "\xef\xbf\xbd"

static const lit_t lits[] = {
    {"", 0, ""},
    {"abc", 0, "abc"},
    {"a\"b\\c/d", 0, "a\\\"b\\\\c/d"},
    {"\n\r\t\b\f", 0, "\\n\\r\\t\\b\\f"},
    {"\x01\x1f\x00", 3, "\\u0001\\u001f\\u0000"},
    {"\x0b\x1b", 0, "\\u000b\\u001b"},
    {"\x7f ~", 0, "\x7f ~"},
    /* valid UTF-8, the edges of every length */
    {"\xc2\x80 \xc3\xa9 \xdf\xbf", 0, "\xc2\x80 \xc3\xa9 \xdf\xbf"},
    {"\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf", 0,
     "\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf"},
    {"\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", 0,
     "\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"},
    {FFFD, 0, FFFD},
    /* lone continuation bytes */
    {"\x80", 0, FFFD},
    {"a\xbf" "b", 0, "a" FFFD "b"},
    {"\x80\x80", 0, FFFD FFFD},
    /* bytes that never start a sequence */
    {"\xc0", 0, FFFD},
    {"\xc1\xbf", 0, FFFD FFFD},
    {"\xf5\x80\x80\x80", 0, FFFD FFFD FFFD FFFD},
    {"\xfe\xff", 0, FFFD FFFD},
    /* overlong forms */
    {"\xc0\x80", 0, FFFD FFFD},
    {"\xc0\xaf", 0, FFFD FFFD},
    {"\xe0\x80\x80", 0, FFFD FFFD FFFD},
    {"\xe0\x9f\xbf", 0, FFFD FFFD FFFD},
    {"\xf0\x80\x80\x80", 0, FFFD FFFD FFFD FFFD},
    {"\xf0\x8f\xbf\xbf", 0, FFFD FFFD FFFD FFFD},
    /* surrogates encoded in UTF-8 */
    {"\xed\xa0\x80", 0, FFFD FFFD FFFD},
    {"\xed\xbf\xbf", 0, FFFD FFFD FFFD},
    {"\xed\xa0\xbd\xed\xb8\x80", 0, FFFD FFFD FFFD FFFD FFFD FFFD},
    /* above U+10FFFF */
    {"\xf4\x90\x80\x80", 0, FFFD FFFD FFFD FFFD},
    {"\xf7\xbf\xbf\xbf", 0, FFFD FFFD FFFD FFFD},
    /* truncated: one U+FFFD for the maximal subpart */
    {"\xc3", 0, FFFD},
    {"\xe2\x82", 0, FFFD},
    {"\xf0\x9f\x98", 0, FFFD},
    {"\xe2\x82x", 0, FFFD "x"},
    {"\xf0\x9f" "ab", 0, FFFD "ab"},
    {"\xc3\xc3\xa9", 0, FFFD "\xc3\xa9"},
    {"\xe2\x82\xe2\x82\xac", 0, FFFD "\xe2\x82\xac"},
    {"\xf0\x9f\x98\"", 0, FFFD "\\\""},
    {"\xe2\n", 0, FFFD "\\n"},
    {"x\xff\"\xc3\xa9\x01", 0, "x" FFFD "\\\"\xc3\xa9\\u0001"},
};

static void json_string_literals(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        size_t len = lits[i].len ? lits[i].len : strlen(lits[i].in);
        void *map;
        size_t maplen;
        const char *p = guarded(lits[i].in, len, &map, &maplen);
        sld_buf_t b = {0};
        sld_buf_append(&b, "<", 1); /* appends, never overwrites */
        sld_json_string(&b, p, len);
        munmap(map, maplen);
        assert_false(b.failed);
        size_t wlen = strlen(lits[i].want);
        if (b.len != wlen + 3 || memcmp(b.data, "<\"", 2) != 0 ||
            memcmp(b.data + 2, lits[i].want, wlen) != 0 || b.data[b.len - 1] != '"') {
            char got[256], want[256];
            char *g = got, *w = want;
            put(&g, got + sizeof got, b.data, b.len);
            *g = '\0';
            put(&w, want + sizeof want, lits[i].want, wlen);
            *w = '\0';
            fail_msg("literal %zu:\n  got  %s\n  want <\"%s\"", i, got, want);
        }
        sld_buf_free(&b);
    }
}

/* What sld_json_string writes is always a JSON string this parser reads
 * back: the same bytes when they were UTF-8, U+FFFD in place of what was not. */
static void json_string_round_trip(void **state) {
    (void)state;
    static const char *const pieces[] = {"a", "Z", " ", "\"", "\\", "/", "\n", "\x01", "\x1f", "\x7f",
                                         "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbd",
                                         "\xf4\x8f\xbf\xbf"};
    uint64_t seed = 42;
    for (int round = 0; round < 4000; round++) {
        char s[64];
        size_t n = 0;
        bool utf8 = round % 2 == 0; /* even rounds: valid UTF-8 pieces; odd: any bytes */
        size_t want = rng_below(&seed, 12);
        for (size_t k = 0; k < want; k++) {
            if (utf8) {
                const char *piece = pieces[rng_below(&seed, sizeof pieces / sizeof pieces[0])];
                memcpy(s + n, piece, strlen(piece));
                n += strlen(piece);
            } else {
                s[n++] = (char)rng_below(&seed, 256);
            }
        }
        sld_buf_t body = {0};
        sld_buf_append_str(&body, "{\"policy\":\"p\",\"key\":");
        sld_json_string(&body, s, n);
        sld_buf_append_str(&body, "}");
        assert_false(body.failed);
        result_t r = run(sld_check_parse_json, body.data, body.len);
        if (r.rc != SL_OK)
            fail_msg("round %d: %.*s: %s: %s", round, (int)body.len, body.data, r.param, r.why);
        if (utf8) {
            char want_desc[512];
            char *w = want_desc;
            put_str(&w, want_desc + sizeof want_desc, "p:p|k:");
            put(&w, want_desc + sizeof want_desc, s, n);
            put_str(&w, want_desc + sizeof want_desc, "|c:1");
            *w = '\0';
            assert_string_equal(r.got, want_desc);
        }
        sld_buf_free(&body);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_valid_and_every_prefix),
        cmocka_unit_test(query_errors),
        cmocka_unit_test(query_copies_only_what_it_decodes),
        cmocka_unit_test(json_valid_and_every_prefix),
        cmocka_unit_test(json_errors),
        cmocka_unit_test(json_copies_only_what_it_decodes),
        cmocka_unit_test(json_whitespace_everywhere),
        cmocka_unit_test(json_string_literals),
        cmocka_unit_test(json_string_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
