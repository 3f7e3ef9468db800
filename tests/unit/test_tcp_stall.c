/* test_tcp_stall.c -- output that stopped moving (src/server/net/tcp_stall.c),
 * on a real loopback TCP pair whose client has a small receive buffer.
 * Time is an argument: the test passes loop times of its own, so nothing
 * waits for the timeout; it only lets the kernel settle its acknowledgements. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rig.h"
#include "addr_rig.h"
#include "server/net/tcp_stall.h"

#define SEC_US 1000000

/* A pair whose client reads slowly and whose server never blocks. */
static void slow_pair(int *client, int *server) {
    tcp_pair(client, server, 4096);
    fcntl(*server, F_SETFL, O_NONBLOCK);
}

/* Fills the server's side until the kernel takes no more, then lets the
 * last acknowledgements arrive. */
static void fill(int server) {
    char b[16384];
    memset(b, 'r', sizeof b);
    while (send(server, b, sizeof b, 0) > 0)
        ;
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    poll(NULL, 0, 100);
}

static void idle_connection_is_never_stalled(void **state) {
    (void)state;
    int client, server;
    slow_pair(&client, &server);
    sld_tcp_stall_t s = {.since = 0};
    assert_false(sld_tcp_stalled(&s, server, 0, 0, 3 * SEC_US));
    assert_false(sld_tcp_stalled(&s, server, 0, 3600 * 1000, 3 * SEC_US));
    close(client);
    close(server);
}

static void client_that_does_not_read(void **state) {
    (void)state;
    int client, server;
    slow_pair(&client, &server);
    fill(server);
    sld_tcp_stall_t s = {.since = 0};
    uint64_t t = 1000;
    assert_false(sld_tcp_stalled(&s, server, 0, t, 3 * SEC_US)); /* its first bytes were taken: progress */
    assert_false(sld_tcp_stalled(&s, server, 0, t + 2999, 3 * SEC_US));
    assert_true(sld_tcp_stalled(&s, server, 0, t + 3000, 3 * SEC_US));
    assert_true(sld_tcp_stalled(&s, server, 500, t + 9000, 3 * SEC_US)); /* the loop's queue too */
    assert_false(sld_tcp_stalled(&s, server, 0, t + 9000, 0));          /* 0: never */
    /* the client reads: progress again, the clock starts over */
    char b[65536];
    assert_true(recv(client, b, sizeof b, 0) > 0);
    poll(NULL, 0, 100);
    assert_false(sld_tcp_stalled(&s, server, 0, t + 10000, 3 * SEC_US));
    assert_false(sld_tcp_stalled(&s, server, 0, t + 12999, 3 * SEC_US));
    assert_true(sld_tcp_stalled(&s, server, 0, t + 13000, 3 * SEC_US));
    close(client);
    close(server);
}

static void not_a_socket(void **state) {
    (void)state;
    sld_tcp_stall_t s = {.since = 0};
    assert_false(sld_tcp_stalled(&s, -1, 100, 1u << 30, 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_connection_is_never_stalled),
        cmocka_unit_test(client_that_does_not_read),
        cmocka_unit_test(not_a_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
