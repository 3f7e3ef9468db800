/* test_grpc_h2.c -- the gRPC front's framing (server/grpc/grpc_framing.c)
 * and its HTTP/2 session (server/grpc/grpc_h2.c), with bytes: a client's
 * frames built here (HPACK literals, as test_grpc_hostile.py builds them),
 * the session's output read back frame by frame. Calls are answered by the
 * test, now or later; time is the test's (milliseconds passed in). */
#define _GNU_SOURCE /* memmem */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "server/grpc/grpc_framing.h"
#include "server/grpc/grpc_h2.h"

/* ---- framing -------------------------------------------------------------------------------- */

static void message_in_pieces(void **state) {
    (void)state;
    const uint8_t wire[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 'x', 'y'};
    sld_grpc_msg_t m = {0};
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(sld_grpc_msg_feed(&m, wire + i, 1, 100), SLD_GRPC_MSG_MORE);
    assert_int_equal(sld_grpc_msg_feed(&m, wire + 7, 3, 100), SLD_GRPC_MSG_DONE);
    assert_int_equal(m.len, 3);
    assert_memory_equal(m.buf, "abc", 3);
    assert_int_equal(sld_grpc_msg_feed(&m, wire, 5, 100), SLD_GRPC_MSG_DONE);
    sld_grpc_msg_free(&m);
    const uint8_t empty[] = {0, 0, 0, 0, 0};
    assert_int_equal(sld_grpc_msg_feed(&m, empty, 5, 100), SLD_GRPC_MSG_DONE);
    assert_int_equal(m.len, 0);
    sld_grpc_msg_free(&m);
    const uint8_t big[] = {0, 0, 0, 0, 101};
    assert_int_equal(sld_grpc_msg_feed(&m, big, 5, 100), SLD_GRPC_MSG_TOO_LARGE);
    sld_grpc_msg_free(&m);
    const uint8_t huge[] = {0, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(sld_grpc_msg_feed(&m, huge, 5, UINT32_MAX - 1), SLD_GRPC_MSG_TOO_LARGE);
    sld_grpc_msg_free(&m);
    const uint8_t packed[] = {1, 0, 0, 0, 1, 'z'};
    assert_int_equal(sld_grpc_msg_feed(&m, packed, 6, 100), SLD_GRPC_MSG_COMPRESSED);
    sld_grpc_msg_free(&m);
}

static void timeouts(void **state) {
    (void)state;
    uint64_t us;
    assert_true(sld_grpc_timeout_parse((const uint8_t *)"1S", 2, &us));
    assert_int_equal(us, 1000000);
    assert_true(sld_grpc_timeout_parse((const uint8_t *)"250m", 4, &us));
    assert_int_equal(us, 250000);
    assert_true(sld_grpc_timeout_parse((const uint8_t *)"2H", 2, &us));
    assert_int_equal(us, 7200000000ull);
    assert_true(sld_grpc_timeout_parse((const uint8_t *)"1500n", 5, &us));
    assert_int_equal(us, 2);
    assert_true(sld_grpc_timeout_parse((const uint8_t *)"99999999u", 9, &us));
    assert_int_equal(us, 99999999);
    assert_false(sld_grpc_timeout_parse((const uint8_t *)"S", 1, &us));
    assert_false(sld_grpc_timeout_parse((const uint8_t *)"123456789S", 10, &us)); /* 9 digits */
    assert_false(sld_grpc_timeout_parse((const uint8_t *)"1s", 2, &us));
    assert_false(sld_grpc_timeout_parse((const uint8_t *)"-1S", 3, &us));
}

/* A message in one piece is taken where it lies; anything else is left to
 * sld_grpc_msg_feed. */
static void whole_messages(void **state) {
    (void)state;
    const uint8_t *m;
    uint32_t n;
    assert_true(sld_grpc_msg_whole((const uint8_t *)"\0\0\0\0\3abc", 8, 16, &m, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(m, "abc", 3);
    assert_true(sld_grpc_msg_whole((const uint8_t *)"\0\0\0\0\2abc", 8, 16, &m, &n)); /* more after it */
    assert_int_equal(n, 2);
    assert_true(sld_grpc_msg_whole((const uint8_t *)"\0\0\0\0\0", 5, 16, &m, &n)); /* empty */
    assert_int_equal(n, 0);
    assert_false(sld_grpc_msg_whole((const uint8_t *)"\0\0\0\0\4abc", 8, 16, &m, &n)); /* in parts */
    assert_false(sld_grpc_msg_whole((const uint8_t *)"\1\0\0\0\3abc", 8, 16, &m, &n)); /* compressed */
    assert_false(sld_grpc_msg_whole((const uint8_t *)"\0\0\0\0\3abc", 8, 2, &m, &n));  /* over max */
    assert_false(sld_grpc_msg_whole((const uint8_t *)"\0\0\0", 3, 16, &m, &n));          /* no prefix yet */
    assert_false(sld_grpc_msg_whole((const uint8_t *)"\0\xff\xff\xff\xff" "a", 6, UINT32_MAX, &m, &n));
}

static void trailers_are_plain_literals(void **state) {
    (void)state;
    uint8_t b[SLD_GRPC_TRAILERS_MAX];
    size_t n = sld_grpc_trailers(b, false, 0, NULL);
    const uint8_t ok[] = "\x10\x0bgrpc-status\x01" "0";
    assert_int_equal(n, sizeof ok - 1);
    assert_memory_equal(b, ok, n);
    n = sld_grpc_trailers(b, true, 14, "50% gone\n");
    const uint8_t only[] = "\x88\x10\x0c" "content-type\x10" "application/grpc"
                           "\x10\x0bgrpc-status\x02" "14\x10\x0cgrpc-message\x0d" "50%25 gone%0A";
    assert_int_equal(n, sizeof only - 1);
    assert_memory_equal(b, only, n);
    /* a long message: cut (short of 300 bytes, no escape split), its length an
     * HPACK integer past 127: 0x7f and two more bytes */
    char lng[1000];
    memset(lng, 'x', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    n = sld_grpc_trailers(b, true, 3, lng);
    assert_true(n <= SLD_GRPC_TRAILERS_MAX);
    assert_int_equal(b[n - 298 - 3], 0x7f);
    assert_memory_equal(b + n - 298 - 3 - 12, "grpc-message", 12);
}

/* ---- a client in bytes ---------------------------------------------------------------------- */

enum { DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, GOAWAY = 7, WINDOW_UPDATE = 8 };

typedef struct wire {
    uint8_t b[1 << 16];
    size_t n;
} wire_t;

static void frame(wire_t *w, uint8_t type, uint8_t flags, uint32_t stream, const void *payload, size_t len) {
    uint8_t hd[9] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, type, flags,
                     (uint8_t)(stream >> 24), (uint8_t)(stream >> 16), (uint8_t)(stream >> 8), (uint8_t)stream};
    memcpy(w->b + w->n, hd, 9);
    if (len > 0) /* an empty SETTINGS has no payload to copy */
        memcpy(w->b + w->n + 9, payload, len);
    w->n += 9 + len;
}

static size_t literal(uint8_t *out, const char *name, const char *value) {
    size_t nl = strlen(name), vl = strlen(value);
    out[0] = 0;
    out[1] = (uint8_t)nl;
    memcpy(out + 2, name, nl);
    out[2 + nl] = (uint8_t)vl;
    memcpy(out + 3 + nl, value, vl);
    return 3 + nl + vl;
}

static void preface(wire_t *w, const void *settings, size_t len) {
    memcpy(w->b + w->n, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    w->n += 24;
    frame(w, SETTINGS, 0, 0, settings, len);
}

static void open_call(wire_t *w, uint32_t stream, const char *path, const char *timeout) {
    uint8_t block[512];
    size_t n = 0;
    n += literal(block + n, ":method", "POST");
    n += literal(block + n, ":scheme", "http");
    n += literal(block + n, ":path", path);
    n += literal(block + n, ":authority", "x");
    n += literal(block + n, "content-type", "application/grpc");
    n += literal(block + n, "te", "trailers");
    if (timeout)
        n += literal(block + n, "grpc-timeout", timeout);
    frame(w, HEADERS, 0x4, stream, block, n);
}

static void send_message(wire_t *w, uint32_t stream, const char *body, bool end) {
    uint8_t m[256];
    size_t len = strlen(body);
    m[0] = 0;
    m[1] = m[2] = m[3] = 0;
    m[4] = (uint8_t)len;
    memcpy(m + 5, body, len);
    frame(w, DATA, end ? 0x1 : 0, stream, m, 5 + len);
}

/* ---- the session under test ----------------------------------------------------------------- */

typedef struct seen {
    sld_grpc_call_t *calls[16];
    int methods[16];
    char bodies[16][64];
    int n;
    int outputs;
    bool answer_now; /* answer each call with its request as the reply */
} seen_t;

static void on_request(void *ctx, sld_grpc_call_t *call, int method, const uint8_t *msg, size_t len) {
    seen_t *s = ctx;
    s->calls[s->n] = call;
    s->methods[s->n] = method;
    memcpy(s->bodies[s->n], msg, len < 63 ? len : 63);
    s->n++;
    if (s->answer_now)
        sld_grpc_h2_answer(call, 0, NULL, msg, len);
}

static void on_output(void *ctx) { ((seen_t *)ctx)->outputs++; }

static const sld_grpc_h2_hooks_t hooks = {on_request, on_output};

/* The frames of `stream` in out: its DATA bytes appended to data, its
 * last HEADERS block (END_STREAM) to trailers; whether it ended. */
static bool stream_end(const sld_buf_t *out, uint32_t stream, sld_buf_t *data, sld_buf_t *trailers, int *rst) {
    const uint8_t *p = (const uint8_t *)out->data;
    bool ended = false;
    for (size_t i = 0; i + 9 <= out->len;) {
        size_t len = (size_t)p[i] << 16 | (size_t)p[i + 1] << 8 | p[i + 2];
        uint32_t id = ((uint32_t)p[i + 5] << 24 | (uint32_t)p[i + 6] << 16 | (uint32_t)p[i + 7] << 8 | p[i + 8]) &
                      0x7fffffff;
        assert_true(i + 9 + len <= out->len);
        if (id == stream && p[i + 3] == DATA && data)
            sld_buf_append(data, p + i + 9, len);
        if (id == stream && p[i + 3] == HEADERS && (p[i + 4] & 0x1)) {
            if (trailers)
                sld_buf_append(trailers, p + i + 9, len);
            ended = true;
        }
        if (id == stream && p[i + 3] == RST_STREAM) {
            if (rst)
                *rst = p[i + 12];
            ended = true;
        }
        i += 9 + len;
    }
    return ended;
}

static bool has(const sld_buf_t *b, const char *lit, size_t len) {
    return b->len >= len && memmem(b->data, b->len, lit, len) != NULL;
}
#define HAS(b, lit) has((b), (lit), sizeof(lit) - 1)

static void a_call_answered(void **state) {
    (void)state;
    seen_t s = {.answer_now = true};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    assert_non_null(h);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
    open_call(&w, 1, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 1, "hello", false); /* whole, the stream not ended: answered */
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    assert_int_equal(s.n, 1);
    assert_int_equal(s.methods[0], SLD_GRPC_M_RLS);
    assert_string_equal(s.bodies[0], "hello");
    assert_int_equal(s.outputs, 0); /* answered within the feed: the caller writes after it */
    sld_buf_t out = {0}, data = {0}, tr = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 1, &data, &tr, NULL));
    assert_int_equal(data.len, 10);
    assert_memory_equal(data.data, "\0\0\0\0\5hello", 10);
    assert_true(HAS(&tr, "grpc-status\x01" "0"));
    /* the client had not ended its side: told to stop (RST_STREAM NO_ERROR), the call is over */
    int rst = -1;
    sld_buf_t none = {0};
    stream_end(&out, 1, NULL, &none, &rst);
    assert_int_equal(rst, 0);
    assert_false(sld_grpc_h2_busy(h));
    sld_buf_free(&none);
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&data);
    sld_buf_free(&tr);
}

static void errors_are_trailers_only(void **state) {
    (void)state;
    seen_t s = {0};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 8, 0);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
    open_call(&w, 1, "/nope/Nope", NULL);
    send_message(&w, 1, "x", true);
    open_call(&w, 3, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 3, "more than eight", true);
    open_call(&w, 5, SLD_GRPC_HEALTH_METHOD, NULL);
    frame(&w, DATA, 0x1, 5, "\0\0\0", 3); /* the stream ends within the prefix */
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    assert_int_equal(s.n, 0);
    sld_buf_t out = {0}, t1 = {0}, t3 = {0}, t5 = {0}, d = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 1, &d, &t1, NULL));
    assert_true(stream_end(&out, 3, &d, &t3, NULL));
    assert_true(stream_end(&out, 5, &d, &t5, NULL));
    assert_int_equal(d.len, 0);
    assert_true(HAS(&t1, "grpc-status\x02" "12"));
    assert_true(HAS(&t1, "unknown method"));
    assert_true(HAS(&t3, "grpc-status\x01" "8"));
    assert_true(HAS(&t5, "grpc-status\x01" "3"));
    assert_false(sld_grpc_h2_busy(h));
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&t1);
    sld_buf_free(&t3);
    sld_buf_free(&t5);
    sld_buf_free(&d);
}

