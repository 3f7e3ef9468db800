/* secret.c -- constant-time comparison of secrets (secret.h). */
#include "server/base/secret.h"

bool sld_same_secret(const char *a, size_t alen, const char *b, size_t blen) {
    size_t n = alen > blen ? alen : blen;
    unsigned char diff = (unsigned char)(alen != blen);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < alen ? (unsigned char)a[i] : 0;
        unsigned char y = i < blen ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(x ^ y);
    }
    return diff == 0;
}
