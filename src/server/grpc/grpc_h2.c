/* grpc_h2.c -- one gRPC connection's HTTP/2 session on nghttp2 (see
 * grpc_h2.h).
 *
 * A call lives from its stream's first HEADERS: RECEIVING (headers, then
 * its message), DECIDING (with the front), WAITING (its answer is ready
 * but the client's window is not), SENT (handed to nghttp2; its stream
 * reset by the sweep if its DATA is held past idle_timeout), then freed
 * (or kept for the session's next call) when its stream closes -- or,
 * when the stream or the connection goes while it is DECIDING, orphaned
 * (h NULL) and freed by its answer.
 *
 * Header blocks: nghttp2 Huffman-codes every string it writes, and is
 * given every field never indexed (so it adds nothing to the client's
 * HPACK table). An answer's HEADERS are submitted with no field at all
 * (nothing for nghttp2 to encode); as they go out, put_frame writes their
 * fields into the block (grpc_framing.h: plain literals, and content-type
 * from the table once it is there). An answer's trailers are not asked of
 * nghttp2 at all: its DATA ends the stream as far as nghttp2 knows, and
 * send_answer, which writes the DATA from the call itself (no copy in
 * nghttp2), puts the trailers after it in a HEADERS frame of their own
 * that ends the stream on the wire instead (one frame fewer for nghttp2 to
 * queue, schedule, pack and account; HEADERS are not flow controlled).
 * (Trailers-Only errors, rare, go through nghttp2's encoder, and
 * put_frame puts their fields in place of what it wrote.)
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"
#include "server/grpc/grpc_head.h"
#include "server/grpc/grpc_pool.h"

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
/* a session's own table of calls by stream id, direct-mapped: a client
 * numbers its streams one after another, so the calls open at once fall
 * in distinct slots unless one outlives CALL_SLOTS younger ones */
#define CALL_SLOTS 512

enum { RECEIVING, DECIDING, WAITING, SENT };

struct sld_grpc_call {
    sld_grpc_h2_t *h; /* NULL: orphaned, freed by its answer */
    int32_t id;
    int state;
    sld_grpc_head_t head; /* what the request's header block said */
    bool spilled;        /* filed with nghttp2's stream, not in its slot */
    bool remote_done;    /* the client ended its side of the stream */
    size_t header_bytes;
    int64_t since_ms;    /* receiving, waiting for a window, or handed to nghttp2, since */
    int64_t deadline_ms; /* grpc-timeout's, or 0 */
    sld_grpc_msg_t msg;
    uint8_t *out;        /* the answer's message, prefixed: out_small or malloc'd */
    size_t out_len, out_off;
    size_t trailers_len; /* 0: nghttp2's block goes out as it is */
    bool answer_head;    /* the answer's HEADERS block is put_frame's to write */
    bool cancelled;      /* reset by the sweep: its DATA was held too long */
    sld_grpc_call_t *prev, *next;
    /* from here on, not cleared when a call is made */
    uint8_t trailers[SLD_GRPC_TRAILERS_MAX];
    uint8_t out_small[OUT_SMALL];
};

/* where a call's fields that are cleared for each new call end */
#define CALL_HEAD offsetof(sld_grpc_call_t, trailers)

/* what nghttp2's pool keeps per size class (grpc_pool.h): a few blocks per
 * stream a client may open (fewer kept missed three times a call with 64
 * in flight), freed when no call has been open for POOL_IDLE_MS at a sweep */
#define POOL_KEEP (2 * MAX_STREAMS)
#define POOL_IDLE_MS 1000

