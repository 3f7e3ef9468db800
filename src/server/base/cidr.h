/* cidr.h -- IP addresses and CIDR ranges: the one parser of "ADDR/PREFIX"
 * and the one membership test, for every room that names networks (the
 * configuration validates trusted_proxies with it, the key builder matches
 * forwarding proxies with it).
 *
 * Pure: text and addresses in, no I/O, no name lookup. Messages are the
 * callers' (each words its own: a file's line, a list's entry); the parser
 * says what is wrong and with which parts of the text.
 */
#ifndef SL_SERVER_BASE_CIDR_H
#define SL_SERVER_BASE_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define SLD_IP_TEXT 46 /* INET6_ADDRSTRLEN: an address as text, NUL included */

/* An address. IPv4, also when it came IPv4-mapped (::ffff:a.b.c.d, what a
 * dual-stack socket reports for an IPv4 client), is in b[0..4), zeros after. */
typedef struct sld_ip {
    unsigned char b[16];
    bool v4;
} sld_ip_t;

void sld_ip_from4(sld_ip_t *ip, const unsigned char b[4]);
void sld_ip_from6(sld_ip_t *ip, const unsigned char b[16]);  /* maps ::ffff:0:0/96 to IPv4 */
/* AF_INET and AF_INET6 only; false for NULL or any other family. */
bool sld_ip_from_sockaddr(const struct sockaddr *sa, sld_ip_t *ip);
/* Zeroes the bits of b[0..len) after the first `bits`. */
void sld_ip_mask(unsigned char *b, size_t len, unsigned bits);

/* A network: as sld_ip_t, bits after the prefix zero. An IPv6 entry inside
 * ::ffff:0:0/96 is the IPv4 network it maps; other IPv6 entries match IPv6
 * addresses only ("::/0" is every IPv6 address, not every address). */
typedef struct sld_cidr {
    unsigned char net[16];
    unsigned bits;       /* prefix length: 0..32 (v4) or 0..128 */
    bool v4;
} sld_cidr_t;

typedef enum sld_cidr_fault {
    SLD_CIDR_OK = 0,
    SLD_CIDR_NO_PREFIX,     /* no '/': the prefix is required */
    SLD_CIDR_BAD_ADDRESS,   /* the text before the '/' is not an address */
    SLD_CIDR_BAD_PREFIX,    /* not 1 to 3 digits, or more than max_bits */
    SLD_CIDR_HOST_BITS      /* bits set after the prefix: usually a typo */
} sld_cidr_fault_t;

/* What sld_cidr_parse() found wrong, for the caller's message. */
typedef struct sld_cidr_error {
    sld_cidr_fault_t fault;
    bool v6;                     /* the address is written as IPv6 (it has a ':') */
    size_t host_len;             /* bytes before the '/' (the address's text) */
    const char *prefix;          /* the text after the '/', inside the input */
    unsigned max_bits;           /* 32 or 128 */
    unsigned bits;               /* HOST_BITS: the prefix length given */
    char network[SLD_IP_TEXT];   /* HOST_BITS: the network probably meant, without "/bits" */
} sld_cidr_error_t;

/* Parses "10.0.0.0/8", "::1/128": IPv4 with a prefix of 0..32, IPv6 with
 * 0..128, the prefix required and the address the network itself. Returns
 * 0, or SL_EINVAL with *why filled (why may be NULL). */
int sld_cidr_parse(const char *text, sld_cidr_t *out, sld_cidr_error_t *why);
bool sld_cidr_has(const sld_cidr_t *c, const sld_ip_t *ip);

/* A list of networks, parsed once (trusted proxies). */
typedef struct sld_cidrs sld_cidrs_t;

/* Parses cidrs[0..n) (n == 0 makes an empty set). On error *out is NULL and
 * err gets a message that quotes the entry ("\"10.1.2.3/8\": bits are set
 * after the first 8: did you mean 10.0.0.0/8?"). */
int sld_cidrs_parse(char *const *cidrs, size_t n, sld_cidrs_t **out, char *err, size_t err_len);
void sld_cidrs_free(sld_cidrs_t *c);
/* Whether the address is in one of the networks; a NULL set contains nothing. */
bool sld_cidrs_has(const sld_cidrs_t *c, const sld_ip_t *ip);
bool sld_cidrs_contains(const sld_cidrs_t *c, const struct sockaddr *addr);

#endif
