/* redis_fake.h -- a scripted Redis server on the test's own libuv loop, for
 * the client behaviours a real server cannot be made to show on cue: a
 * CLUSTER SLOTS reply held back until a MOVED has been seen, a node that
 * leaves the map. Each command goes to the test's handler, which returns the
 * reply's RESP bytes (malloc'd, sent and freed), or NULL to hold it (sent
 * later with fake_redis_release; the replies to the commands behind it on
 * that connection wait for it, in order, as a real server's would).
 * Loopback only; header-only.
 */
#ifndef SL_TEST_REDIS_FAKE_H
#define SL_TEST_REDIS_FAKE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#define FAKE_MAX_ARGS 8
#define FAKE_MAX_CONNS 16

typedef struct fake_redis fake_redis_t;

typedef struct fake_conn {
    uv_tcp_t tcp;
    fake_redis_t *f;
    char in[4096];
    size_t in_len;
    bool open;
    bool holding;              /* a reply is held: the next ones queue */
    char *queued[64];
    int n_queued;
} fake_conn_t;

/* argv: NUL-terminated words; returns malloc'd RESP bytes or NULL (held). */
typedef char *(*fake_handler_fn)(fake_redis_t *f, fake_conn_t *c, int argc, char **argv);

struct fake_redis {
    uv_loop_t *loop;
    uv_tcp_t server;
    int port;
    fake_handler_fn handler;
    void *data;                      /* the test's */
    fake_conn_t *conns[FAKE_MAX_CONNS];
    int n_conns;                     /* accepted so far */
    int open_conns;                  /* still open */
    int commands;                    /* received */
    int closing_handles;
};

/* printf into a malloc'd string, for replies. */
static inline char *fake_fmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void fake_written(uv_write_t *w, int status) {
    (void)status;
    free(w->data);
    free(w);
}

/* Sends bytes (taking them) on c, if it is still open. */
static inline void fake_redis_reply(fake_conn_t *c, char *bytes) {
    if (!c->open) {
        free(bytes);
        return;
    }
    uv_write_t *w = malloc(sizeof *w);
    w->data = bytes;
    uv_buf_t b = uv_buf_init(bytes, (unsigned)strlen(bytes));
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, fake_written) != 0) {
        free(bytes);
        free(w);
    }
}

/* Parses whole multibulk commands from c->in; returns bytes used (0: need more). */
static size_t fake_parse(fake_conn_t *c, int *argc, char **argv) {
    char *p = c->in, *end = c->in + c->in_len;
    if (p >= end || *p != '*')
        return 0;
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return 0;
    int n = atoi(p + 1);
    p = nl + 1;
    if (n > FAKE_MAX_ARGS)
        n = FAKE_MAX_ARGS;
    for (int i = 0; i < n; i++) {
        if (p >= end || *p != '$' || !(nl = memchr(p, '\n', (size_t)(end - p))))
            return 0;
        size_t len = (size_t)atol(p + 1);
        p = nl + 1;
        if ((size_t)(end - p) < len + 2)
            return 0;
        argv[i] = p;
        p[len] = '\0'; /* over the '\r' */
        p += len + 2;
    }
    *argc = n;
    return (size_t)(p - c->in);
}

static void fake_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf) {
    (void)want;
    fake_conn_t *c = h->data;
    buf->base = c->in + c->in_len;
    buf->len = sizeof c->in - c->in_len;
}

static void fake_conn_closed(uv_handle_t *h) {
    fake_conn_t *c = h->data;
    c->f->closing_handles--;
}

static inline void fake_conn_close(fake_conn_t *c) {
    if (!c->open)
        return;
    c->open = false;
    c->f->open_conns--;
    c->f->closing_handles++;
    uv_close((uv_handle_t *)&c->tcp, fake_conn_closed);
}

static void fake_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    (void)buf;
    fake_conn_t *c = s->data;
    if (n < 0) {
        fake_conn_close(c);
        return;
    }
    c->in_len += (size_t)n;
    for (;;) {
        int argc = 0;
        char *argv[FAKE_MAX_ARGS];
        size_t used = fake_parse(c, &argc, argv);
        if (used == 0)
            break;
        c->f->commands++;
        char *reply = c->f->handler(c->f, c, argc, argv);
        /* argv points into c->in: the reply is made before it moves */
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (reply == NULL)
            c->holding = true;
        else if (c->holding && c->n_queued < 64)
            c->queued[c->n_queued++] = reply;
        else if (c->holding)
            free(reply);
        else
            fake_redis_reply(c, reply);
    }
}

/* Sends the held reply (taking bytes), then those that waited behind it. */
static inline void fake_redis_release(fake_conn_t *c, char *bytes) {
    fake_redis_reply(c, bytes);
    for (int i = 0; i < c->n_queued; i++)
        fake_redis_reply(c, c->queued[i]);
    c->n_queued = 0;
    c->holding = false;
}

static void fake_accept(uv_stream_t *server, int status) {
    fake_redis_t *f = server->data;
    if (status < 0 || f->n_conns == FAKE_MAX_CONNS)
        return;
    fake_conn_t *c = calloc(1, sizeof *c);
    c->f = f;
    uv_tcp_init(f->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        f->closing_handles++;
        c->open = false;
        uv_close((uv_handle_t *)&c->tcp, fake_conn_closed);
        f->conns[f->n_conns++] = c;
        return;
    }
    c->open = true;
    f->open_conns++;
    f->conns[f->n_conns++] = c;
    uv_read_start((uv_stream_t *)&c->tcp, fake_alloc, fake_read);
}

/* Listens on 127.0.0.1 on a free port. Returns 0 or -1. */
static inline int fake_redis_start(fake_redis_t *f, uv_loop_t *loop, fake_handler_fn handler,
                                   void *data) {
    memset(f, 0, sizeof *f);
    f->loop = loop;
    f->handler = handler;
    f->data = data;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_init(loop, &f->server);
    f->server.data = f;
    if (uv_tcp_bind(&f->server, (const struct sockaddr *)&a, 0) != 0 ||
        uv_listen((uv_stream_t *)&f->server, 16, fake_accept) != 0)
        return -1;
    int len = sizeof a;
    uv_tcp_getsockname(&f->server, (struct sockaddr *)&a, &len);
    f->port = ntohs(a.sin_port);
    return 0;
}

static void fake_server_closed(uv_handle_t *h) {
    fake_redis_t *f = h->data;
    f->closing_handles--;
}

/* Closes the server and every connection; run the loop until
 * fake_redis_closed(f), then fake_redis_free(f). */
static inline void fake_redis_stop(fake_redis_t *f) {
    for (int i = 0; i < f->n_conns; i++)
        fake_conn_close(f->conns[i]);
    f->closing_handles++;
    uv_close((uv_handle_t *)&f->server, fake_server_closed);
}

static inline bool fake_redis_closed(const fake_redis_t *f) { return f->closing_handles == 0; }

static inline void fake_redis_free(fake_redis_t *f) {
    for (int i = 0; i < f->n_conns; i++) {
        for (int k = 0; k < f->conns[i]->n_queued; k++)
            free(f->conns[i]->queued[k]);
        free(f->conns[i]);
    }
    f->n_conns = 0;
}

#endif
