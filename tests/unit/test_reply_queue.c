/* test_reply_queue.c -- replies owed to one connection, in order
 * (src/server/net/reply_queue.c): late replies hold back the ones written
 * after them, and the ready callback is called once per completion. */
#include "rig.h"
#include "server/net/reply_queue.h"

typedef struct conn {
    sld_buf_t out;
    sld_reply_queue_t q;
    int ready;
} conn_t;

static void on_ready(void *ctx) { ((conn_t *)ctx)->ready++; }

static void put(sld_buf_t *b, const char *s) { sld_buf_append(b, s, strlen(s)); }

static void out_is(conn_t *c, const char *want) {
    assert_int_equal(c->out.len, strlen(want));
    assert_memory_equal(c->out.data, want, c->out.len);
}

static void setup_conn(conn_t *c) {
    memset(c, 0, sizeof *c);
    sld_reply_queue_init(&c->q, &c->out, on_ready, c);
}

static void in_order(void **state) {
    (void)state;
    conn_t c;
    setup_conn(&c);
    put(sld_reply_queue_tail(&c.q), "a ");     /* answered at once */
    sld_reply_t *b = sld_reply_defer(&c.q);    /* comes later */
    put(sld_reply_queue_tail(&c.q), "c ");     /* waits behind b */
    sld_reply_t *d = sld_reply_defer(&c.q);
    put(sld_reply_queue_tail(&c.q), "e ");
    assert_int_equal(c.q.n, 2);
    assert_int_equal(sld_reply_queue_owed(&c.q), 4);
    out_is(&c, "a ");

    put(sld_reply_buf(d), "d ");
    sld_reply_done(d);                         /* d is ready, but b still owed */
    assert_int_equal(c.ready, 1);
    out_is(&c, "a ");

    put(sld_reply_buf(b), "b ");
    sld_reply_done(b);                         /* b, c, d, e go out together */
    assert_int_equal(c.ready, 2);
    out_is(&c, "a b c d e ");
    assert_int_equal(c.q.n, 0);
    assert_int_equal(sld_reply_queue_owed(&c.q), 0);
    assert_ptr_equal(sld_reply_queue_tail(&c.q), &c.out);
    sld_buf_free(&c.out);
}

static void undefer(void **state) {
    (void)state;
    conn_t c;
    setup_conn(&c);
    sld_reply_t *a = sld_reply_defer(&c.q);
    put(sld_reply_queue_tail(&c.q), "b ");
    sld_reply_t *x = sld_reply_defer(&c.q);    /* answered at once after all */
    sld_reply_undefer(&c.q, x);
    put(sld_reply_queue_tail(&c.q), "x ");     /* still behind a, after b */
    assert_int_equal(c.q.n, 1);
    put(sld_reply_buf(a), "a ");
    sld_reply_done(a);
    out_is(&c, "a b x ");
    assert_int_equal(c.ready, 1);
    sld_buf_free(&c.out);
}

static void closed_drops(void **state) {
    (void)state;
    conn_t c;
    setup_conn(&c);
    sld_reply_t *a = sld_reply_defer(&c.q);
    put(sld_reply_queue_tail(&c.q), "b ");
    c.q.closed = true;                         /* the connection went away */
    put(sld_reply_buf(a), "a ");
    sld_reply_done(a);
    assert_int_equal(c.ready, 1);              /* told, so it can free itself */
    assert_int_equal(c.out.len, 0);
    assert_int_equal(c.q.n, 0);
    sld_buf_free(&c.out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_order),
        cmocka_unit_test(undefer),
        cmocka_unit_test(closed_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
