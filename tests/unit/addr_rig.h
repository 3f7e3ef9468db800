/* addr_rig.h -- socket addresses from text, for the tests of modules that
 * take a peer's address (keys, CIDRs). Header-only; include after rig.h. */
#ifndef SL_TEST_ADDR_RIG_H
#define SL_TEST_ADDR_RIG_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

#endif
