/* fuzz_grpc_h2.c -- libFuzzer target for the gRPC front's input path: a
 * client's bytes into one HTTP/2 session (server/grpc/grpc_h2.c: nghttp2,
 * the calls, gRPC's message prefix and trailers).
 *
 * The first byte picks how the rest is cut into reads and how calls are
 * answered: at once inside the read, after it, or only when the session
 * is gone (so a call outliving its stream or connection is freed by its
 * answer). Between reads the session's output is taken and checked to be
 * whole HTTP/2 frames (the trailers rewritten in place keep their frame's
 * length right) whose header blocks a client's HPACK decoder reads in
 * order (the answers' fields named by index in its dynamic table are
 * there and are the right ones, across the table size updates the input
 * asks for: as a real client, the decoder takes each
 * SETTINGS_HEADER_TABLE_SIZE when the session's ACK of it goes out, and
 * then requires a shrink's update at the next block's start), and time
 * moves on through the sweep (deadlines, idle_timeout, the idle GOAWAY).
 * Every call handed out is answered exactly once. Not here: sockets, TLS,
 * deciding (the integration tests).
 */
/* the checks are asserts, kept in every build type (the fuzz tree is
 * Release by default, whose -DNDEBUG would drop them) */
#undef NDEBUG
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"

#define MAX_CALLS 512
/* the input's SETTINGS frames followed for their HEADER_TABLE_SIZE */
#define MAX_SETTINGS 1024

typedef struct fuzz_ctx {
    uint8_t mode;
    sld_grpc_call_t *later[MAX_CALLS];
    size_t nlater;
    size_t seen;
} fuzz_ctx_t;

static void answer(sld_grpc_call_t *call, size_t i, const uint8_t *msg, size_t len) {
    switch (i % 4) {
    case 0: sld_grpc_h2_answer(call, SLD_GRPC_OK, NULL, msg, len); break;
    case 1: sld_grpc_h2_answer(call, SLD_GRPC_INVALID_ARGUMENT, "bad \x01 100%", NULL, 0); break;
    case 2: sld_grpc_h2_answer(call, SLD_GRPC_OK, NULL, (const uint8_t *)"", 0); break;
    default: sld_grpc_h2_answer(call, SLD_GRPC_UNAVAILABLE, NULL, NULL, 0); break;
    }
}

static void on_request(void *ctx, sld_grpc_call_t *call, int method, const uint8_t *msg, size_t len) {
    fuzz_ctx_t *f = ctx;
    assert(method == SLD_GRPC_M_RLS || method == SLD_GRPC_M_HEALTH);
    size_t i = f->seen++;
    if ((f->mode & 3) == 0 || (i & 1) || f->nlater == MAX_CALLS)
        answer(call, i, msg, len);
    else
        f->later[f->nlater++] = call;
}

static void on_output(void *ctx) { (void)ctx; }

/* The input's SETTINGS frames (not ACKs), in the order nghttp2 ACKs them:
 * each ACK going out is the next one taken. Frames past a malformed one
 * do not matter: nghttp2 has ended the connection there, and ACKs no more. */
typedef struct settings_queue {
    const uint8_t *frame[MAX_SETTINGS];
    size_t n, acked;
} settings_queue_t;

static void find_settings(settings_queue_t *q, const uint8_t *p, size_t size) {
    if (size < 24 || memcmp(p, NGHTTP2_CLIENT_MAGIC, 24) != 0)
        return;
    for (size_t i = 24; i + 9 <= size && q->n < MAX_SETTINGS;) {
        size_t len = (size_t)p[i] << 16 | (size_t)p[i + 1] << 8 | p[i + 2];
        if (i + 9 + len > size)
            break;
        if (p[i + 3] == NGHTTP2_SETTINGS && !(p[i + 4] & NGHTTP2_FLAG_ACK))
            q->frame[q->n++] = p + i;
        i += 9 + len;
    }
}

/* The session ACKed the client's next SETTINGS: the decoder takes its
 * table sizes, in the order given (as nghttp2's encoder was told them). */
static void settings_acked(settings_queue_t *q, nghttp2_hd_inflater *in) {
    if (q->acked == q->n)
        return;
    const uint8_t *f = q->frame[q->acked++];
    size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
    for (size_t i = 0; i + 6 <= len; i += 6)
        if ((f[9 + i] << 8 | f[10 + i]) == NGHTTP2_SETTINGS_HEADER_TABLE_SIZE) {
            const uint8_t *v = f + 11 + i;
            uint32_t size = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
            int rv = nghttp2_hd_inflate_change_table_size(in, size);
            assert(rv == 0);
            (void)rv;
        }
}

