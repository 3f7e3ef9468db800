/* resolve.c -- host names to address lists, blocking or on a loop (resolve.h). */
#include "store/redis/resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Set by tests before any client starts; read-only afterwards. */
static sl__resolve_hook_fn hook;

void sl__resolve_set_hook(sl__resolve_hook_fn fn) { hook = fn; }

bool sl__resolve_is_numeric(const char *host) {
    unsigned char probe[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1;
}

static void add(sl__resolved_t *out, const char *addr) {
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->addr[i], addr) == 0)
            return;
    if (out->n < SL__RESOLVE_MAX)
        snprintf(out->addr[out->n++], SL__RESOLVE_ADDR_LEN, "%s", addr);
}

static void from_addrinfo(const struct addrinfo *ai, sl__resolved_t *out) {
    out->n = 0;
    for (; ai; ai = ai->ai_next) {
        char ip[INET6_ADDRSTRLEN];
        const void *a;
        if (ai->ai_family == AF_INET6)
            a = &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr;
        else if (ai->ai_family == AF_INET)
            a = &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr;
        else
            continue;
        if (inet_ntop(ai->ai_family, a, ip, sizeof ip))
            add(out, ip);
    }
}

/* The answers that need no lookup: a numeric host, or the test hook's.
 * Returns 1 when the system resolver must be asked. */
static int answer_locally(const char *host, sl__resolved_t *out, char *err, size_t err_len) {
    out->n = 0;
    if (sl__resolve_is_numeric(host)) {
        add(out, host);
        return 0;
    }
    if (hook) {
        int rc = hook(host, out);
        if (rc <= 0) {
            if (rc < 0 || out->n == 0) {
                snprintf(err, err_len, "cannot resolve %s: no address", host);
                return -1;
            }
            return 0;
        }
    }
    return 1;
}

/* No AI_ADDRCONFIG: on a host with loopback IPv6 only it would drop ::1,
 * and a server bound to ::1 only could not be reached. */
static const struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};

int sl__resolve_now(const char *host, sl__resolved_t *out, char *err, size_t err_len) {
    int local = answer_locally(host, out, err, err_len);
    if (local <= 0)
        return local;
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc == 0)
        from_addrinfo(ai, out);
    if (ai)
        freeaddrinfo(ai);
    if (rc != 0 || out->n == 0) {
        snprintf(err, err_len, "cannot resolve %s: %s", host, rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    return 0;
}

const char *sl__resolve_format(const sl__resolved_t *r, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", r->addr[i]);
        if (k < 0)
            break;
        at += (size_t)k;
    }
    return buf;
}

/* ---- on a loop ------------------------------------------------------------------------------ */

struct sl__resolve_req {
    uv_getaddrinfo_t gai;   /* a real lookup, in libuv's thread pool */
    uv_timer_t timer;       /* or the next loop turn, for a local answer */
    bool use_timer;
    bool cancelled;
    int rc;
    sl__resolved_t addrs;
    char err[300];
    char host[256];
    sl__resolve_fn fn;
    void *arg;
    void (*done)(void *arg);
    void *done_arg;
};

static void finish(sl__resolve_req_t *q) {
    void (*done)(void *) = q->done;
    void *done_arg = q->done_arg;
    if (!q->cancelled && q->fn)
        q->fn(q->arg, q->rc, q->rc == 0 ? &q->addrs : NULL, q->rc == 0 ? NULL : q->err);
    free(q);
    if (done)
        done(done_arg);
}

static void timer_closed(uv_handle_t *h) { finish(h->data); }

static void timer_cb(uv_timer_t *t) { uv_close((uv_handle_t *)t, timer_closed); }

static void gai_cb(uv_getaddrinfo_t *g, int status, struct addrinfo *ai) {
    sl__resolve_req_t *q = g->data;
    if (status == 0)
        from_addrinfo(ai, &q->addrs);
    if (ai)
        uv_freeaddrinfo(ai);
    if (status != 0 || q->addrs.n == 0) {
        q->rc = -1;
        snprintf(q->err, sizeof q->err, "cannot resolve %s: %s", q->host,
                 status ? uv_strerror(status) : "no address");
    }
    finish(q);
}

sl__resolve_req_t *sl__resolve_start(uv_loop_t *loop, const char *host, sl__resolve_fn fn,
                                     void *arg) {
    sl__resolve_req_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return NULL;
    q->fn = fn;
    q->arg = arg;
    snprintf(q->host, sizeof q->host, "%s", host);
    int local = answer_locally(host, &q->addrs, q->err, sizeof q->err);
    if (local <= 0) {
        q->rc = local;
        q->use_timer = true;
        uv_timer_init(loop, &q->timer);
        q->timer.data = q;
        uv_timer_start(&q->timer, timer_cb, 0, 0);
        return q;
    }
    q->gai.data = q;
    int rc = uv_getaddrinfo(loop, &q->gai, gai_cb, host, NULL, &hints);
    if (rc != 0) { /* answered on the next turn, like the others */
        q->rc = -1;
        snprintf(q->err, sizeof q->err, "cannot resolve %s: %s", host, uv_strerror(rc));
        q->use_timer = true;
        uv_timer_init(loop, &q->timer);
        q->timer.data = q;
        uv_timer_start(&q->timer, timer_cb, 0, 0);
    }
    return q;
}

void sl__resolve_cancel(sl__resolve_req_t *q, void (*done)(void *arg), void *done_arg) {
    q->cancelled = true;
    q->done = done;
    q->done_arg = done_arg;
    if (q->use_timer) {
        if (!uv_is_closing((uv_handle_t *)&q->timer)) {
            uv_timer_stop(&q->timer);
            uv_close((uv_handle_t *)&q->timer, timer_closed);
        }
    } else {
        uv_cancel((uv_req_t *)&q->gai); /* gai_cb comes either way */
    }
}
