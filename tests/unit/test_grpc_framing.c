/* test_grpc_framing.c -- the answers' share of the client's HPACK table
 * (server/grpc/grpc_framing.c: sld_grpc_hpack_updates, sld_grpc_answer_head,
 * sld_grpc_ok_trailers). Every block written is decoded by nghttp2's own
 * decoder, standing in for the client, and its dynamic table compared with
 * the bookkeeping: the entries' sizes, which fit under each table size,
 * the eviction order (RFC 7541 4.3), the indexes (the newest is 62), and
 * what happens once a block was not followed (lost). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "server/grpc/grpc_framing.h"

/* a client's decoder and the front's bookkeeping of it */
typedef struct pair {
    nghttp2_hd_inflater *in;
    sld_grpc_hpack_t t;
    uint8_t block[64];
    size_t n;
} pair_t;

static void pair_init(pair_t *p) {
    assert_int_equal(nghttp2_hd_inflate_new(&p->in), 0);
    p->t = SLD_GRPC_HPACK_INIT;
    p->n = 0;
}

/* A dynamic table size update (RFC 7541 6.3: 5-bit prefix) begins the
 * next block, as nghttp2's encoder writes one: followed by the
 * bookkeeping as grpc_h2.c's put_frame does. */
static void size_update(pair_t *p, uint32_t size) {
    uint8_t u[8];
    size_t n = 0;
    if (size < 31) {
        u[n++] = (uint8_t)(0x20 | size);
    } else {
        u[n++] = 0x3f;
        uint32_t rest = size - 31;
        while (rest >= 128) {
            u[n++] = (uint8_t)(0x80 | (rest & 0x7f));
            rest >>= 7;
        }
        u[n++] = (uint8_t)rest;
    }
    assert_int_equal(sld_grpc_hpack_updates(&p->t, u, n), n);
    memcpy(p->block + p->n, u, n);
    p->n += n;
}

/* The block so far decoded by the client: its fields must be want[0..] (name, value pairs, NULL-ended). */
static void decode(pair_t *p, const char *const *want) {
    const uint8_t *b = p->block;
    size_t left = p->n;
    size_t k = 0;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(p->in, &nv, &fl, b, left, 1);
        assert_true(r >= 0);
        b += r, left -= (size_t)r;
        if (fl & NGHTTP2_HD_INFLATE_EMIT) {
            assert_non_null(want[k]);
            assert_int_equal(nv.namelen, strlen(want[k]));
            assert_memory_equal(nv.name, want[k], nv.namelen);
            assert_int_equal(nv.valuelen, strlen(want[k + 1]));
            assert_memory_equal(nv.value, want[k + 1], nv.valuelen);
            k += 2;
        }
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(p->in);
            break;
        }
    }
    assert_null(want[k]);
    p->n = 0;
}

static const char *const head_fields[] = {":status", "200", "content-type", "application/grpc", NULL};
static const char *const ok_fields[] = {"grpc-status", "0", NULL};

/* An answer's HEADERS (after what the block holds already: size updates)
 * and its trailers, each decoded; their blocks' lengths. */
static void answer(pair_t *p, size_t *head_len, size_t *trailers_len) {
    p->n += sld_grpc_answer_head(&p->t, p->block + p->n);
    *head_len = p->n;
    decode(p, head_fields);
    p->n = sld_grpc_ok_trailers(&p->t, p->block);
    *trailers_len = p->n;
    decode(p, ok_fields);
}

/* The client's dynamic table: what it holds, newest first, and its size,
 * against the bookkeeping. */
static void same_table(const pair_t *p, const char *const *names) {
    size_t n = 0;
    while (names[n] != NULL)
        n++;
    assert_int_equal(nghttp2_hd_inflate_get_num_table_entries(p->in), 61 + n);
    assert_int_equal(p->t.n, n);
    size_t size = 0;
    for (size_t i = 0; i < n; i++) {
        const nghttp2_nv *nv = nghttp2_hd_inflate_get_table_entry(p->in, 62 + i);
        assert_non_null(nv);
        assert_int_equal(nv->namelen, strlen(names[i]));
        assert_memory_equal(nv->name, names[i], nv->namelen);
        size += 32 + nv->namelen + nv->valuelen;
        /* the bookkeeping's entry at the same index */
        uint8_t e = p->t.entry[n - 1 - i];
        assert_int_equal(e, strcmp(names[i], "content-type") == 0 ? SLD_GRPC_HP_TYPE : SLD_GRPC_HP_OK);
    }
    assert_int_equal(nghttp2_hd_inflate_get_dynamic_table_size(p->in), size);
}

static const char *const none[] = {NULL};

/* Both go in once, then are named by their index: grpc-status, the
 * newest, at 62 (one byte), content-type at 63. Their sizes: 60 and 44. */
static void entries_added_once_then_indexed(void **state) {
    (void)state;
    pair_t p;
    pair_init(&p);
    size_t h, t;
    answer(&p, &h, &t);
    assert_int_equal(h, 19);
    assert_int_equal(t, 15);
    static const char *const both[] = {"grpc-status", "content-type", NULL};
    same_table(&p, both);
    assert_int_equal(nghttp2_hd_inflate_get_dynamic_table_size(p.in), 60 + 44);
    for (int i = 0; i < 3; i++) {
        uint8_t b[SLD_GRPC_HEAD_MAX];
        assert_int_equal(sld_grpc_answer_head(&p.t, b), 2);
        assert_int_equal(b[1], 0x80 | 63);
        assert_int_equal(sld_grpc_ok_trailers(&p.t, b), 1);
        assert_int_equal(b[0], 0x80 | 62);
        answer(&p, &h, &t); /* and the client reads them so */
        assert_int_equal(h + t, 3);
        same_table(&p, both);
    }
    nghttp2_hd_inflate_del(p.in);
}

