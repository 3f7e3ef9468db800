/* client.h -- an asynchronous Redis client on one libuv loop: standalone,
 * Sentinel or Cluster, with deadlines, reconnection and a circuit breaker.
 *
 * One client per event loop (per sluiced worker); everything happens on that
 * loop's thread. Commands go out as soon as they are sent; hiredis writes
 * everything queued in one loop turn with one write, so concurrent commands
 * to one node share a round trip (pipelining) without waiting on purpose.
 *
 * Its code is in client.c (a command's life, deadlines, the breaker, these
 * calls), connection.c, uv_adapter.c, routing.c and discovery.c, which
 * share client_private.h.
 *
 * Not here: what the commands mean (script.c, sync_cas.c), the daemon.
 */
#ifndef SL_STORE_REDIS_CLIENT_H
#define SL_STORE_REDIS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "url.h"

struct redisReply;

typedef struct sl__redis_client sl__redis_client_t;

typedef struct sl__redis_client_options {
    uint32_t timeout_ms;          /* per command, from send to reply; default 200 */
    uint32_t connect_timeout_ms;  /* default = timeout_ms */
    uint32_t breaker_failures;    /* consecutive failures that open it; default 5 */
    uint32_t breaker_cooldown_ms; /* open this long before one probe; default 1000 */
} sl__redis_client_options_t;

/* What became of a command. */
typedef enum sl__redis_status {
    SL__REDIS_OK = 0,        /* reply is the server's reply (possibly an error reply) */
    SL__REDIS_TIMEOUT,       /* no reply before the deadline */
    SL__REDIS_DOWN,          /* no connection, or it broke with the command in flight */
    SL__REDIS_BREAKER_OPEN,  /* not sent: the breaker is open */
    SL__REDIS_CLOSING        /* the client is closing */
} sl__redis_status_t;

/* Called exactly once per command on the loop's thread. reply is valid only
 * during the call and NULL unless status is SL__REDIS_OK. */
typedef void (*sl__redis_reply_fn)(void *arg, sl__redis_status_t status,
                                   const struct redisReply *reply);

/* Starts connecting (discovery for Sentinel/Cluster) in the background and
 * returns at once; commands sent before the connection is up wait for it
 * within their deadline. */
int sl__redis_client_new(uv_loop_t *loop, const sl__redis_url_t *url,
                         const sl__redis_client_options_t *opts, sl__redis_client_t **out);

/* Sends argv. key/key_len choose the Cluster slot (NULL: any node). script,
 * when the command is an EVALSHA of it, is loaded and the command resent on
 * NOSCRIPT; it is not copied and must stay valid until fn is called (the
 * embedded scripts are static). argv is copied (formatted) at once. Returns
 * 0, or an sl__redis_status_t when it could not be sent (then fn is not
 * called): SL__REDIS_BREAKER_OPEN, SL__REDIS_CLOSING, or SL__REDIS_DOWN
 * when the node is known down (waiting to reconnect) or argv is empty. */
int sl__redis_client_send(sl__redis_client_t *c, const char *key, size_t key_len, int argc,
                          const char *const *argv, const size_t *argvlen, const char *script,
                          size_t script_len, sl__redis_reply_fn fn, void *arg);

typedef struct sl__redis_client_stats {
    bool up;                  /* a connection to every known node */
    bool breaker_open;
    uint64_t sent;            /* commands accepted by send */
    uint64_t failed;          /* TIMEOUT, DOWN or BREAKER_OPEN (callback or return value) */
    uint64_t timeouts;        /* of which TIMEOUT */
    uint64_t reconnects;      /* connections re-established after one was lost */
    uint64_t redirects;       /* MOVED, ASK and READONLY resends */
    uint32_t in_flight;       /* sent, no callback yet (O(n) to count) */
    uint32_t nodes;           /* servers and sentinels in the node table */
} sl__redis_client_stats_t;

void sl__redis_client_stats(const sl__redis_client_t *c, sl__redis_client_stats_t *out);

/* Why the last connection attempt or connection failed ("connect
 * 127.0.0.1:6379: Connection refused"), or "". Valid until the next call. */
const char *sl__redis_client_last_error(const sl__redis_client_t *c);

/* Fails every pending command with SL__REDIS_CLOSING, disconnects, and calls
 * done(arg) once every handle is closed (the loop must keep running). */
void sl__redis_client_close(sl__redis_client_t *c, void (*done)(void *arg), void *arg);

#endif
