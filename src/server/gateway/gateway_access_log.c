/* gateway_access_log.c -- the gateway's access log (see gateway_access_log.h).
 *
 * An h2o logger on the gateway's path, one per worker (each worker has its
 * own h2o configuration): libh2o calls log_access for every request of the
 * path when it disposes of it, when the status and the bytes sent are
 * final. The gateway's hooks note the rest on the request, in a variable
 * of its environment (req->env) that points to a note in its pool.
 *
 * The worker's state (its descriptor, its buffer, the check handle that
 * writes the buffer once per turn of the loop) is allocated apart from the
 * logger: libh2o frees the logger with the configuration right after the
 * context is disposed, before the loop has closed the handle.
 *
 * Not here: the decisions (gateway.c), the JSON string (http_json.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "server/base/log.h"
#include "server/gateway/gateway_access_log.h"
#include "server/gateway/gateway_forward.h"
#include "server/http/http_json.h"

#define NOTE "sluice.gw" /* the request variable holding the note */
#define MAX_PATH_BYTES 1024
#define MAX_HOST_BYTES 256
#define MAX_METHOD_BYTES 32
#define MAX_ID_BYTES 128
#define FLUSH_BYTES 65536 /* written at once past this, not at the end of the turn */
#define FILE_MODE 0640    /* client addresses are personal data */

static const char *const decisions[] = {"none", "forwarded", "delayed", "rejected", "shadow", "busy",
                                        "upstream_error"};

/* What the gateway noted on a request, in its pool. */
typedef struct note {
    const sld_gw_route_t *route;
    sld_gw_decision_t decision;
    struct timespec begin, held; /* monotonic: the handler ran; forwarded or refused (held.tv_sec 0: not yet) */
    int64_t upstream_us;         /* to the upstream's head; -1: no head came */
} note_t;

/* A worker's writing state (see above for why apart from the logger). */
typedef struct alog_worker {
    uv_check_t check;
    int fd;                 /* -1: the file could not be opened (lines dropped, warned once) */
    bool own_fd;            /* not stderr */
    const char *path;       /* the configuration's */
    sld_stats_t *stats;
    uint64_t generation;    /* reloads seen when the file was opened */
    sld_buf_t buf;
    uint64_t dropped;       /* lines lost to write errors since the last warning */
    time_t sec;             /* the second `stamp` holds */
    char stamp[24];         /* "YYYY-MM-DDTHH:MM:SS" of sec */
} alog_worker_t;

typedef struct alog {
    h2o_logger_t super;
    const char *path;       /* NULL: stderr */
    sld_stats_t *stats;
    const atomic_bool *on;  /* the routes in force log */
    alog_worker_t *worker;  /* from the context's start to its end */
} alog_t;

static uint64_t generation(sld_stats_t *s) {
    return atomic_load(&s->reloads) + atomic_load(&s->reload_failures);
}

static int open_log(const char *path) {
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, FILE_MODE);
}

static void reopen(alog_worker_t *aw) {
    int fd = open_log(aw->path);
    if (fd < 0) {
        sld_warn("gateway: access log %s cannot be opened again (%s): still writing to the old one", aw->path,
                 strerror(errno));
        return; /* the old descriptor stays: nothing is lost */
    }
    if (aw->fd >= 0)
        close(aw->fd);
    aw->fd = fd;
}

/* One write per call as long as the kernel takes it all; a regular file
 * takes everything but on errors (disk full), which drop the buffer. */
static void flush(alog_worker_t *aw) {
    if (aw->own_fd) {
        uint64_t g = generation(aw->stats);
        if (g != aw->generation) {
            aw->generation = g;
            reopen(aw);
        }
    }
    size_t off = 0;
    while (off < aw->buf.len && aw->fd >= 0) {
        ssize_t n = write(aw->fd, aw->buf.data + off, aw->buf.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            for (size_t i = off; i < aw->buf.len; i++)
                aw->dropped += aw->buf.data[i] == '\n';
            sld_warn("gateway: access log %s: %s, %llu lines lost", aw->path ? aw->path : "stderr",
                     n < 0 ? strerror(errno) : "nothing written", (unsigned long long)aw->dropped);
            aw->dropped = 0;
            break;
        }
        off += (size_t)n;
    }
    sld_buf_reset(&aw->buf);
    if (aw->buf.failed || aw->buf.cap > 4 * FLUSH_BYTES) /* a burst's buffer is not kept */
        sld_buf_free(&aw->buf);
}

static void on_check(uv_check_t *check) {
    alog_worker_t *aw = check->data;
    if (aw->buf.len)
        flush(aw);
}

static void on_check_closed(uv_handle_t *h) {
    alog_worker_t *aw = h->data;
    if (aw->own_fd && aw->fd >= 0)
        close(aw->fd);
    sld_buf_free(&aw->buf);
    free(aw);
}

