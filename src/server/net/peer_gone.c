/* peer_gone.c -- a held HTTP/1 request's client gone (see peer_gone.h). */
#define _GNU_SOURCE
#include "server/net/peer_gone.h"

#include <errno.h>
#include <sys/socket.h>

bool sld_peer_gone(h2o_req_t *req) {
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return false;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    int fd = sock ? h2o_socket_get_fd(sock) : -1;
    if (fd < 0)
        return false;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
