/* grpc_h2.c -- one gRPC connection's HTTP/2 session on nghttp2 (see
 * grpc_h2.h).
 *
 * A call lives from its stream's first HEADERS: RECEIVING (headers, then
 * its message), DECIDING (with the front), WAITING (its answer is ready
 * but the client's window is not), SENT (handed to nghttp2), then freed
 * (or kept for the session's next call) when its stream closes -- or, when the stream or the connection goes
 * while it is DECIDING, orphaned (h NULL) and freed by its answer.
 *
 * Header blocks: nghttp2 Huffman-codes every string it writes, and is
 * given every field never indexed (so it adds nothing to the client's
 * HPACK table). An answer's HEADERS and trailers are submitted with no
 * field at all (nothing for nghttp2 to encode); as each goes out,
 * put_frame writes their fields into the block (grpc_framing.h: plain
 * literals, and content-type from the table once it is there).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"

/* what a client may have open or send at once */
#define MAX_STREAMS 256
#define MAX_HEADER_LIST 16384
/* the connection's receive window: many streams' messages in flight */
#define CONN_WINDOW (1 << 20)
/* answers up to this size (an RLS answer with its header fields is about
 * 200 bytes) are kept in the call itself */
#define OUT_SMALL 512
/* finished calls a session keeps for its next ones */
#define SPARE_CALLS 64

enum { RECEIVING, DECIDING, WAITING, SENT };

/* the request's pseudo-header fields, and whether a regular field came */
enum { PS_METHOD = 1, PS_SCHEME = 2, PS_PATH = 4, PS_AUTHORITY = 8, PS_REGULAR = 16 };

struct sld_grpc_call {
    sld_grpc_h2_t *h; /* NULL: orphaned, freed by its answer */
    int32_t id;
    int state;
    int method;
    bool post, grpc_type;
    uint8_t pseudo;      /* PS_* seen in the request's header block */
    bool malformed;      /* RFC 9113 8.1.1: answered with a stream reset */
    size_t header_bytes;
    int64_t since_ms;    /* receiving, or waiting for a window, since */
    int64_t deadline_ms; /* grpc-timeout's, or 0 */
    sld_grpc_msg_t msg;
    uint8_t *out;        /* the answer's message, prefixed: out_small or malloc'd */
    size_t out_len, out_off;
    size_t trailers_len; /* 0: nghttp2's block goes out as it is */
    bool head;           /* the answer's HEADERS block is put_frame's to write */
    sld_grpc_call_t *prev, *next;
    /* from here on, not cleared when a call is made */
    uint8_t trailers[SLD_GRPC_TRAILERS_MAX];
    uint8_t out_small[OUT_SMALL];
};

/* where a call's fields that are cleared for each new call end */
#define CALL_HEAD offsetof(sld_grpc_call_t, trailers)

/* nghttp2's allocations for one session (nghttp2_mem): blocks up to
 * 1 KiB come in five size classes (64 .. 1024 bytes) and a few of each
 * class are kept for reuse. A call makes and frees the same handful of
 * small blocks (its stream, frames, queue items), in bursts of as many
 * calls as a client has in flight: more than malloc's per-thread cache
 * keeps, so without this most of them would go through its slow path.
 * Up to a few per stream a client may open are kept (fewer kept missed
 * three times a call with 64 in flight): never more than the session had
 * in use at once. Kept blocks are freed when no call has been open for
 * POOL_IDLE_MS at a sweep, and with the session. */
#define POOL_CLASSES 5
#define POOL_KEEP (2 * MAX_STREAMS)
#define POOL_IDLE_MS 1000

typedef struct pool_hdr {
    size_t cap;     /* usable bytes after the header */
    size_t pad_;    /* keeps what follows aligned for anything */
} pool_hdr_t;

typedef struct pool {
    void *free[POOL_CLASSES]; /* blocks (their headers), linked through their first word */
    unsigned n[POOL_CLASSES];
} pool_t;

static int pool_class(size_t size) {
    for (int c = 0; c < POOL_CLASSES; c++)
        if (size <= (size_t)64 << c)
            return c;
    return -1;
}

