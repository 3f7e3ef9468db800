/* buf.c -- a growable byte buffer (see buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/buf.h"
#include "server/base/decimal.h"

bool sld_buf_reserve(sld_buf_t *b, size_t more) {
    if (b->failed)
        return false;
    if (more <= b->cap - b->len)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < more) {
        if (cap > ((size_t)-1) / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *data = realloc(b->data, cap);
    if (data == NULL) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

void sld_buf_append(sld_buf_t *b, const void *data, size_t len) {
    if (len == 0 || !sld_buf_reserve(b, len))
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void sld_buf_append_str(sld_buf_t *b, const char *s) { sld_buf_append(b, s, strlen(s)); }

void sld_buf_printf(sld_buf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sld_buf_reserve(b, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sld_buf_consume(sld_buf_t *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void sld_buf_reset(sld_buf_t *b) {
    b->len = 0;
    b->failed = false;
}

void sld_buf_free(sld_buf_t *b) {
    free(b->data);
    *b = (sld_buf_t){0};
}

void sld_buf_append_u64(sld_buf_t *b, uint64_t v) {
    if (sld_buf_reserve(b, SLD_DEC_MAX))
        b->len = (size_t)(sld_dec_u64(b->data + b->len, v) - b->data);
}

void sld_buf_append_i64(sld_buf_t *b, int64_t v) {
    if (sld_buf_reserve(b, SLD_DEC_MAX))
        b->len = (size_t)(sld_dec_i64(b->data + b->len, v) - b->data);
}
