/* fuzz_resp.c -- libFuzzer target for the RESP request parser.
 *
 * Feeds the input the way a connection does: parse a command, drop the bytes
 * it used, parse the next, until the parser needs more or refuses. Every
 * argument must lie inside the bytes the parser said it used, and progress
 * must be made or the loop stop. Build and run: make fuzz.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/resp/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const sld_resp_limits_t lim = {.max_args = 64, .max_bulk = 4096, .max_inline = 1024};
    sld_arg_t argv[64];
    const char *p = (const char *)data;
    size_t left = size;
    for (;;) {
        size_t argc, need;
        const char *why;
        ssize_t used = sld_resp_parse(p, left, &lim, argv, &argc, &need, &why);
        if (used <= 0) {
            assert(used == SLD_RESP_ERROR || need == 0 || need > left);
            return 0;
        }
        assert((size_t)used <= left && argc <= lim.max_args);
        for (size_t i = 0; i < argc; i++)
            assert(argv[i].ptr >= p && argv[i].ptr + argv[i].len <= p + used);
        p += used;
        left -= (size_t)used;
    }
}
