/* secret.h -- comparing a secret a client sent with the configured one.
 *
 * Used by the admin API's bearer token and the RESP front's requirepass.
 * The comparison takes the same time whatever matched, so the answer's
 * timing tells a guesser nothing about how much of a guess was right.
 *
 * Not here: where secrets come from (the configuration) or counting
 * failures (the fronts).
 */
#ifndef SL_SERVER_BASE_SECRET_H
#define SL_SERVER_BASE_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a[0..alen) equals b[0..blen). Every byte of the longer one is
 * looked at; only the lengths may show in the time taken. */
bool sld_same_secret(const char *a, size_t alen, const char *b, size_t blen);

#endif
