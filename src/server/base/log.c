/* log.c -- timestamped log lines on stderr, written whole (one write per
 * line, so lines of different threads never interleave). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/base/log.h"

static _Atomic int min_level = SLD_LOG_INFO;

void sld_log_set_level(sld_log_level_t level) { atomic_store(&min_level, (int)level); }

void sld_log(sld_log_level_t level, const char *fmt, ...) {
    if ((int)level < atomic_load(&min_level))
        return;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ %s ", ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    n = k < 0 ? n : n + (size_t)k < sizeof line - 1 ? n + (size_t)k : sizeof line - 2;
    line[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
}
