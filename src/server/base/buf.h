/* buf.h -- a growable byte buffer for replies and requests.
 *
 * Appends never fail silently: the first allocation failure makes the buffer
 * sticky-failed (every later append is a no-op) and the owner checks
 * buf->failed once, when it sends. */
#ifndef SL_SERVER_BUF_H
#define SL_SERVER_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sld_buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;  /* an allocation failed; the content is incomplete */
} sld_buf_t;

/* Makes room for `more` bytes after len; false (and failed set) if it cannot. */
bool sld_buf_reserve(sld_buf_t *b, size_t more);
void sld_buf_append(sld_buf_t *b, const void *data, size_t len);
void sld_buf_append_str(sld_buf_t *b, const char *s);
/* A decimal number, without printf (which costs more than a decision). */
void sld_buf_append_u64(sld_buf_t *b, uint64_t v);
void sld_buf_append_i64(sld_buf_t *b, int64_t v);
/* A string literal, its length known at compile time. */
#define sld_buf_append_lit(b, lit) sld_buf_append((b), (lit), sizeof(lit) - 1)
/* printf into the buffer. */
void sld_buf_printf(sld_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (what has been sent or consumed). */
void sld_buf_consume(sld_buf_t *b, size_t n);
void sld_buf_reset(sld_buf_t *b);
void sld_buf_free(sld_buf_t *b);

#endif
