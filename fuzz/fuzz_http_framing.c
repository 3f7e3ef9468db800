/* fuzz_http_framing.c -- libFuzzer target for the HTTP/1 framing check
 * (src/server/http/http_framing.c). Any bytes, as HTTP/1.1 and as HTTP/1.0: the
 * check must stay inside them and answer NULL or one of its sentences; a
 * verdict is deterministic, and a head judged ambiguous in HTTP/1.1 is
 * ambiguous in HTTP/1.0 too. Build and run: make fuzz.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_framing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data;
    const char *v11 = sld_http_framing_error(p, size, false);
    const char *v10 = sld_http_framing_error(p, size, true);
    assert(sld_http_framing_error(p, size, false) == v11);
    assert(v11 == NULL || v10 != NULL);
    assert(v10 == NULL || strlen(v10) > 0);
    return 0;
}
