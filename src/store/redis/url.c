/* url.c -- parses redis://, sentinel:// and redis-cluster:// URLs (url.h).
 *
 * A hand-written scanner over [s, s+len): no allocation, no copy beyond the
 * bounded fields of the result, every failure names the part that is wrong.
 */
#include "store/redis/url.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sluice.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return SL_EINVAL;
}

static bool prefix_ci(const char *s, size_t len, const char *lit) {
    size_t n = strlen(lit);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char a = s[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != lit[i])
            return false;
    }
    return true;
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..len) into out (cap bytes + NUL); what = "user"... */
static int decode(const char *s, size_t len, char *out, size_t cap, size_t *out_len,
                  const char *what, char *err, size_t errlen) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '%') {
            if (i + 2 >= len)
                return fail(err, errlen, "%s: '%%' at byte %zu is not followed by two hex digits",
                            what, i);
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return fail(err, errlen, "%s: '%%' at byte %zu is not followed by two hex digits",
                            what, i);
            ch = (char)(h * 16 + l);
            i += 2;
        }
        if (n >= cap)
            return fail(err, errlen, "%s is longer than %zu bytes", what, cap);
        out[n++] = ch;
    }
    out[n] = '\0';
    *out_len = n;
    return 0;
}

static int parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out) {
    if (len == 0 || len > 10)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

static bool host_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_';
}

/* One "host[:port]" or "[v6][:port]" in s[0..len). */
static int parse_addr(const char *s, size_t len, uint16_t default_port, sl__redis_addr_t *a,
                      size_t index, char *err, size_t errlen) {
    const char *host;
    size_t host_len;
    const char *rest;
    size_t rest_len;
    if (len == 0)
        return fail(err, errlen, "host %zu is empty", index + 1);
    if (s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (close == NULL)
            return fail(err, errlen, "host %zu: '[' without ']' (IPv6 is written [::1]:6379)",
                        index + 1);
        host = s + 1;
        host_len = (size_t)(close - host);
        if (host_len == 0)
            return fail(err, errlen, "host %zu: empty IPv6 address in []", index + 1);
        for (size_t i = 0; i < host_len; i++)
            if (hexval(host[i]) < 0 && host[i] != ':' && host[i] != '.')
                return fail(err, errlen, "host %zu: '%c' is not allowed in an IPv6 address",
                            index + 1, host[i]);
        if (memchr(host, ':', host_len) == NULL)
            return fail(err, errlen, "host %zu: [%.*s] is not an IPv6 address", index + 1,
                        (int)host_len, host);
        rest = close + 1;
        rest_len = len - (size_t)(rest - s);
        if (rest_len > 0 && rest[0] != ':')
            return fail(err, errlen, "host %zu: expected ':port' after ']'", index + 1);
    } else {
        const char *colon = memchr(s, ':', len);
        host = s;
        host_len = colon ? (size_t)(colon - s) : len;
        rest = s + host_len;
        rest_len = len - host_len;
        if (host_len == 0)
            return fail(err, errlen, "host %zu is empty%s", index + 1,
                        len > 1 && memchr(s + 1, ':', len - 1)
                            ? " (IPv6 addresses go in brackets: [::1]:6379)" : "");
        for (size_t i = 0; i < host_len; i++)
            if (!host_char(host[i]))
                return fail(err, errlen, "host %zu: '%c' is not allowed in a host name%s",
                            index + 1, host[i],
                            host[i] == ':' ? " (IPv6 addresses go in brackets: [::1]:6379)" : "");
    }
    if (host_len > SL__REDIS_URL_MAX_HOST)
        return fail(err, errlen, "host %zu is longer than %d bytes", index + 1,
                    SL__REDIS_URL_MAX_HOST);
    memcpy(a->host, host, host_len);
    a->host[host_len] = '\0';
    a->port = default_port;
    if (rest_len > 0) { /* ":port" */
        uint64_t port;
        if (memchr(rest + 1, ':', rest_len - 1))
            return fail(err, errlen, "host %zu: more than one ':' (IPv6 addresses go in brackets)",
                        index + 1);
        if (parse_uint(rest + 1, rest_len - 1, 65535, &port) != 0 || port == 0)
            return fail(err, errlen, "host %zu: port '%.*s' is not a number from 1 to 65535",
                        index + 1, (int)(rest_len - 1 > 16 ? 16 : rest_len - 1), rest + 1);
        a->port = (uint16_t)port;
    }
    return 0;
}

