/* cluster.c -- key slots, CLUSTER SLOTS and MOVED/ASK parsing (cluster.h). */
#include "store/redis/cluster.h"

#include <string.h>

#include <hiredis/hiredis.h>

#include "sluice.h"

/* CRC16 XMODEM (poly 0x1021, init 0, no reflection) by table: entry i is
 * the CRC of the byte i. Constant, so any thread may use it. */
static const uint16_t crc16_table[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
    0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
    0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
    0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de,
    0x2462, 0x3443, 0x0420, 0x1401, 0x64e6, 0x74c7, 0x44a4, 0x5485,
    0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4,
    0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d, 0xc7bc,
    0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b,
    0x5af5, 0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12,
    0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
    0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41,
    0xedae, 0xfd8f, 0xcdec, 0xddcd, 0xad2a, 0xbd0b, 0x8d68, 0x9d49,
    0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
    0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78,
    0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e, 0xe16f,
    0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e,
    0x02b1, 0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256,
    0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
    0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
    0xa7db, 0xb7fa, 0x8799, 0x97b8, 0xe75f, 0xf77e, 0xc71d, 0xd73c,
    0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab,
    0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882, 0x28a3,
    0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92,
    0xfd2e, 0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9,
    0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
    0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8,
    0x6e17, 0x7e36, 0x4e55, 0x5e74, 0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

uint16_t sl__redis_crc16(const void *buf, size_t len) {
    const unsigned char *p = buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

uint16_t sl__redis_key_slot(const void *key, size_t len) {
    const char *k = key;
    const char *open = len ? memchr(k, '{', len) : NULL;
    if (open) {
        size_t after = (size_t)(open - k) + 1;
        const char *close = memchr(open + 1, '}', len - after);
        if (close && close > open + 1)
            return sl__redis_crc16(open + 1, (size_t)(close - open - 1)) & (SL__REDIS_SLOTS - 1);
    }
    return sl__redis_crc16(k, len) & (SL__REDIS_SLOTS - 1);
}

static int addr_from(const redisReply *node, const char *fallback_host, sl__redis_addr_t *a,
                     const char **why) {
    if (node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
        node->element[0]->type != REDIS_REPLY_STRING ||
        node->element[1]->type != REDIS_REPLY_INTEGER) {
        *why = "CLUSTER SLOTS: a node is not [host, port, ...]";
        return SL_EINVAL;
    }
    const char *host = node->element[0]->str;
    size_t host_len = node->element[0]->len;
    if (host_len == 0 || (host_len == 1 && host[0] == '?')) {
        host = fallback_host ? fallback_host : "";
        host_len = strlen(host);
    }
    if (host_len == 0 || host_len > SL__REDIS_URL_MAX_HOST || memchr(host, '\0', host_len)) {
        *why = "CLUSTER SLOTS: a node has no usable host";
        return SL_EINVAL;
    }
    long long port = node->element[1]->integer;
    if (port <= 0 || port > 65535) {
        *why = "CLUSTER SLOTS: a node's port is out of range";
        return SL_EINVAL;
    }
    memcpy(a->host, host, host_len);
    a->host[host_len] = '\0';
    a->port = (uint16_t)port;
    return 0;
}

int sl__redis_parse_cluster_slots(const redisReply *r, const char *fallback_host,
                                  sl__redis_slot_map_t *map, const char **why) {
    map->n_masters = 0;
    map->assigned = 0;
    for (size_t i = 0; i < SL__REDIS_SLOTS; i++)
        map->slot[i] = SL__REDIS_NO_NODE;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        *why = r && r->type == REDIS_REPLY_ERROR ? "CLUSTER SLOTS failed (cluster mode off?)"
                                                  : "CLUSTER SLOTS: reply is not an array";
        return SL_EINVAL;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER) {
            *why = "CLUSTER SLOTS: a range is not [first, last, master, ...]";
            return SL_EINVAL;
        }
        long long first = e->element[0]->integer, last = e->element[1]->integer;
        if (first < 0 || last < first || last >= SL__REDIS_SLOTS) {
            *why = "CLUSTER SLOTS: a slot range is out of bounds";
            return SL_EINVAL;
        }
        sl__redis_addr_t a;
        int rc = addr_from(e->element[2], fallback_host, &a, why);
        if (rc)
            return rc;
        size_t m;
        for (m = 0; m < map->n_masters; m++)
            if (map->masters[m].port == a.port && strcmp(map->masters[m].host, a.host) == 0)
                break;
        if (m == map->n_masters) {
            if (m == SL__REDIS_MAX_MASTERS) {
                *why = "CLUSTER SLOTS: more masters than this build routes to";
                return SL_EINVAL;
            }
            map->masters[map->n_masters++] = a;
        }
        for (long long s = first; s <= last; s++) {
            if (map->slot[s] == SL__REDIS_NO_NODE)
                map->assigned++;
            map->slot[s] = (uint16_t)m;
        }
    }
    return 0;
}

sl__redis_redirect_kind_t sl__redis_parse_redirect(const char *str, size_t len,
                                                   sl__redis_redirect_t *out) {
    memset(out, 0, sizeof *out);
    sl__redis_redirect_kind_t kind;
    size_t at;
    if (len > 6 && memcmp(str, "MOVED ", 6) == 0) {
        kind = SL__REDIS_REDIRECT_MOVED;
        at = 6;
    } else if (len > 4 && memcmp(str, "ASK ", 4) == 0) {
        kind = SL__REDIS_REDIRECT_ASK;
        at = 4;
    } else {
        return SL__REDIS_REDIRECT_NONE;
    }
    unsigned slot = 0;
    size_t digits = 0;
    while (at < len && str[at] >= '0' && str[at] <= '9' && digits < 6) {
        slot = slot * 10 + (unsigned)(str[at++] - '0');
        digits++;
    }
    if (digits == 0 || slot >= SL__REDIS_SLOTS || at >= len || str[at] != ' ')
        return SL__REDIS_REDIRECT_NONE;
    at++;
    /* host:port, split at the last ':' (an IPv6 host has colons of its own). */
    const char *ep = str + at;
    size_t ep_len = len - at;
    const char *colon = NULL;
    for (size_t i = 0; i < ep_len; i++) {
        if (ep[i] == ' ' || ep[i] == '\0')
            return SL__REDIS_REDIRECT_NONE;
        if (ep[i] == ':')
            colon = ep + i;
    }
    if (colon == NULL)
        return SL__REDIS_REDIRECT_NONE;
    size_t host_len = (size_t)(colon - ep);
    if (host_len >= 2 && ep[0] == '[' && colon[-1] == ']') {
        ep++;
        host_len -= 2;
    }
    if (host_len > SL__REDIS_URL_MAX_HOST)
        return SL__REDIS_REDIRECT_NONE;
    unsigned port = 0;
    size_t pd = 0;
    for (const char *p = colon + 1; p < str + len; p++) {
        if (*p < '0' || *p > '9' || pd >= 5)
            return SL__REDIS_REDIRECT_NONE;
        port = port * 10 + (unsigned)(*p - '0');
        pd++;
    }
    if (pd == 0 || port == 0 || port > 65535)
        return SL__REDIS_REDIRECT_NONE;
    memcpy(out->to.host, ep, host_len);
    out->to.host[host_len] = '\0';
    out->to.port = (uint16_t)port;
    out->slot = (uint16_t)slot;
    out->kind = kind;
    return kind;
}
