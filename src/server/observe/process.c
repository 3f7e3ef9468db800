/* process.c -- this process's figures from /proc (see process.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/observe/process.h"

/* The fields of /proc/<pid>/stat after the command name, counted from the
 * state (field 3 of proc(5)). */
enum { F_UTIME = 14 - 3, F_STIME = 15 - 3, F_STARTTIME = 22 - 3, F_VSIZE = 23 - 3, F_RSS = 24 - 3 };

static bool field(const char *p, const char *end, int index, uint64_t *out) {
    for (int i = 0; i < index; i++) { /* skip `index` fields and their separators */
        while (p < end && *p != ' ')
            p++;
        while (p < end && *p == ' ')
            p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return false;
    uint64_t v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

bool sld_process_parse_stat(const char *text, size_t len, long ticks, long page, sld_process_t *out) {
    const char *end = text + len, *close = NULL;
    for (const char *p = text; p < end; p++) /* the name ends at the last ')' */
        if (*p == ')')
            close = p;
    if (close == NULL || close + 2 >= end || close[1] != ' ' || ticks <= 0 || page <= 0)
        return false;
    const char *state = close + 2;
    uint64_t utime, stime, start, vsize, rss;
    if (!field(state, end, F_UTIME, &utime) || !field(state, end, F_STIME, &stime) ||
        !field(state, end, F_STARTTIME, &start) || !field(state, end, F_VSIZE, &vsize) ||
        !field(state, end, F_RSS, &rss))
        return false;
    out->cpu_seconds = (double)(utime + stime) / (double)ticks;
    out->start_time = (double)start / (double)ticks;
    out->virtual_bytes = vsize;
    out->resident_bytes = rss * (uint64_t)page;
    return true;
}

bool sld_process_parse_btime(const char *text, size_t len, uint64_t *btime) {
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        if (stop - line > 6 && memcmp(line, "btime ", 6) == 0)
            return field(line + 6, stop, 0, btime);
        line = stop + 1;
    }
    return false;
}

/* A whole small /proc file; its size is unknown beforehand (stat() says 0). */
static size_t slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ssize_t n;
    while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
        len += (size_t)n;
    close(fd);
    return len;
}

static uint64_t count_fds(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL)
        return 0;
    uint64_t n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(dir); /* its own descriptor was counted, as the client libraries do */
    return n;
}

/* btime sits after a line per CPU: read /proc/stat line by line, so no
 * machine has too many CPUs for a buffer. It never changes, and the kernel
 * works out every CPU's figures to write that file: read it once. */
static bool boot_time(uint64_t *btime) {
    static _Atomic uint64_t known; /* 0 = not read yet */
    if ((*btime = atomic_load_explicit(&known, memory_order_relaxed)) != 0)
        return true;
    FILE *f = fopen("/proc/stat", "re");
    if (f == NULL)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = sld_process_parse_btime(line, strlen(line), btime);
    fclose(f);
    if (found)
        atomic_store_explicit(&known, *btime, memory_order_relaxed);
    return found;
}

void sld_process_read(sld_process_t *out) {
    sld_process_t p = {0};
    char stat[1024];
    size_t len = slurp("/proc/self/stat", stat, sizeof stat);
    uint64_t btime = 0;
    if (!sld_process_parse_stat(stat, len, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), &p) ||
        !boot_time(&btime)) {
        memset(out, 0, sizeof *out);
        return;
    }
    p.start_time += (double)btime;
    p.open_fds = count_fds();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        p.max_fds = (uint64_t)rl.rlim_cur;
    p.ok = true;
    *out = p;
}