static void *pool_malloc(size_t size, void *user_data) {
    pool_t *p = user_data;
    int c = pool_class(size);
    if (c >= 0 && p->free[c] != NULL) {
        pool_hdr_t *b = p->free[c];
        memcpy(&p->free[c], b + 1, sizeof(void *));
        p->n[c]--;
        return b + 1;
    }
    size_t cap = c >= 0 ? (size_t)64 << c : size;
    if (cap > SIZE_MAX - sizeof(pool_hdr_t))
        return NULL;
    pool_hdr_t *b = malloc(sizeof *b + cap);
    if (b == NULL)
        return NULL;
    b->cap = cap;
    return b + 1;
}

static void pool_free(void *ptr, void *user_data) {
    pool_t *p = user_data;
    if (ptr == NULL)
        return;
    pool_hdr_t *b = (pool_hdr_t *)ptr - 1;
    int c = pool_class(b->cap);
    if (c >= 0 && b->cap == (size_t)64 << c && p->n[c] < POOL_KEEP) {
        memcpy(ptr, &p->free[c], sizeof(void *));
        p->free[c] = b;
        p->n[c]++;
        return;
    }
    free(b);
}

static void *pool_calloc(size_t n, size_t size, void *user_data) {
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *ptr = pool_malloc(n * size, user_data);
    if (ptr != NULL)
        memset(ptr, 0, n * size);
    return ptr;
}

static void *pool_realloc(void *ptr, size_t size, void *user_data) {
    if (ptr == NULL)
        return pool_malloc(size, user_data);
    pool_hdr_t *b = (pool_hdr_t *)ptr - 1;
    if (size <= b->cap)
        return ptr;
    void *bigger = pool_malloc(size, user_data);
    if (bigger == NULL)
        return NULL;
    memcpy(bigger, ptr, b->cap);
    pool_free(ptr, user_data);
    return bigger;
}

static void pool_trim(pool_t *p) {
    for (int c = 0; c < POOL_CLASSES; c++) {
        while (p->free[c] != NULL) {
            pool_hdr_t *b = p->free[c];
            memcpy(&p->free[c], b + 1, sizeof(void *));
            free(b);
        }
        p->n[c] = 0;
    }
}

struct sld_grpc_h2 {
    nghttp2_session *s;
    const sld_grpc_h2_hooks_t *hooks;
    void *ctx;
    uint32_t max_message;
    sld_grpc_call_t *calls; /* attached to a stream */
    sld_grpc_call_t *closed; /* their streams closed as output was made: freed after it */
    sld_grpc_call_t *spare;  /* finished calls, linked through next, for the next ones */
    size_t nspare;
    sld_grpc_call_t *last;   /* the call last looked up by stream (nghttp2's lookup is a hash) */
    size_t ncalls;
    size_t reserved;        /* DATA submitted since the last output: not yet off the window */
    int64_t idle_since;     /* no call open since (ms) */
    int64_t now_ms;
    bool in_feed;
    bool broken;
    bool stopping;
    pool_t pool;            /* nghttp2's blocks kept for reuse */
    sld_grpc_hpack_t hpack; /* the answers' share of the client's HPACK table */
    nghttp2_mem mem;
};

/* ---- calls ---------------------------------------------------------------------------------- */

/* Frees a call, or keeps it for h's next call (h NULL: an orphan's). */
static void call_free(sld_grpc_h2_t *h, sld_grpc_call_t *c) {
    sld_grpc_msg_free(&c->msg);
    if (c->out != c->out_small)
        free(c->out);
    if (h != NULL && h->nspare < SPARE_CALLS) {
        c->next = h->spare;
        h->spare = c;
        h->nspare++;
        return;
    }
    free(c);
}

/* A cleared call: a spare one, else a new one. */
static sld_grpc_call_t *call_new(sld_grpc_h2_t *h) {
    sld_grpc_call_t *c = h->spare;
    if (c == NULL)
        return calloc(1, sizeof *c);
    h->spare = c->next;
    h->nspare--;
    memset(c, 0, CALL_HEAD);
    return c;
}

/* The call on stream id (NULL: none): the last one looked up, else
 * nghttp2's. */
static sld_grpc_call_t *call_of(sld_grpc_h2_t *h, int32_t id) {
    if (h->last != NULL && h->last->id == id)
        return h->last;
    sld_grpc_call_t *c = nghttp2_session_get_stream_user_data(h->s, id);
    if (c != NULL)
        h->last = c;
    return c;
}