struct sld_grpc_h2 {
    nghttp2_session *s;
    const sld_grpc_h2_hooks_t *hooks;
    void *ctx;
    uint32_t max_message;
    sld_grpc_call_t *calls; /* attached to a stream */
    sld_grpc_call_t *closed; /* their streams closed as output was made: freed after it */
    sld_grpc_call_t *spare;  /* finished calls, linked through next, for the next ones */
    size_t nspare;
    sld_grpc_call_t *slot[CALL_SLOTS]; /* calls by stream id (nghttp2's lookup is a hash) */
    size_t nspilled;         /* calls not in their slot (an older call held it): with nghttp2's stream */
    sld_grpc_call_t *cur;    /* the call whose request header block is being read */
    size_t ncalls;
    size_t reserved;        /* DATA submitted since the last output: not yet off the window */
    int64_t idle_since;     /* no call open since (ms) */
    int64_t now_ms;
    bool in_feed;
    sld_buf_t *out;         /* the output being made (sld_grpc_h2_output), for send_answer */
    sld_buf_t part;         /* a frame nghttp2 handed out only in part so far (put_frames) */
    bool table_update_owed; /* nghttp2's next header block begins with a table size update */
    bool waiting;           /* a call may be WAITING (set when one is, cleared by a retry of them all) */
    bool broken;
    bool stopping;
    sld_grpc_pool_t pool;   /* nghttp2's blocks kept for reuse */
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

static size_t slot_of(int32_t id) { return ((uint32_t)id >> 1) & (CALL_SLOTS - 1); }

/* The call on stream id (NULL: none): its slot's, else (when any call
 * spilled over) nghttp2's. */
static sld_grpc_call_t *call_of(sld_grpc_h2_t *h, int32_t id) {
    sld_grpc_call_t *c = h->slot[slot_of(id)];
    if (c != NULL && c->id == id)
        return c;
    return h->nspilled > 0 ? nghttp2_session_get_stream_user_data(h->s, id) : NULL;
}

/* Files a new call under its stream: in its slot, or with nghttp2's
 * stream when an older call holds the slot. */
static void attach(sld_grpc_h2_t *h, sld_grpc_call_t *c) {
    sld_grpc_call_t **slot = &h->slot[slot_of(c->id)];
    if (*slot == NULL) {
        *slot = c;
        return;
    }
    c->spilled = true;
    h->nspilled++;
    nghttp2_session_set_stream_user_data(h->s, c->id, c);
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
    /* nghttp2's stream is closing, or the session going: what it holds
     * for the stream is left to it */
    if (c->spilled)
        h->nspilled--;
    else
        h->slot[slot_of(c->id)] = NULL;
    if (h->cur == c)
        h->cur = NULL;
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
    sld_grpc_h2_t *h = user_data;
    (void)buf; /* the bytes go from the call to the output: send_answer */
    size_t n = c->out_len - c->out_off < length ? c->out_len - c->out_off : length;
    c->out_off += n;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (c->out_off != c->out_len)
        return (ssize_t)n;
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!h->table_update_owed)
        return (ssize_t)n; /* the DATA ends the stream; send_answer puts the trailers after it */
    /* nghttp2's next header block begins with a table size update the
     * client waits for: the trailers are that block, submitted empty, and
     * put_frame writes their field (grpc-status: 0) into it */
    *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    c->trailers_len = sld_grpc_trailers(c->trailers, false, SLD_GRPC_OK, NULL);
    if (nghttp2_submit_trailer(s, id, NULL, 0) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return (ssize_t)n;
}

/* A DATA frame of an answer, which read_answer measured: its header (from
 * nghttp2) and its bytes (from the call) onto the output being made, and
 * after the last one, which nghttp2 ended the stream with, the trailers. */
static int send_answer(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t length,
                       nghttp2_data_source *source, void *user_data) {
    (void)s;
    sld_grpc_h2_t *h = user_data;
    sld_grpc_call_t *c = source->ptr;
    const uint8_t *data = c->out + c->out_off - length;
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        sld_grpc_put_last_data(&h->hpack, framehd, data, length, h->out);
    } else {
        sld_buf_append(h->out, framehd, 9);
        sld_buf_append(h->out, data, length);
    }
    return 0;
}

/* Sends an answer's HEADERS, DATA and trailers if the client's windows
 * take the whole DATA now; else it waits. */
