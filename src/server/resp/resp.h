/* resp.h -- the Redis protocol: parsing requests, encoding replies (RESP2,
 * and the RESP3 types a connection that said HELLO 3 reads).
 *
 * The parser is pure and stateless, like picohttpparser: give it the bytes
 * received so far, it returns how many make up the next command (and points
 * argv into them, copying nothing), or that more are needed, or that they are
 * not RESP. Both forms are understood: multibulk (*N\r\n$L\r\n...), which
 * every client library sends, and inline (a line of words), which people type
 * into telnet or nc. Hard limits on argument count, bulk size and line size
 * keep a hostile client from making it allocate or loop.
 */
#ifndef SL_SERVER_RESP_H
#define SL_SERVER_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "server/base/buf.h"

typedef struct sld_arg {
    const char *ptr;  /* into the caller's buffer; not NUL-terminated */
    size_t len;
} sld_arg_t;

typedef struct sld_resp_limits {
    size_t max_args;     /* arguments of one command, command name included */
    size_t max_bulk;     /* bytes of one argument */
    size_t max_inline;   /* bytes of one inline command line */
} sld_resp_limits_t;

#define SLD_RESP_NEED_MORE 0
#define SLD_RESP_ERROR (-1)

/* Parses the command at the start of buf[0..len).
 * Returns the bytes it occupies (> 0) and fills argv[0..*argc) — *argc may
 * be 0 for an empty command (a blank line, "*0"), which is to be skipped;
 * or SLD_RESP_NEED_MORE, with *need set to the total length it needs at
 * least (0 when unknown), so a caller can wait for that much before trying
 * again; or SLD_RESP_ERROR with *why set to a static message (the bytes
 * are not RESP, or break a limit: the connection must be closed).
 * argv must hold lim->max_args entries. */
ssize_t sld_resp_parse(const char *buf, size_t len, const sld_resp_limits_t *lim, sld_arg_t *argv,
                       size_t *argc, size_t *need, const char **why);

/* Reply encoders. */
void sld_reply_ok(sld_buf_t *out);
void sld_reply_simple(sld_buf_t *out, const char *text);
/* text is the whole message, starting with the error code: "ERR ...". */
void sld_reply_error(sld_buf_t *out, const char *text);
void sld_reply_errorf(sld_buf_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sld_reply_int(sld_buf_t *out, int64_t n);
/* An array of n integers, written in one go. */
void sld_reply_ints(sld_buf_t *out, const int64_t *v, size_t n);
void sld_reply_bulk(sld_buf_t *out, const void *data, size_t len);
void sld_reply_bulk_str(sld_buf_t *out, const char *s);
/* RESP2's null bulk string ("$-1"); a reply that a RESP3 connection may
 * read takes sld_reply_nil. */
void sld_reply_null(sld_buf_t *out);
void sld_reply_array(sld_buf_t *out, size_t n);

/* The types that differ by protocol: proto is the connection's, 2 or 3
 * (HELLO). In RESP2 they fall back as Redis's do. */
#define SLD_PROTO_2 2
#define SLD_PROTO_3 3
/* null: "_" (RESP3), "$-1" (RESP2) */
void sld_reply_nil(sld_buf_t *out, int proto);
/* A map of `pairs` key/value pairs, written after it: "%n", or an array of
 * 2n elements. */
void sld_reply_map(sld_buf_t *out, int proto, size_t pairs);
/* A set of n elements, written after it: "~n", or an array. */
void sld_reply_set(sld_buf_t *out, int proto, size_t n);
/* Text for people (INFO): a verbatim string of format "txt", or a bulk string. */
void sld_reply_verbatim(sld_buf_t *out, int proto, const void *data, size_t len);

/* Whether s (n bytes) is `upper` (n bytes, upper case) in any case: ASCII
 * a-z fold, no other byte does. Inline: the command lookup calls it once per
 * table row of the same length. strncasecmp did the same through the
 * locale's tables: a PING met five names before its own, 4.9 % of the
 * daemon's CPU samples answering PING (bench/README.md). */
static inline bool sld_name_is(const char *upper, const char *s, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* sent in upper case, as clients mostly do: 8 bytes a step */
        uint64_t a, b;
        memcpy(&a, upper + i, 8);
        memcpy(&b, s + i, 8);
        if (a != b)
            break;
    }
    for (; i < n; i++) {
        unsigned ch = (unsigned char)s[i];
        if (ch - 'a' < 26u)
            ch -= 'a' - 'A';
        if (ch != (unsigned char)upper[i])
            return false;
    }
    return true;
}
/* Case-insensitive comparison of an argument with a NUL-terminated word. */
int sld_arg_is(const sld_arg_t *a, const char *word);
/* Parses a whole argument as a decimal int64 ("-12"); 0 or SL_EINVAL. */
int sld_arg_int(const sld_arg_t *a, int64_t *out);

#endif
