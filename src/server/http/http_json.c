/* http_json.c -- UTF-8 sequences by the Unicode table, and JSON string
 * literals of any bytes (see http_json.h): what the check parser validates
 * strings with, and what every JSON answer writes them with.
 */
#include <stdint.h>
#include <string.h>

#include "server/http/http_json.h"

/* The UTF-8 sequence at s[0..n) (n >= 1), by the Unicode table of well-formed
 * sequences (no overlong forms, no surrogates, nothing above U+10FFFF):
 * its length, 1 to 4, or 0 if it is not one, with *bad = how many bytes one
 * U+FFFD replaces (the "maximal subpart": the lead byte and the continuation
 * bytes that fit it, at least 1). */
size_t sld_utf8_seq(const unsigned char *s, size_t n, size_t *bad) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t more;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        more = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F would be overlong */
        hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF would be a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        more = 3;
        lo = c == 0xF0 ? 0x90 : 0x80; /* F0 80..8F would be overlong */
        hi = c == 0xF4 ? 0x8F : 0xBF; /* F4 90.. would be above U+10FFFF */
    } else {
        *bad = 1; /* a continuation byte, C0, C1 (overlong), F5..FF */
        return 0;
    }
    size_t i = 1;
    for (; i <= more && i < n && s[i] >= lo && s[i] <= hi; i++) {
        lo = 0x80; /* only the second byte has narrower bounds */
        hi = 0xBF;
    }
    if (i == more + 1)
        return i;
    *bad = i;
    return 0;
}

void sld_json_string(sld_buf_t *out, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the bytes copied as they are */
    sld_buf_append(out, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        size_t k = 1, bad = 1;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0x80 && (k = sld_utf8_seq(u + i, len - i, &bad)) != 0) {
            i += k;
            continue;
        }
        sld_buf_append(out, s + run, i - run);
        if (c >= 0x80) {
            sld_buf_append(out, "\xEF\xBF\xBD", 3); /* U+FFFD for the maximal subpart */
        } else {
            char esc[6] = {'\\', 0, 0, 0, 0, 0};
            size_t n = 2;
            switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            default:
                memcpy(esc + 1, "u00", 3);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
                break;
            }
            sld_buf_append(out, esc, n);
        }
        i += bad;
        run = i;
    }
    if (len > run)
        sld_buf_append(out, s + run, len - run);
    sld_buf_append(out, "\"", 1);
}
