/* http_framing.c -- ambiguous HTTP/1 framing (see http_framing.h).
 *
 * A header's name is compared up to its colon, case-insensitively; a name
 * followed by whitespace before the colon is not a valid field (h2o refuses
 * it before we see it) and is compared as written. Identical repeated
 * Content-Length values are refused too (RFC 9110, 8.6 lets a server
 * either): nginx does the same, and no legitimate client sends two.
 */
#include <string.h>

#include "server/http/http_framing.h"

/* Whether the line p (at least m + 1 bytes before its end) starts with the
 * header name `lower` (m bytes) and its colon. The first colon ends a name
 * and `lower` has none, so this is the name up to the first colon. */
static bool named(const char *p, const char *lower, size_t m) {
    if (p[m] != ':')
        return false;
    for (size_t i = 0; i < m; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (c != lower[i])
            return false;
    }
    return true;
}

#define CL "content-length"
#define TE "transfer-encoding"

const char *sld_http_framing_error(const char *buf, size_t len, bool http10) {
    unsigned content_length = 0, transfer_encoding = 0;
    const char *end = buf + len;
    const char *line = memchr(buf, '\n', len); /* the request line ends here */
    while (line != NULL && ++line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = (size_t)((nl ? nl : end) - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0)
            break; /* the empty line: the head is over */
        /* Most lines are neither name: one byte says so. */
        switch (line[0]) {
        case ' ':
        case '\t':
            return "a header line continues the one before it (obs-fold)";
        case 'C':
        case 'c':
            content_length += n > sizeof CL - 1 && named(line, CL, sizeof CL - 1);
            break;
        case 'T':
        case 't':
            transfer_encoding += n > sizeof TE - 1 && named(line, TE, sizeof TE - 1);
            break;
        default:
            break;
        }
        line = nl;
    }
    if (content_length > 1)
        return "more than one Content-Length header";
    if (transfer_encoding > 1)
        return "more than one Transfer-Encoding header";
    if (transfer_encoding && content_length)
        return "Transfer-Encoding and Content-Length together";
    if (transfer_encoding && http10)
        return "Transfer-Encoding in an HTTP/1.0 request";
    return NULL;
}
