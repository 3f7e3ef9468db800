/* units.c -- the configuration's scalars: a raw string at a path into a
 * checked value, or a message that says what was expected and quotes what
 * was given. Whole numbers in a range; durations ("250ms", "1.5m", "7d", a
 * bare number is seconds) and sizes ("64KiB", "1GB") as exact integers of
 * microseconds and bytes (a fraction finer than the smallest unit is an
 * error, not rounded); booleans; names; HTTP header names; listen addresses;
 * secrets (a literal or env:NAME); CIDRs (parsed by base/cidr.c, worded
 * here for the file).
 *
 * Not here: which setting takes which kind of value (config.c,
 * policy_config.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/cidr.h"
#include "server/config/config.h"
#include "server/config/config_private.h"
#include "core/arith.h"

/* ---- durations and sizes -------------------------------------------------- */

typedef struct unit {
    const char *name;
    uint64_t scale;
} unit_t;

/* "<digits>[.<digits>]<unit>" into number * scale, exact, at most max. */
static int parse_scaled(const char *s, const unit_t *units, size_t nunits, uint64_t max,
                        uint64_t *out) {
    if (s == NULL || !isdigit((unsigned char)*s))
        return SL_EINVAL;
    uint64_t whole = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (whole > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            whole = whole * 10 + d;
    }
    uint64_t frac = 0;   /* the fraction's significant digits... */
    unsigned fdigits = 0; /* ...of which there are this many, trailing zeros cut */
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return SL_EINVAL;
        unsigned pos = 0, last = 0;
        uint64_t acc[20] = {0}; /* acc[k]: the first k digits */
        for (; isdigit((unsigned char)*s); s++) {
            pos++;
            if (*s != '0')
                last = pos;
            if (pos < 20)
                acc[pos] = acc[pos - 1] * 10 + (uint64_t)(*s - '0');
        }
        if (last > 18)
            return SL_EINVAL; /* finer than any unit can be exact */
        fdigits = last;
        frac = acc[last];
    }
    const unit_t *u = NULL;
    for (size_t i = 0; i < nunits; i++)
        if (strcmp(s, units[i].name) == 0)
            u = &units[i];
    if (u == NULL)
        return SL_EINVAL;
    if (overflow)
        return SL_ERANGE;
    uint64_t part = 0;
    if (fdigits) {
        uint64_t p10 = 1;
        for (unsigned i = 0; i < fdigits; i++)
            p10 *= 10;
        uint64_t g = sl__gcd_u64(u->scale, p10), d = p10 / g;
        if (frac % d != 0)
            return SL_EINVAL; /* not a whole number of the smallest unit */
        part = frac / d * (u->scale / g);
    }
    if (whole > (max - part) / u->scale)
        return SL_ERANGE;
    *out = whole * u->scale + part;
    return SL_OK;
}

static const unit_t duration_units[] = {
    {"", 1000000},        {"us", 1},        {"ms", 1000},          {"s", 1000000},
    {"m", 60000000},      {"h", 3600000000}, {"d", UINT64_C(86400000000)},
};

int sld_parse_duration(const char *text, sl_usec_t *out) {
    uint64_t v;
    int rc = parse_scaled(text, duration_units, sizeof duration_units / sizeof duration_units[0],
                          (uint64_t)INT64_MAX, &v);
    if (rc == SL_OK && out)
        *out = (sl_usec_t)v;
    return rc;
}

static const unit_t size_units[] = {
    {"", 1},
    {"B", 1},
    {"KB", 1000},
    {"kB", 1000},
    {"MB", 1000000},
    {"GB", 1000000000},
    {"TB", UINT64_C(1000000000000)},
    {"KiB", UINT64_C(1) << 10},
    {"MiB", UINT64_C(1) << 20},
    {"GiB", UINT64_C(1) << 30},
    {"TiB", UINT64_C(1) << 40},
};

int sld_parse_size(const char *text, uint64_t *out) {
    uint64_t v;
    int rc = parse_scaled(text, size_units, sizeof size_units / sizeof size_units[0], UINT64_MAX,
                          &v);
    if (rc == SL_OK && out)
        *out = v;
    return rc;
}

/* ---- typed getters ---------------------------------------------------------- */

int sld__cfg_get_uint(ctx_t *c, const char *path, const char *text, uint64_t min, uint64_t max,
                      uint64_t *out) {
    char b[SHOW_MAX + 8];
    uint64_t v = 0;
    bool ok = text && isdigit((unsigned char)*text), big = false;
    for (const char *s = text; ok && *s; s++) {
        if (!isdigit((unsigned char)*s)) {
            ok = false;
        } else if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) {
            big = true;
        } else {
            v = v * 10 + (uint64_t)(*s - '0');
        }
    }
    char range[64];
    if (max >= UINT64_MAX - 1)
        snprintf(range, sizeof range, "of at least %llu", (unsigned long long)min);
    else
        snprintf(range, sizeof range, "from %llu to %llu", (unsigned long long)min,
                 (unsigned long long)max);
    if (!ok)
        return sld__cfg_bad(c, path, "expected a whole number %s, got \"%s\"", range,
                            sld__cfg_show(text, b));
    if (big || v < min || v > max)
        return sld__cfg_bad(c, path, "%s is out of range: expected a whole number %s",
                            sld__cfg_show(text, b), range);
    *out = v;
    return SL_OK;
}

