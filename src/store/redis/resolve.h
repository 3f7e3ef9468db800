/* resolve.h -- host names to every address they have, for anything sluiced
 * connects to (Redis servers, sentinels, Cluster nodes; gateway upstreams
 * when they come): numeric addresses in the resolver's order (IPv6 and IPv4
 * as getaddrinfo() sorts them), duplicates dropped, and either at once
 * (blocking, for start-up checks) or on a libuv loop without blocking it
 * (uv_getaddrinfo runs on libuv's thread pool).
 *
 * A caller that connects walks the list in order and gives up on a name
 * only when every address failed; it resolves again before its next round,
 * so a name whose addresses change is followed.
 *
 * Tests can replace the system resolver with a function of their own
 * (sl__resolve_set_hook) to give a name any list of addresses.
 *
 * Not here: connecting, timeouts, what to do when every address fails.
 */
#ifndef SL_STORE_REDIS_RESOLVE_H
#define SL_STORE_REDIS_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#define SL__RESOLVE_MAX 8      /* addresses kept per name; more are dropped */
#define SL__RESOLVE_ADDR_LEN 46 /* INET6_ADDRSTRLEN: an address as text */

typedef struct sl__resolved {
    size_t n;                                      /* 0 .. SL__RESOLVE_MAX */
    char addr[SL__RESOLVE_MAX][SL__RESOLVE_ADDR_LEN]; /* numeric, IPv6 without brackets */
} sl__resolved_t;

/* Whether host is an IPv4 or IPv6 address already (nothing to resolve). */
bool sl__resolve_is_numeric(const char *host);

/* Blocking: fills *out with host's addresses (host itself when numeric).
 * Returns 0, or -1 with the resolver's reason in err. */
int sl__resolve_now(const char *host, sl__resolved_t *out, char *err, size_t err_len);

/* A list as text, "::1, 127.0.0.1", into buf (for logs). */
const char *sl__resolve_format(const sl__resolved_t *r, char *buf, size_t len);

/* The answer of an asynchronous resolution, on the loop's thread. rc 0 with
 * the list (at least one address), or -1 with the reason in err. */
typedef void (*sl__resolve_fn)(void *arg, int rc, const sl__resolved_t *addrs, const char *err);

typedef struct sl__resolve_req sl__resolve_req_t;

/* Starts resolving host on loop; fn(arg, ...) is called exactly once, later
 * (never from inside this call), unless the request is cancelled first.
 * A numeric host is answered on the next loop turn without a lookup.
 * Returns the request, or NULL when out of memory (fn is not called). */
sl__resolve_req_t *sl__resolve_start(uv_loop_t *loop, const char *host, sl__resolve_fn fn,
                                     void *arg);

/* fn will not be called; the request frees itself once the lookup in the
 * thread pool (if any) ends. done(done_arg), when not NULL, is called
 * then, so a caller closing its loop can wait for it. */
void sl__resolve_cancel(sl__resolve_req_t *req, void (*done)(void *arg), void *done_arg);

/* Tests: hook(host, out) replaces the system resolver for every later call
 * (blocking and asynchronous) when it returns 0 or -1; it returns 1 to let
 * the system resolve that name. NULL restores the system resolver. */
typedef int (*sl__resolve_hook_fn)(const char *host, sl__resolved_t *out);
void sl__resolve_set_hook(sl__resolve_hook_fn hook);

#endif
