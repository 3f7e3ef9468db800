/* resp.c -- RESP2 request parsing and reply encoding (see resp.h).
 *
 * Not here: what commands mean (commands.c), sockets (server.c).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "resp.h"
#include "sluice.h"

/* "*" or "$", up to 20 digits and a sign, CRLF: more than this is garbage. */
#define HEADER_MAX 32

/* The line starting at p (of n bytes): its length without CRLF, or -1 when
 * no CRLF is in the first `max` bytes yet, or -2 when there cannot be one. */
static ssize_t header_line(const char *p, size_t n, size_t max) {
    size_t limit = n < max ? n : max;
    for (size_t i = 0; i + 1 < limit; i++)
        if (p[i] == '\r')
            return p[i + 1] == '\n' ? (ssize_t)i : -2;
    return n >= max ? -2 : -1;
}

/* Decimal integer of the whole span, optional leading '-'. */
static bool parse_int(const char *p, size_t n, int64_t *out) {
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg;
    if (i == n || n - i > 19)
        return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        int d = p[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? -v : v;
    return true;
}

static ssize_t fail(const char **why, const char *msg) {
    *why = msg;
    return SLD_RESP_ERROR;
}

static ssize_t parse_multibulk(const char *buf, size_t len, const sld_resp_limits_t *lim,
                               sld_arg_t *argv, size_t *argc, size_t *need, const char **why) {
    ssize_t line = header_line(buf + 1, len - 1, HEADER_MAX);
    if (line == -1)
        return SLD_RESP_NEED_MORE;
    int64_t count;
    if (line < 0 || !parse_int(buf + 1, (size_t)line, &count))
        return fail(why, "Protocol error: invalid multibulk length");
    size_t pos = 1 + (size_t)line + 2;
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
        line = header_line(buf + pos + 1, len - pos - 1, HEADER_MAX);
        if (line == -1)
            return SLD_RESP_NEED_MORE;
        int64_t bulk;
        if (line < 0 || !parse_int(buf + pos + 1, (size_t)line, &bulk) || bulk < 0)
            return fail(why, "Protocol error: invalid bulk length");
        if ((uint64_t)bulk > lim->max_bulk)
            return fail(why, "Protocol error: argument too long");
        size_t start = pos + 1 + (size_t)line + 2;
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

void sld_reply_int(sld_buf_t *out, int64_t n) {
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, ":%lld\r\n", (long long)n);
    sld_buf_append(out, tmp, (size_t)k);
}

void sld_reply_bulk(sld_buf_t *out, const void *data, size_t len) {
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "$%zu\r\n", len);
    sld_buf_append(out, tmp, (size_t)k);
    sld_buf_append(out, data, len);
    sld_buf_append(out, "\r\n", 2);
}

void sld_reply_bulk_str(sld_buf_t *out, const char *s) { sld_reply_bulk(out, s, strlen(s)); }

void sld_reply_null(sld_buf_t *out) { sld_buf_append(out, "$-1\r\n", 5); }

void sld_reply_array(sld_buf_t *out, size_t n) {
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "*%zu\r\n", n);
    sld_buf_append(out, tmp, (size_t)k);
}

int sld_arg_is(const sld_arg_t *a, const char *word) {
    size_t n = strlen(word);
    return a->len == n && strncasecmp(a->ptr, word, n) == 0;
}

int sld_arg_int(const sld_arg_t *a, int64_t *out) {
    return parse_int(a->ptr, a->len, out) ? SL_OK : SL_EINVAL;
}
