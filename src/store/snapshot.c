/* snapshot.c -- writing snapshot files atomically, reading them verified.
 *
 * Writing goes to "<path>.tmp.<pid>" and is renamed over <path> only once the
 * whole file is on disk, so a crash leaves the previous snapshot intact.
 * Reading verifies the magic, the version, the trailer and the checksum of
 * the whole file, then parses every record with bounds checks, before it
 * hands anything over: a damaged file loads nothing.
 *
 * Every SL_EIO leaves errno at the system's reason (ENOSPC, EROFS, EACCES,
 * ...), saved across the cleanup that follows, so that the caller can name
 * it: "input/output error" alone sends an operator the wrong way.
 *
 * Not here: which records exist (the memory store) or what they mean (core).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "snapshot.h"

#define MAGIC "SLUICESN"
#define MAGIC_END "SLUICEND"
#define VERSION 1u
#define HEADER_BYTES 40u
#define TRAILER_BYTES 24u
#define KIND_INLINE 0u
#define KIND_BLOCK 1u

/* ---- little-endian encoding ------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

ssize_t (*sl__snapshot_write_fn)(int fd, const void *buf, size_t n) = write;

/* ---- writer ------------------------------------------------------------------ */

struct sl__snapshot_writer {
    int fd;
    char *path;
    char *tmp;
    XXH3_state_t *sum;
    uint64_t records;
    unsigned char *buf;
    size_t len, cap;
    int err;        /* sticky: once set, later calls return it */
    int sys_errno;  /* with err == SL_EIO: the system's reason */
};

/* Records the system's reason for an SL_EIO (errno as the failed call left it). */
static int io_failed(sl__snapshot_writer_t *w) {
    w->sys_errno = errno ? errno : EIO;
    return w->err = SL_EIO;
}

static int reserve(sl__snapshot_writer_t *w, size_t more) {
    if (w->len + more <= w->cap)
        return SL_OK;
    size_t cap = w->cap ? w->cap : 1 << 16;
    while (cap < w->len + more)
        cap *= 2;
    unsigned char *buf = realloc(w->buf, cap);
    if (buf == NULL)
        return w->err = SL_ENOMEM;
    w->buf = buf;
    w->cap = cap;
    return SL_OK;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t k = sl__snapshot_write_fn(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            errno = EIO; /* no progress and no reason given */
        if (k <= 0)
            return SL_EIO;
        p += k;
        n -= (size_t)k;
    }
    return SL_OK;
}

int sl__snapshot_flush(sl__snapshot_writer_t *w) {
    if (w->err)
        return w->err;
    XXH3_64bits_update(w->sum, w->buf, w->len);
    if (write_all(w->fd, w->buf, w->len) != SL_OK)
        return io_failed(w);
    w->len = 0;
    return SL_OK;
}

static void writer_free(sl__snapshot_writer_t *w) {
    if (w->fd >= 0)
        close(w->fd);
    if (w->sum)
        XXH3_freeState(w->sum);
    free(w->buf);
    free(w->path);
    free(w->tmp);
    free(w);
}

int sl__snapshot_begin(const char *path, uint64_t seed, sl_usec_t saved_at,
                       sl__snapshot_writer_t **out) {
    sl__snapshot_writer_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return SL_ENOMEM;
    w->fd = -1;
    size_t n = strlen(path) + 32;
    w->path = strdup(path);
    w->tmp = malloc(n);
    w->sum = XXH3_createState();
    if (!w->path || !w->tmp || !w->sum || XXH3_64bits_reset(w->sum) != XXH_OK) {
        writer_free(w);
        return SL_ENOMEM;
    }
    snprintf(w->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        int why = errno;
        writer_free(w);
        errno = why;
        return SL_EIO;
    }
    if (reserve(w, HEADER_BYTES) != SL_OK) {
        sl__snapshot_abandon(w);
        return SL_ENOMEM;
    }
    unsigned char *h = w->buf;
    memcpy(h, MAGIC, 8);
    put_u32(h + 8, VERSION);
    put_u32(h + 12, HEADER_BYTES);
    put_u64(h + 16, seed);
    put_u64(h + 24, (uint64_t)saved_at);
    put_u64(h + 32, 0);
    w->len = HEADER_BYTES;
    *out = w;
    return SL_OK;
}

