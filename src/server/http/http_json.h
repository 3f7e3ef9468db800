/* http_json.h -- JSON strings, both ways of UTF-8: the well-formed
 * sequence at a point (for the check parser's strings) and the JSON string
 * literal of any bytes (for every JSON answer). No allocation but the
 * caller's buffer.
 */
#ifndef SL_SERVER_HTTP_JSON_H
#define SL_SERVER_HTTP_JSON_H

#include <stddef.h>

#include "server/base/buf.h"

/* The UTF-8 sequence at s[0..n) (n >= 1), by the Unicode table of
 * well-formed sequences: its length, 1 to 4, or 0 if it is not one, with
 * *bad = how many bytes one U+FFFD replaces (at least 1). */
size_t sld_utf8_seq(const unsigned char *s, size_t n, size_t *bad);

/* Appends s[0..len) as a JSON string literal (quotes and escapes included;
 * bytes that are not valid UTF-8 become U+FFFD). */
void sld_json_string(sld_buf_t *out, const char *s, size_t len);

#endif