static void unlink_call(sld_grpc_call_t *c) {
    sld_grpc_h2_t *h = c->h;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    if (--h->ncalls == 0)
        h->idle_since = h->now_ms;
}

/* The stream is gone (or the session): a call being decided waits for its
 * answer, detached; any other is freed -- once the output being made is
 * done with it: nghttp2 closes a stream as it hands out its last frame,
 * before put_frame has seen that frame. */
static void detach(sld_grpc_call_t *c) {
    sld_grpc_h2_t *h = c->h;
    unlink_call(c);
    nghttp2_session_set_stream_user_data(h->s, c->id, NULL);
    if (h->last == c)
        h->last = NULL;
    c->h = NULL;
    if (c->state == DECIDING)
        return;
    c->next = h->closed;
    h->closed = c;
}

static void free_closed(sld_grpc_h2_t *h) {
    while (h->closed) {
        sld_grpc_call_t *c = h->closed;
        h->closed = c->next;
        call_free(h, c);
    }
}

/* Answers with a status only, as one HEADERS frame that ends the stream. */
static void trailers_only(sld_grpc_call_t *c, int status, const char *message) {
    nghttp2_nv nv[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NO_INDEX},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NO_INDEX},
        {(uint8_t *)"grpc-status", (uint8_t *)"2", 11, 1, NGHTTP2_NV_FLAG_NO_INDEX},
    };
    c->trailers_len = sld_grpc_trailers(c->trailers, true, status, message);
    c->state = SENT;
    sld_grpc_msg_free(&c->msg);
    if (nghttp2_submit_response(c->h->s, c->id, nv, 3, NULL) != 0)
        nghttp2_submit_rst_stream(c->h->s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_INTERNAL_ERROR);
}

/* An HTTP error before gRPC: the request is not gRPC at all. */
static void http_error(sld_grpc_call_t *c, const char *status) {
    nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NO_INDEX}};
    c->state = SENT;
    if (nghttp2_submit_response(c->h->s, c->id, nv, 1, NULL) != 0)
        nghttp2_submit_rst_stream(c->h->s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_INTERNAL_ERROR);
}


