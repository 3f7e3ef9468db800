/* snapshot.h -- the snapshot file format: writing and verified reading.
 *
 * Knows the bytes on disk, nothing of tables or locks: the memory store feeds
 * records to a writer and takes records from a read snapshot.
 *
 * Format, version 1, little-endian:
 *   header  "SLUICESN" u32 version=1 u32 header_bytes=40 u64 seed i64 saved_at u64 flags=0
 *   record  u32 kind (0 inline, 1 block) u64 tag i64 expire_at, then
 *           inline: u64 word
 *           block:  u32 block_kind u32 cap u32 head u32 count, cap words of
 *                   4 bytes (8 for LOG64)
 *   trailer u64 record_count u64 checksum "SLUICEND"
 * The checksum is XXH3-64 of every byte before it.
 */
#ifndef SL_STORE_SNAPSHOT_H
#define SL_STORE_SNAPSHOT_H

#include <sys/types.h>

#include "../core/limit.h"

/* write(2), replaceable by tests that need a full disk at a chosen byte. */
extern ssize_t (*sl__snapshot_write_fn)(int fd, const void *buf, size_t n);

typedef struct sl__record {
    uint64_t tag;         /* the slot's tag, flags cleared */
    sl_usec_t expire_at;
    uint64_t word;
    sl__block_t *block;   /* NULL for inline state */
} sl__record_t;

typedef struct sl__snapshot_writer sl__snapshot_writer_t;

/* Opens a temporary file beside `path` and writes the header. */
int sl__snapshot_begin(const char *path, uint64_t seed, sl_usec_t saved_at,
                       sl__snapshot_writer_t **out);
/* Appends a record to the writer's buffer (no I/O; cheap under a lock). */
int sl__snapshot_add(sl__snapshot_writer_t *w, const sl__record_t *r);
/* Writes the buffered records out. */
int sl__snapshot_flush(sl__snapshot_writer_t *w);
/* Writes the trailer, fsyncs, renames over `path`, fsyncs the directory;
 * frees the writer. On error the temporary file is removed, `path` is left
 * as it was unless only the directory's fsync failed, and after SL_EIO
 * errno holds the system's reason (every call here that fails with SL_EIO
 * does the same). */
int sl__snapshot_finish(sl__snapshot_writer_t *w);
/* Removes the temporary file and frees the writer. */
void sl__snapshot_abandon(sl__snapshot_writer_t *w);

typedef struct sl__snapshot {
    uint64_t seed;
    sl_usec_t saved_at;
    size_t count;           /* live records */
    sl__record_t *records;  /* blocks are malloc'd; take one by setting it NULL */
} sl__snapshot_t;

/* Verifies a whole snapshot in buf[0..len) and keeps the records that have
 * not recovered at `now`. Pure: no I/O; nothing is kept on error. */
int sl__snapshot_parse(const unsigned char *buf, size_t len, sl_usec_t now, sl__snapshot_t *out);
/* Reads the file at `path` and parses it. SL_EIO: unreadable, errno says
 * why (EISDIR or EINVAL: not a regular file). */
int sl__snapshot_read(const char *path, sl_usec_t now, sl__snapshot_t *out);
/* Frees the records and any block not taken. */
void sl__snapshot_release(sl__snapshot_t *s);

#endif