static void on_context_init(h2o_logger_t *self, h2o_context_t *ctx) {
    alog_t *log = (alog_t *)self;
    alog_worker_t *aw = calloc(1, sizeof *aw);
    if (aw == NULL) {
        sld_warn("gateway: access log: out of memory, a worker writes no lines");
        return;
    }
    aw->path = log->path;
    aw->stats = log->stats;
    aw->own_fd = log->path != NULL;
    aw->generation = generation(log->stats);
    aw->fd = aw->own_fd ? open_log(log->path) : STDERR_FILENO;
    if (aw->fd < 0)
        sld_warn("gateway: access log %s cannot be opened (%s): this worker writes no lines until a reload",
                 log->path, strerror(errno));
    uv_check_init(ctx->loop, &aw->check);
    aw->check.data = aw;
    uv_check_start(&aw->check, on_check);
    uv_unref((uv_handle_t *)&aw->check); /* the log keeps no loop running */
    log->worker = aw;
}

static void on_context_dispose(h2o_logger_t *self, h2o_context_t *ctx) {
    alog_t *log = (alog_t *)self;
    (void)ctx;
    if (log->worker == NULL)
        return;
    flush(log->worker);
    uv_close((uv_handle_t *)&log->worker->check, on_check_closed);
    log->worker = NULL; /* later lines (requests ended after the context) are dropped */
}

/* ---- the line ------------------------------------------------------------------------------ */

static note_t *note_of(h2o_req_t *req) {
    h2o_iovec_t *v = h2o_req_getenv(req, H2O_STRLIT(NOTE), 0);
    return v ? (note_t *)v->base : NULL;
}

static int64_t usec_between(const struct timespec *a, const struct timespec *b) {
    int64_t us = (int64_t)(b->tv_sec - a->tv_sec) * 1000000 + (b->tv_nsec - a->tv_nsec) / 1000;
    return us > 0 ? us : 0;
}

/* Three decimal digits of v < 1000, after a dot when `dot`. Without
 * printf, which costs as much as the rest of a line (callgrind). */
static void append_frac(sld_buf_t *b, unsigned v, bool dot) {
    char text[4] = {'.', (char)('0' + v / 100), (char)('0' + v / 10 % 10), (char)('0' + v % 10)};
    sld_buf_append(b, dot ? text : text + 1, dot ? 4 : 3);
}

/* Milliseconds with their microseconds: "12.345". */
static void append_ms(sld_buf_t *b, int64_t us) {
    sld_buf_append_u64(b, (uint64_t)(us / 1000));
    append_frac(b, (unsigned)(us % 1000), true);
}

static void append_string(sld_buf_t *b, const char *s, size_t len, size_t max) {
    sld_json_string(b, s, len < max ? len : max);
}

static void append_time(alog_worker_t *aw, const struct timeval *tv) {
    if (tv->tv_sec != aw->sec || aw->stamp[0] == '\0') {
        struct tm tm;
        time_t sec = tv->tv_sec;
        gmtime_r(&sec, &tm);
        strftime(aw->stamp, sizeof aw->stamp, "%Y-%m-%dT%H:%M:%S", &tm);
        aw->sec = tv->tv_sec;
    }
    sld_buf_append_lit(&aw->buf, "{\"time\":\"");
    sld_buf_append_str(&aw->buf, aw->stamp);
    append_frac(&aw->buf, (unsigned)(tv->tv_usec / 1000) % 1000, true);
    sld_buf_append_lit(&aw->buf, "Z\"");
}

static void append_client(sld_buf_t *b, h2o_req_t *req) {
    struct sockaddr_storage peer;
    char text[INET6_ADDRSTRLEN] = "";
    memset(&peer, 0, sizeof peer);
    if (req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&peer) > 0) {
        if (peer.ss_family == AF_INET) { /* by hand: inet_ntop costs 3,500 instructions */
            const unsigned char *a = (const unsigned char *)&((struct sockaddr_in *)&peer)->sin_addr;
            sld_buf_append_lit(b, "\"");
            for (int i = 0; i < 4; i++) {
                if (i)
                    sld_buf_append_lit(b, ".");
                sld_buf_append_u64(b, a[i]);
            }
            sld_buf_append_lit(b, "\"");
            return;
        }
        if (peer.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, text, sizeof text);
    }
    sld_json_string(b, text, strlen(text));
}