static int parse_db(const char *s, size_t len, uint32_t *db, char *err, size_t errlen) {
    uint64_t v;
    if (parse_uint(s, len, SL__REDIS_URL_MAX_DB - 1, &v) != 0)
        return fail(err, errlen, "database '%.*s' is not a number from 0 to %d",
                    (int)(len > 16 ? 16 : len), s, SL__REDIS_URL_MAX_DB - 1);
    *db = (uint32_t)v;
    return 0;
}

int sl__redis_url_parse(const char *s, size_t len, sl__redis_url_t *out, char *err,
                        size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    if (s == NULL || len == 0)
        return fail(err, errlen, "empty Redis URL");
    if (len > SL__REDIS_URL_MAX_LEN)
        return fail(err, errlen, "Redis URL is longer than %d bytes", SL__REDIS_URL_MAX_LEN);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return fail(err, errlen,
                        "byte %zu of the Redis URL is a space, control or non-ASCII character "
                        "(percent-encode it)", i);

    uint16_t default_port = 6379;
    size_t at;
    if (prefix_ci(s, len, "redis://")) {
        out->kind = SL__REDIS_STANDALONE;
        at = 8;
    } else if (prefix_ci(s, len, "sentinel://")) {
        out->kind = SL__REDIS_SENTINEL;
        default_port = 26379;
        at = 11;
    } else if (prefix_ci(s, len, "redis-cluster://")) {
        out->kind = SL__REDIS_CLUSTER;
        at = 16;
    } else if (prefix_ci(s, len, "rediss://")) {
        return fail(err, errlen, "rediss:// (TLS) is not supported by this build: use redis://");
    } else {
        const char *sep = NULL;
        for (size_t i = 0; i + 2 < len && i < 32; i++)
            if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/') {
                sep = s + i;
                break;
            }
        if (sep)
            return fail(err, errlen,
                        "unknown scheme '%.*s': expected redis://, sentinel:// or redis-cluster://",
                        (int)(sep - s), s);
        return fail(err, errlen,
                    "not a Redis URL: expected redis://host:port, sentinel://host:port/master "
                    "or redis-cluster://host:port,...");
    }

    /* Authority: up to the first '/', '?' or '#'. */
    const char *a = s + at, *end = s + len;
    const char *a_end = a;
    while (a_end < end && *a_end != '/' && *a_end != '?' && *a_end != '#')
        a_end++;
    if (a_end < end && *a_end == '#')
        return fail(err, errlen, "a Redis URL has no '#fragment'");

    /* User info: up to the last '@' of the authority. */
    const char *hosts = a;
    for (const char *p = a_end; p > a; p--)
        if (p[-1] == '@') {
            hosts = p;
            break;
        }
    if (hosts == a && a_end < end && memchr(a_end, '@', (size_t)(end - a_end)))
        return fail(err, errlen,
                    "'@' after the host: percent-encode '/', '?' and '#' in the user and "
                    "password (%%2F, %%3F, %%23)");
    if (hosts != a) {
        const char *ui = a, *ui_end = hosts - 1;
        const char *colon = memchr(ui, ':', (size_t)(ui_end - ui));
        if (colon == NULL)
            return fail(err, errlen,
                        "user '%.*s' without a password: write user:password@ (or :password@ "
                        "for the default user)",
                        (int)(ui_end - ui > 64 ? 64 : ui_end - ui), ui);
        int rc;
        if (colon > ui) {
            rc = decode(ui, (size_t)(colon - ui), out->user, SL__REDIS_URL_MAX_CRED,
                        &out->user_len, "user", err, errlen);
            if (rc)
                return rc;
            out->has_user = true;
        }
        rc = decode(colon + 1, (size_t)(ui_end - colon - 1), out->password,
                    SL__REDIS_URL_MAX_CRED, &out->password_len, "password", err, errlen);
        if (rc)
            return rc;
        if (out->password_len == 0)
            return fail(err, errlen, "empty password after ':' (leave out the user info instead)");
        out->has_password = true;
    }

    /* Hosts: a comma-separated list. */
    if (hosts == a_end)
        return fail(err, errlen, "no host in the Redis URL");
    const char *h = hosts;
    while (h <= a_end) {
        const char *comma = h;
        while (comma < a_end && *comma != ',')
            comma++;
        if (out->n_nodes == SL__REDIS_URL_MAX_NODES)
            return fail(err, errlen, "more than %d hosts", SL__REDIS_URL_MAX_NODES);
        int rc = parse_addr(h, (size_t)(comma - h), default_port, &out->nodes[out->n_nodes],
                            out->n_nodes, err, errlen);
        if (rc)
            return rc;
        out->n_nodes++;
        h = comma + 1;
    }
    if (out->kind == SL__REDIS_STANDALONE && out->n_nodes > 1)
        return fail(err, errlen,
                    "redis:// takes one host; several are for sentinel:// or redis-cluster://");

    /* Path and query. */
    const char *p = a_end;
    const char *q = memchr(p, '?', (size_t)(end - p));
    const char *path_end = q ? q : end;
    const char *path = p < path_end && *p == '/' ? p + 1 : p;
    size_t path_len = (size_t)(path_end - path);
    switch (out->kind) {
    case SL__REDIS_STANDALONE:
        if (q)
            return fail(err, errlen, "redis:// takes no '?' options: the database is /N");
        if (path_len > 0) {
            int rc = parse_db(path, path_len, &out->db, err, errlen);
            if (rc)
                return rc;
        }
        break;
    case SL__REDIS_CLUSTER:
        if (path_len > 0 || q)
            return fail(err, errlen,
                        "redis-cluster:// takes no path or options (a cluster has database 0 "
                        "only)");
        break;
    case SL__REDIS_SENTINEL:
        if (path_len == 0)
            return fail(err, errlen, "sentinel:// needs the master name: sentinel://host:port/mymaster");
        if (path_len > SL__REDIS_URL_MAX_NAME)
            return fail(err, errlen, "master name is longer than %d bytes", SL__REDIS_URL_MAX_NAME);
        for (size_t i = 0; i < path_len; i++)
            if (!host_char(path[i]))
                return fail(err, errlen, "master name: '%c' is not allowed", path[i]);
        memcpy(out->master, path, path_len);
        out->master[path_len] = '\0';
        for (const char *opt = q ? q + 1 : NULL; opt != NULL;) {
            const char *amp = memchr(opt, '&', (size_t)(end - opt));
            const char *opt_end = amp ? amp : end;
            size_t opt_len = (size_t)(opt_end - opt);
            int rc;
            if (opt_len >= 3 && memcmp(opt, "db=", 3) == 0) {
                rc = parse_db(opt + 3, opt_len - 3, &out->db, err, errlen);
            } else if (opt_len >= 18 && memcmp(opt, "sentinel_password=", 18) == 0) {
                rc = decode(opt + 18, opt_len - 18, out->sentinel_password, SL__REDIS_URL_MAX_CRED,
                            &out->sentinel_password_len, "sentinel_password", err, errlen);
                out->has_sentinel_password = true;
            } else if (opt_len >= 14 && memcmp(opt, "sentinel_user=", 14) == 0) {
                rc = decode(opt + 14, opt_len - 14, out->sentinel_user, SL__REDIS_URL_MAX_CRED,
                            &out->sentinel_user_len, "sentinel_user", err, errlen);
                out->has_sentinel_user = true;
            } else {
                return fail(err, errlen,
                            "sentinel:// takes the options db=N, sentinel_user=U and "
                            "sentinel_password=P; got '%.*s'",
                            (int)(opt_len > 32 ? 32 : opt_len), opt);
            }
            if (rc)
                return rc;
            opt = amp ? amp + 1 : NULL; /* a trailing '&' is an empty option: refused */
        }
        if (out->has_sentinel_user && !out->has_sentinel_password)
            return fail(err, errlen, "sentinel_user needs sentinel_password");
        break;
    }
    return 0;
}

const char *sl__redis_kind_name(sl__redis_kind_t kind) {
    switch (kind) {
    case SL__REDIS_STANDALONE:
        return "redis";
    case SL__REDIS_SENTINEL:
        return "sentinel";
    case SL__REDIS_CLUSTER:
        return "redis-cluster";
    }
    return "?";
}