static bool try_send(sld_grpc_call_t *c) {
    sld_grpc_h2_t *h = c->h;
    int32_t conn = nghttp2_session_get_remote_window_size(h->s) - (int32_t)h->reserved;
    /* nothing was sent on the stream yet: its window is the client's
     * initial one and what it added, no less than the initial one (looked
     * up in nghttp2's stream map only when that is not enough) */
    uint32_t initial = nghttp2_session_get_remote_settings(h->s, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
    if (conn < (int32_t)c->out_len ||
        (initial < c->out_len && nghttp2_session_get_stream_remote_window_size(h->s, c->id) < (int32_t)c->out_len)) {
        h->waiting = true;
        if (c->state != WAITING) {
            c->state = WAITING;
            c->since_ms = h->now_ms;
        }
        return false;
    }
    nghttp2_data_provider data = {.source.ptr = c, .read_callback = read_answer};
    c->state = SENT;
    c->since_ms = h->now_ms;
    c->answer_head = true; /* an empty block: put_frame writes its fields */
    h->reserved += c->out_len;
    if (nghttp2_submit_response(h->s, c->id, NULL, 0, &data) != 0)
        nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_INTERNAL_ERROR);
    return true;
}

static void retry_waiting(sld_grpc_h2_t *h) {
    bool waiting = false;
    for (sld_grpc_call_t *c = h->calls; c; c = c->next)
        if (c->state == WAITING)
            waiting = !try_send(c) || waiting;
    h->waiting = waiting;
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
            sld_grpc_msg_prefix(c->out, (uint32_t)len);
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
    (void)s;
    sld_grpc_h2_t *h = user_data;
    h->cur = NULL;
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
    attach(h, c);
    h->cur = c;
    return 0;
}

/* nghttp2's HTTP messaging is off (nghttp2_option_set_no_http_messaging:
 * its checks of every field were a tenth of a call's cost), so what gRPC
 * needs of a request is checked by grpc_head.h. The call is the header
 * block's own (on_begin_headers), not looked up for each field. */
static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    (void)flags;
    (void)s;
    sld_grpc_h2_t *h = user_data;
    sld_grpc_call_t *c = h->cur;
    if (c == NULL || c->id != f->hd.stream_id || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers of a request: nothing in them matters */
    /* RFC 9113 6.5.2's accounting: each field's name, value and 32 */
    c->header_bytes += namelen + valuelen + 32;
    if (c->header_bytes > MAX_HEADER_LIST)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    sld_grpc_head_field(&c->head, name, namelen, value, valuelen);
    return 0;
}

static void take_message(sld_grpc_call_t *c, int state) {
    sld_grpc_h2_t *h = c->h;
    switch (state) {
    case SLD_GRPC_MSG_DONE:
        c->state = DECIDING;
        h->hooks->on_request(h->ctx, c, c->head.method, c->msg.buf, c->msg.len);
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
        h->hooks->on_request(h->ctx, c, c->head.method, msg, msg_len);
        return 0;
    }
    take_message(c, sld_grpc_msg_feed(&c->msg, data, len, h->max_message));
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
    sld_grpc_h2_t *h = user_data;
    if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK))
        for (size_t i = 0; i < f->settings.niv; i++)
            if (f->settings.iv[i].settings_id == NGHTTP2_SETTINGS_HEADER_TABLE_SIZE)
                h->table_update_owed = true; /* nghttp2's deflater was told of it */
    if (f->hd.type == NGHTTP2_WINDOW_UPDATE || f->hd.type == NGHTTP2_SETTINGS) {
        if (h->waiting)
            retry_waiting(h);
        return 0;
    }
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    sld_grpc_call_t *c = call_of(h, f->hd.stream_id);
    if (c == NULL)
        return 0;
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        c->remote_done = true;
    if (c->state != RECEIVING)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        if (c->head.timed)
            c->deadline_ms = h->now_ms + (int64_t)((c->head.timeout_us + 999) / 1000);
        if (!sld_grpc_head_wellformed(&c->head)) {
            c->state = SENT;
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_PROTOCOL_ERROR);
            return 0;
        }
        if (!c->head.post) {
            http_error(c, "405");
            return 0;
        }
        if (!c->head.grpc_type) {
            http_error(c, "415");
            return 0;
        }
        if (c->head.method == SLD_GRPC_M_OTHER) {
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
    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    /* the call knows whether its client ended (nghttp2 would look the stream up) */
    sld_grpc_call_t *c = call_of(user_data, f->hd.stream_id);
    if (c != NULL ? !c->remote_done : nghttp2_session_get_stream_remote_close(s, f->hd.stream_id) == 0)
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
    nghttp2_session_callbacks_set_send_data_callback(cb, send_answer);
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
    h->pool.keep = POOL_KEEP;
    h->mem = (nghttp2_mem){&h->pool, sld_grpc_pool_malloc, sld_grpc_pool_free, sld_grpc_pool_calloc,
                           sld_grpc_pool_realloc};
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
        sld_grpc_pool_trim(&h->pool);
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
    if (p[3] != NGHTTP2_HEADERS) {
        sld_buf_append(out, p, n);
        return;
    }
    h->table_update_owed = false; /* any block nghttp2 writes begins with it */
    size_t flen = n - 9;
    uint8_t fl = p[4];
    if (!(fl & NGHTTP2_FLAG_END_HEADERS) || (fl & (NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY))) {
        sld_grpc_hpack_lose(&h->hpack); /* a block not read: its size updates unknown */
        sld_buf_append(out, p, n);
        return;
    }
    size_t keep = sld_grpc_hpack_updates(&h->hpack, p + 9, flen);
    int32_t id = (int32_t)(((uint32_t)p[5] << 24 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 8 | p[8]) & 0x7fffffff);
    sld_grpc_call_t *c = call_of(h, id);
    for (sld_grpc_call_t *k = h->closed; c == NULL && k; k = k->next)
        if (k->id == id)
            c = k;
    bool trailers = (fl & NGHTTP2_FLAG_END_STREAM) != 0;
    if (c == NULL || (trailers ? c->trailers_len == 0 : !c->answer_head)) {
        sld_buf_append(out, p, n);
        return;
    }
    if (trailers) {
        sld_grpc_put_headers(&h->hpack, p, keep, c->trailers, c->trailers_len, out);
        c->trailers_len = 0;
    } else {
        sld_grpc_put_headers(&h->hpack, p, keep, NULL, 0, out);
        c->answer_head = false;
    }
}