static void later_answers_and_gone_streams(void **state) {
    (void)state;
    seen_t s = {0};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
    open_call(&w, 1, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 1, "one", true);
    open_call(&w, 3, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 3, "two", true);
    open_call(&w, 5, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 5, "three", true);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    assert_int_equal(s.n, 3);
    /* the client resets stream 3 while it is being decided */
    w.n = 0;
    frame(&w, RST_STREAM, 0, 3, "\0\0\0\x8", 4);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 1));
    sld_grpc_h2_answer(s.calls[0], 0, NULL, (const uint8_t *)"A", 1);
    assert_int_equal(s.outputs, 1);
    sld_grpc_h2_answer(s.calls[1], 0, NULL, (const uint8_t *)"B", 1); /* freed: nothing sent */
    sld_buf_t out = {0}, d1 = {0};
    assert_true(sld_grpc_h2_output(h, &out, 2));
    assert_true(stream_end(&out, 1, &d1, NULL, NULL));
    assert_false(stream_end(&out, 3, NULL, NULL, NULL));
    /* the connection goes with stream 5 still being decided; its answer frees it */
    sld_grpc_h2_free(h);
    sld_grpc_h2_answer(s.calls[2], 0, NULL, (const uint8_t *)"C", 1);
    sld_buf_free(&out);
    sld_buf_free(&d1);
}