static ssize_t read_answer(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                           nghttp2_data_source *source, void *user_data) {
    sld_grpc_call_t *c = source->ptr;
    (void)user_data;
    size_t n = c->out_len - c->out_off < length ? c->out_len - c->out_off : length;
    memcpy(buf, c->out + c->out_off, n);
    c->out_off += n;
    if (c->out_off == c->out_len) {
        /* an empty block: nghttp2 has nothing to encode, put_frame writes
         * the fields (grpc-status: 0) into it as it goes out */
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        c->trailers_len = sld_grpc_trailers(c->trailers, false, SLD_GRPC_OK, NULL);
        if (nghttp2_submit_trailer(s, id, NULL, 0) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* Sends an answer's HEADERS, DATA and trailers if the client's windows
 * take the whole DATA now; else it waits. */
static bool try_send(sld_grpc_call_t *c) {
    sld_grpc_h2_t *h = c->h;
    int32_t conn = nghttp2_session_get_remote_window_size(h->s) - (int32_t)h->reserved;
    int32_t stream = nghttp2_session_get_stream_remote_window_size(h->s, c->id);
    if (conn < (int32_t)c->out_len || stream < (int32_t)c->out_len) {
        if (c->state != WAITING) {
            c->state = WAITING;
            c->since_ms = h->now_ms;
        }
        return false;
    }
    nghttp2_data_provider data = {.source.ptr = c, .read_callback = read_answer};
    c->state = SENT;
    c->head = true; /* an empty block: put_frame writes its fields */
    h->reserved += c->out_len;
    if (nghttp2_submit_response(h->s, c->id, NULL, 0, &data) != 0)
        nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_INTERNAL_ERROR);
    return true;
}

static void retry_waiting(sld_grpc_h2_t *h) {
    for (sld_grpc_call_t *c = h->calls; c; c = c->next)
        if (c->state == WAITING)
            try_send(c);
}

void sld_grpc_h2_answer(sld_grpc_call_t *c, int status, const char *message, const uint8_t *body, size_t len) {
    sld_grpc_h2_t *h = c->h;
    if (h == NULL || c->state != DECIDING) {
        if (h == NULL)
            call_free(NULL, c);
        return;
    }
    if (status == SLD_GRPC_OK && body != NULL) {
        if ((c->out = 5 + len <= OUT_SMALL ? c->out_small : malloc(5 + len)) == NULL) {
            trailers_only(c, SLD_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        } else {
            c->out[0] = 0;
            c->out[1] = (uint8_t)(len >> 24);
            c->out[2] = (uint8_t)(len >> 16);
            c->out[3] = (uint8_t)(len >> 8);
            c->out[4] = (uint8_t)len;
            memcpy(c->out + 5, body, len);
            c->out_len = 5 + len;
            sld_grpc_msg_free(&c->msg); /* the body may have been made from it */
            try_send(c);
        }
    } else {
        trailers_only(c, status, message);
    }
    if (!h->in_feed && h->hooks->on_output)
        h->hooks->on_output(h->ctx);
}

/* ---- nghttp2's callbacks -------------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
    sld_grpc_h2_t *h = user_data;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    sld_grpc_call_t *c = call_new(h);
    if (c == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    c->h = h;
    c->id = f->hd.stream_id;
    c->state = RECEIVING;
    c->since_ms = h->now_ms;
    c->next = h->calls;
    if (h->calls)
        h->calls->prev = c;
    h->calls = c;
    h->ncalls++;
    nghttp2_session_set_stream_user_data(s, c->id, c);
    h->last = c;
    return 0;
}

static bool is(const uint8_t *s, size_t len, const char *lit) {
    return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

/* A pseudo-header field: each known one once, all before the regular
 * fields (RFC 9113 8.3); else the request is malformed. */
static void pseudo(sld_grpc_call_t *c, uint8_t which) {
    if ((c->pseudo & (which | PS_REGULAR)) != 0)
        c->malformed = true;
    c->pseudo |= which;
}

/* nghttp2's HTTP messaging is off (nghttp2_option_set_no_http_messaging:
 * its checks of every field were a tenth of a call's cost), so what gRPC
 * needs of a request is checked here: its pseudo-header fields, te, and
 * no connection-specific field (RFC 9113 8.2.2). Names of other fields are
 * not checked: none of them is read. */
static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    (void)flags;
    sld_grpc_h2_t *h = user_data;
    (void)s;
    sld_grpc_call_t *c = call_of(h, f->hd.stream_id);
    if (c == NULL || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers of a request: nothing in them matters */
    /* RFC 9113 6.5.2's accounting: each field's name, value and 32 */
    c->header_bytes += namelen + valuelen + 32;
    if (c->header_bytes > MAX_HEADER_LIST)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (namelen > 0 && name[0] == ':') {
        if (is(name, namelen, ":path")) {
            pseudo(c, PS_PATH);
            c->method = is(value, valuelen, SLD_GRPC_RLS_METHOD)      ? SLD_GRPC_M_RLS
                        : is(value, valuelen, SLD_GRPC_HEALTH_METHOD) ? SLD_GRPC_M_HEALTH
                                                                      : SLD_GRPC_M_OTHER;
            c->malformed = c->malformed || valuelen == 0;
        } else if (is(name, namelen, ":method")) {
            pseudo(c, PS_METHOD);
            c->post = is(value, valuelen, "POST");
        } else if (is(name, namelen, ":scheme")) {
            pseudo(c, PS_SCHEME);
        } else if (is(name, namelen, ":authority")) {
            pseudo(c, PS_AUTHORITY);
        } else {
            c->malformed = true; /* :status, :protocol or unknown in a request */
        }
        return 0;
    }
    c->pseudo |= PS_REGULAR;
    switch (namelen) {
    case 2:
        if (memcmp(name, "te", 2) == 0 && !is(value, valuelen, "trailers"))
            c->malformed = true;
        break;
    case 12:
        if (memcmp(name, "content-type", 12) == 0)
            c->grpc_type = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                           (valuelen == 16 || value[16] == '+' || value[16] == ';');
        else if (memcmp(name, "grpc-timeout", 12) == 0) {
            uint64_t usec;
            if (sld_grpc_timeout_parse(value, valuelen, &usec))
                c->deadline_ms = h->now_ms + (int64_t)((usec + 999) / 1000);
        }
        break;
    default:
        if (is(name, namelen, "connection") || is(name, namelen, "keep-alive") ||
            is(name, namelen, "proxy-connection") || is(name, namelen, "transfer-encoding") ||
            is(name, namelen, "upgrade"))
            c->malformed = true;
        break;
    }
    return 0;
}

static void take_message(sld_grpc_call_t *c, int state) {
    sld_grpc_h2_t *h = c->h;
    switch (state) {
    case SLD_GRPC_MSG_DONE:
        c->state = DECIDING;
        h->hooks->on_request(h->ctx, c, c->method, c->msg.buf, c->msg.len);
        return;
    case SLD_GRPC_MSG_TOO_LARGE:
        trailers_only(c, SLD_GRPC_RESOURCE_EXHAUSTED, "the request message is larger than limits.max_request_bytes");
        return;
    case SLD_GRPC_MSG_COMPRESSED:
        trailers_only(c, SLD_GRPC_UNIMPLEMENTED, "compressed messages are not supported");
        return;
    case SLD_GRPC_MSG_NOMEM:
        trailers_only(c, SLD_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    default:
        return;
    }
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user_data) {
    sld_grpc_h2_t *h = user_data;
    (void)flags;
    (void)s;
    sld_grpc_call_t *c = call_of(h, id);
    if (c == NULL || c->state != RECEIVING)
        return 0; /* past the one message: ignored */
    const uint8_t *msg;
    uint32_t msg_len;
    if (c->msg.have_prefix == 0 && sld_grpc_msg_whole(data, len, h->max_message, &msg, &msg_len)) {
        /* the usual case, the message in one piece: decided from nghttp2's
         * buffer, which on_request is done with when it returns */
        c->state = DECIDING;
        h->hooks->on_request(h->ctx, c, c->method, msg, msg_len);
        return 0;
    }
    take_message(c, sld_grpc_msg_feed(&c->msg, data, len, h->max_message));
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
    sld_grpc_h2_t *h = user_data;
    if (f->hd.type == NGHTTP2_WINDOW_UPDATE || f->hd.type == NGHTTP2_SETTINGS) {
        retry_waiting(h);
        return 0;
    }
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    sld_grpc_call_t *c = call_of(h, f->hd.stream_id);
    if (c == NULL || c->state != RECEIVING)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        if (c->malformed || (c->pseudo & (PS_METHOD | PS_SCHEME | PS_PATH)) != (PS_METHOD | PS_SCHEME | PS_PATH)) {
            c->state = SENT;
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_PROTOCOL_ERROR);
            return 0;
        }
        if (!c->post) {
            http_error(c, "405");
            return 0;
        }
        if (!c->grpc_type) {
            http_error(c, "415");
            return 0;
        }
        if (c->method == SLD_GRPC_M_OTHER) {
            trailers_only(c, SLD_GRPC_UNIMPLEMENTED, "unknown method");
            return 0;
        }
    }
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        trailers_only(c, SLD_GRPC_INVALID_ARGUMENT, "no request message");
    return 0;
}

/* A stream's last frame went out while its client still sends: a reset
 * with NO_ERROR tells it to stop (RFC 9113 8.1) and closes the stream, so a
 * request never ended holds no place among MAX_STREAMS. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
    (void)user_data;
    if (f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        nghttp2_session_get_stream_remote_close(s, f->hd.stream_id) == 0)
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error, void *user_data) {
    (void)error;
    (void)s;
    sld_grpc_call_t *c = call_of(user_data, id);
    if (c != NULL)
        detach(c);
    return 0;
}

/* ---- the session ---------------------------------------------------------------------------- */

static nghttp2_session_callbacks *callbacks(void) {
    /* the same table for every session, made on the first (the loop threads
     * race only to make equal ones; the loser's leaks nothing: freed) */
    static _Atomic(nghttp2_session_callbacks *) shared;
    nghttp2_session_callbacks *cb = atomic_load(&shared);
    if (cb != NULL || nghttp2_session_callbacks_new(&cb) != 0)
        return cb;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks *none = NULL;
    if (!atomic_compare_exchange_strong(&shared, &none, cb)) {
        nghttp2_session_callbacks_del(cb);
        cb = none;
    }
    return cb;
}

sld_grpc_h2_t *sld_grpc_h2_new(const sld_grpc_h2_hooks_t *hooks, void *ctx, uint32_t max_message,
                               int64_t now_ms) {
    nghttp2_session_callbacks *cb = callbacks();
    sld_grpc_h2_t *h = cb ? calloc(1, sizeof *h) : NULL;
    if (h == NULL)
        return NULL;
    h->hooks = hooks;
    h->ctx = ctx;
    h->max_message = max_message;
    h->hpack = SLD_GRPC_HPACK_INIT;
    h->now_ms = h->idle_since = now_ms;
    nghttp2_option *opt = NULL;
    if (nghttp2_option_new(&opt) != 0) {
        free(h);
        return NULL;
    }
    nghttp2_option_set_max_reserved_remote_streams(opt, 0);
    nghttp2_option_set_no_http_messaging(opt, 1); /* on_header checks what gRPC needs */
    h->mem = (nghttp2_mem){&h->pool, pool_malloc, pool_free, pool_calloc, pool_realloc};
    int rc = nghttp2_session_server_new3(&h->s, cb, h, opt, &h->mem);
    nghttp2_option_del(opt);
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        /* gRPC has no use for RFC 7540's priority tree, which nghttp2 would
         * otherwise keep up for every stream (RFC 9218) */
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    if (rc != 0 || nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, settings, 4) != 0 ||
        nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0) {
        if (rc == 0)
            nghttp2_session_del(h->s);
        pool_trim(&h->pool);
        free(h);
        return NULL;
    }
    return h;
}

bool sld_grpc_h2_feed(sld_grpc_h2_t *h, const uint8_t *data, size_t len, int64_t now_ms) {
    if (h->broken)
        return false;
    h->now_ms = now_ms;
    h->in_feed = true;
    ssize_t n = nghttp2_session_mem_recv(h->s, data, len);
    h->in_feed = false;
    if (n < 0)
        h->broken = true;
    return !h->broken;
}

/* One frame nghttp2 wrote, onto out: the fields of an answer's HEADERS
 * and trailers put in their blocks, after the table size updates nghttp2
 * began them with (followed for the HPACK table, grpc_framing.h). */
static void put_frame(sld_grpc_h2_t *h, const uint8_t *p, size_t n, sld_buf_t *out) {
    if (n < 9 || p[3] != NGHTTP2_HEADERS) {
        sld_buf_append(out, p, n);
        return;
    }
    size_t flen = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
    uint8_t fl = p[4];
    if (flen != n - 9 || !(fl & NGHTTP2_FLAG_END_HEADERS) || (fl & (NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY))) {
        h->hpack.lost = true; /* a block not read: its size updates unknown */
        sld_buf_append(out, p, n);
        return;
    }
    size_t keep = sld_grpc_hpack_updates(&h->hpack, p + 9, flen);
    int32_t id = (int32_t)(((uint32_t)p[5] << 24 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 8 | p[8]) & 0x7fffffff);
    sld_grpc_call_t *c = call_of(h, id);
    for (sld_grpc_call_t *k = h->closed; c == NULL && k; k = k->next)
        if (k->id == id)
            c = k;
    uint8_t head[SLD_GRPC_HEAD_MAX];
    const uint8_t *fields;
    size_t nfields;
    if (c != NULL && (fl & NGHTTP2_FLAG_END_STREAM) && c->trailers_len > 0) {
        fields = c->trailers;
        nfields = c->trailers_len;
        c->trailers_len = 0;
    } else if (c != NULL && !(fl & NGHTTP2_FLAG_END_STREAM) && c->head) {
        fields = head;
        nfields = sld_grpc_answer_head(&h->hpack, head);
        c->head = false;
    } else {
        sld_buf_append(out, p, n);
        return;
    }
    size_t len = keep + nfields;
    uint8_t hd[9] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, p[3], p[4], p[5], p[6], p[7], p[8]};
    sld_buf_append(out, hd, 9);
    sld_buf_append(out, p + 9, keep);
    sld_buf_append(out, fields, nfields);
}

