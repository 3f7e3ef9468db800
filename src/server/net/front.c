/* front.c -- what every front's hooks share (see front.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/net/front.h"

void *sld_front_worker_new(size_t size, int fd, char *err, size_t err_len) {
    void *w = calloc(1, size);
    if (w == NULL) {
        close(fd);
        snprintf(err, err_len, "out of memory");
    }
    return w;
}