static void deadlines(void **state) {
    (void)state;
    seen_t s = {0};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    /* SETTINGS_INITIAL_WINDOW_SIZE 0: no answer can go out */
    static wire_t v;
    v.n = 0;
    preface(&v, "\x00\x04\x00\x00\x00\x00", 6);
    open_call(&v, 1, SLD_GRPC_RLS_METHOD, NULL);
    frame(&v, DATA, 0, 1, "\0\0\0\0\4pa", 7); /* 2 bytes of a 4-byte message */
    open_call(&v, 3, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&v, 3, "windowless", true);
    open_call(&v, 5, SLD_GRPC_RLS_METHOD, "200m");
    send_message(&v, 5, "late", true);
    assert_true(sld_grpc_h2_feed(h, v.b, v.n, 0));
    assert_int_equal(s.n, 2);
    sld_grpc_h2_answer(s.calls[0], 0, NULL, (const uint8_t *)"ok", 2); /* waits for a window */
    sld_buf_t out = {0};
    assert_true(sld_grpc_h2_output(h, &out, 100));
    assert_false(stream_end(&out, 3, NULL, NULL, NULL));
    /* 250 ms: stream 5 is past its grpc-timeout while being decided */
    sld_grpc_h2_sweep(h, 250, 1000);
    sld_buf_t t5 = {0};
    assert_true(sld_grpc_h2_output(h, &out, 250));
    assert_true(stream_end(&out, 5, NULL, &t5, NULL));
    assert_true(HAS(&t5, "grpc-status\x01" "4"));
    sld_grpc_h2_answer(s.calls[1], 0, NULL, (const uint8_t *)"late", 4); /* after its deadline: dropped */
    /* past idle_timeout: stream 1 never got its message, stream 3 no window */
    sld_grpc_h2_sweep(h, 1200, 1000);
    sld_buf_t d1 = {0}, t1 = {0}, d3 = {0}, t3 = {0};
    assert_true(sld_grpc_h2_output(h, &out, 1200));
    assert_true(stream_end(&out, 1, &d1, &t1, NULL));
    assert_true(stream_end(&out, 3, &d3, &t3, NULL));
    assert_int_equal(d1.len + d3.len, 0);
    assert_true(HAS(&t1, "grpc-status\x01" "4"));
    assert_true(HAS(&t1, "no complete request within limits.idle_timeout"));
    assert_true(HAS(&t3, "grpc-status\x02" "14"));
    /* and with no call left, the connection is let go an idle_timeout later */
    sld_grpc_h2_sweep(h, 1300, 1000);
    assert_false(sld_grpc_h2_done(h));
    sld_grpc_h2_sweep(h, 2300, 1000);
    sld_buf_reset(&out);
    assert_true(sld_grpc_h2_output(h, &out, 2300));
    bool goaway = false;
    for (size_t i = 0; i + 9 <= out.len; i += 9 + ((size_t)(uint8_t)out.data[i + 1] << 8 | (uint8_t)out.data[i + 2]))
        goaway = goaway || (uint8_t)out.data[i + 3] == GOAWAY;
    assert_true(goaway);
    assert_true(sld_grpc_h2_done(h));
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&t5);
    sld_buf_free(&d1);
    sld_buf_free(&t1);
    sld_buf_free(&d3);
    sld_buf_free(&t3);
}