int sl__snapshot_add(sl__snapshot_writer_t *w, const sl__record_t *r) {
    if (w->err)
        return w->err;
    const sl__block_t *b = r->block;
    size_t payload = b ? 16 + sl__block_data_bytes(b->kind, b->cap) : 8;
    if (reserve(w, 20 + payload) != SL_OK)
        return w->err;
    unsigned char *p = w->buf + w->len;
    put_u32(p, b ? KIND_BLOCK : KIND_INLINE);
    put_u64(p + 4, r->tag);
    put_u64(p + 12, (uint64_t)r->expire_at);
    p += 20;
    if (b == NULL) {
        put_u64(p, r->word);
    } else {
        put_u32(p, b->kind);
        put_u32(p + 4, b->cap);
        put_u32(p + 8, b->head);
        put_u32(p + 12, b->count);
        p += 16;
        size_t words = (size_t)sl__block_words(b->kind) * b->cap;
        for (size_t i = 0; i < words; i++)
            put_u32(p + 4 * i, b->data[i]);
    }
    w->len += 20 + payload;
    w->records++;
    return SL_OK;
}

static int sync_dir(sl__snapshot_writer_t *w) {
    char *copy = strdup(w->path);
    if (copy == NULL)
        return w->err = SL_ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return io_failed(w);
    int rc = fsync(fd) == 0 ? SL_OK : io_failed(w);
    close(fd);
    return rc;
}

int sl__snapshot_finish(sl__snapshot_writer_t *w) {
    int rc = sl__snapshot_flush(w);
    if (rc == SL_OK)
        rc = reserve(w, TRAILER_BYTES);
    if (rc == SL_OK) {
        put_u64(w->buf, w->records);
        XXH3_64bits_update(w->sum, w->buf, 8);
        put_u64(w->buf + 8, XXH3_64bits_digest(w->sum));
        memcpy(w->buf + 16, MAGIC_END, 8);
        if ((rc = write_all(w->fd, w->buf, TRAILER_BYTES)) != SL_OK)
            io_failed(w);
    }
    /* a full disk may show only here (delayed allocation, NFS) */
    if (rc == SL_OK && fsync(w->fd) != 0)
        rc = io_failed(w);
    if (rc == SL_OK) {
        int fd = w->fd;
        w->fd = -1;
        if (close(fd) != 0 || rename(w->tmp, w->path) != 0)
            rc = io_failed(w);
    }
    if (rc == SL_OK)
        rc = sync_dir(w);
    if (rc != SL_OK) {
        sl__snapshot_abandon(w);
        return rc;
    }
    writer_free(w);
    return SL_OK;
}

void sl__snapshot_abandon(sl__snapshot_writer_t *w) {
    if (w == NULL)
        return;
    int why = w->err == SL_EIO ? w->sys_errno : errno;
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    unlink(w->tmp);
    writer_free(w);
    errno = why;
}

/* ---- reader ------------------------------------------------------------------ */

static int read_file(const char *path, unsigned char **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SL_EIO;
    struct stat st;
    int why = 0;
    if (fstat(fd, &st) != 0)
        why = errno;
    else if (!S_ISREG(st.st_mode))
        why = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    else if ((uint64_t)st.st_size > SIZE_MAX / 2)
        why = EFBIG;
    if (why) {
        close(fd);
        errno = why;
        return SL_EIO;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        close(fd);
        return SL_ENOMEM;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, buf + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* shrank while reading: verified below like any truncation */
        got += (size_t)k;
    }
    close(fd);
    *out = buf;
    *len = got;
    return SL_OK;
}