int sld__cfg_get_u32(ctx_t *c, const char *path, const char *text, uint32_t min, uint32_t max,
                     uint32_t *out) {
    uint64_t v;
    int rc = sld__cfg_get_uint(c, path, text, min, max, &v);
    if (rc == SL_OK)
        *out = (uint32_t)v;
    return rc;
}

int sld__cfg_get_duration(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                          sl_usec_t *out) {
    char b[SHOW_MAX + 8];
    sl_usec_t v;
    int rc = sld_parse_duration(text, &v);
    if (rc == SL_EINVAL)
        return sld__cfg_bad(c, path,
                            "expected a duration like 500ms, 2s, 1m, 1.5h or 7d%s, got \"%s\"",
                            text[0] == '-' ? " (never negative)" : "", sld__cfg_show(text, b));
    if (rc != SL_OK || v > max)
        return sld__cfg_bad(c, path, "%s is too long (at most %lld days)", sld__cfg_show(text, b),
                            (long long)(max / (86400 * SL_USEC_PER_SEC)));
    *out = v;
    return SL_OK;
}

int sld__cfg_get_duration_ms(ctx_t *c, const char *path, const char *text, sl_usec_t max,
                             sl_usec_t *out) {
    int rc = sld__cfg_get_duration(c, path, text, max, out);
    if (rc == SL_OK && *out < 1000)
        return sld__cfg_bad(c, path, "must be at least 1ms");
    return rc;
}

int sld__cfg_get_size(ctx_t *c, const char *path, const char *text, uint64_t *out) {
    char b[SHOW_MAX + 8];
    int rc = sld_parse_size(text, out);
    if (rc == SL_EINVAL)
        return sld__cfg_bad(c, path, "expected a size like 4096, 64KiB, 1MiB or 2GB%s, got \"%s\"",
                            text[0] == '-' ? " (never negative)" : "", sld__cfg_show(text, b));
    if (rc != SL_OK)
        return sld__cfg_bad(c, path, "%s is too large", sld__cfg_show(text, b));
    return SL_OK;
}

int sld__cfg_get_bool(ctx_t *c, const char *path, const char *text, bool *out) {
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    char b[SHOW_MAX + 8];
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(text, yes[i]) == 0 || (text[0] == toupper((unsigned char)yes[i][0]) &&
                                          strcmp(text + 1, yes[i] + 1) == 0)) {
            *out = true;
            return SL_OK;
        }
        if (strcmp(text, no[i]) == 0 || (text[0] == toupper((unsigned char)no[i][0]) &&
                                         strcmp(text + 1, no[i] + 1) == 0)) {
            *out = false;
            return SL_OK;
        }
    }
    return sld__cfg_bad(c, path, "expected true or false, got \"%s\"", sld__cfg_show(text, b));
}

char *sld__cfg_dup(ctx_t *c, const char *s) {
    char *d = strdup(s);
    if (d == NULL)
        sld__cfg_oom(c);
    return d;
}

int sld__cfg_get_name(ctx_t *c, const char *path, const char *text, char **out) {
    char b[SHOW_MAX + 8];
    size_t n = strlen(text);
    bool ok = n >= 1 && n <= MAX_NAME;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)text[i]) || strchr("_.-", text[i]) != NULL;
    if (!ok)
        return sld__cfg_bad(c, path,
                            "expected a name of 1 to %d letters, digits, '_', '.' or '-', got "
                            "\"%s\"",
                            MAX_NAME, sld__cfg_show(text, b));
    return (*out = sld__cfg_dup(c, text)) ? SL_OK : SL_ENOMEM;
}

bool sld__cfg_is_token(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > MAX_HEADER_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && strchr("!#$%&'*+-.^_`|~", s[i]) == NULL)
            return false;
    return true;
}

int sld__cfg_get_listen(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]) {
    char b[SHOW_MAX + 8], host[64];
    const char *port;
    int family;
    size_t n = strlen(text);
    if (n >= SLD_MAX_ADDR)
        goto bad_form;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - text - 1) >= sizeof host)
            goto bad_form;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        port = close + 2;
        family = AF_INET6;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof host)
            goto bad_form;
        if (memchr(text, ':', (size_t)(colon - text)) != NULL)
            return sld__cfg_bad(c, path,
                                "an IPv6 address needs brackets, like [::1]:6390, got \"%s\"",
                                sld__cfg_show(text, b));
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        port = colon + 1;
        family = AF_INET;
    }
    unsigned char addr[16];
    if (inet_pton(family, host, addr) != 1)
        return sld__cfg_bad(c, path, "\"%s\" is not an IP%s address (host names are not resolved)",
                            sld__cfg_show(host, b), family == AF_INET6 ? "v6" : "v4");
    size_t pn = strlen(port);
    bool ok = pn >= 1 && pn <= 5;
    unsigned long p = 0;
    for (size_t i = 0; ok && i < pn; i++) {
        ok = isdigit((unsigned char)port[i]);
        p = p * 10 + (unsigned long)(port[i] - '0');
    }
    if (!ok || p > 65535)
        return sld__cfg_bad(c, path, "port must be a number from 0 to 65535, got \"%s\"",
                            sld__cfg_show(port, b));
    memcpy(out, text, n + 1);
    return SL_OK;