/* A header block of the given (name, value) pairs, NULL-ended. */
static void open_with(wire_t *w, uint32_t stream, const char *const *fields) {
    uint8_t block[512];
    size_t n = 0;
    for (size_t i = 0; fields[i] != NULL; i += 2)
        n += literal(block + n, fields[i], fields[i + 1]);
    frame(w, HEADERS, 0x4, stream, block, n);
}

/* Requests RFC 9113 calls malformed get a stream reset (PROTOCOL_ERROR),
 * checked by the front itself since nghttp2's HTTP messaging is off; the
 * connection and its other calls go on. */
static void malformed_requests_reset(void **state) {
    (void)state;
    seen_t s = {.answer_now = true};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
#define RLS_PATH SLD_GRPC_RLS_METHOD
#define GRPC_CT "content-type", "application/grpc"
    const char *const cases[][16] = {
        {":method", "POST", ":scheme", "http", GRPC_CT, NULL},                                 /* no :path */
        {":method", "POST", ":path", RLS_PATH, GRPC_CT, NULL},                                 /* no :scheme */
        {":scheme", "http", ":path", RLS_PATH, GRPC_CT, NULL},                                 /* no :method */
        {":method", "POST", ":scheme", "http", ":path", "", GRPC_CT, NULL},                    /* empty :path */
        {":method", "POST", ":scheme", "http", GRPC_CT, ":path", RLS_PATH, NULL},              /* pseudo after */
        {":method", "POST", ":method", "POST", ":scheme", "http", ":path", RLS_PATH, GRPC_CT, NULL}, /* twice */
        {":method", "POST", ":scheme", "http", ":path", RLS_PATH, ":status", "200", GRPC_CT, NULL},
        {":method", "POST", ":scheme", "http", ":path", RLS_PATH, GRPC_CT, "te", "gzip", NULL},
        {":method", "POST", ":scheme", "http", ":path", RLS_PATH, GRPC_CT, "connection", "close", NULL},
        {":method", "POST", ":scheme", "http", ":path", RLS_PATH, GRPC_CT, "transfer-encoding", "chunked", NULL},
    };
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        open_with(&w, 1 + 2 * (uint32_t)i, cases[i]);
        send_message(&w, 1 + 2 * (uint32_t)i, "no", true);
    }
    uint32_t good = 1 + 2 * (uint32_t)n;
    open_call(&w, good, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, good, "yes", true);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    assert_int_equal(s.n, 1); /* only the well-formed call was taken */
    assert_string_equal(s.bodies[0], "yes");
    sld_buf_t out = {0}, d = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    for (size_t i = 0; i < n; i++) {
        int rst = -1;
        assert_true(stream_end(&out, 1 + 2 * (uint32_t)i, &d, NULL, &rst));
        assert_int_equal(rst, 1); /* PROTOCOL_ERROR */
    }
    assert_int_equal(d.len, 0);
    assert_true(stream_end(&out, good, &d, NULL, NULL));
    assert_memory_equal(d.data, "\0\0\0\0\3yes", 8);
    assert_false(sld_grpc_h2_busy(h));
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&d);
}