bool sld_grpc_h2_output(sld_grpc_h2_t *h, sld_buf_t *out, int64_t now_ms) {
    h->now_ms = now_ms;
    for (int round = 0; round < 2; round++) {
        for (;;) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(h->s, &p);
            if (n < 0) {
                h->broken = true;
                free_closed(h);
                return false;
            }
            if (n == 0)
                break;
            put_frame(h, p, (size_t)n, out);
        }
        free_closed(h);
        /* what was submitted is now off the windows: answers waiting may go */
        h->reserved = 0;
        bool waiting = false;
        for (sld_grpc_call_t *c = h->calls; c && !waiting; c = c->next)
            waiting = c->state == WAITING;
        if (!waiting)
            break;
        retry_waiting(h);
    }
    return !out->failed;
}

bool sld_grpc_h2_done(const sld_grpc_h2_t *h) {
    return h->broken || (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s));
}

bool sld_grpc_h2_busy(const sld_grpc_h2_t *h) { return h->ncalls > 0; }

void sld_grpc_h2_sweep(sld_grpc_h2_t *h, int64_t now_ms, int64_t idle_ms) {
    h->now_ms = now_ms;
    for (sld_grpc_call_t *c = h->calls, *next; c; c = next) {
        next = c->next;
        bool late = c->deadline_ms > 0 && now_ms >= c->deadline_ms;
        bool idle = idle_ms > 0 && now_ms - c->since_ms >= idle_ms;
        if (c->state == RECEIVING && (late || idle)) {
            trailers_only(c, SLD_GRPC_DEADLINE_EXCEEDED,
                          late ? "deadline exceeded" : "no complete request within limits.idle_timeout");
        } else if (c->state == DECIDING && late) {
            /* answered now; the decision's answer, when it comes, frees it */
            sld_grpc_call_t *orphan = c;
            sld_grpc_call_t *stand_in = calloc(1, sizeof *stand_in);
            if (stand_in == NULL)
                continue;
            memcpy(stand_in, orphan, CALL_HEAD); /* its out is NULL while deciding */
            memset(&stand_in->msg, 0, sizeof stand_in->msg);
            nghttp2_session_set_stream_user_data(h->s, c->id, stand_in);
            if (h->last == orphan)
                h->last = stand_in;
            if (stand_in->prev)
                stand_in->prev->next = stand_in;
            else
                h->calls = stand_in;
            if (stand_in->next)
                stand_in->next->prev = stand_in;
            orphan->h = NULL;
            orphan->prev = orphan->next = NULL;
            trailers_only(stand_in, SLD_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
        } else if (c->state == WAITING && (late || idle)) {
            if (c->out != c->out_small)
                free(c->out);
            c->out = NULL;
            if (late)
                trailers_only(c, SLD_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
            else
                trailers_only(c, SLD_GRPC_UNAVAILABLE, "the client gave no window for the answer within "
                                                      "limits.idle_timeout");
        }
    }
    if (h->ncalls == 0 && now_ms - h->idle_since >= POOL_IDLE_MS) /* an idle connection keeps no spare blocks */
        pool_trim(&h->pool);
    if (idle_ms > 0 && h->ncalls == 0 && now_ms - h->idle_since >= idle_ms && !h->stopping) {
        h->stopping = true;
        nghttp2_session_terminate_session(h->s, NGHTTP2_NO_ERROR);
    }
}

void sld_grpc_h2_shutdown(sld_grpc_h2_t *h) {
    if (h->stopping)
        return;
    h->stopping = true;
    for (sld_grpc_call_t *c = h->calls; c; c = c->next)
        if (c->state == RECEIVING)
            trailers_only(c, SLD_GRPC_UNAVAILABLE, "sluiced is stopping");
    nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h->s),
                          NGHTTP2_NO_ERROR, NULL, 0);
}

void sld_grpc_h2_free(sld_grpc_h2_t *h) {
    if (h == NULL)
        return;
    while (h->calls)
        detach(h->calls);
    free_closed(h);
    while (h->spare) {
        sld_grpc_call_t *c = h->spare;
        h->spare = c->next;
        free(c);
    }
    nghttp2_session_del(h->s);
    pool_trim(&h->pool);
    free(h);
}
