/* addr_rig.h -- socket addresses from text, for the tests of modules that
 * take a peer's address (keys, CIDRs), and a connected TCP pair on
 * loopback, for those that work on a socket (net/). Header-only; include
 * after rig.h. */
#ifndef SL_TEST_ADDR_RIG_H
#define SL_TEST_ADDR_RIG_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* An AF_INET or AF_INET6 sockaddr (port 4321) for text, in *st. */
static inline const struct sockaddr *sa(struct sockaddr_storage *st, const char *text) {
    memset(st, 0, sizeof *st);
    if (strchr(text, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)st;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(4321);
        assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)st;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(4321);
        assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
    }
    return (const struct sockaddr *)st;
}

/* A connected pair on 127.0.0.1: *client and *server; client_rcvbuf > 0
 * shrinks the client's receive buffer first (a client that reads slowly). */
static inline void tcp_pair(int *client, int *server, int client_rcvbuf) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    if (client_rcvbuf > 0)
        setsockopt(*client, SOL_SOCKET, SO_RCVBUF, &client_rcvbuf, sizeof client_rcvbuf);
    assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof a), 0);
    *server = accept(lfd, NULL, NULL);
    assert_true(*server >= 0);
    close(lfd);
}

#endif
