/* test_accept_spread.c -- connections spread over a front's workers
 * (src/server/net/accept_spread.c), with two worker loops run by hand on
 * one thread and real loopback sockets: a connection goes to the worker
 * with fewest (the accepting one on a tie), a hand-over is taken by the
 * other loop, counts come back down on release, a socket still in a
 * stopped worker's inbox is closed (the client sees the end) and counted
 * out, a stopped worker gets no more, and a connection the front declines
 * is closed and not counted. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "rig.h"
#include "addr_rig.h"
#include "server/net/accept_spread.h"
#include "server/net/listener.h"

typedef struct worker {
    uv_loop_t loop;
    sld_acceptor_t acc;
    int port;
    int served;             /* connections taken */
    bool decline;           /* the front returns without taking */
    uv_tcp_t *conns[16];
} worker_t;

static void on_incoming(void *data, sld_incoming_t *in) {
    worker_t *w = data;
    assert_ptr_equal(sld_incoming_acceptor(in), &w->acc);
    if (w->decline)
        return;
    uv_tcp_t *t = malloc(sizeof *t);
    assert_int_equal(sld_incoming_take(in, t), 0);
    assert_int_not_equal(sld_incoming_take(in, t), 0); /* once only */
    w->conns[w->served++] = t;
}

static void start(worker_t *w, sld_spread_t *sp, uint32_t index) {
    char err[256];
    assert_int_equal(uv_loop_init(&w->loop), 0);
    int fd = sld_listener_open("127.0.0.1:0", -1, &w->port, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(sld_acceptor_serve(&w->acc, &w->loop, fd, sp, index, w, on_incoming), 0);
}

static void free_conn(uv_handle_t *h) { free(h); }

static void finish(worker_t *w) {
    for (int i = 0; i < w->served; i++)
        uv_close((uv_handle_t *)w->conns[i], free_conn);
    sld_acceptor_close(&w->acc);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&w->loop), 0);
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Runs w's loop until `want` connections were given out from its
 * listener (served here or handed over), at most about 2 s: real sockets,
 * the kernel's pace. */
static void accept_on(worker_t *w, sld_spread_t *sp, int64_t want) {
    for (int i = 0; i < 200; i++) {
        uv_run(&w->loop, UV_RUN_NOWAIT);
        if (sld_spread_count(sp, 0) + sld_spread_count(sp, 1) >= want)
            return;
        poll(NULL, 0, 10);
    }
    fail_msg("the loop did not accept %lld connections", (long long)want);
}

