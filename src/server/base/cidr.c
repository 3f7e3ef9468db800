/* cidr.c -- IP addresses and CIDR ranges (see cidr.h).
 *
 *   - "ADDR/PREFIX": IPv4 with a prefix of 0..32, IPv6 with 0..128. The
 *     prefix is required (1 to 3 digits, nothing else), and the address must
 *     be the network: "10.1.2.3/8" is refused (bits set after the prefix are
 *     usually a typo for a narrower range) and the network meant is named.
 *     An address with a ':' is IPv6, else IPv4; inet_pton decides the rest.
 *   - An IPv4-mapped IPv6 address is that IPv4 address: it matches IPv4
 *     entries, and an IPv6 entry inside ::ffff:0:0/96 is the IPv4 entry it
 *     maps.
 *
 * Not here: addresses as forwarding headers write them (ports, brackets:
 * keys/forward.c), or the wording of a configuration file's messages
 * (config/units.c); the list parser words its own, quoting the entry.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/cidr.h"
#include "sluice.h"

#define SHOW_MAX 64    /* bytes of a bad entry quoted in an error */

struct sld_cidrs {
    size_t n;
    sld_cidr_t e[];
};

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

void sld_ip_from4(sld_ip_t *ip, const unsigned char b[4]) {
    memset(ip->b, 0, sizeof ip->b);
    memcpy(ip->b, b, 4);
    ip->v4 = true;
}

void sld_ip_from6(sld_ip_t *ip, const unsigned char b[16]) {
    if (memcmp(b, v4_mapped, sizeof v4_mapped) == 0) {
        sld_ip_from4(ip, b + 12);
    } else {
        memcpy(ip->b, b, 16);
        ip->v4 = false;
    }
}

bool sld_ip_from_sockaddr(const struct sockaddr *sa, sld_ip_t *ip) {
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
        sld_ip_from4(ip, (const unsigned char *)&sin->sin_addr);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)sa;
        sld_ip_from6(ip, (const unsigned char *)&sin6->sin6_addr);
        return true;
    }
    return false;
}

void sld_ip_mask(unsigned char *b, size_t len, unsigned bits) {
    for (size_t i = 0; i < len; i++) {
        unsigned keep = bits >= (i + 1) * 8 ? 8 : bits > i * 8 ? bits - (unsigned)i * 8 : 0;
        b[i] = (unsigned char)(b[i] & (0xff00u >> keep));
    }
}

/* ---- one CIDR -------------------------------------------------------------- */

static int fail(sld_cidr_error_t *why, sld_cidr_fault_t fault) {
    why->fault = fault;
    return SL_EINVAL;
}

int sld_cidr_parse(const char *text, sld_cidr_t *out, sld_cidr_error_t *why) {
    sld_cidr_error_t ignored;
    if (why == NULL)
        why = &ignored;
    memset(why, 0, sizeof *why);
    const char *slash = strchr(text, '/');
    if (slash == NULL)
        return fail(why, SLD_CIDR_NO_PREFIX);
    size_t hn = (size_t)(slash - text);
    bool six = memchr(text, ':', hn) != NULL;
    why->v6 = six;
    why->host_len = hn;
    why->prefix = slash + 1;
    why->max_bits = six ? 128 : 32;
    char host[SLD_IP_TEXT];
    unsigned char addr[16];
    if (hn >= sizeof host)
        return fail(why, SLD_CIDR_BAD_ADDRESS); /* longer than any address */
    memcpy(host, text, hn);
    host[hn] = '\0';
    if (inet_pton(six ? AF_INET6 : AF_INET, host, addr) != 1)
        return fail(why, SLD_CIDR_BAD_ADDRESS);
    unsigned bits = 0;
    const char *p = slash + 1;
    size_t pn = strlen(p);
    bool ok = pn >= 1 && pn <= 3;
    for (size_t i = 0; ok && i < pn; i++) {
        ok = p[i] >= '0' && p[i] <= '9';
        bits = bits * 10 + (unsigned)(p[i] - '0');
    }
    if (!ok || bits > why->max_bits)
        return fail(why, SLD_CIDR_BAD_PREFIX);
    size_t len = six ? 16 : 4;
    unsigned char net[16];
    memcpy(net, addr, len);
    sld_ip_mask(net, len, bits);
    if (memcmp(net, addr, len) != 0) {
        why->bits = bits;
        if (inet_ntop(six ? AF_INET6 : AF_INET, net, why->network, sizeof why->network) == NULL)
            why->network[0] = '\0';
        return fail(why, SLD_CIDR_HOST_BITS);
    }
    memset(out->net, 0, sizeof out->net);
    if (!six) {
        memcpy(out->net, net, 4);
        out->bits = bits;
        out->v4 = true;
    } else if (bits >= 96 && memcmp(net, v4_mapped, sizeof v4_mapped) == 0) {
        memcpy(out->net, net + 12, 4); /* ::ffff:a.b.c.d/N is a.b.c.d/(N-96) */
        out->bits = bits - 96;
        out->v4 = true;
    } else {
        memcpy(out->net, net, 16);
        out->bits = bits;
        out->v4 = false;
    }
    return SL_OK;
}

