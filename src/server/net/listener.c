/* listener.c -- listening sockets shared by the workers, and serving one
 * on a loop (see listener.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/net/listener.h"

/* "host:port" or "[v6]:port" into host and port strings. */
static int split_address(const char *addr, char *host, size_t hlen, char *port, size_t plen) {
    const char *colon;
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (end == NULL || end[1] != ':')
            return -1;
        colon = end + 1;
        snprintf(host, hlen, "%.*s", (int)(end - addr - 1), addr + 1);
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL)
            return -1;
        snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
    }
    snprintf(port, plen, "%s", colon + 1);
    return port[0] ? 0 : -1;
}

int sld_listener_open(const char *addr, int port_override, int *port_out, char *err, size_t err_len) {
    char host[256], port[32];
    if (split_address(addr, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, err_len, "bad listen address '%s' (expected host:port or [v6]:port)", addr);
        return -1;
    }
    if (port_override >= 0)
        snprintf(port, sizeof port, "%d", port_override);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (gai != 0) {
        snprintf(err, err_len, "cannot resolve '%s': %s", addr, gai_strerror(gai));
        return -1;
    }
    int one = 1;
    if (port_override < 0 && strcmp(port, "0") != 0) {
        /* SO_REUSEPORT would let a second daemon of the same user share the
         * port and split the traffic (and the limits) with us. A plain bind
         * first fails if anyone listens there; SO_REUSEADDR keeps it from
         * failing on a restart's TIME_WAIT leftovers. */
        int probe = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int busy = probe < 0 || setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
                   bind(probe, ai->ai_addr, ai->ai_addrlen) != 0;
        int saved = errno;
        if (probe >= 0)
            close(probe);
        if (busy) {
            snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(saved));
            freeaddrinfo(ai);
            return -1;
        }
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 511) != 0) {
        snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int sld_listener_serve(uv_loop_t *loop, uv_tcp_t *l, int fd, void *data, uv_connection_cb on_connection,
                       bool *opened) {
    int rc = uv_tcp_init(loop, l);
    l->data = data;
    *opened = rc == 0;
    if (rc == 0)
        rc = uv_tcp_open(l, fd);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return uv_listen((uv_stream_t *)l, 511, on_connection);
}

void sld_listener_close(uv_tcp_t *l, bool opened) {
    if (opened && !uv_is_closing((uv_handle_t *)l))
        uv_close((uv_handle_t *)l, NULL);
}