/* One record at p (n bytes left): its length, or 0 if malformed. */
static size_t parse_record(const unsigned char *p, size_t n, sl__record_t *r, sl__block_t *head) {
    if (n < 28)
        return 0;
    uint32_t kind = get_u32(p);
    head->kind = SL__BLOCK_NONE;
    r->tag = get_u64(p + 4);
    r->expire_at = (sl_usec_t)get_u64(p + 12);
    r->word = 0;
    r->block = NULL;
    if (r->tag == 0 || (kind != KIND_INLINE && kind != KIND_BLOCK))
        return 0;
    if (kind == KIND_INLINE) {
        r->word = get_u64(p + 20);
        return 28;
    }
    if (n < 36)
        return 0;
    head->kind = get_u32(p + 20);
    head->cap = get_u32(p + 24);
    head->head = get_u32(p + 28);
    head->count = get_u32(p + 32);
    if (!sl__block_valid(head))
        return 0;
    size_t bytes = sl__block_data_bytes(head->kind, head->cap);
    if (n - 36 < bytes)
        return 0;
    return 36 + bytes;
}

static int verify(const unsigned char *buf, size_t len, uint64_t *records) {
    if (len < 8 || memcmp(buf, MAGIC, 8) != 0)
        return SL_EFORMAT;
    if (len < HEADER_BYTES)
        return SL_ECORRUPT;
    if (get_u32(buf + 8) != VERSION)
        return SL_EFORMAT;
    if (get_u32(buf + 12) != HEADER_BYTES || len < HEADER_BYTES + TRAILER_BYTES)
        return SL_ECORRUPT;
    const unsigned char *t = buf + len - TRAILER_BYTES;
    if (memcmp(t + 16, MAGIC_END, 8) != 0)
        return SL_ECORRUPT;
    if (XXH3_64bits(buf, len - 16) != get_u64(t + 8))
        return SL_ECORRUPT;
    *records = get_u64(t);
    return SL_OK;
}

void sl__snapshot_release(sl__snapshot_t *s) {
    for (size_t i = 0; s->records && i < s->count; i++)
        free(s->records[i].block);
    free(s->records);
    s->records = NULL;
    s->count = 0;
}

int sl__snapshot_parse(const unsigned char *buf, size_t len, sl_usec_t now, sl__snapshot_t *out) {
    uint64_t declared = 0;
    int rc = verify(buf, len, &declared);
    if (rc != SL_OK)
        return rc;
    const unsigned char *p = buf + HEADER_BYTES;
    const unsigned char *end = buf + len - TRAILER_BYTES;

    /* Pass 1: structure and count, nothing allocated per record. */
    uint64_t seen = 0, live = 0;
    while (p < end) {
        sl__record_t r;
        sl__block_t head;
        size_t used = parse_record(p, (size_t)(end - p), &r, &head);
        if (used == 0)
            return SL_ECORRUPT;
        p += used;
        seen++;
        live += r.expire_at > now;
    }
    if (seen != declared)
        return SL_ECORRUPT;

    sl__snapshot_t s = {0};
    s.seed = get_u64(buf + 16);
    s.saved_at = (sl_usec_t)get_u64(buf + 24);
    s.records = calloc(live ? live : 1, sizeof *s.records);
    if (s.records == NULL)
        return SL_ENOMEM;
    /* Pass 2: the live records, blocks copied out. */
    for (p = buf + HEADER_BYTES; p < end;) {
        sl__record_t r;
        sl__block_t head;
        size_t used = parse_record(p, (size_t)(end - p), &r, &head);
        if (r.expire_at > now) {
            if (head.kind != SL__BLOCK_NONE) {
                r.block = malloc(sl__block_size(head.kind, head.cap));
                if (r.block == NULL) {
                    sl__snapshot_release(&s);
                    return SL_ENOMEM;
                }
                sl__block_init(r.block, head.kind, head.cap);
                r.block->head = head.head;
                r.block->count = head.count;
                size_t words = (size_t)sl__block_words(head.kind) * head.cap;
                for (size_t i = 0; i < words; i++)
                    r.block->data[i] = get_u32(p + 36 + 4 * i);
            }
            s.records[s.count++] = r;
        }
        p += used;
    }
    *out = s;
    return SL_OK;
}

int sl__snapshot_read(const char *path, sl_usec_t now, sl__snapshot_t *out) {
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len);
    if (rc == SL_OK)
        rc = sl__snapshot_parse(buf, len, now, out);
    free(buf);
    return rc;
}