static void not_http2(void **state) {
    (void)state;
    seen_t s = {0};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_false(sld_grpc_h2_feed(h, (const uint8_t *)get, sizeof get - 1, 0));
    sld_buf_t out = {0};
    sld_grpc_h2_output(h, &out, 0);
    assert_true(sld_grpc_h2_done(h));
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
}

static void stopping(void **state) {
    (void)state;
    seen_t s = {0};
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, &s, 1024, 0);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
    open_call(&w, 1, SLD_GRPC_RLS_METHOD, NULL); /* no message yet */
    open_call(&w, 3, SLD_GRPC_RLS_METHOD, NULL);
    send_message(&w, 3, "decide", true);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    sld_grpc_h2_shutdown(h);
    sld_buf_t out = {0}, t1 = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 1, NULL, &t1, NULL));
    assert_true(HAS(&t1, "grpc-status\x02" "14"));
    assert_false(sld_grpc_h2_done(h)); /* stream 3 is owed its answer */
    sld_grpc_h2_answer(s.calls[0], 0, NULL, (const uint8_t *)"yes", 3);
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 3, NULL, NULL, NULL));
    assert_true(sld_grpc_h2_done(h));
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&t1);
}

/* ---- the answers' header blocks and the client's HPACK table ------------------------------- */

/* Every header block in out, decoded in order by the client's inflater:
 * each must decode. Returns how many were an answer's HEADERS (:status
 * 200 and content-type: application/grpc), with the last one's length. */
static int decode_blocks(nghttp2_hd_inflater *in, const sld_buf_t *out, size_t *last_len) {
    const uint8_t *p = (const uint8_t *)out->data;
    int answers = 0;
    for (size_t i = 0; i + 9 <= out->len;) {
        size_t len = (size_t)p[i] << 16 | (size_t)p[i + 1] << 8 | p[i + 2];
        if (p[i + 3] == HEADERS) {
            const uint8_t *b = p + i + 9;
            size_t left = len;
            bool status = false, type = false;
            for (;;) {
                nghttp2_nv nv;
                int fl = 0;
                ssize_t r = nghttp2_hd_inflate_hd2(in, &nv, &fl, b, left, 1);
                assert_true(r >= 0);
                b += r, left -= (size_t)r;
                if (fl & NGHTTP2_HD_INFLATE_EMIT) {
                    status = status || (nv.namelen == 7 && memcmp(nv.name, ":status", 7) == 0 && nv.valuelen == 3 &&
                                        memcmp(nv.value, "200", 3) == 0);
                    type = type || (nv.namelen == 12 && memcmp(nv.name, "content-type", 12) == 0 &&
                                    nv.valuelen == 16 && memcmp(nv.value, "application/grpc", 16) == 0);
                }
                if (fl & NGHTTP2_HD_INFLATE_FINAL) {
                    nghttp2_hd_inflate_end_headers(in);
                    break;
                }
            }
            if (!(p[i + 4] & 0x1)) {
                assert_true(status && type);
                answers++;
                *last_len = len;
            }
        }
        i += 9 + len;
    }
    return answers;
}

/* Call `stream` made and answered, or refused when path is not a method;
 * the output decoded. */
static int one_call(sld_grpc_h2_t *h, nghttp2_hd_inflater *in, uint32_t stream, const char *path,
                    size_t *last_len) {
    static wire_t w;
    w.n = 0;
    open_call(&w, stream, path, NULL);
    send_message(&w, stream, "x", true);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    sld_buf_t out = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, stream, NULL, NULL, NULL));
    int answers = decode_blocks(in, &out, last_len);
    sld_buf_free(&out);
    return answers;
}