bool sld_cidr_has(const sld_cidr_t *c, const sld_ip_t *ip) {
    if (c->v4 != ip->v4)
        return false;
    size_t full = c->bits / 8;
    unsigned rest = c->bits % 8;
    if (memcmp(c->net, ip->b, full) != 0)
        return false;
    return rest == 0 || (ip->b[full] & (0xff00u >> rest) & 0xffu) == c->net[full];
}

/* ---- a list of CIDRs ------------------------------------------------------- */

static void say(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t err_len, const char *fmt, ...) {
    if (err == NULL || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

/* s, cut to SHOW_MAX bytes, with unprintable bytes as '?', for a message. */
static const char *show(char out[SHOW_MAX + 4], const char *s) {
    size_t i = 0;
    for (; s[i] != '\0' && i < SHOW_MAX; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    if (s[i] != '\0')
        memcpy(out + i, "...", 3), i += 3;
    out[i] = '\0';
    return out;
}

/* One entry of a list, its message quoting the entry. */
static int parse_entry(const char *text, sld_cidr_t *e, char *err, size_t err_len) {
    char b[SHOW_MAX + 4];
    sld_cidr_error_t why;
    if (sld_cidr_parse(text, e, &why) == SL_OK)
        return SL_OK;
    switch (why.fault) {
    case SLD_CIDR_NO_PREFIX:
        say(err, err_len, "\"%s\": expected a CIDR like 10.0.0.0/8 or ::1/128 (one address "
                          "is a.b.c.d/32)", show(b, text));
        break;
    case SLD_CIDR_BAD_ADDRESS:
        say(err, err_len, "\"%s\": not an IP%s address before the '/'", show(b, text),
            why.v6 ? "v6" : "v4");
        break;
    case SLD_CIDR_BAD_PREFIX:
        say(err, err_len, "\"%s\": the prefix length must be a number from 0 to %u",
            show(b, text), why.max_bits);
        break;
    default:
        say(err, err_len, "\"%s\": bits are set after the first %u: did you mean %s/%u?",
            show(b, text), why.bits, why.network, why.bits);
        break;
    }
    return SL_EINVAL;
}

int sld_cidrs_parse(char *const *cidrs, size_t n, sld_cidrs_t **out, char *err, size_t err_len) {
    if (out == NULL || (cidrs == NULL && n > 0)) {
        say(err, err_len, "no CIDR list");
        return SL_EINVAL;
    }
    *out = NULL;
    if (n > (SIZE_MAX - sizeof(sld_cidrs_t)) / sizeof(sld_cidr_t)) {
        say(err, err_len, "too many CIDRs");
        return SL_ENOMEM;
    }
    sld_cidrs_t *c = malloc(sizeof *c + n * sizeof c->e[0]);
    if (c == NULL) {
        say(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = SL_EINVAL;
        if (cidrs[i] == NULL)
            say(err, err_len, "CIDR %zu is missing (NULL)", i);
        else
            rc = parse_entry(cidrs[i], &c->e[i], err, err_len);
        if (rc != SL_OK) {
            free(c);
            return rc;
        }
    }
    c->n = n;
    *out = c;
    return SL_OK;
}

void sld_cidrs_free(sld_cidrs_t *c) { free(c); }

bool sld_cidrs_has(const sld_cidrs_t *c, const sld_ip_t *ip) {
    for (size_t i = 0; c != NULL && i < c->n; i++)
        if (sld_cidr_has(&c->e[i], ip))
            return true;
    return false;
}

bool sld_cidrs_contains(const sld_cidrs_t *c, const struct sockaddr *addr) {
    sld_ip_t ip;
    return c != NULL && sld_ip_from_sockaddr(addr, &ip) && sld_cidrs_has(c, &ip);
}
