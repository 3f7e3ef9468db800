/* gateway_spool.c -- libh2o's large buffers to temporary files (see
 * gateway_spool.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>
#include <h2o/socket.h>

#include "server/gateway/gateway_spool.h"

const char *sld_gw_spool_setup(void) {
    static char dir[FILENAME_MAX - 32];
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) >= sizeof dir)
        tmp = "/tmp";
    snprintf(dir, sizeof dir, "%s", tmp);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    snprintf(h2o_socket_buffer_mmap_settings.fn_template, sizeof h2o_socket_buffer_mmap_settings.fn_template,
             "%s/sluiced.body.XXXXXX", n > 1 ? dir : "");
    h2o_socket_buffer_mmap_settings.threshold = SLD_GW_SPOOL_THRESHOLD;
    return dir;
}
