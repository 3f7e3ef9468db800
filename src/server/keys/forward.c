/* forward.c -- the key of a forwarded request, for forward-auth (see forward.h).
 *
 * Trusted proxies are a list of CIDRs (server/base/cidr.h, one parser for
 * the configuration and for this module).
 *
 * The client's address (sld_client_ip)
 *   - A peer that is not a trusted proxy is the client, and the forwarding
 *     headers are ignored: anyone can send them. Without a peer (NULL, or not
 *     AF_INET/AF_INET6) nothing is trusted and there is no address.
 *   - From a trusted peer, X-Forwarded-For (a comma-separated list with
 *     optional whitespace; several headers joined by the caller with ",") is
 *     walked from the right: trusted proxies are skipped and the first
 *     untrusted address is the client; if all are trusted, the leftmost is.
 *     An entry is IPv4, IPv6, "[IPv6]", "a.b.c.d:port" or "[IPv6]:port";
 *     ports are dropped. Empty entries are ignored (the list rule of RFC
 *     9110, 5.6.1). An entry that is not an address ("unknown", garbage)
 *     stops the walk: the client is the last address before it, or the peer;
 *     nothing left of garbage is believed. At most MAX_HOPS entries are
 *     looked at (a client can send a long header through its proxy);
 *     reaching the bound stops the walk the same way.
 *   - No X-Forwarded-For (absent, or without entries): X-Real-IP if it is an
 *     address (same forms as an entry), else the peer.
 *   - Printed: IPv4 as a dotted quad; IPv6 masked to its first ipv6_prefix
 *     bits (1..128, anything else is no address) and printed by inet_ntop,
 *     then "/PREFIX": "2001:db8:1:2::/64"; with 128, the plain address.
 *     IPv4-mapped addresses are printed as IPv4.
 *
 * The key (sld_forward_key): "name=value" for each attribute, joined by '|'.
 * Inside names and values '%' is written "%25", '|' "%7C" and '=' "%3D", so
 * different attributes never make the same key. Values:
 *   - ip: the client's address as above.
 *   - user: the user header as given, not decoded (it only has to be stable
 *     per user), except that a "Bearer" or "Basic" scheme is written in that
 *     case and with one space before the credentials: the scheme is
 *     case-insensitive and 1*SP may follow it (RFC 9110, 11.4), so "bearer  t"
 *     and "Bearer t" are one user, not two budgets.
 *   - endpoint: the URI's path: no query or fragment, an absolute-form
 *     "scheme://authority" dropped, runs of '/' collapsed to one, nothing
 *     decoded; an empty path is "/".
 *   - method: upper-cased.
 *   - header:<Name>: that header, through in->header.
 *   - key: refused (the key is the client's to give, on /v1/check).
 * A missing or empty value makes the key fail with a static reason.
 *
 * Not here: reading requests off the wire, the check itself (the HTTP front).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/keys/forward.h"
#include "sluice.h"

#define MAX_HOPS 64    /* X-Forwarded-For entries looked at, from the right */
#define IP_TEXT 64     /* an address as text: SLD_IP_TEXT (46) + "/128" fits */

/* ---- the client's address ------------------------------------------------ */

static bool is_ows(char ch) { return ch == ' ' || ch == '\t'; }

static sld_span_t trim(const char *p, size_t n) {
    while (n > 0 && is_ows(p[0]))
        p++, n--;
    while (n > 0 && is_ows(p[n - 1]))
        n--;
    return (sld_span_t){p, n};
}

static bool is_port(const char *p, size_t n) {
    unsigned long v = 0;
    if (n < 1 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    return v <= 65535;
}

/* One address as a forwarding header writes it: "a.b.c.d", "a.b.c.d:port",
 * an IPv6 address, "[IPv6]" or "[IPv6]:port". */
static bool parse_ip(const char *p, size_t n, sld_ip_t *out) {
    const char *host = p;
    size_t hn = n;
    int family = AF_INET;
    if (n == 0 || memchr(p, '\0', n) != NULL)
        return false;
    if (p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (close == NULL)
            return false;
        host = p + 1;
        hn = (size_t)(close - host);
        size_t rest = n - (size_t)(close + 1 - p);
        if (rest > 0 && (close[1] != ':' || !is_port(close + 2, rest - 1)))
            return false;
        family = AF_INET6;
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon != NULL && memchr(colon + 1, ':', n - (size_t)(colon + 1 - p)) != NULL) {
            family = AF_INET6; /* two colons or more: IPv6 without brackets, no port */
        } else if (colon != NULL) {
            hn = (size_t)(colon - p);
            if (!is_port(colon + 1, n - hn - 1))
                return false;
        }
    }
    char text[INET6_ADDRSTRLEN];
    unsigned char b[16];
    if (hn == 0 || hn >= sizeof text)
        return false;
    memcpy(text, host, hn);
    text[hn] = '\0';
    if (inet_pton(family, text, b) != 1)
        return false;
    if (family == AF_INET)
        sld_ip_from4(out, b);
    else
        sld_ip_from6(out, b);
    return true;
}

