/* decimal.h -- integers written as decimal text into a caller's bytes,
 * without printf (which costs more than a decision: an HTTP answer writes
 * about a dozen numbers).
 *
 * The caller makes room for SLD_DEC_MAX bytes and gets back the end of what
 * was written: no NUL, no allocation, so a reply can reserve its whole
 * length once and write numbers and literals one after the other.
 *
 * Not here: growing a buffer (buf.h, whose sld_buf_append_u64 uses this),
 * parsing numbers.
 */
#ifndef SL_SERVER_BASE_DECIMAL_H
#define SL_SERVER_BASE_DECIMAL_H

#include <stdint.h>
#include <string.h> /* SLD_PUT_LIT */

/* The longest text either function writes: UINT64_MAX's 20 digits, or
 * INT64_MIN's sign and 19 digits. */
#define SLD_DEC_MAX 20

/* v in decimal at dst (room for SLD_DEC_MAX bytes); returns the end. */
char *sld_dec_u64(char *dst, uint64_t v);
/* v in decimal, '-' first when negative; returns the end. */
char *sld_dec_i64(char *dst, int64_t v);

/* Microseconds as whole milliseconds, rounded up: a "retry in" or a TTL
 * must never say sooner than it is. */
static inline int64_t sld_ms_up(int64_t us) { return us / 1000 + (us % 1000 != 0); }

/* Copies string literal lit to p (room known) and returns the end. */
#define SLD_PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

#endif
