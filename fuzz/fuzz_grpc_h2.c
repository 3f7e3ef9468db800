/* fuzz_grpc_h2.c -- libFuzzer target for the gRPC front's input path: a
 * client's bytes into one HTTP/2 session (server/grpc/grpc_h2.c: nghttp2,
 * the calls, gRPC's message prefix and trailers).
 *
 * The first byte picks how the rest is cut into reads and how calls are
 * answered: at once inside the read, after it, or only when the session
 * is gone (so a call outliving its stream or connection is freed by its
 * answer). Between reads the session's output is taken and checked to be
 * whole HTTP/2 frames (the trailers rewritten in place keep their frame's
 * length right), and time moves on through the sweep (deadlines,
 * idle_timeout, the idle GOAWAY). Every call handed out is answered
 * exactly once. Not here: sockets, TLS, deciding (the integration tests).
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"

#define MAX_CALLS 512

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

static const sld_grpc_h2_hooks_t hooks = {on_request, on_output};

/* The output is whole frames. */
static void check_frames(const sld_buf_t *out) {
    const uint8_t *p = (const uint8_t *)out->data;
    size_t i = 0;
    while (i < out->len) {
        assert(i + 9 <= out->len);
        i += 9 + ((size_t)p[i] << 16 | (size_t)p[i + 1] << 8 | p[i + 2]);
    }
    assert(i == out->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    fuzz_ctx_t f = {.mode = data[0]};
    data++;
    size--;
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &f, 256, 0);
    if (h == NULL)
        return 0;
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
        check_frames(&out);
        now += 50;
        if (f.mode & 0x80)
            sld_grpc_h2_sweep(h, now, 100);
    }
    if (f.mode & 0x40)
        sld_grpc_h2_shutdown(h);
    sld_buf_reset(&out);
    sld_grpc_h2_output(h, &out, now);
    check_frames(&out);
    (void)sld_grpc_h2_done(h);
    sld_grpc_h2_free(h);
    /* calls still owed an answer outlived their session */
    while (f.nlater > 0) {
        f.nlater--;
        answer(f.later[f.nlater], f.nlater, (const uint8_t *)"gone", 4);
    }
    sld_buf_free(&out);
    return 0;
}
