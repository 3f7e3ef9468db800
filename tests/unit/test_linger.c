/* test_linger.c -- lingering close (src/server/net/linger.c) on real loopback
 * TCP sockets: the client gets every byte sent before the close and a clean
 * end of stream, never a reset, even when it keeps sending after our FIN;
 * the socket is kept until the client closes, and closed at once after. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rig.h"
#include "addr_rig.h"
#include "server/net/linger.h"

/* Reads until end of stream (1), a reset or other error (-errno), or
 * nothing for 2 s (0); the bytes read are added to *total. */
static int read_to_end(int fd, size_t *total) {
    char b[4096];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 2000) != 1)
            return 0;
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0)
            return 1;
        if (n < 0)
            return -errno;
        *total += (size_t)n;
    }
}

/* Polls the list until it is empty or about 2 s pass. */
static void poll_until_empty(sld_linger_t *l) {
    for (int i = 0; i < 200 && !sld_linger_empty(l); i++) {
        sld_linger_poll(l);
        if (!sld_linger_empty(l))
            poll(NULL, 0, 10); /* real sockets: the kernel's pace, not a rate window */
    }
}

static void client_still_sending_sees_no_reset(void **state) {
    (void)state;
    int client, server;
    tcp_pair(&client, &server, 0);
    /* the client has sent what the server never reads */
    char junk[20000];
    memset(junk, 'x', sizeof junk);
    assert_int_equal(send(client, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    /* the server's last reply, then the lingering close */
    assert_int_equal(send(server, "reply\n", 6, 0), 6);
    sld_linger_t l = {0};
    sld_linger_add(&l, server);
    sld_linger_poll(&l);
    assert_false(sld_linger_empty(&l)); /* the client has not closed */
    /* the client keeps sending after our FIN: no reset */
    assert_int_equal(send(client, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    sld_linger_poll(&l);
    size_t got = 0;
    assert_int_equal(read_to_end(client, &got), 1); /* a clean end, not -ECONNRESET */
    assert_int_equal(got, 6);
    close(client);
    poll_until_empty(&l);
    assert_true(sld_linger_empty(&l));
    sld_linger_close_all(&l);
}

static void shut_reading_side_waits_for_the_client(void **state) {
    (void)state;
    /* recv() on a socket shut for reading reads 0 at once: the TCP state,
     * not that 0, says whether the client has closed */
    int client, server;
    tcp_pair(&client, &server, 0);
    shutdown(server, SHUT_RD);
    sld_linger_t l = {0};
    sld_linger_add(&l, server);
    sld_linger_poll(&l);
    sld_linger_poll(&l);
    assert_false(sld_linger_empty(&l));
    close(client);
    poll_until_empty(&l);
    assert_true(sld_linger_empty(&l));
    sld_linger_close_all(&l);
}

static void close_all_and_bad_fds(void **state) {
    (void)state;
    sld_linger_t l = {0};
    sld_linger_add(&l, -1); /* a failed dup: nothing */
    assert_true(sld_linger_empty(&l));
    int clients[40], server;
    for (int i = 0; i < 40; i++) { /* past the first growth */
        tcp_pair(&clients[i], &server, 0);
        sld_linger_add(&l, server);
    }
    sld_linger_poll(&l);
    assert_int_equal(l.n, 40);
    sld_linger_close_all(&l);
    assert_true(sld_linger_empty(&l));
    for (int i = 0; i < 40; i++) {
        size_t got = 0;
        assert_int_equal(read_to_end(clients[i], &got), 1);
        close(clients[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_still_sending_sees_no_reset),
        cmocka_unit_test(shut_reading_side_waits_for_the_client),
        cmocka_unit_test(close_all_and_bad_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