/* Walks X-Forwarded-For from the right, moving *client to each address it
 * believes. False if the header has no entries (absent, empty, or commas). */
static bool walk_xff(sld_span_t xff, const sld_cidrs_t *trusted, sld_ip_t *client) {
    if (xff.ptr == NULL)
        return false;
    bool seen = false;
    unsigned hops = 0;
    size_t end = xff.len;
    for (;;) {
        size_t start = end;
        while (start > 0 && xff.ptr[start - 1] != ',')
            start--;
        sld_span_t e = trim(xff.ptr + start, end - start);
        if (e.len > 0) {
            sld_ip_t ip;
            seen = true;
            if (++hops > MAX_HOPS || !parse_ip(e.ptr, e.len, &ip))
                break;
            *client = ip;
            if (!sld_cidrs_has(trusted, &ip))
                break;
        }
        if (start == 0)
            break;
        end = start - 1;
    }
    return seen;
}

static bool client_addr(const sld_forwarded_t *in, const sld_cidrs_t *trusted, sld_ip_t *client) {
    if (!sld_ip_from_sockaddr(in->peer, client))
        return false;
    if (!sld_cidrs_has(trusted, client) || walk_xff(in->x_forwarded_for, trusted, client))
        return true;
    if (in->x_real_ip.ptr != NULL) {
        sld_span_t r = trim(in->x_real_ip.ptr, in->x_real_ip.len);
        sld_ip_t ip;
        if (parse_ip(r.ptr, r.len, &ip))
            *client = ip;
    }
    return true;
}

/* The address as text into out[0..cap): its length, 0 if it does not fit. */
static size_t format_ip(const sld_ip_t *ip, unsigned prefix, char *out, size_t cap) {
    char text[IP_TEXT];
    if (ip->v4) {
        if (inet_ntop(AF_INET, ip->b, text, sizeof text) == NULL)
            return 0;
    } else {
        unsigned char b[16];
        memcpy(b, ip->b, sizeof b);
        sld_ip_mask(b, sizeof b, prefix);
        if (inet_ntop(AF_INET6, b, text, INET6_ADDRSTRLEN) == NULL)
            return 0;
        if (prefix < 128) {
            size_t n = strlen(text);
            int w = snprintf(text + n, sizeof text - n, "/%u", prefix);
            if (w < 0 || (size_t)w >= sizeof text - n)
                return 0;
        }
    }
    size_t n = strlen(text);
    if (n > cap)
        return 0;
    memcpy(out, text, n);
    if (n < cap)
        out[n] = '\0';
    return n;
}

/* Returns the length written to out[0..cap), NUL-terminated when cap > the
 * length; 0 when cap is too small, ipv6_prefix is not 1..128, or there is no
 * address (no usable peer). */
size_t sld_client_ip(const sld_forwarded_t *in, const sld_cidrs_t *trusted, uint32_t ipv6_prefix,
                     char *out, size_t cap) {
    sld_ip_t client;
    if (in == NULL || out == NULL || ipv6_prefix < 1 || ipv6_prefix > 128 ||
        !client_addr(in, trusted, &client))
        return 0;
    return format_ip(&client, (unsigned)ipv6_prefix, out, cap);
}

/* ---- the key ------------------------------------------------------------- */

/* Appends into out[0..cap); len keeps counting past cap, to tell "too long". */
typedef struct keybuf {
    char *out;
    size_t cap;
    size_t len;
} keybuf_t;

static void put(keybuf_t *k, const char *s, size_t n) {
    if (k->len < k->cap)
        memcpy(k->out + k->len, s, n < k->cap - k->len ? n : k->cap - k->len);
    k->len = n > SIZE_MAX - k->len ? SIZE_MAX : k->len + n;
}

static char ascii_upper(char ch) { return ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch; }

static void put_escaped(keybuf_t *k, const char *s, size_t n, bool upper) {
    size_t run = 0; /* bytes of s[i - run .. i) waiting to be copied as they are */
    for (size_t i = 0; i < n; i++) {
        const char *esc = s[i] == '%' ? "%25" : s[i] == '|' ? "%7C" : s[i] == '=' ? "%3D" : NULL;
        if (esc == NULL && !upper) {
            run++;
            continue;
        }
        put(k, s + i - run, run);
        run = 0;
        if (esc != NULL) {
            put(k, esc, 3);
        } else {
            char ch = ascii_upper(s[i]);
            put(k, &ch, 1);
        }
    }
    put(k, s + n - run, run);
}

static bool ieq_prefix(const char *s, size_t n, const char *lit) {
    size_t i = 0;
    for (; lit[i] != '\0'; i++)
        if (i == n || ascii_upper(s[i]) != ascii_upper(lit[i]))
            return false;
    return true;
}

