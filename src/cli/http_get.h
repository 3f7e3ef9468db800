/* http_get.h -- one plain HTTP GET, for the sluice tool's `top`: connect,
 * ask, read the whole answer, close. HTTP/1.0, so the body ends at the
 * close (never chunked); no TLS, no redirects, no proxies: the daemon's
 * own HTTP front, usually on loopback.
 *
 * Not here: what the body means (top.c).
 */
#ifndef SL_CLI_HTTP_GET_H
#define SL_CLI_HTTP_GET_H

#include <stddef.h>

#define SL_HTTP_GET_MAX (64u << 20) /* bytes of an answer, at most */

typedef struct sl_http_answer {
    int status;        /* 200, 401, ...; 0 when there was no answer */
    char *body;        /* NUL-terminated, malloc'd (free it); NULL on failure */
    size_t body_len;
    char error[160];   /* why there is no answer */
} sl_http_answer_t;

/* GET path from host:port (a name or address), with `Authorization:
 * Bearer token` when token is not NULL, within timeout_ms for the connect
 * and for each read. Returns 0 with *out filled (any status), or -1 with
 * out->error saying why. */
int sl_http_get(const char *host, const char *port, const char *path, const char *token,
                int timeout_ms, sl_http_answer_t *out);

#endif