/* 1 when the peer closed (end of stream or reset), 0 when nothing came in 2 s. */
static int ended(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 2000) != 1)
        return 0;
    char b[16];
    ssize_t n = recv(fd, b, sizeof b, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Two workers of one front, each listening on a port of its own. */
typedef struct pair {
    sld_spread_t *sp;
    worker_t a, b;
} pair_t;

static int pair_setup(void **state) {
    pair_t *p = calloc(1, sizeof *p);
    assert_int_equal(sld_spread_new(2, "test", &p->sp), SL_OK);
    start(&p->a, p->sp, 0);
    start(&p->b, p->sp, 1);
    *state = p;
    return 0;
}

static int pair_teardown(void **state) {
    pair_t *p = *state;
    finish(&p->a);
    finish(&p->b);
    sld_spread_free(p->sp);
    free(p);
    return 0;
}

static void goes_to_the_worker_with_fewest(void **state) {
    pair_t *p = *state;
    sld_spread_t *sp = p->sp;
    worker_t *a = &p->a, *b = &p->b;
    int clients[4];
    for (int i = 0; i < 4; i++) { /* all at a's socket: the kernel's spread at its worst */
        clients[i] = connect_to(a->port);
        accept_on(a, sp, i + 1);
    }
    /* 0 and 0: a keeps; 1 and 0: a keeps (one above the fewest is even
     * enough); 2 and 0: b; 2 and 1: a */
    assert_int_equal(a->served, 3);
    assert_int_equal(b->served, 0); /* handed over, in b's inbox until b's loop runs */
    assert_int_equal(sld_spread_count(sp, 0), 3);
    assert_int_equal(sld_spread_count(sp, 1), 1);
    uv_run(&b->loop, UV_RUN_NOWAIT);
    assert_int_equal(b->served, 1);
    assert_int_equal(sld_spread_count(sp, 1), 1);
    for (int i = 0; i < 3; i++)
        sld_acceptor_release(&a->acc);
    sld_acceptor_release(&b->acc);
    assert_int_equal(sld_spread_count(sp, 0), 0);
    assert_int_equal(sld_spread_count(sp, 1), 0);

    sld_buf_t m = {0};
    sld_spread_set_port(sp, a->port);
    sld_spread_write_metrics(&sp, 1, &m);
    sld_buf_append(&m, "", 1);
    assert_non_null(strstr((char *)m.data, "# TYPE sluice_worker_connections gauge\n"));
    assert_non_null(strstr((char *)m.data, "sluice_worker_connections{front=\"test\",port=\""));
    assert_non_null(strstr((char *)m.data, "\",worker=\"1\"} 0\n"));
    sld_buf_free(&m);

    for (int i = 0; i < 4; i++)
        close(clients[i]);
}

static void a_stopped_inbox_closes_its_sockets(void **state) {
    pair_t *p = *state;
    sld_spread_t *sp = p->sp;
    worker_t *a = &p->a, *b = &p->b;
    int kept = connect_to(a->port);
    accept_on(a, sp, 1);
    int kept2 = connect_to(a->port);
    accept_on(a, sp, 2);
    int handed = connect_to(a->port);
    accept_on(a, sp, 3);
    assert_int_equal(sld_spread_count(sp, 1), 1); /* in b's inbox */

    sld_acceptor_close(&b->acc); /* b stops before its loop took it */
    assert_int_equal(sld_spread_count(sp, 1), 0);
    assert_int_equal(ended(handed), 1);
    assert_int_equal(b->served, 0);

    /* b takes no more: a serves the next ones although it has more */
    int later = connect_to(a->port);
    accept_on(a, sp, 3);
    assert_int_equal(a->served, 3);
    assert_int_equal(sld_spread_count(sp, 0), 3);
    assert_int_equal(ended(kept), 0); /* still open */

    for (int i = 0; i < 3; i++)
        sld_acceptor_release(&a->acc);
    close(kept);
    close(kept2);
    close(handed);
    close(later);
}

static void a_declined_connection_is_closed_and_uncounted(void **state) {
    pair_t *p = *state;
    sld_spread_t *sp = p->sp;
    worker_t *a = &p->a, *b = &p->b;
    a->decline = b->decline = true; /* a front stopping, or out of memory */
    int c1 = connect_to(a->port);
    int c2 = connect_to(a->port);
    for (int i = 0; i < 20; i++) {
        uv_run(&a->loop, UV_RUN_NOWAIT);
        uv_run(&b->loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 10);
    }
    assert_int_equal(ended(c1), 1);
    assert_int_equal(ended(c2), 1);
    assert_int_equal(sld_spread_count(sp, 0), 0);
    assert_int_equal(sld_spread_count(sp, 1), 0);
    /* the listener still accepts after a connection it did not take */
    a->decline = false;
    int c3 = connect_to(a->port);
    accept_on(a, sp, 1);
    assert_int_equal(a->served, 1);
    sld_acceptor_release(&a->acc);
    close(c1);
    close(c2);
    close(c3);
}

static void one_worker_serves_everything(void **state) {
    (void)state;
    sld_spread_t *sp;
    assert_int_equal(sld_spread_new(1, "test", &sp), SL_OK);
    worker_t a = {0};
    start(&a, sp, 0);
    assert_false(a.acc.inbox_open); /* nobody to hand over to */
    int c = connect_to(a.port);
    for (int i = 0; i < 200 && a.served == 0; i++) {
        uv_run(&a.loop, UV_RUN_NOWAIT);
        poll(NULL, 0, 10);
    }
    assert_int_equal(a.served, 1);
    assert_int_equal(sld_spread_count(sp, 0), 1);
    sld_acceptor_release(&a.acc);
    finish(&a);
    close(c);
    sld_spread_free(sp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(goes_to_the_worker_with_fewest, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(a_stopped_inbox_closes_its_sockets, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(a_declined_connection_is_closed_and_uncounted, pair_setup,
                                        pair_teardown),
        cmocka_unit_test(one_worker_serves_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
