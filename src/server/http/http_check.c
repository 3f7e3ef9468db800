/* http_check.c -- the parsing of sluiced's HTTP check requests (see
 * http_check.h): a query string or a JSON body in, an sld_check_request_t
 * out (sld_json_string, the JSON string literal of any bytes, is http_json.c).
 *
 * Query string: "policy=per_user&key=alice&cost=2"
 *   - '&'-separated name=value pairs; '+' is a space and %XX (hex digits of
 *     either case) a byte, in names and values. Empty pairs ("&&", a trailing
 *     '&') are skipped.
 *   - policy: required, non-empty. key: optional, "key=" is the empty key
 *     (has_key says whether it was given; whether it is required is the
 *     caller's business). cost: optional, decimal digits only, 0..2^63-1
 *     (leading zeros allowed), default 1.
 *   - Errors name the parameter: a bad escape ("%G1", "%4" at the end) in its
 *     value, a parameter given twice, a pair without '=', an empty policy, a
 *     cost that is empty, signed, fractional or too big. An unknown parameter,
 *     a bad escape in a name and a pair without '=' whose name is unknown are
 *     errors of "query" (the name itself is not static: it cannot be returned).
 *
 * JSON body, strict RFC 8259: {"policy": "P", "key": "K", "cost": N,
 *                              "attributes": {"user": "u", ...}}
 *   - exactly one object, whitespace (space, tab, CR, LF) around any token,
 *     nothing after it; only "attributes" nests, one level.
 *   - policy, key: strings (policy non-empty). cost: a non-negative integer
 *     without sign, fraction or exponent, at most 2^63-1 ("-1", "1.0", "1e3"
 *     and "01" are errors of "cost"). attributes: an object of at most
 *     SLD_CHECK_MAX_ATTRS strings with distinct, non-empty names.
 *   - strings: every JSON escape, \uXXXX surrogate pairs becoming UTF-8; a bad
 *     escape, a lone surrogate, an unescaped control character or bytes that
 *     are not UTF-8 are syntax errors. Field names may be escaped too.
 *   - Errors: a field of the wrong type or value, or given twice, names that
 *     field; an unknown field, a syntax error (strings included), an empty
 *     body, null, an array, a string, trailing data are errors of "body".
 *
 * Both: *why is a static phrase that does not repeat the parameter (the
 * reply reads "<param>: <why>"). Strings with nothing to decode point into
 * the input; decoded ones are written into scratch, one after the other:
 * decoding never lengthens, so len bytes of scratch always suffice. On
 * success out is fully written (cost 1, no key, no attributes unless given);
 * on error it may be partly written.
 *
 * Not here: what the fields mean (which policy, which key: the HTTP routes),
 * HTTP itself (requests and headers: http.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "server/config/config.h" /* sld_parse_duration: wait= */
#include "server/http/http_check.h"
#include "server/http/http_json.h"
#include "sluice.h"

#define COST_RANGE "must be a whole number from 0 to 9223372036854775807"
#define STR_(x) #x
#define STR(x) STR_(x)

static int fail(const char **param, const char **why, const char *p, const char *w) {
    *param = p;
    *why = w;
    return SL_EINVAL;
}

static bool span_is(sld_span_t s, const char *word) {
    size_t n = strlen(word);
    return s.len == n && memcmp(s.ptr, word, n) == 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decimal digits only, any number of leading zeros, at most INT64_MAX. */
static bool parse_cost(const char *p, size_t n, uint64_t *out) {
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* ---- query strings -------------------------------------------------------------- */

/* Form-decodes s[0..n) into dst (room for n bytes): '+' is a space, %XX a
 * byte. Returns the decoded length, or SIZE_MAX on a bad escape. */
static size_t form_decode(const char *s, size_t n, char *dst) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            dst[d++] = ' ';
        } else if (s[i] == '%') {
            int h = i + 2 < n ? hex_digit(s[i + 1]) : -1;
            int l = h >= 0 ? hex_digit(s[i + 2]) : -1;
            if (l < 0)
                return SIZE_MAX;
            dst[d++] = (char)(h * 16 + l);
            i += 2;
        } else {
            dst[d++] = s[i];
        }
    }
    return d;
}