static void table_size(sld_grpc_h2_t *h, nghttp2_hd_inflater *in, uint32_t size) {
    static wire_t w;
    w.n = 0;
    const uint8_t settings[6] = {0, 1, (uint8_t)(size >> 24), (uint8_t)(size >> 16), (uint8_t)(size >> 8),
                                 (uint8_t)size};
    frame(&w, SETTINGS, 0, 0, settings, sizeof settings);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    assert_int_equal(nghttp2_hd_inflate_change_table_size(in, size), 0);
}

/* A session past the client's preface, and the client's HPACK decoder. */
static sld_grpc_h2_t *session_and_decoder(seen_t *s, nghttp2_hd_inflater **in) {
    sld_grpc_h2_t *h = sld_grpc_h2_new(&hooks, s, 1024, 0);
    assert_non_null(h);
    assert_int_equal(nghttp2_hd_inflate_new(in), 0);
    static wire_t w;
    w.n = 0;
    preface(&w, NULL, 0);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    return h;
}

/* The answers' content-type goes into the client's table once and is
 * named by its index after; when the client shrinks the table below it,
 * it goes as a literal, and in again when the table grows back. Every
 * block decodes, errors' blocks between them too. */
static void answer_headers_follow_the_hpack_table(void **state) {
    (void)state;
    seen_t s = {.answer_now = true};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    static wire_t w;
    size_t len = 0;
    assert_int_equal(one_call(h, in, 1, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 19); /* :status, then content-type added */
    assert_int_equal(one_call(h, in, 3, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 2); /* both indexed */
    assert_int_equal(one_call(h, in, 5, "/nope/Nope", &len), 0);
    /* a GET: answered 405 by nghttp2's encoder, which adds nothing */
    static const char *const get[] = {":method", "GET", ":scheme", "http", ":path", SLD_GRPC_RLS_METHOD,
                                      ":authority", "x", NULL};
    w.n = 0;
    open_with(&w, 17, get);
    frame(&w, DATA, 0x1, 17, "", 0);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    sld_buf_t out = {0};
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 17, NULL, NULL, NULL));
    decode_blocks(in, &out, &len);
    sld_buf_free(&out);
    assert_int_equal(one_call(h, in, 19, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 2); /* still the content-type at index 62 */
    table_size(h, in, 0);
    assert_int_equal(one_call(h, in, 21, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 1 + 20); /* a size update, then a literal not indexed */
    assert_int_equal(one_call(h, in, 23, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 20);
    table_size(h, in, 4096);
    assert_int_equal(one_call(h, in, 25, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 3 + 19); /* a size update, then added again */
    assert_int_equal(one_call(h, in, 27, "/nope/Nope", &len), 0);
    assert_int_equal(one_call(h, in, 29, SLD_GRPC_RLS_METHOD, &len), 1);
    assert_int_equal(len, 2);
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
}

/* An answered call's trailers: grpc-status: 0 added to the client's
 * table by the first, one indexed byte after (62: the newest entry, the
 * content-type being 63); every block decodes to it. An error's trailers
 * stay literals. */
static void ok_trailers_indexed(void **state) {
    (void)state;
    seen_t s = {.answer_now = true};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    static wire_t w;
    const uint8_t first[] = "\x40\x0bgrpc-status\x01" "0";
    const uint8_t later[] = "\xbe";
    for (uint32_t stream = 1; stream <= 7; stream += 2) {
        w.n = 0;
        open_call(&w, stream, stream == 5 ? "/nope/Nope" : SLD_GRPC_RLS_METHOD, NULL);
        send_message(&w, stream, "x", true);
        assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
        sld_buf_t out = {0}, tr = {0};
        assert_true(sld_grpc_h2_output(h, &out, 0));
        assert_true(stream_end(&out, stream, NULL, &tr, NULL));
        if (stream == 1) {
            assert_int_equal(tr.len, sizeof first - 1);
            assert_memory_equal(tr.data, first, tr.len);
        } else if (stream == 5) {
            assert_true(HAS(&tr, "grpc-status\x02" "12"));
        } else {
            assert_int_equal(tr.len, 1);
            assert_memory_equal(tr.data, later, 1);
        }
        size_t len = 0;
        decode_blocks(in, &out, &len);
        if (stream != 5)
            assert_int_equal(len, stream == 1 ? 19 : 2);
        sld_buf_free(&out);
        sld_buf_free(&tr);
    }
    const nghttp2_nv *nv = nghttp2_hd_inflate_get_table_entry(in, 62);
    assert_non_null(nv);
    assert_memory_equal(nv->name, "grpc-status", 11);
    assert_memory_equal(nv->value, "0", 1);
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
}

/* Whether a header block (its size updates and literals only: a table of
 * its own) holds the field. */
static bool block_has(const sld_buf_t *block, const char *name, const char *value) {
    nghttp2_hd_inflater *in;
    assert_int_equal(nghttp2_hd_inflate_new(&in), 0);
    const uint8_t *b = (const uint8_t *)block->data;
    size_t left = block->len;
    bool found = false;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(in, &nv, &fl, b, left, 1);
        assert_true(r >= 0);
        b += r, left -= (size_t)r;
        if (fl & NGHTTP2_HD_INFLATE_EMIT)
            found = found || (nv.namelen == strlen(name) && memcmp(nv.name, name, nv.namelen) == 0 &&
                              nv.valuelen == strlen(value) && memcmp(nv.value, value, nv.valuelen) == 0);
        if (fl & NGHTTP2_HD_INFLATE_FINAL)
            break;
    }
    nghttp2_hd_inflate_del(in);
    return found;
}

/* Call `stream` made, its whole message sent, and fed to the session. */
static void request(sld_grpc_h2_t *h, uint32_t stream, const char *path, const char *body) {
    static wire_t w;
    w.n = 0;
    open_call(&w, stream, path, NULL);
    send_message(&w, stream, body, true);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
}

/* Call 1 (s's first) answered "ok" and handed to nghttp2, then the client
 * gives streams no window (SETTINGS_INITIAL_WINDOW_SIZE 0): the output
 * has the answer's HEADERS, its DATA waits. */
static void answer_held(sld_grpc_h2_t *h, seen_t *s, nghttp2_hd_inflater *in, sld_buf_t *out) {
    request(h, 1, SLD_GRPC_RLS_METHOD, "x");
    assert_int_equal(s->n, 1);
    sld_grpc_h2_answer(s->calls[0], 0, NULL, (const uint8_t *)"ok", 2);
    static wire_t w;
    w.n = 0;
    frame(&w, SETTINGS, 0, 0, "\x00\x04\x00\x00\x00\x00", 6);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    sld_buf_t d = {0};
    size_t len = 0;
    assert_true(sld_grpc_h2_output(h, out, 0));
    assert_false(stream_end(out, 1, &d, NULL, NULL));
    assert_int_equal(d.len, 0);
    assert_int_equal(decode_blocks(in, out, &len), 1);
    sld_buf_free(&d);
}

/* An answer whose DATA waits for a window while the client shrinks its
 * HPACK table: nghttp2 owes the client a table size update, which must
 * begin the next header block it sees, so the answer's trailers go
 * through nghttp2 (after its HEADERS had gone out without one) and carry
 * grpc-status: 0 after the update. */
static void trailers_after_a_table_size_update(void **state) {
    (void)state;
    seen_t s = {0};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    sld_buf_t out = {0}, d = {0};
    size_t len = 0;
    answer_held(h, &s, in, &out);
    static wire_t w;
    table_size(h, in, 0);
    w.n = 0;
    frame(&w, WINDOW_UPDATE, 0, 1, "\x00\x00\x10\x00", 4);
    assert_true(sld_grpc_h2_feed(h, w.b, w.n, 0));
    sld_buf_t tr = {0};
    sld_buf_reset(&out);
    assert_true(sld_grpc_h2_output(h, &out, 0));
    assert_true(stream_end(&out, 1, &d, &tr, NULL));
    assert_memory_equal(d.data, "\0\0\0\0\2ok", 7);
    assert_true(tr.len > 0);
    assert_int_equal((uint8_t)tr.data[0], 0x20); /* first: the size update to 0 */
    /* every block decodes after it (the decoder requires the update) */
    assert_int_equal(decode_blocks(in, &out, &len), 0);
    assert_true(block_has(&tr, "grpc-status", "0"));
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&d);
    sld_buf_free(&tr);
}

/* ---- nghttp2 handing out frames packed or cut ----------------------------------------------- */

/* nghttp2_session_mem_send as the session sees it: nghttp2's own (one
 * whole frame a call, 1.52) unless a test asks for what a later nghttp2
 * might do, several frames in one chunk or a frame in pieces. */
static enum { WHOLE, PACKED, CUT } handing = WHOLE;
static const sld_buf_t *handing_out; /* the output: packing must not pass an answer's DATA written to it */

ssize_t nghttp2_session_mem_send(nghttp2_session *session, const uint8_t **data_ptr) {
    static ssize_t (*real)(nghttp2_session *, const uint8_t **);
    static uint8_t held[1 << 16];
    static size_t held_len, held_off;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "nghttp2_session_mem_send");
    if (handing == WHOLE)
        return real(session, data_ptr);
    if (handing == CUT) {
        if (held_off == held_len) { /* the last chunk handed out: the next one */
            const uint8_t *p;
            ssize_t n = real(session, &p);
            if (n <= 0)
                return n;
            memcpy(held, p, (size_t)n);
            held_len = (size_t)n;
            held_off = 0;
        }
        size_t piece = held_len - held_off < 4 ? held_len - held_off : 4;
        *data_ptr = held + held_off;
        held_off += piece;
        return (ssize_t)piece;
    }
    size_t out_len = handing_out->len;
    held_len = 0;
    for (;;) {
        const uint8_t *p;
        ssize_t n = real(session, &p);
        if (n < 0)
            return n;
        assert_int_equal(handing_out->len, out_len);
        if (n == 0)
            break;
        memcpy(held + held_len, p, (size_t)n);
        held_len += (size_t)n;
    }
    *data_ptr = held;
    return (ssize_t)held_len;
}

/* Several frames in one chunk: each is read, so the error's Trailers-Only
 * HEADERS (nghttp2's block, which put_frame puts the fields in place of)
 * and every block after decode, carrying what the session meant. */
static void frames_packed_in_one_chunk(void **state) {
    (void)state;
    seen_t s = {0};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    request(h, 1, "/nope/Nope", "x");
    request(h, 3, "/nope/Nope", "x");
    sld_buf_t out = {0}, t1 = {0}, t3 = {0};
    handing = PACKED;
    handing_out = &out;
    assert_true(sld_grpc_h2_output(h, &out, 0));
    handing = WHOLE;
    assert_true(stream_end(&out, 1, NULL, &t1, NULL));
    assert_true(stream_end(&out, 3, NULL, &t3, NULL));
    assert_true(HAS(&t1, "grpc-status\x02" "12"));
    assert_true(HAS(&t3, "unknown method"));
    size_t len = 0;
    decode_blocks(in, &out, &len);
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&t1);
    sld_buf_free(&t3);
}

