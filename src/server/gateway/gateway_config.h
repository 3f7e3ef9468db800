/* gateway_config.h -- the gateway's configuration section (gateway:), as
 * the gateway registers it with config/ (server/config/section.h), and its
 * routes.
 *
 *   gateway:
 *     listen: 127.0.0.1:8080       # or a list; an entry may be a mapping:
 *                                  # {address: 127.0.0.1:8443, tls: {cert: FILE, key: FILE}}
 *     timeout: 30s                 # upstream I/O timeout: 504 past it (per route too)
 *     headers: {client: on, upstream: off}   # who sees the decision's fields (per route too)
 *     access_log: /var/log/sluice/gateway.log  # or stderr, or off (default); per route: off
 *     routes:                      # first match wins; no match: 404
 *       - name: api
 *         match: {path_prefix: /api/, methods: [GET, POST], host: api.example.com}
 *         upstream: http://127.0.0.1:9000   # or a list: round robin; https:// too
 *         tls_ca: FILE             # https upstreams: the CA (default: the system's)
 *         tls_verify: on           # off: take any certificate (for tests only)
 *         policies: [per_ip, per_user]   # all must pass
 *         excess: reject           # reject | delay | shadow
 *         status: 429              # reject: the status of a refusal
 *         body: "slow down\n"      # reject: its body
 *         queue: 1000              # delay, concurrency: most requests waiting on the route
 *         concurrency: {limit: 10, per: route, max_wait: 1s, status: 503}
 *     - name: shaped
 *         policies: [per_ip]       # excess: delay: each waits for the latest place
 *         excess: delay            # wait for the policy's schedule, up to max_delay
 *         max_delay: 2s            # default 1s
 *
 * listen and upstream may be one scalar or a list, which libcyaml cannot
 * describe: they are read from libyaml's document of the file's text.
 *
 * Not here: serving (gateway.c), matching a request (gateway_route.h), the
 * TLS contexts (gateway_tls.h).
 */
#ifndef SL_SERVER_GATEWAY_CONFIG_H
#define SL_SERVER_GATEWAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "server/config/config.h"
#include "server/config/section.h"

#define SLD_GW_MAX_ROUTES 1024
#define SLD_GW_MAX_METHODS 16
#define SLD_GW_MAX_POLICIES 8
#define SLD_GW_MAX_LISTENS 16
#define SLD_GW_MAX_UPSTREAMS 64

typedef enum sld_gw_excess {
    SLD_GW_REJECT,  /* answer the excess with `status` and the rate limit headers */
    SLD_GW_SHADOW,  /* forward it anyway; it is counted as denied */
    SLD_GW_DELAY    /* hold it until the policy's schedule admits it, up to max_delay */
} sld_gw_excess_t;

/* At most `limit` requests in flight to the upstream, per route or per
 * key (the first policy's key; the client's address when none). */
typedef struct sld_gw_concurrency {
    uint32_t limit;                  /* 0: no limit */
    bool per_key;                    /* per: key (default per: route) */
    sl_usec_t max_wait;              /* longest wait for a slot; default 0: none */
    uint32_t status;                 /* no slot within max_wait: default 503 */
} sld_gw_concurrency_t;

/* Which sides of a forwarded request see the decision's rate limit fields
 * (headers: {client: on|off, upstream: on|off}). */
typedef struct sld_gw_headers {
    bool client;                     /* on the response; default on, off on a shadow route */
    bool upstream;                   /* on the request forwarded; default off */
} sld_gw_headers_t;

typedef struct sld_gw_route {
    char *name;                      /* [A-Za-z0-9_.-]{1,64}, unique */
    char *path_prefix;               /* NULL: any path */
    size_t path_prefix_len;
    char **methods;                  /* upper case as written; none: any method */
    size_t nmethods;
    char *host;                      /* lower case, without a port; NULL: any host */
    char **upstreams;                /* "http[s]://host:port[/path]", round robin */
    size_t nupstreams;               /* >= 1 */
    const char *upstream;            /* upstreams[0] */
    SSL_CTX *tls;                    /* for its https:// upstreams; NULL: none is */
    bool tls_verify;                 /* verify their certificates (default on) */
    char *tls_ca;                    /* the CA file; NULL: the system's store */
    char **policies;                 /* names of configured policies, all must pass */
    size_t npolicies;
    sld_gw_excess_t excess;
    uint32_t status;                 /* reject: default 429 */
    char *body;                      /* reject: default "rate limit exceeded\n" */
    sl_usec_t timeout;               /* upstream I/O; default: the section's */
    sld_gw_concurrency_t concurrency;
    uint32_t queue;                  /* most requests waiting on the route; default 1000 */
    sl_usec_t max_delay;             /* delay: the longest hold; default 1 s */
    sld_gw_headers_t headers;        /* default: the section's */
    bool access_log;                 /* its requests are logged: the section logs, the route not off */
} sld_gw_route_t;

/* One of the gateway's listeners (gateway.listen). */
typedef struct sld_gw_listen {
    char addr[SLD_MAX_ADDR];         /* "a.b.c.d:port", "[v6]:port" */
    char *cert, *key;                /* tls: the PEM files; NULL: plain HTTP */
    SSL_CTX *tls;                    /* made from them; NULL: plain HTTP */
} sld_gw_listen_t;

typedef struct sld_gw_config {
    char listen[SLD_MAX_ADDR];       /* the first listener's address */
    sld_gw_listen_t *listens;        /* required, in the order written */
    size_t nlistens;                 /* 1..SLD_GW_MAX_LISTENS */
    sl_usec_t timeout;               /* default 30 s */
    char *access_log;                /* a file's path, or "stderr"; NULL: off (default) */
    sld_gw_route_t *routes;
    size_t nroutes;                  /* >= 1 */
} sld_gw_config_t;

/* The section "gateway" (register it with sld_config_sections_set()). */
extern const sld_config_section_t sld_gateway_section;

#endif
