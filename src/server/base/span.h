/* span.h -- a run of bytes seen in someone else's buffer: pointer and length.
 *
 * What the fronts parse (a header value, a query parameter, a JSON string)
 * and what the key builder reads (keys/forward.h) is handed over as spans:
 * no copy, no NUL terminator, not owned. A missing value has ptr NULL; an
 * empty one has a ptr and len 0. Only the type lives here, so that every
 * room can use it without depending on a front.
 */
#ifndef SL_SERVER_BASE_SPAN_H
#define SL_SERVER_BASE_SPAN_H

#include <stddef.h>

typedef struct sld_span {
    const char *ptr;   /* NULL: absent */
    size_t len;
} sld_span_t;

#endif