/* Under each table size, what fits: an entry goes in only beside what is
 * there, evicting nothing; what does not fit is a literal not indexed. */
static void what_fits_under_each_size(void **state) {
    (void)state;
    static const char *const ok_only[] = {"grpc-status", NULL};
    static const char *const type_only[] = {"content-type", NULL};
    static const char *const both[] = {"grpc-status", "content-type", NULL};
    static const struct {
        uint32_t size;
        bool type_in, ok_in;
        const char *const *table;
    } cases[] = {
        {0, false, false, none},        {43, false, false, none},        {44, false, true, ok_only},
        {59, false, true, ok_only},     {60, true, false, type_only},    {103, true, false, type_only},
        {104, true, true, both},        {4096, true, true, both},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pair_t p;
        pair_init(&p);
        size_update(&p, cases[i].size);
        size_t upd = p.n, h, t;
        answer(&p, &h, &t);
        assert_int_equal(h - upd, cases[i].type_in ? 19 : 20); /* added, or not indexed */
        assert_int_equal(t, 15);
        same_table(&p, cases[i].table);
        /* the next answer: what is in the table is indexed, the rest as before */
        answer(&p, &h, &t);
        assert_int_equal(h, cases[i].type_in ? 2 : 20);
        assert_int_equal(t, cases[i].ok_in ? 1 : 15);
        same_table(&p, cases[i].table);
        nghttp2_hd_inflate_del(p.in);
    }
}

/* A smaller size evicts the oldest first, and what is left moves to 62;
 * grown again, the evicted entry comes back as the newest. */
static void eviction_order(void **state) {
    (void)state;
    static const char *const both[] = {"grpc-status", "content-type", NULL};
    static const char *const ok_only[] = {"grpc-status", NULL};
    static const char *const swapped[] = {"content-type", "grpc-status", NULL};
    pair_t p;
    pair_init(&p);
    size_t h, t;
    answer(&p, &h, &t);
    same_table(&p, both);
    size_update(&p, 80); /* 104 no longer fits: content-type, the oldest, goes */
    answer(&p, &h, &t);
    assert_int_equal(h, 2 + 20); /* the update, then content-type not indexed: it would not fit */
    assert_int_equal(t, 1);      /* grpc-status, now alone at 62 */
    same_table(&p, ok_only);
    size_update(&p, 4096);
    answer(&p, &h, &t);
    assert_int_equal(h, 3 + 19); /* content-type added again: now the newest */
    assert_int_equal(t, 1);
    same_table(&p, swapped);
    uint8_t b[SLD_GRPC_HEAD_MAX];
    assert_int_equal(sld_grpc_answer_head(&p.t, b), 2);
    assert_int_equal(b[1], 0x80 | 62);
    assert_int_equal(sld_grpc_ok_trailers(&p.t, b), 1);
    assert_int_equal(b[0], 0x80 | 63);
    /* two updates in one block: 70 evicts the oldest (now grpc-status)
     * only, 4096 brings nothing back */
    size_update(&p, 70);
    size_update(&p, 4096);
    answer(&p, &h, &t);
    assert_int_equal(h, 2 + 3 + 2); /* content-type kept, at 62 */
    assert_int_equal(t, 15);        /* grpc-status added again */
    same_table(&p, both);
    nghttp2_hd_inflate_del(p.in);
}

/* A block not followed: the table is unknown, nothing is indexed or added
 * any more, and the trailers are the plain literal never indexed. */
static void lost_means_literals(void **state) {
    (void)state;
    sld_grpc_hpack_t t = SLD_GRPC_HPACK_INIT;
    uint8_t b[SLD_GRPC_HEAD_MAX];
    assert_int_equal(sld_grpc_answer_head(&t, b), 19);
    assert_int_equal(sld_grpc_ok_trailers(&t, b), 15);
    assert_int_equal(t.n, 2);
    const uint8_t cut[] = {0x3f, 0xff}; /* an integer that never ends */
    assert_int_equal(sld_grpc_hpack_updates(&t, cut, sizeof cut), sizeof cut);
    assert_true(t.lost);
    assert_int_equal(sld_grpc_answer_head(&t, b), 20);
    assert_int_equal(b[1], 0x0f); /* without indexing */
    assert_int_equal(sld_grpc_ok_trailers(&t, b), 15);
    assert_memory_equal(b, "\x10\x0bgrpc-status\x01" "0", 15);
    /* a block the session could not read (grpc_h2.c's put_frame) does the same */
    t = SLD_GRPC_HPACK_INIT;
    sld_grpc_answer_head(&t, b);
    sld_grpc_ok_trailers(&t, b);
    assert_int_equal(sld_grpc_ok_trailers(&t, b), 1);
    sld_grpc_hpack_lose(&t);
    assert_int_equal(sld_grpc_answer_head(&t, b), 20);
    assert_int_equal(sld_grpc_ok_trailers(&t, b), 15);
    assert_int_equal(b[0], 0x10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(entries_added_once_then_indexed),
        cmocka_unit_test(what_fits_under_each_size),
        cmocka_unit_test(eviction_order),
        cmocka_unit_test(lost_means_literals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