/* A value: itself when it has nothing to decode (`plain`: the whole query
 * has nothing), else decoded into scratch at *used. False on a bad escape. */
static bool form_value(const char *s, size_t n, bool plain, char *scratch, size_t *used, sld_span_t *out) {
    if (plain || (memchr(s, '%', n) == NULL && memchr(s, '+', n) == NULL)) {
        *out = (sld_span_t){s, n};
        return true;
    }
    size_t d = form_decode(s, n, scratch + *used);
    if (d == SIZE_MAX)
        return false;
    *out = (sld_span_t){scratch + *used, d};
    *used += d;
    return true;
}

enum { Q_POLICY = 1, Q_KEY = 2, Q_COST = 4, Q_WAIT = 8 };

#define WAIT_RANGE SLD_CHECK_WAIT_RANGE

bool sld_check_parse_wait(const char *p, size_t n, int64_t *out) {
    char text[32];
    if (n == 0 || n >= sizeof text)
        return false;
    memcpy(text, p, n);
    text[n] = '\0';
    return sld_parse_duration(text, out) == SL_OK && *out >= 0 && *out <= SL_MAX_WAIT;
}

/* The longest known name is 6 bytes, so 3 bytes each at most when encoded:
 * a longer encoded name is unknown without decoding it. */
#define NAME_ENCODED_MAX 18

static int query_pair(const char *s, size_t n, bool plain, char *scratch, size_t *used, unsigned *seen,
                      sld_check_request_t *out, const char **param, const char **why) {
    const char *eq = memchr(s, '=', n);
    size_t name_len = eq ? (size_t)(eq - s) : n;
    sld_span_t name = {s, name_len};
    char name_buf[NAME_ENCODED_MAX];
    if (!plain) {
        size_t d = name_len <= sizeof name_buf ? form_decode(s, name_len, name_buf) : 0;
        if (d == SIZE_MAX)
            return fail(param, why, "query", "bad percent-escape in a name (expected %XX, hex)");
        name = (sld_span_t){name_buf, d};
    }
    const char *p;
    unsigned bit;
    if (span_is(name, "policy")) {
        p = "policy";
        bit = Q_POLICY;
    } else if (span_is(name, "key")) {
        p = "key";
        bit = Q_KEY;
    } else if (span_is(name, "cost")) {
        p = "cost";
        bit = Q_COST;
    } else if (span_is(name, "wait")) {
        p = "wait";
        bit = Q_WAIT;
    } else {
        return fail(param, why, "query", "unknown parameter (known: policy, key, cost, wait)");
    }
    if (eq == NULL)
        return fail(param, why, p, "expected name=value");
    if (*seen & bit)
        return fail(param, why, p, "given twice");
    *seen |= bit;
    sld_span_t value;
    if (!form_value(eq + 1, n - name_len - 1, plain, scratch, used, &value))
        return fail(param, why, p, "bad percent-escape (expected %XX, hex)");
    switch (bit) {
    case Q_POLICY:
        if (value.len == 0)
            return fail(param, why, p, "must not be empty");
        out->policy = value;
        break;
    case Q_KEY:
        out->has_key = true;
        out->key = value;
        break;
    case Q_WAIT:
        if (!sld_check_parse_wait(value.ptr, value.len, &out->wait))
            return fail(param, why, p, WAIT_RANGE);
        break;
    default:
        if (!parse_cost(value.ptr, value.len, &out->cost))
            return fail(param, why, p, COST_RANGE);
        break;
    }
    return SL_OK;
}

