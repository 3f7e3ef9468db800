/* linger.c -- lingering close of stopped connections (see linger.h).
 *
 * Whether the client has closed its side is read from the TCP state, not
 * from recv() returning 0: a socket shut for reading earlier (the HTTP
 * front does that to end idle keep-alive connections) reads 0 at once.
 * After our FIN, a peer's FIN moves the socket out of ESTABLISHED /
 * FIN_WAIT1 / FIN_WAIT2 (to CLOSING, or CLOSE once TIME_WAIT takes over).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/net/linger.h"

void sld_linger_add(sld_linger_t *l, int fd) {
    if (fd < 0)
        return;
    shutdown(fd, SHUT_WR);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        int *fds = realloc(l->fds, cap * sizeof *fds);
        if (fds == NULL) {
            close(fd);
            return;
        }
        l->fds = fds;
        l->cap = cap;
    }
    l->fds[l->n++] = fd;
}

/* Whether the client is done: it closed its side, or the socket failed. */
static bool finished(int fd) {
    char discard[16384];
    for (;;) {
        ssize_t got = recv(fd, discard, sizeof discard, MSG_DONTWAIT);
        if (got > 0)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            break;
        if (got < 0)
            return true;
        break; /* 0: its FIN, or our own shut reading side: the state says */
    }
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return true;
    return ti.tcpi_state != TCP_ESTABLISHED && ti.tcpi_state != TCP_FIN_WAIT1 &&
           ti.tcpi_state != TCP_FIN_WAIT2;
}

void sld_linger_poll(sld_linger_t *l) {
    for (size_t i = 0; i < l->n;) {
        if (finished(l->fds[i])) {
            close(l->fds[i]);
            l->fds[i] = l->fds[--l->n];
        } else {
            i++;
        }
    }
}

void sld_linger_close_all(sld_linger_t *l) {
    for (size_t i = 0; i < l->n; i++)
        close(l->fds[i]);
    free(l->fds);
    *l = (sld_linger_t){0};
}
