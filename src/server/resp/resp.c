/* resp.c -- RESP request parsing and reply encoding, RESP2 and RESP3 (see
 * resp.h).
 *
 * Not here: what commands mean (commands.c), sockets (resp_connection.c).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/base/decimal.h"
#include "server/resp/resp.h"
#include "sluice.h"

/* "*" or "$", up to 20 digits and a sign, CRLF: more than this is garbage. */
#define HEADER_MAX 32

/* Decimal integer of the whole span, optional leading '-'. */
static bool parse_int(const char *p, size_t n, int64_t *out) {
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg;
    if (i == n || n - i > 19)
        return false;
    uint64_t v = 0; /* at most 19 digits: fits, checked against INT64_MAX once */
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static ssize_t fail(const char **why, const char *msg) {
    *why = msg;
    return SLD_RESP_ERROR;
}

/* The header at p[0..n) after its '*' or '$': an integer (optional '-', at
 * most 19 digits) then CRLF, read in one pass. Returns the bytes it takes
 * (> 0), 0 when it may still be coming, -1 when it is not a header. */
static ssize_t read_header_any(const char *p, size_t n, int64_t *out) {
    size_t i = 0, first;
    bool neg = false;
    uint64_t v = 0; /* 19 digits always fit; INT64_MAX is checked once */
    if (i < n && p[i] == '-') {
        neg = true;
        i++;
    }
    for (first = i; i < n && i - first < 20 && p[i] >= '0' && p[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(p[i] - '0');
    if (i == n || (i + 1 == n && p[i] == '\r'))
        return i < HEADER_MAX ? 0 : -1;
    if (i == first || i - first > 19 || v > INT64_MAX || p[i] != '\r' || p[i + 1] != '\n')
        return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return (ssize_t)(i + 2);
}

/* read_header_any's answer for a header of one or two digits ("*5",
 * "$3", "$11"), nearly every header, inline: the general loop costs about
 * 50 instructions a header, and a CL.THROTTLE has six. */
static inline ssize_t read_header(const char *p, size_t n, int64_t *out) {
    if (n >= 4 && (unsigned)(p[0] - '0') < 10) {
        if (p[1] == '\r' && p[2] == '\n') {
            *out = p[0] - '0';
            return 3;
        }
        if ((unsigned)(p[1] - '0') < 10 && p[2] == '\r' && p[3] == '\n') {
            *out = (p[0] - '0') * 10 + (p[1] - '0');
            return 4;
        }
    }
    return read_header_any(p, n, out);
}

static ssize_t parse_multibulk(const char *buf, size_t len, const sld_resp_limits_t *lim,
                               sld_arg_t *argv, size_t *argc, size_t *need, const char **why) {
    int64_t count;
    ssize_t h = read_header(buf + 1, len - 1, &count);
    if (h == 0)
        return SLD_RESP_NEED_MORE;
    if (h < 0)
        return fail(why, "Protocol error: invalid multibulk length");
    size_t pos = 1 + (size_t)h;
    if (count <= 0) { /* "*0", "*-1": nothing to do, as Redis does */
        *argc = 0;
        return (ssize_t)pos;
    }
    if ((uint64_t)count > lim->max_args)
        return fail(why, "Protocol error: too many arguments");
    for (size_t i = 0; i < (size_t)count; i++) {
        if (pos == len)
            return SLD_RESP_NEED_MORE;
        if (buf[pos] != '$')
            return fail(why, "Protocol error: expected '$'");
        int64_t bulk;
        h = read_header(buf + pos + 1, len - pos - 1, &bulk);
        if (h == 0)
            return SLD_RESP_NEED_MORE;
        if (h < 0 || bulk < 0)
            return fail(why, "Protocol error: invalid bulk length");
        if ((uint64_t)bulk > lim->max_bulk)
            return fail(why, "Protocol error: argument too long");
        size_t start = pos + 1 + (size_t)h;
        size_t end = start + (size_t)bulk; /* bulk <= max_bulk: no overflow */
        if (len < end + 2) {
            *need = end + 2;
            return SLD_RESP_NEED_MORE;
        }
        if (buf[end] != '\r' || buf[end + 1] != '\n')
            return fail(why, "Protocol error: expected CRLF after an argument");
        argv[i] = (sld_arg_t){buf + start, (size_t)bulk};
        pos = end + 2;
    }
    *argc = (size_t)count;
    return (ssize_t)pos;
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static ssize_t parse_inline(const char *buf, size_t len, const sld_resp_limits_t *lim,
                            sld_arg_t *argv, size_t *argc, const char **why) {
    const char *nl = memchr(buf, '\n', len < lim->max_inline ? len : lim->max_inline);
    if (nl == NULL)
        return len >= lim->max_inline ? fail(why, "Protocol error: too big inline request")
                                      : SLD_RESP_NEED_MORE;
    size_t end = (size_t)(nl - buf);
    size_t line = end > 0 && buf[end - 1] == '\r' ? end - 1 : end;
    size_t n = 0;
    for (size_t i = 0; i < line;) {
        while (i < line && is_space(buf[i]))
            i++;
        if (i == line)
            break;
        size_t start = i;
        while (i < line && !is_space(buf[i]))
            i++;
        if (n == lim->max_args)
            return fail(why, "Protocol error: too many arguments");
        argv[n++] = (sld_arg_t){buf + start, i - start};
    }
    *argc = n;
    return (ssize_t)end + 1;
}

ssize_t sld_resp_parse(const char *buf, size_t len, const sld_resp_limits_t *lim, sld_arg_t *argv,
                       size_t *argc, size_t *need, const char **why) {
    *argc = 0;
    *need = 0;
    if (len == 0)
        return SLD_RESP_NEED_MORE;
    if (buf[0] == '*')
        return parse_multibulk(buf, len, lim, argv, argc, need, why);
    return parse_inline(buf, len, lim, argv, argc, why);
}

/* ---- replies ---------------------------------------------------------------------- */

void sld_reply_ok(sld_buf_t *out) { sld_buf_append(out, "+OK\r\n", 5); }

void sld_reply_simple(sld_buf_t *out, const char *text) {
    sld_buf_append(out, "+", 1);
    sld_buf_append_str(out, text);
    sld_buf_append(out, "\r\n", 2);
}

/* A reply line must not contain CR or LF; messages that quote client input
 * are cleaned here rather than trusted everywhere. */
static void append_line(sld_buf_t *out, const char *text) {
    size_t n = strlen(text);
    if (!sld_buf_reserve(out, n))
        return;
    for (size_t i = 0; i < n; i++)
        out->data[out->len + i] = text[i] == '\r' || text[i] == '\n' ? ' ' : text[i];
    out->len += n;
}

void sld_reply_error(sld_buf_t *out, const char *text) {
    sld_buf_append(out, "-", 1);
    append_line(out, text);
    sld_buf_append(out, "\r\n", 2);
}

void sld_reply_errorf(sld_buf_t *out, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sld_reply_error(out, msg);
}

/* "00" to "99": two digits of a number in one copy. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* "<prefix><n>\r\n" into p (24 bytes of room); returns its length. Replies
 * are mostly integers and headers, and printf would cost more than the
 * decision. The numbers of a decision (flags, counts, seconds, a limit,
 * -1 for "never") are nearly all under 1000: those without the general
 * conversion's loop and call. */
static size_t format_number(char *p, char prefix, int64_t n) {
    char *o = p;
    uint64_t u = (uint64_t)n;
    *o++ = prefix;
    if (u < 10) {
        *o++ = (char)('0' + u);
    } else if (u < 100) {
        memcpy(o, digit_pairs + 2 * u, 2);
        o += 2;
    } else if (u < 1000) {
        *o++ = (char)('0' + u / 100);
        memcpy(o, digit_pairs + 2 * (u % 100), 2);
        o += 2;
    } else if (n == -1) {
        *o++ = '-';
        *o++ = '1';
    } else {
        o = sld_dec_i64(o, n);
    }
    *o++ = '\r';
    *o++ = '\n';
    return (size_t)(o - p);
}

static void append_number(sld_buf_t *out, char prefix, int64_t n) {
    if (sld_buf_reserve(out, 24))
        out->len += format_number(out->data + out->len, prefix, n);
}

void sld_reply_int(sld_buf_t *out, int64_t n) { append_number(out, ':', n); }

void sld_reply_ints(sld_buf_t *out, const int64_t *v, size_t n) {
    if (!sld_buf_reserve(out, 24 * (n + 1)))
        return;
    out->len += format_number(out->data + out->len, '*', (int64_t)n);
    for (size_t i = 0; i < n; i++)
        out->len += format_number(out->data + out->len, ':', v[i]);
}

void sld_reply_bulk(sld_buf_t *out, const void *data, size_t len) {
    append_number(out, '$', (int64_t)len);
    sld_buf_append(out, data, len);
    sld_buf_append(out, "\r\n", 2);
}

void sld_reply_bulk_str(sld_buf_t *out, const char *s) { sld_reply_bulk(out, s, strlen(s)); }

void sld_reply_null(sld_buf_t *out) { sld_buf_append(out, "$-1\r\n", 5); }

void sld_reply_array(sld_buf_t *out, size_t n) { append_number(out, '*', (int64_t)n); }

void sld_reply_nil(sld_buf_t *out, int proto) {
    if (proto == SLD_PROTO_3)
        sld_buf_append(out, "_\r\n", 3);
    else
        sld_reply_null(out);
}

void sld_reply_map(sld_buf_t *out, int proto, size_t pairs) {
    if (proto == SLD_PROTO_3)
        append_number(out, '%', (int64_t)pairs);
    else
        append_number(out, '*', (int64_t)(2 * pairs));
}

void sld_reply_set(sld_buf_t *out, int proto, size_t n) {
    append_number(out, proto == SLD_PROTO_3 ? '~' : '*', (int64_t)n);
}

void sld_reply_verbatim(sld_buf_t *out, int proto, const void *data, size_t len) {
    if (proto != SLD_PROTO_3) {
        sld_reply_bulk(out, data, len);
        return;
    }
    append_number(out, '=', (int64_t)(len + 4)); /* the format and its ':' are counted */
    sld_buf_append(out, "txt:", 4);
    sld_buf_append(out, data, len);
    sld_buf_append(out, "\r\n", 2);
}

int sld_arg_is(const sld_arg_t *a, const char *word) {
    size_t n = strlen(word);
    return a->len == n && strncasecmp(a->ptr, word, n) == 0;
}

int sld_arg_int(const sld_arg_t *a, int64_t *out) {
    return parse_int(a->ptr, a->len, out) ? SL_OK : SL_EINVAL;
}