int sld_check_parse_query(const char *query, size_t len, char *scratch, sld_check_request_t *out,
                          const char **param, const char **why) {
    *out = (sld_check_request_t){.cost = 1, .wait = -1};
    unsigned seen = 0;
    size_t used = 0; /* bytes of scratch holding decoded values */
    /* Nearly every query has nothing to decode: then names and values are
     * read in place, not looked through for escapes pair by pair. */
    bool plain = len == 0 || (memchr(query, '%', len) == NULL && memchr(query, '+', len) == NULL);
    for (size_t start = 0; start < len;) {
        const char *amp = memchr(query + start, '&', len - start);
        size_t end = amp ? (size_t)(amp - query) : len;
        if (end > start) {
            int rc = query_pair(query + start, end - start, plain, scratch, &used, &seen, out, param, why);
            if (rc != SL_OK)
                return rc;
        }
        start = end + 1;
    }
    if (!(seen & Q_POLICY))
        return fail(param, why, "policy", "required");
    return SL_OK;
}

/* ---- JSON bodies ---------------------------------------------------------------- */

typedef struct json {
    const char *p;
    size_t len;
    size_t pos;      /* the next byte to read */
    char *scratch;
    size_t used;     /* bytes of scratch holding decoded strings */
    const char **param;
    const char **why;
} json_t;

static int jfail(json_t *j, const char *param, const char *why) {
    return fail(j->param, j->why, param, why);
}

static void skip_ws(json_t *j) {
    while (j->pos < j->len) {
        char c = j->p[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        j->pos++;
    }
}

/* After whitespace, the next byte (left unread), or an error at the end. */
static int peek(json_t *j, char *c) {
    skip_ws(j);
    if (j->pos == j->len)
        return jfail(j, "body", "unexpected end of the body");
    *c = j->p[j->pos];
    return SL_OK;
}

/* After whitespace, the byte c (read), or a syntax error saying `expected`. */
static int expect(json_t *j, char c, const char *expected) {
    char next;
    int rc = peek(j, &next);
    if (rc != SL_OK)
        return rc;
    if (next != c)
        return jfail(j, "body", expected);
    j->pos++;
    return SL_OK;
}

/* Four hex digits at s[0..n) (n may be short). */
static bool hex4(const char *s, size_t n, uint32_t *out) {
    if (n < 4)
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++) {
        int h = hex_digit(s[i]);
        if (h < 0)
            return false;
        v = v * 16 + (uint32_t)h;
    }
    *out = v;
    return true;
}