/* A frame handed out in pieces: none is read as a frame of its own; the
 * answer's HEADERS get their fields once whole. */
static void frames_cut_in_pieces(void **state) {
    (void)state;
    seen_t s = {.answer_now = true};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    request(h, 1, SLD_GRPC_RLS_METHOD, "hello");
    sld_buf_t out = {0}, d = {0}, tr = {0};
    handing = CUT;
    assert_true(sld_grpc_h2_output(h, &out, 0));
    handing = WHOLE;
    assert_true(stream_end(&out, 1, &d, &tr, NULL));
    assert_memory_equal(d.data, "\0\0\0\0\5hello", 10);
    size_t len = 0;
    assert_int_equal(decode_blocks(in, &out, &len), 1);
    assert_true(block_has(&tr, "grpc-status", "0"));
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
    sld_buf_free(&d);
    sld_buf_free(&tr);
}

/* An answer handed to nghttp2 whose DATA the client's window then holds
 * (it shrank after the HEADERS went out): reset (CANCEL) at the sweep
 * past idle_timeout, so it cannot keep the connection from its idle
 * GOAWAY. */
static void held_answer_reset(void **state) {
    (void)state;
    seen_t s = {0};
    nghttp2_hd_inflater *in;
    sld_grpc_h2_t *h = session_and_decoder(&s, &in);
    sld_buf_t out = {0};
    answer_held(h, &s, in, &out);
    sld_grpc_h2_sweep(h, 999, 1000);
    sld_buf_reset(&out);
    assert_true(sld_grpc_h2_output(h, &out, 999));
    assert_int_equal(out.len, 0);
    assert_true(sld_grpc_h2_busy(h));
    sld_grpc_h2_sweep(h, 1000, 1000);
    sld_grpc_h2_sweep(h, 1100, 1000); /* reset once */
    assert_true(sld_grpc_h2_output(h, &out, 1100));
    int rst = -1;
    assert_true(stream_end(&out, 1, NULL, NULL, &rst));
    assert_int_equal(rst, 8); /* CANCEL */
    assert_int_equal(out.len, 13);
    assert_false(sld_grpc_h2_busy(h));
    sld_grpc_h2_sweep(h, 2100, 1000); /* and the connection is let go */
    assert_true(sld_grpc_h2_output(h, &out, 2100));
    assert_true(sld_grpc_h2_done(h));
    nghttp2_hd_inflate_del(in);
    sld_grpc_h2_free(h);
    sld_buf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_in_pieces),
        cmocka_unit_test(timeouts),
        cmocka_unit_test(whole_messages),
        cmocka_unit_test(trailers_are_plain_literals),
        cmocka_unit_test(a_call_answered),
        cmocka_unit_test(errors_are_trailers_only),
        cmocka_unit_test(later_answers_and_gone_streams),
        cmocka_unit_test(deadlines),
        cmocka_unit_test(malformed_requests_reset),
        cmocka_unit_test(not_http2),
        cmocka_unit_test(stopping),
        cmocka_unit_test(answer_headers_follow_the_hpack_table),
        cmocka_unit_test(ok_trailers_indexed),
        cmocka_unit_test(trailers_after_a_table_size_update),
        cmocka_unit_test(frames_packed_in_one_chunk),
        cmocka_unit_test(frames_cut_in_pieces),
        cmocka_unit_test(held_answer_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