static void log_access(h2o_logger_t *self, h2o_req_t *req) {
    alog_worker_t *aw = ((alog_t *)self)->worker;
    note_t *note = note_of(req);
    if (aw == NULL || (note && note->route && !note->route->access_log) ||
        !atomic_load_explicit(((alog_t *)self)->on, memory_order_relaxed))
        return;
    sld_buf_t *b = &aw->buf;
    append_time(aw, &req->processed_at.at);
    sld_buf_append_lit(b, ",\"route\":");
    if (note && note->route)
        sld_json_string(b, note->route->name, strlen(note->route->name));
    else
        sld_buf_append_lit(b, "null");
    sld_buf_append_lit(b, ",\"method\":");
    append_string(b, req->input.method.base, req->input.method.len, MAX_METHOD_BYTES);
    sld_buf_append_lit(b, ",\"path\":");
    append_string(b, req->input.path.base, req->input.path.len, MAX_PATH_BYTES);
    if (req->input.path.len > MAX_PATH_BYTES)
        sld_buf_append_lit(b, ",\"path_truncated\":true");
    sld_buf_append_lit(b, ",\"host\":");
    append_string(b, req->input.authority.base, req->input.authority.len, MAX_HOST_BYTES);
    sld_buf_append_lit(b, ",\"client\":");
    append_client(b, req);
    sld_buf_append_lit(b, ",\"status\":");
    sld_buf_append_u64(b, req->res.status > 0 ? (uint64_t)req->res.status : 0);
    sld_gw_decision_t decision = note ? note->decision : SLD_GW_LOG_NONE;
    /* libh2o's own 502 (no connection, timeout): no answer came, so no
     * latency was noted (gateway_forward.c); by now the gateway's filter
     * has made a timeout's 502 a 504 */
    if (note && note->upstream_us < 0 && (req->res.status == 502 || req->res.status == 504) &&
        sld_gw_forwarded_route(req) != NULL && sld_gw_proxy_error(req) != NULL)
        decision = SLD_GW_LOG_UPSTREAM_ERROR;
    sld_buf_append_lit(b, ",\"decision\":\"");
    sld_buf_append_str(b, decisions[decision]);
    sld_buf_append_lit(b, "\",\"delay_ms\":");
    append_ms(b, note && note->held.tv_sec ? usec_between(&note->begin, &note->held) : 0);
    sld_buf_append_lit(b, ",\"upstream_ms\":");
    if (note && note->upstream_us >= 0)
        append_ms(b, note->upstream_us);
    else
        sld_buf_append_lit(b, "null");
    sld_buf_append_lit(b, ",\"bytes\":");
    sld_buf_append_u64(b, req->bytes_sent);
    sld_buf_append_lit(b, ",\"request_id\":");
    ssize_t at = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
    if (at >= 0)
        append_string(b, req->headers.entries[at].value.base, req->headers.entries[at].value.len, MAX_ID_BYTES);
    else
        sld_buf_append_lit(b, "null");
    sld_buf_append_lit(b, "}\n");
    if (b->failed)
        sld_buf_reset(b), sld_buf_free(b); /* out of memory: this turn's lines are lost */
    else if (b->len >= FLUSH_BYTES)
        flush(aw);
}

int sld_gw_access_log_register(h2o_pathconf_t *path, const sld_gw_config_t *g, sld_stats_t *stats,
                               const atomic_bool *on, char *err, size_t err_len) {
    if (g->access_log == NULL)
        return SL_OK;
    bool to_stderr = strcmp(g->access_log, "stderr") == 0;
    if (!to_stderr) {
        int fd = open_log(g->access_log);
        if (fd < 0) {
            snprintf(err, err_len, "gateway.access_log: cannot open %s: %s", g->access_log, strerror(errno));
            return SL_EIO;
        }
        close(fd);
    }
    alog_t *log = (alog_t *)h2o_create_logger(path, sizeof *log);
    log->super.on_context_init = on_context_init;
    log->super.on_context_dispose = on_context_dispose;
    log->super.log_access = log_access;
    log->path = to_stderr ? NULL : g->access_log;
    log->stats = stats;
    log->on = on;
    log->worker = NULL;
    return SL_OK;
}

/* ---- the hooks ----------------------------------------------------------------------------- */

void sld_gw_access_begin(h2o_req_t *req, const sld_gw_config_t *g, const sld_gw_route_t *route) {
    if (g->access_log == NULL || route == NULL) /* no route: logged without a note */
        return;
    note_t *note = h2o_mem_alloc_pool(&req->pool, sizeof *note);
    *note = (note_t){.route = route, .upstream_us = -1};
    clock_gettime(CLOCK_MONOTONIC, &note->begin);
    *h2o_req_getenv(req, H2O_STRLIT(NOTE), 1) = h2o_iovec_init(note, 0);
}

static void mark_held(note_t *note) {
    if (note->held.tv_sec == 0)
        clock_gettime(CLOCK_MONOTONIC, &note->held);
}

void sld_gw_access_decision(h2o_req_t *req, sld_gw_decision_t what) {
    note_t *note = note_of(req);
    if (note == NULL)
        return;
    note->decision = what;
    if (what == SLD_GW_LOG_REJECTED || what == SLD_GW_LOG_BUSY)
        mark_held(note);
}

int64_t *sld_gw_access_forwarded(h2o_req_t *req) {
    note_t *note = note_of(req);
    if (note == NULL)
        return NULL;
    if (note->decision == SLD_GW_LOG_NONE)
        note->decision = SLD_GW_LOG_FORWARDED;
    note->held.tv_sec = 0; /* a delayed request's wait ends now, not at its decision */
    mark_held(note);
    return &note->upstream_us;
}