static size_t utf8_encode(uint32_t cp, char *d) {
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The escape at p[*i] == '\\', decoded onto d[*dn..]; *i moves past it. */
static int unescape(json_t *j, size_t *i, char *d, size_t *dn) {
    const char *p = j->p;
    if (*i + 1 == j->len)
        return jfail(j, "body", "unterminated string");
    char c = p[*i + 1], simple;
    switch (c) {
    case '"': simple = '"'; break;
    case '\\': simple = '\\'; break;
    case '/': simple = '/'; break;
    case 'b': simple = '\b'; break;
    case 'f': simple = '\f'; break;
    case 'n': simple = '\n'; break;
    case 'r': simple = '\r'; break;
    case 't': simple = '\t'; break;
    case 'u': simple = 0; break;
    default: return jfail(j, "body", "invalid escape in a string");
    }
    if (c != 'u') {
        d[(*dn)++] = simple;
        *i += 2;
        return SL_OK;
    }
    uint32_t cp, lo;
    if (!hex4(p + *i + 2, j->len - *i - 2, &cp))
        return jfail(j, "body", "invalid \\u escape (expected 4 hex digits)");
    *i += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return jfail(j, "body", "lone surrogate in a \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (*i + 1 >= j->len || p[*i] != '\\' || p[*i + 1] != 'u' ||
            !hex4(p + *i + 2, j->len - *i - 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return jfail(j, "body", "lone surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        *i += 6;
    }
    *dn += utf8_encode(cp, d + *dn);
    return SL_OK;
}

/* The string at p[pos] == '"'. Without escapes it is a span of the input;
 * with them it is decoded into scratch (\uXXXX takes 6 bytes and gives at
 * most 3, a pair 12 and 4: never longer than its encoding). */
static int json_string(json_t *j, sld_span_t *out) {
    const char *p = j->p;
    size_t start = ++j->pos, i = start;
    char *d = NULL;  /* where the decoded string goes, once an escape is seen */
    size_t dn = 0;
    for (;;) {
        if (i == j->len)
            return jfail(j, "body", "unterminated string");
        unsigned char c = (unsigned char)p[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return jfail(j, "body", "control character in a string (must be escaped)");
        if (c == '\\') {
            if (d == NULL) {
                d = j->scratch + j->used;
                memcpy(d, p + start, i - start);
                dn = i - start;
            }
            int rc = unescape(j, &i, d, &dn);
            if (rc != SL_OK)
                return rc;
            continue;
        }
        size_t k = 1, bad;
        if (c >= 0x80 && (k = sld_utf8_seq((const unsigned char *)p + i, j->len - i, &bad)) == 0)
            return jfail(j, "body", "a string is not valid UTF-8");
        if (d != NULL) {
            memcpy(d + dn, p + i, k);
            dn += k;
        }
        i += k;
    }
    j->pos = i + 1;
    if (d == NULL) {
        *out = (sld_span_t){p + start, i - start};
    } else {
        *out = (sld_span_t){d, dn};
        j->used += dn;
    }
    return SL_OK;
}

/* A value that must be a string, for field `name`. */
static int string_value(json_t *j, const char *name, const char *wrong, sld_span_t *out) {
    char c;
    int rc = peek(j, &c);
    if (rc != SL_OK)
        return rc;
    if (c != '"')
        return jfail(j, name, wrong);
    return json_string(j, out);
}

/* cost: the whole number-like token is read, so that "1.5", "1e3" or "-1"
 * say what is wrong with the cost rather than with the syntax. */
static int cost_value(json_t *j, uint64_t *out) {
    char c;
    int rc = peek(j, &c);
    if (rc != SL_OK)
        return rc;
    size_t start = j->pos, i = start;
    while (i < j->len && ((j->p[i] >= '0' && j->p[i] <= '9') || j->p[i] == '-' || j->p[i] == '+' ||
                          j->p[i] == '.' || j->p[i] == 'e' || j->p[i] == 'E'))
        i++;
    if (i == start)
        return jfail(j, "cost", "must be a non-negative integer");
    if (c == '0' && i - start > 1 && j->p[start + 1] >= '0' && j->p[start + 1] <= '9')
        /* "01": leading zeros are not JSON */
        return jfail(j, "cost", "must be a non-negative integer without leading zeros");
    if (!parse_cost(j->p + start, i - start, out))
        return jfail(j, "cost", COST_RANGE);
    j->pos = i;
    return SL_OK;
}

static int attributes_value(json_t *j, sld_check_request_t *out) {
    char c;
    int rc = peek(j, &c);
    if (rc != SL_OK)
        return rc;
    if (c != '{')
        return jfail(j, "attributes", "must be an object of strings");
    j->pos++;
    skip_ws(j);
    if (j->pos < j->len && j->p[j->pos] == '}') {
        j->pos++;
        return SL_OK;
    }
    for (;;) {
        if ((rc = peek(j, &c)) != SL_OK)
            return rc;
        if (c != '"')
            return jfail(j, "body", "expected an attribute name (a string)");
        if (out->nattrs == SLD_CHECK_MAX_ATTRS)
            return jfail(j, "attributes", "too many (at most " STR(SLD_CHECK_MAX_ATTRS) ")");
        sld_attr_t *a = &out->attrs[out->nattrs];
        if ((rc = json_string(j, &a->name)) != SL_OK)
            return rc;
        if (a->name.len == 0)
            return jfail(j, "attributes", "names must not be empty");
        for (size_t k = 0; k < out->nattrs; k++)
            if (out->attrs[k].name.len == a->name.len &&
                memcmp(out->attrs[k].name.ptr, a->name.ptr, a->name.len) == 0)
                return jfail(j, "attributes", "a name given twice");
        if ((rc = expect(j, ':', "expected ':' after an attribute name")) != SL_OK)
            return rc;
        if ((rc = string_value(j, "attributes", "values must be strings", &a->value)) != SL_OK)
            return rc;
        out->nattrs++;
        if ((rc = peek(j, &c)) != SL_OK)
            return rc;
        j->pos++;
        if (c == '}')
            return SL_OK;
        if (c != ',')
            return jfail(j, "body", "expected ',' or '}' in attributes");
    }
}

enum { J_POLICY = 1, J_KEY = 2, J_COST = 4, J_ATTRS = 8, J_WAIT = 16 };

/* One "name": value member of the top object. */
static int member(json_t *j, unsigned *seen, sld_check_request_t *out) {
    char c;
    int rc = peek(j, &c);
    if (rc != SL_OK)
        return rc;
    if (c != '"')
        return jfail(j, "body", "expected a field name (a string)");
    size_t mark = j->used; /* the name, if decoded, is not kept */
    sld_span_t name;
    if ((rc = json_string(j, &name)) != SL_OK)
        return rc;
    j->used = mark;
    const char *field;
    unsigned bit;
    if (span_is(name, "policy")) {
        field = "policy";
        bit = J_POLICY;
    } else if (span_is(name, "key")) {
        field = "key";
        bit = J_KEY;
    } else if (span_is(name, "cost")) {
        field = "cost";
        bit = J_COST;
    } else if (span_is(name, "attributes")) {
        field = "attributes";
        bit = J_ATTRS;
    } else if (span_is(name, "wait")) {
        field = "wait";
        bit = J_WAIT;
    } else {
        return jfail(j, "body", "unknown field (known: policy, key, cost, attributes, wait)");
    }
    if (*seen & bit)
        return jfail(j, field, "given twice");
    *seen |= bit;
    if ((rc = expect(j, ':', "expected ':' after a field name")) != SL_OK)
        return rc;
    switch (bit) {
    case J_POLICY:
        if ((rc = string_value(j, field, "must be a string", &out->policy)) != SL_OK)
            return rc;
        if (out->policy.len == 0)
            return jfail(j, field, "must not be empty");
        return SL_OK;
    case J_KEY:
        out->has_key = true;
        return string_value(j, field, "must be a string", &out->key);
    case J_COST:
        return cost_value(j, &out->cost);
    case J_WAIT: {
        sld_span_t w;
        if ((rc = string_value(j, field, "must be a string (\"500ms\", \"2s\")", &w)) != SL_OK)
            return rc;
        return sld_check_parse_wait(w.ptr, w.len, &out->wait) ? SL_OK : jfail(j, field, WAIT_RANGE);
    }
    default:
        return attributes_value(j, out);
    }
}

int sld_check_parse_json(const char *body, size_t len, char *scratch, sld_check_request_t *out,
                         const char **param, const char **why) {
    *out = (sld_check_request_t){.cost = 1, .wait = -1};
    json_t j = {.p = body, .len = len, .scratch = scratch, .param = param, .why = why};
    skip_ws(&j);
    if (j.pos == len)
        return jfail(&j, "body", "empty (expected a JSON object)");
    if (body[j.pos] != '{')
        return jfail(&j, "body", "expected a JSON object");
    j.pos++;
    unsigned seen = 0;
    skip_ws(&j);
    if (j.pos < len && body[j.pos] == '}') {
        j.pos++;
    } else {
        for (;;) {
            char c;
            int rc = member(&j, &seen, out);
            if (rc == SL_OK)
                rc = peek(&j, &c);
            if (rc != SL_OK)
                return rc;
            j.pos++;
            if (c == '}')
                break;
            if (c != ',')
                return jfail(&j, "body", "expected ',' or '}'");
        }
    }
    skip_ws(&j);
    if (j.pos != len)
        return jfail(&j, "body", "trailing data after the object");
    if (!(seen & J_POLICY))
        return jfail(&j, "policy", "required");
    return SL_OK;
}
