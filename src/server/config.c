/* config.c -- placeholder until the loader lands. */
#include "config.h"

int sld_config_parse(const char *name, const char *yaml, size_t len, sld_config_t **out, char *err,
                     size_t err_len) {
    (void)name, (void)yaml, (void)len, (void)out, (void)err, (void)err_len;
    return SL_ENOTSUP;
}
