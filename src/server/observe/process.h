/* process.h -- this process's own figures, as every Prometheus exporter
 * reports them (process_cpu_seconds_total, process_resident_memory_bytes,
 * ...), read the way the Prometheus client libraries read them: from
 * /proc/self/stat, /proc/stat, /proc/self/fd and the open-file limit.
 *
 * Not here: what the daemon counts itself (metrics.h, stats.h).
 */
#ifndef SL_SERVER_PROCESS_H
#define SL_SERVER_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sld_process {
    bool ok;                  /* the figures below were read (Linux /proc) */
    double cpu_seconds;       /* user + system time, all threads */
    uint64_t resident_bytes;  /* resident set size */
    uint64_t virtual_bytes;   /* virtual memory size */
    uint64_t open_fds;        /* descriptors open now */
    uint64_t max_fds;         /* the soft open-file limit */
    double start_time;        /* seconds since the Unix epoch */
} sld_process_t;

/* Reads this process's figures; out->ok is false (the rest zero) when
 * /proc cannot be read. Costs a few system calls and a directory walk of
 * the open descriptors: for a scrape or INFO, not for a decision. */
void sld_process_read(sld_process_t *out);

/* Parses the text of /proc/<pid>/stat (len bytes, not NUL-terminated):
 * cpu time, start time (relative to boot, in seconds), virtual and resident
 * memory, given the clock ticks per second and the page size. The command
 * name may hold spaces and parentheses (the last ')' ends it). Returns
 * false when the text is not such a line; *out is unchanged then. */
bool sld_process_parse_stat(const char *text, size_t len, long ticks, long page, sld_process_t *out);

/* Finds the "btime <seconds>" line of /proc/stat (the boot time). */
bool sld_process_parse_btime(const char *text, size_t len, uint64_t *btime);

#endif
