/* url.h -- where the Redis store lives, parsed from a URL:
 *
 *   redis://[user[:password]@]host:port[/db]
 *   sentinel://[user[:password]@]host:port[,host:port...]/master-name[?db=N]
 *   redis-cluster://[user[:password]@]host:port[,host:port...]
 *
 * Hosts are names, IPv4 addresses or bracketed IPv6 addresses ([::1]:6379);
 * the port may be left out (6379; 26379 for sentinels). User and password
 * are percent-decoded; they are the master's (or every cluster node's)
 * credentials. Sentinels that need AUTH get their own, as options
 * (the names go-redis and ioredis give them):
 *
 *   sentinel://host:port,.../mymaster?sentinel_password=P&sentinel_user=U&db=N
 *
 * (percent-decoded; in any order). rediss:// is refused: this build has
 * no TLS.
 *
 * Pure: parses bytes into a caller-owned struct, allocates nothing.
 * Not here: connecting (connection.c).
 */
#ifndef SL_STORE_REDIS_URL_H
#define SL_STORE_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL__REDIS_URL_MAX_LEN 2048     /* the whole URL, bytes */
#define SL__REDIS_URL_MAX_NODES 16     /* seeds or sentinels */
#define SL__REDIS_URL_MAX_HOST 255     /* a host name, bytes (DNS limit) */
#define SL__REDIS_URL_MAX_CRED 256     /* user or password after decoding, bytes */
#define SL__REDIS_URL_MAX_NAME 128     /* a sentinel master name, bytes */
#define SL__REDIS_URL_MAX_DB 1000000   /* SELECT index, exclusive */

typedef enum sl__redis_kind {
    SL__REDIS_STANDALONE = 0,
    SL__REDIS_SENTINEL,
    SL__REDIS_CLUSTER
} sl__redis_kind_t;

typedef struct sl__redis_addr {
    char host[SL__REDIS_URL_MAX_HOST + 1]; /* without brackets for IPv6 */
    uint16_t port;
} sl__redis_addr_t;

typedef struct sl__redis_url {
    sl__redis_kind_t kind;
    size_t n_nodes;                              /* >= 1 */
    sl__redis_addr_t nodes[SL__REDIS_URL_MAX_NODES]; /* the server, sentinels or seeds */
    bool has_user, has_password;
    char user[SL__REDIS_URL_MAX_CRED + 1];       /* NUL-terminated; may hold NULs when decoded */
    size_t user_len;
    char password[SL__REDIS_URL_MAX_CRED + 1];
    size_t password_len;
    bool has_sentinel_user, has_sentinel_password; /* AUTH to the sentinels */
    char sentinel_user[SL__REDIS_URL_MAX_CRED + 1];
    size_t sentinel_user_len;
    char sentinel_password[SL__REDIS_URL_MAX_CRED + 1];
    size_t sentinel_password_len;
    uint32_t db;                                 /* SELECT index; 0 for a cluster */
    char master[SL__REDIS_URL_MAX_NAME + 1];     /* sentinel master name */
} sl__redis_url_t;

/* Parses s[0..len) into *out. Returns 0, or SL_EINVAL with a static-free
 * message in err (errlen bytes, NUL-terminated, may be NULL) saying what
 * is wrong and where. */
int sl__redis_url_parse(const char *s, size_t len, sl__redis_url_t *out, char *err, size_t errlen);

/* "redis", "sentinel" or "redis-cluster". */
const char *sl__redis_kind_name(sl__redis_kind_t kind);

#endif