static const char *put_user(keybuf_t *k, sld_span_t v) {
    static const char *const schemes[] = {"Bearer", "Basic"};
    if (v.ptr == NULL || v.len == 0)
        return "no user header";
    for (size_t s = 0; s < sizeof schemes / sizeof schemes[0]; s++) {
        size_t sl = strlen(schemes[s]);
        if (v.len > sl && v.ptr[sl] == ' ' && ieq_prefix(v.ptr, v.len, schemes[s])) {
            size_t i = sl;
            while (i < v.len && v.ptr[i] == ' ')
                i++;
            put(k, schemes[s], sl);
            put(k, " ", 1);
            put_escaped(k, v.ptr + i, v.len - i, false);
            return NULL;
        }
    }
    put_escaped(k, v.ptr, v.len, false);
    return NULL;
}

static bool is_alpha(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

static bool is_scheme_char(char ch) {
    return is_alpha(ch) || (ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.';
}

static const char *put_endpoint(keybuf_t *k, sld_span_t uri) {
    if (uri.ptr == NULL || uri.len == 0)
        return "no X-Original-URI or X-Forwarded-Uri";
    const char *p = uri.ptr;
    size_t end = 0, start = 0;
    while (end < uri.len && p[end] != '?' && p[end] != '#')
        end++;
    if (end > 0 && is_alpha(p[0])) { /* absolute form: scheme "://" authority path */
        size_t i = 1;
        while (i < end && is_scheme_char(p[i]))
            i++;
        if (end - i >= 3 && memcmp(p + i, "://", 3) == 0) {
            start = i + 3;
            while (start < end && p[start] != '/')
                start++;
        }
    }
    if (start == end) {
        put(k, "/", 1);
        return NULL;
    }
    for (size_t i = start; i < end; i++) {
        size_t j = i;
        if (p[i] == '/')
            while (j + 1 < end && p[j + 1] == '/')
                j++;
        put_escaped(k, p + i, 1, false);
        i = j;
    }
    return NULL;
}

static const char *put_value(keybuf_t *k, const sld_forwarded_t *in, const sld_cidrs_t *trusted,
                             uint32_t ipv6_prefix, const char *attr) {
    if (strcmp(attr, "ip") == 0) {
        char ip[IP_TEXT];
        if (ipv6_prefix < 1 || ipv6_prefix > 128)
            return "ipv6_prefix must be 1 to 128";
        size_t n = sld_client_ip(in, trusted, ipv6_prefix, ip, sizeof ip);
        if (n == 0)
            return "no client address";
        put_escaped(k, ip, n, false);
        return NULL;
    }
    if (strcmp(attr, "user") == 0)
        return put_user(k, in->user);
    if (strcmp(attr, "endpoint") == 0)
        return put_endpoint(k, in->uri);
    if (strcmp(attr, "method") == 0) {
        if (in->method.ptr == NULL || in->method.len == 0)
            return "no X-Original-Method or X-Forwarded-Method";
        put_escaped(k, in->method.ptr, in->method.len, true);
        return NULL;
    }
    if (strcmp(attr, "route") == 0) {
        if (in->route.ptr == NULL || in->route.len == 0)
            return "the route attribute keys gateway requests only";
        put_escaped(k, in->route.ptr, in->route.len, false);
        return NULL;
    }
    if (strncmp(attr, "header:", 7) == 0 && attr[7] != '\0') {
        sld_span_t v = {NULL, 0};
        if (in->header != NULL)
            v = in->header(in->header_ctx, attr + 7, strlen(attr + 7));
        if (v.ptr == NULL || v.len == 0)
            return "a header the policy keys on is missing";
        put_escaped(k, v.ptr, v.len, false);
        return NULL;
    }
    if (strcmp(attr, "key") == 0)
        return "policy keys on a client-given key; use /v1/check";
    return "unknown key attribute";
}

/* On failure (0) out is "" when cap > 0 and *why a static reason; why may be
 * NULL. A key is NUL-terminated: it needs cap > its length. */
size_t sld_forward_key(const sld_forwarded_t *in, const sld_cidrs_t *trusted, uint32_t ipv6_prefix,
                       char *const *attrs, size_t n, char *out, size_t cap, const char **why) {
    const char *ignored;
    if (why == NULL)
        why = &ignored;
    *why = NULL;
    if (out != NULL && cap > 0)
        out[0] = '\0';
    if (in == NULL || (attrs == NULL && n > 0) || out == NULL) {
        *why = "no request or no key attributes";
        return 0;
    }
    if (n == 0) {
        *why = "the policy names no key attributes";
        return 0;
    }
    keybuf_t k = {out, cap, 0};
    for (size_t i = 0; i < n; i++) {
        const char *bad = "unknown key attribute";
        if (attrs[i] != NULL) {
            if (i > 0)
                put(&k, "|", 1);
            put_escaped(&k, attrs[i], strlen(attrs[i]), false);
            put(&k, "=", 1);
            bad = put_value(&k, in, trusted, ipv6_prefix, attrs[i]);
        }
        if (bad != NULL) {
            *why = bad;
            if (cap > 0)
                out[0] = '\0';
            return 0;
        }
    }
    if (k.len >= cap) {
        *why = "key too long";
        if (cap > 0)
            out[0] = '\0';
        return 0;
    }
    out[k.len] = '\0';
    return k.len;
}
