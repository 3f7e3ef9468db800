/* http_get.c -- one plain HTTP GET (see http_get.h). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/http_get.h"

static int fail(sl_http_answer_t *out, int fd, const char *what, const char *why) {
    snprintf(out->error, sizeof out->error, "%s: %s", what, why);
    if (fd >= 0)
        close(fd);
    free(out->body);
    out->body = NULL;
    return -1;
}

static int wait_for(int fd, short events, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = events};
    int n;
    while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    return n;
}

static int connect_to(const char *host, const char *port, int timeout_ms, sl_http_answer_t *out) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0)
        return fail(out, -1, host, gai_strerror(rc));
    int fd = -1, err = ECONNREFUSED;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        err = errno;
        if (err == EINPROGRESS && wait_for(fd, POLLOUT, timeout_ms) == 1) {
            socklen_t len = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
                break;
        } else if (err == EINPROGRESS) {
            err = ETIMEDOUT;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return fail(out, -1, "connect", strerror(err));
    return fd;
}

int sl_http_get(const char *host, const char *port, const char *path, const char *token,
                int timeout_ms, sl_http_answer_t *out) {
    memset(out, 0, sizeof *out);
    int fd = connect_to(host, port, timeout_ms, out);
    if (fd < 0)
        return -1;
    char req[8192];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n%s%s%s\r\n",
                     path, host, port, token ? "Authorization: Bearer " : "", token ? token : "",
                     token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req)
        return fail(out, fd, "request", "too long");
    for (size_t sent = 0; sent < (size_t)n;) {
        ssize_t w = send(fd, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_for(fd, POLLOUT, timeout_ms) != 1)
                return fail(out, fd, "send", "timed out");
            continue;
        }
        if (w < 0)
            return fail(out, fd, "send", strerror(errno));
        sent += (size_t)w;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    if (buf == NULL)
        return fail(out, fd, "read", "out of memory");
    out->body = buf; /* freed by fail() from here on */
    for (;;) {
        if (len == cap) {
            if (cap >= SL_HTTP_GET_MAX)
                return fail(out, fd, "read", "answer too large");
            char *more = realloc(buf, cap * 2 + 1);
            if (more == NULL)
                return fail(out, fd, "read", "out of memory");
            out->body = buf = more;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len, 0);
        if (r > 0) {
            len += (size_t)r;
            continue;
        }
        if (r == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return fail(out, fd, "read", strerror(errno));
        if (wait_for(fd, POLLIN, timeout_ms) != 1)
            return fail(out, fd, "read", "timed out");
    }
    close(fd);
    buf[len] = '\0';
    int major, minor, status;
    char *head_end = strstr(buf, "\r\n\r\n");
    if (head_end == NULL || sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3)
        return fail(out, -1, "answer", "not HTTP");
    size_t skip = (size_t)(head_end + 4 - buf);
    memmove(buf, buf + skip, len - skip + 1);
    out->status = status;
    out->body_len = len - skip;
    return 0;
}