/* What nghttp2_session_mem_send handed out, frame by frame. It gives
 * one whole frame a call (1.52); one that packed several, or cut one,
 * must still not let a HEADERS frame go by unread (the client's HPACK
 * table and ours would part) nor have bytes within a frame read as a
 * frame: a frame cut short waits in part for the rest. */
static void put_frames(sld_grpc_h2_t *h, const uint8_t *p, size_t n, sld_buf_t *out) {
    if (h->part.len > 0) {
        sld_buf_append(&h->part, p, n);
        p = (const uint8_t *)h->part.data;
        n = h->part.len;
    }
    size_t off = 0;
    while (n - off >= 9) {
        size_t len = 9 + ((size_t)p[off] << 16 | (size_t)p[off + 1] << 8 | p[off + 2]);
        if (len > n - off)
            break;
        put_frame(h, p + off, len, out);
        off += len;
    }
    if (h->part.len > 0)
        sld_buf_consume(&h->part, off);
    else if (off < n)
        sld_buf_append(&h->part, p + off, n - off);
    if (h->part.failed)
        out->failed = true;
}

bool sld_grpc_h2_output(sld_grpc_h2_t *h, sld_buf_t *out, int64_t now_ms) {
    h->now_ms = now_ms;
    h->out = out;
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
            put_frames(h, p, (size_t)n, out);
        }
        free_closed(h);
        /* what was submitted is now off the windows: answers waiting may go */
        h->reserved = 0;
        if (!h->waiting)
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
            if (stand_in->spilled)
                nghttp2_session_set_stream_user_data(h->s, c->id, stand_in);
            else
                h->slot[slot_of(c->id)] = stand_in;
            if (h->cur == orphan)
                h->cur = stand_in;
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
        } else if (c->state == SENT && idle && c->out_off < c->out_len && !c->cancelled) {
            /* a client that shrank its window after the answer was handed
             * to nghttp2 would hold the stream, and the connection from
             * its idle GOAWAY, for good: the stream is reset (RFC 9113
             * 8.1: CANCEL, the answer no longer wanted) */
            c->cancelled = true;
            nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_CANCEL);
        }
    }
    if (h->ncalls == 0 && now_ms - h->idle_since >= POOL_IDLE_MS) /* an idle connection keeps no spare blocks */
        sld_grpc_pool_trim(&h->pool);
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
    sld_grpc_pool_trim(&h->pool);
    sld_buf_free(&h->part);
    free(h);
}