bad_form:
    return sld__cfg_bad(c, path,
                        "expected an address like 127.0.0.1:6390 or [::1]:6390, got \"%s\"",
                        sld__cfg_show(text, b));
}

/* A front's address, or "off" / "" for a front that does not listen. */
int sld__cfg_get_front(ctx_t *c, const char *path, const char *text, char out[SLD_MAX_ADDR]) {
    if (text == NULL)
        return SL_OK;
    if (text[0] == '\0' || strcmp(text, "off") == 0) {
        out[0] = '\0';
        return SL_OK;
    }
    return sld__cfg_get_listen(c, path, text, out);
}

/* ---- secrets -------------------------------------------------------------- */

/* A secret (a password, a token): a literal, or "env:NAME" read from the
 * environment now. `path` and `what` name it in messages, which never quote
 * the secret itself. */
int sld__cfg_get_secret(ctx_t *c, const char *path, const char *what, const char *text,
                        char **out) {
    const char *token = text;
    if (strncmp(text, "env:", 4) == 0) {
        const char *var = text + 4;
        bool ok = var[0] != '\0' && !isdigit((unsigned char)var[0]);
        for (const char *s = var; ok && *s; s++)
            ok = isalnum((unsigned char)*s) || *s == '_';
        char b[SHOW_MAX + 8];
        if (!ok)
            return sld__cfg_bad(c, path, "\"%s\" is not an environment variable name",
                                sld__cfg_show(var, b));
        token = getenv(var);
        if (token == NULL)
            return sld__cfg_bad(c, path, "environment variable %s is not set", var);
        if (token[0] == '\0')
            return sld__cfg_bad(c, path, "environment variable %s is empty", var);
    }
    size_t n = strlen(token);
    if (n < MIN_TOKEN)
        return sld__cfg_bad(c, path, "%s needs at least %d characters (this one has %zu)", what,
                            MIN_TOKEN, n);
    if (n > MAX_TOKEN)
        return sld__cfg_bad(c, path, "%s has at most %d characters", what, MAX_TOKEN);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] <= 0x20 || (unsigned char)token[i] >= 0x7f)
            return sld__cfg_bad(c, path, "%s is printable ASCII without spaces", what);
    return (*out = sld__cfg_dup(c, token)) ? SL_OK : SL_ENOMEM;
}

/* "addr/prefix" with no host bits set beyond the prefix (base/cidr.c
 * parses it; the messages are the file's). */
int sld__cfg_check_cidr(ctx_t *c, const char *path, const char *text) {
    char b[SHOW_MAX + 8], host[64];
    sld_cidr_t cidr;
    sld_cidr_error_t why;
    if (sld_cidr_parse(text, &cidr, &why) == SL_OK)
        return SL_OK;
    /* a "host" of 64 bytes or more was never read as an address */
    if (why.fault == SLD_CIDR_NO_PREFIX || why.host_len >= sizeof host)
        return sld__cfg_bad(c, path, "expected a CIDR like 10.0.0.0/8 or ::1/128 (one address is "
                            "a.b.c.d/32), got \"%s\"", sld__cfg_show(text, b));
    switch (why.fault) {
    case SLD_CIDR_BAD_ADDRESS:
        memcpy(host, text, why.host_len);
        host[why.host_len] = '\0';
        return sld__cfg_bad(c, path, "\"%s\" is not an IP%s address", sld__cfg_show(host, b),
                            why.v6 ? "v6" : "v4");
    case SLD_CIDR_BAD_PREFIX:
        return sld__cfg_bad(c, path, "prefix length must be a number from 0 to %u, got \"%s\"",
                            why.max_bits, sld__cfg_show(why.prefix, b));
    default:
        return sld__cfg_bad(c, path, "%s has bits set after the first %u: did you mean %s/%u?",
                            sld__cfg_show(text, b), why.bits, why.network, why.bits);
    }
}

const char *sld_config_duration_text(sl_usec_t us, char *buf, size_t n) {
    if (us % SL_USEC_PER_SEC == 0)
        snprintf(buf, n, "%llds", (long long)(us / SL_USEC_PER_SEC));
    else if (us % 1000 == 0)
        snprintf(buf, n, "%lldms", (long long)(us / 1000));
    else
        snprintf(buf, n, "%lldus", (long long)us);
    return buf;
}