static const sld_grpc_h2_hooks_t hooks = {on_request, on_output};

static bool field_is(const nghttp2_nv *nv, const char *name, const char *value) {
    return nv->namelen == strlen(name) && memcmp(nv->name, name, nv->namelen) == 0 &&
           (value == NULL || (nv->valuelen == strlen(value) && memcmp(nv->value, value, nv->valuelen) == 0));
}

/* A header block as the client's decoder reads it, in the order sent: it
 * must decode (the answers' indexes name what the client's table holds),
 * an answer's HEADERS must be :status 200 and content-type
 * application/grpc, and a block that ends the stream must carry a
 * grpc-status (or be an HTTP error's :status). */
static void check_block(nghttp2_hd_inflater *in, const uint8_t *b, size_t len, bool ends) {
    bool ok200 = false, type = false, status = false, http_error = false;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(in, &nv, &fl, b, len, 1);
        assert(r >= 0);
        b += r;
        len -= (size_t)r;
        if (fl & NGHTTP2_HD_INFLATE_EMIT) {
            ok200 = ok200 || field_is(&nv, ":status", "200");
            http_error = http_error || (field_is(&nv, ":status", NULL) && !field_is(&nv, ":status", "200"));
            type = type || field_is(&nv, "content-type", "application/grpc");
            status = status || field_is(&nv, "grpc-status", NULL);
        }
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(in);
            break;
        }
    }
    if (ends)
        assert(status || http_error);
    else
        assert(ok200 && type);
}

/* The output is whole frames, and every header block reads right. */
static void check_frames(nghttp2_hd_inflater *in, settings_queue_t *q, const sld_buf_t *out) {
    const uint8_t *p = (const uint8_t *)out->data;
    size_t i = 0;
    while (i < out->len) {
        assert(i + 9 <= out->len);
        size_t len = (size_t)p[i] << 16 | (size_t)p[i + 1] << 8 | p[i + 2];
        assert(i + 9 + len <= out->len);
        /* the session's blocks are small: one HEADERS frame, END_HEADERS, never padded */
        if (p[i + 3] == NGHTTP2_HEADERS) {
            assert((p[i + 4] & (NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY)) ==
                   NGHTTP2_FLAG_END_HEADERS);
            check_block(in, p + i + 9, len, (p[i + 4] & NGHTTP2_FLAG_END_STREAM) != 0);
        }
        if (p[i + 3] == NGHTTP2_SETTINGS && (p[i + 4] & NGHTTP2_FLAG_ACK))
            settings_acked(q, in);
        i += 9 + len;
    }
    assert(i == out->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    fuzz_ctx_t f = {.mode = data[0]};
    data++;
    size--;
    static settings_queue_t q;
    q.n = q.acked = 0;
    find_settings(&q, data, size);
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &f, 256, 0);
    if (h == NULL)
        return 0;
    nghttp2_hd_inflater *in;
    if (nghttp2_hd_inflate_new(&in) != 0) {
        sld_grpc_h2_free(h);
        return 0;
    }
    size_t chunk = (f.mode >> 2) % 8 == 0 ? size : (size_t)1 << ((f.mode >> 2) % 8);
    int64_t now = 0;
    sld_buf_t out = {0};
    bool alive = true;
    for (size_t off = 0; off < size && alive; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        alive = sld_grpc_h2_feed(h, data + off, n, now);
        /* the calls put aside: half answered now, in the order they came */
        if ((f.mode & 3) == 1)
            while (f.nlater > 0) {
                f.nlater--;
                answer(f.later[f.nlater], f.nlater, (const uint8_t *)"later", 5);
            }
        sld_buf_reset(&out);
        sld_grpc_h2_output(h, &out, now);
        check_frames(in, &q, &out);
        now += 50;
        if (f.mode & 0x80)
            sld_grpc_h2_sweep(h, now, 100);
    }
    if (f.mode & 0x40)
        sld_grpc_h2_shutdown(h);
    sld_buf_reset(&out);
    sld_grpc_h2_output(h, &out, now);
    check_frames(in, &q, &out);
    (void)sld_grpc_h2_done(h);
    sld_grpc_h2_free(h);
    nghttp2_hd_inflate_del(in);
    /* calls still owed an answer outlived their session */
    while (f.nlater > 0) {
        f.nlater--;
        answer(f.later[f.nlater], f.nlater, (const uint8_t *)"gone", 4);
    }
    sld_buf_free(&out);
    return 0;
}
