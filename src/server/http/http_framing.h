/* http_framing.h -- is an HTTP/1 request's framing unambiguous?
 *
 * A request whose length two parsers can read differently is a
 * request-smuggling door when sluiced stands behind a proxy: the proxy
 * frames the body one way, sluiced another, and the rest of one request
 * becomes the next. RFC 9112 asks a server to refuse such a request and
 * close the connection (6.3: Transfer-Encoding with Content-Length, several
 * or differing Content-Length; 5.2: obs-fold). libh2o 2.2 serves them:
 * it frames by the first Content-Length (or by Transfer-Encoding) and keeps
 * neither header in req->headers, so the head is read again here.
 *
 * Pure: bytes in, a verdict out; no allocation. Not here: parsing the
 * request (h2o's), answering it (http.c).
 */
#ifndef SL_SERVER_HTTP_FRAMING_H
#define SL_SERVER_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

/* Looks at the header lines of the request head at buf[0..len) (the request
 * line, header lines, then an empty line; CRLF or bare LF) and returns NULL
 * when its framing is unambiguous, else a static sentence saying why not:
 * a folded header line (obs-fold), more than one Content-Length line, more
 * than one Transfer-Encoding line, Transfer-Encoding with Content-Length,
 * or Transfer-Encoding in an HTTP/1.0 request (`http10`). Only the head is
 * looked at: bytes after its empty line are ignored, and a head without
 * its empty line inside len is judged on the lines it has. */
const char *sld_http_framing_error(const char *buf, size_t len, bool http10);

#endif
