/* fuzz_config.c -- libFuzzer target for the configuration loader.
 *
 * Any bytes as a configuration file: sld_config_parse() must return SL_OK
 * with a config (freed here) or an error with a message, never crash, leak
 * or read out of bounds; on error *out stays untouched. Short inputs also go
 * through the duration and size parsers.
 * Build and run: make fuzz (clang, ASan + UBSan, under CTest).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/config/config.h"
#include "server/daemon/front_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int registered = -1; /* the fronts' keys too, as sluiced reads the file */
    if (registered < 0)
        registered = sld_daemon_config_register();
    char err[SLD_MAX_ERROR];
    sld_config_t *cfg = NULL;
    int rc = sld_config_parse("fuzz.yaml", (const char *)data, size, &cfg, err, sizeof err);
    if (rc == SL_OK) {
        if (cfg == NULL || cfg->npolicies == 0)
            abort();
        sld_config_free(cfg);
    } else if (cfg != NULL || err[0] == '\0') {
        abort();
    }
    if (size < 64) {
        char text[64];
        memcpy(text, data, size);
        text[size] = '\0';
        sl_usec_t us;
        uint64_t bytes;
        sld_parse_duration(text, &us);
        sld_parse_size(text, &bytes);
    }
    return 0;
}
