/* client.c -- the asynchronous Redis client (client.h): hiredis async
 * contexts on one libuv loop, with per-command deadlines, reconnection with
 * backoff, a circuit breaker, NOSCRIPT reloads, Cluster routing (slot map,
 * MOVED, ASK) and Sentinel discovery.
 *
 * Every command is a `pend_t` holding its formatted bytes (so it can be
 * resent after NOSCRIPT, MOVED, ASK or READONLY), its deadline and its
 * callback. A pend is on the client's deadline list until it completes; it
 * is either waiting (on a node's queue until the connection is ready, or on
 * the client's queue until discovery names a node) or written to a hiredis
 * context. It completes exactly once (reply, timeout, down, closing); one
 * that timed out while written stays allocated, abandoned, until hiredis
 * hands back its late reply (replies come in order) or drops the connection.
 *
 * hiredis 0.14 has no async timeouts, so deadlines and the connect timeout
 * are uv timers, and a context is torn down with redisAsyncFree(), which
 * runs the pending callbacks with a NULL reply (at once, or when the
 * current callback returns). A small libuv adapter of our own (the same as
 * hiredis's adapters/libuv.h) counts its poll handles so close() can wait
 * for them.
 *
 * Host names are looked up off the loop (resolve.c) at every connection
 * round and each address is tried in order; hiredis only ever gets
 * addresses, so it never resolves anything on the loop. A server that
 * refuses our credentials (or wants some we do not have: NOAUTH) is a node
 * that is down, not one that answers.
 *
 * Discovery (Cluster slot map, node table, Sentinel quorum) is discovery.c;
 * the structures both share are in client_private.h.
 *
 * Known limits: the breaker is one per client, not per Cluster node;
 * Sentinel failovers are noticed by a broken connection, READONLY, a ROLE
 * check or the sentinels asked every second, not by +switch-master
 * messages.
 */
#include "store/redis/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "store/redis/client_private.h"

static void route(pend_t *p);
static void node_send(node_t *n, pend_t *p);
static void node_lost(node_t *n);

/* ---- small things --------------------------------------------------------- */

void sl__rc_set_error(sl__redis_client_t *c, const char *what, node_t *n, const char *why) {
    /* a sentinel's own errors go into the round's report (discovery.c) */
    if (!(n && n->sentinel))
        snprintf(c->last_error, sizeof c->last_error, "%s %s:%u: %.400s", what,
                 n ? n->addr.host : "?", n ? (unsigned)n->addr.port : 0u, why ? why : "");
    if (n)
        snprintf(n->why, sizeof n->why, "%s: %.180s", what, why ? why : "");
}

/* What Redis answers a connection that is not (or wrongly) authenticated:
 * NOAUTH, WRONGPASS, "ERR invalid password" (before 6.0), "ERR AUTH <password>
 * called without any password configured" (a password the server does not
 * want), "ERR Client sent AUTH, but no password is set" (before 6.0). */
static bool auth_error(const char *str) {
    return strncmp(str, "NOAUTH", 6) == 0 || strncmp(str, "WRONGPASS", 9) == 0 ||
           strncmp(str, "ERR invalid password", 20) == 0 || strncmp(str, "ERR AUTH", 8) == 0 ||
           strncmp(str, "ERR Client sent AUTH", 20) == 0;
}

static void q_push(queue_t *q, pend_t *p) {
    p->q = q;
    p->qnext = NULL;
    p->qprev = q->tail;
    if (q->tail)
        q->tail->qnext = p;
    else
        q->head = p;
    q->tail = p;
}

static void q_remove(pend_t *p) {
    queue_t *q = p->q;
    if (q == NULL)
        return;
    if (p->qprev)
        p->qprev->qnext = p->qnext;
    else
        q->head = p->qnext;
    if (p->qnext)
        p->qnext->qprev = p->qprev;
    else
        q->tail = p->qprev;
    p->q = NULL;
    p->qprev = p->qnext = NULL;
}

static pend_t *q_pop(queue_t *q) {
    pend_t *p = q->head;
    if (p)
        q_remove(p);
    return p;
}

static void arm_deadline(sl__redis_client_t *c);

static void d_insert(sl__redis_client_t *c, pend_t *p) {
    pend_t *after = c->dtail; /* almost always the tail: deadlines grow with time */
    while (after && after->deadline > p->deadline)
        after = after->dprev;
    p->dprev = after;
    p->dnext = after ? after->dnext : c->dhead;
    if (p->dnext)
        p->dnext->dprev = p;
    else
        c->dtail = p;
    if (after)
        after->dnext = p;
    else
        c->dhead = p;
    if (c->dhead == p)
        arm_deadline(c);
}

static void d_remove(sl__redis_client_t *c, pend_t *p) {
    if (p->dprev)
        p->dprev->dnext = p->dnext;
    else if (c->dhead == p)
        c->dhead = p->dnext;
    else
        return; /* not on the list */
    if (p->dnext)
        p->dnext->dprev = p->dprev;
    else
        c->dtail = p->dprev;
    p->dprev = p->dnext = NULL;
}

static void maybe_free(pend_t *p) {
    if (p->done && p->hi_refs == 0 && p->q == NULL && !p->busy) {
        free(p->cmd);
        free(p);
    }
}

/* ---- breaker --------------------------------------------------------------- */

static void breaker_timer_cb(uv_timer_t *t);

static void breaker_open(sl__redis_client_t *c) {
    c->open = true;
    c->probing = false;
    c->opened_at = uv_now(c->loop);
    if (!c->closing)
        uv_timer_start(&c->breaker_timer, breaker_timer_cb, c->o.breaker_cooldown_ms, 0);
}

static void breaker_account(sl__redis_client_t *c, sl__redis_status_t st) {
    if (st == SL__REDIS_OK) {
        c->failures = 0;
        c->open = c->probing = false;
        uv_timer_stop(&c->breaker_timer);
    } else if (st == SL__REDIS_TIMEOUT || st == SL__REDIS_DOWN) {
        if (c->failures < UINT32_MAX)
            c->failures++;
        if (c->probing || (!c->open && c->failures >= c->o.breaker_failures))
            breaker_open(c);
    }
}

/* ---- completion ------------------------------------------------------------ */

static void complete(pend_t *p, sl__redis_status_t st, const redisReply *r) {
    if (p->done)
        return;
    sl__redis_client_t *c = p->c;
    p->done = true;
    d_remove(c, p);
    q_remove(p);
    sl__redis_reply_fn fn = p->fn;
    void *arg = p->arg;
    p->fn = NULL;
    if (!p->internal || p->probe) {
        if (st != SL__REDIS_OK && st != SL__REDIS_CLOSING && !p->internal)
            c->st.failed++;
        if (st == SL__REDIS_TIMEOUT && !p->internal)
            c->st.timeouts++;
        breaker_account(c, st);
    }
    /* The callback may close the client, which may free the hiredis
     * context, which hands p its NULL reply: p must outlive the call. */
    p->busy = true;
    if (fn)
        fn(arg, st, st == SL__REDIS_OK ? r : NULL);
    p->busy = false;
    maybe_free(p);
}

void sl__rc_node_drop(node_t *n, const char *why);

static void deadline_cb(uv_timer_t *t) {
    sl__redis_client_t *c = t->data;
    uint64_t now = uv_now(c->loop);
    while (c->dhead && c->dhead->deadline <= now) {
        pend_t *p = c->dhead;
        node_t *n = p->node;
        complete(p, SL__REDIS_TIMEOUT, NULL);
        /* A connection that has answered nothing for a whole timeout while
         * owing replies is hung (a frozen or partitioned server): drop it,
         * so it reconnects (and a Cluster re-reads its slot map) instead of
         * timing out every command until the kernel gives up on it. */
        if (n && !c->closing && n->state == N_READY && n->ac && n->in_flight > 0 &&
            now - n->last_rx >= c->o.timeout_ms)
            sl__rc_node_drop(n, "no reply within the timeout");
    }
    arm_deadline(c);
}

static void arm_deadline(sl__redis_client_t *c) {
    if (c->closing)
        return;
    if (c->dhead == NULL) {
        uv_timer_stop(&c->deadline_timer);
        return;
    }
    uint64_t now = uv_now(c->loop);
    uint64_t wait = c->dhead->deadline > now ? c->dhead->deadline - now : 0;
    uv_timer_start(&c->deadline_timer, deadline_cb, wait, 0);
}

/* ---- handles ----------------------------------------------------------------- */

static void finish_close(sl__redis_client_t *c) {
    for (size_t i = 0; i < c->n_nodes; i++)
        free(c->nodes[i]);
    free(c->slots);
    free(c->slot_seq);
    free(c->map);
    void (*done)(void *) = c->done;
    void *arg = c->done_arg;
    free(c);
    if (done)
        done(arg);
}

static void resolve_cancelled(void *arg) {
    sl__redis_client_t *c = arg;
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

static void handle_closed(uv_handle_t *h) {
    sl__redis_client_t *c = h->data;
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

static void node_timer_closed(uv_handle_t *h) {
    node_t *n = h->data;
    sl__redis_client_t *c = n->c;
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

/* The libuv adapter: hiredis's adapters/libuv.h, plus a handle count and
 * a read on poll errors (so hiredis sees the socket error and gives up). */
typedef struct ev {
    redisAsyncContext *ac;
    sl__redis_client_t *c;
    uv_poll_t poll;
    int events;
} ev_t;

static void ev_poll_cb(uv_poll_t *h, int status, int events) {
    ev_t *e = h->data;
    if (status < 0)
        events = UV_READABLE | UV_WRITABLE;
    if (e->ac && (events & UV_READABLE))
        redisAsyncHandleRead(e->ac);
    if (e->ac && (events & UV_WRITABLE))
        redisAsyncHandleWrite(e->ac);
}

static void ev_update(ev_t *e) {
    if (e->events)
        uv_poll_start(&e->poll, e->events, ev_poll_cb);
    else
        uv_poll_stop(&e->poll);
}

static void ev_add_read(void *d) {
    ev_t *e = d;
    e->events |= UV_READABLE;
    ev_update(e);
}

static void ev_del_read(void *d) {
    ev_t *e = d;
    e->events &= ~UV_READABLE;
    ev_update(e);
}

static void ev_add_write(void *d) {
    ev_t *e = d;
    e->events |= UV_WRITABLE;
    ev_update(e);
}

static void ev_del_write(void *d) {
    ev_t *e = d;
    e->events &= ~UV_WRITABLE;
    ev_update(e);
}

static void ev_closed(uv_handle_t *h) {
    ev_t *e = h->data;
    sl__redis_client_t *c = e->c;
    free(e);
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

static void ev_cleanup(void *d) {
    ev_t *e = d;
    e->ac = NULL; /* hiredis frees the context right after */
    uv_close((uv_handle_t *)&e->poll, ev_closed);
}

static int ev_attach(sl__redis_client_t *c, redisAsyncContext *ac) {
    ev_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return -1;
    if (uv_poll_init(c->loop, &e->poll, ac->c.fd) != 0) {
        free(e);
        return -1;
    }
    c->handles++;
    e->ac = ac;
    e->c = c;
    e->poll.data = e;
    ac->ev.data = e;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    return 0;
}

/* ---- nodes ------------------------------------------------------------------- */

static node_t *node_find(sl__redis_client_t *c, const sl__redis_addr_t *a, bool sentinel) {
    for (size_t i = 0; i < c->n_nodes; i++) {
        node_t *n = c->nodes[i];
        if (n->sentinel == sentinel && n->addr.port == a->port && strcmp(n->addr.host, a->host) == 0)
            return n;
    }
    return NULL;
}

node_t *sl__rc_node_get(sl__redis_client_t *c, const sl__redis_addr_t *a, bool sentinel) {
    node_t *n = node_find(c, a, sentinel);
    if (n || c->n_nodes == MAX_NODES || c->closing)
        return n;
    n = calloc(1, sizeof *n);
    if (n == NULL)
        return NULL;
    n->c = c;
    n->addr = *a;
    n->sentinel = sentinel;
    n->backoff_ms = BACKOFF_MIN_MS;
    uv_timer_init(c->loop, &n->timer);
    n->timer.data = n;
    c->handles++;
    c->nodes[c->n_nodes++] = n;
    return n;
}

static void forgotten_closed(uv_handle_t *h) {
    node_t *n = h->data;
    sl__redis_client_t *c = n->c;
    free(n);
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

void sl__rc_node_forget(node_t *n) {
    n->wanted = false;
    redisAsyncContext *ac = n->ac;
    n->ac = NULL;
    n->state = N_DOWN;
    if (ac) {
        ac->data = NULL;
        redisAsyncFree(ac); /* nothing in flight: only handshake callbacks, which see NULL */
    }
    uv_timer_stop(&n->timer);
    uv_close((uv_handle_t *)&n->timer, forgotten_closed);
}

bool sl__rc_node_busy(const node_t *n) {
    for (const pend_t *p = n->c->dhead; p; p = p->dnext)
        if (p->node == n || p->target == n)
            return true;
    return n->c->disc_node == n;
}

/* The reply to ASKING or SCRIPT LOAD: the command after it tells. */
static void ignore_cb(redisAsyncContext *ac, void *r, void *priv) {
    (void)ac, (void)r, (void)priv;
}

static void pend_cb(redisAsyncContext *ac, void *reply, void *priv);

/* The reply to a SCRIPT LOAD: the next NOSCRIPT (another SCRIPT FLUSH) may
 * load it again. */
static void script_loaded_cb(redisAsyncContext *ac, void *r, void *priv) {
    node_t *n = priv;
    if (r != NULL && n->ac == ac)
        n->script_loading = false;
}

/* Writes p on n's ready context (ASKING first when it was redirected by
 * ASK). Fails it with DOWN when the context refuses or owes too much. */
static void node_write(node_t *n, pend_t *p) {
    if (n->in_flight >= MAX_ABANDONED) { /* a node that stopped answering */
        complete(p, SL__REDIS_DOWN, NULL);
        return;
    }
    p->asked = p->asking;
    if (p->asking) {
        p->asking = false;
        redisAsyncCommand(n->ac, ignore_cb, NULL, "ASKING");
    }
    if (redisAsyncFormattedCommand(n->ac, pend_cb, p, p->cmd, p->cmd_len) != REDIS_OK) {
        complete(p, SL__REDIS_DOWN, NULL);
        return;
    }
    p->hi_refs++;
    p->node = n;
    n->in_flight++;
}

/* Tears n's context down (at once, or when the hiredis callback running
 * now returns) and treats it as lost. */
void sl__rc_node_drop(node_t *n, const char *why) {
    redisAsyncContext *ac = n->ac;
    if (why)
        sl__rc_set_error(n->c, "dropped", n, why);
    n->ac = NULL;
    n->state = N_DOWN;
    n->failed = true;
    if (ac) {
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    node_lost(n);
}

static void node_ready(node_t *n) {
    sl__redis_client_t *c = n->c;
    uv_timer_stop(&n->timer);
    n->state = N_READY;
    n->failed = false;
    n->script_loading = false;
    /* the backoff starts over at the first reply, not here: a server that
     * accepts and then hangs up (maxclients) must not be hammered */
    n->last_rx = uv_now(c->loop);
    if (n->ever_ready && !n->sentinel)
        c->st.reconnects++;
    n->ever_ready = true;
    pend_t *p;
    while (n->state == N_READY && (p = q_pop(&n->waitq)) != NULL) {
        if (p->done)
            maybe_free(p);
        else
            node_write(n, p);
    }
}

static void hs_cb(redisAsyncContext *ac, void *reply, void *priv) {
    node_t *n = priv;
    redisReply *r = reply;
    if (r == NULL || n->ac != ac)
        return; /* the connection is going: on_disconnect / node_drop handle it */
    if (r->type == REDIS_REPLY_ERROR) {
        if (auth_error(r->str)) {
            sl__rc_set_error(n->c, "authentication", n, r->str);
            sl__rc_node_drop(n, NULL);
        } else {
            sl__rc_node_drop(n, r->str);
        }
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY) { /* ROLE */
        if (r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING ||
            strcmp(r->element[0]->str, "master") != 0) {
            sl__rc_node_drop(n, "ROLE: not a master (failover in progress?)");
            return;
        }
    }
    if (--n->handshake_left == 0)
        node_ready(n);
}

static void connect_addr(node_t *n);

/* The address being tried failed before the handshake: the next one now,
 * or, when every address failed, the node is lost (one error naming each
 * address and why). */
static void attempt_failed(node_t *n, const char *why) {
    sl__redis_client_t *c = n->c;
    size_t used = strlen(n->tried);
    snprintf(n->tried + used, sizeof n->tried - used, "%s%s (%.100s)", used ? "; " : "",
             n->addrs.addr[n->addr_at], why ? why : "failed");
    n->state = N_DOWN;
    if (!c->closing && n->addr_at + 1 < n->addrs.n) {
        n->addr_at++;
        connect_addr(n);
        return;
    }
    if (n->addrs.n == 1 && strcmp(n->addrs.addr[0], n->addr.host) == 0)
        sl__rc_set_error(c, "connect", n, why); /* an address: as it always said */
    else
        sl__rc_set_error(c, "connect", n, n->tried);
    n->failed = true;
    node_lost(n);
}

static void on_connect(const redisAsyncContext *cac, int status) {
    node_t *n = cac->data;
    if (n == NULL || n->ac != cac)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this returns. */
        n->ac->data = NULL;
        n->ac = NULL;
        attempt_failed(n, cac->errstr);
        return;
    }
    if (n->handshake_left == 0)
        node_ready(n);
}

static void on_disconnect(const redisAsyncContext *cac, int status) {
    node_t *n = cac->data;
    (void)status;
    if (n == NULL || n->ac != cac)
        return;
    sl__rc_set_error(n->c, "disconnected", n, cac->errstr);
    n->ac->data = NULL;
    n->ac = NULL;
    n->state = N_DOWN;
    n->failed = true;
    node_lost(n);
}

static void connect_timeout_cb(uv_timer_t *t) {
    node_t *n = t->data;
    if (n->state == N_CONNECTING) {
        redisAsyncContext *ac = n->ac;
        n->ac = NULL;
        if (ac) {
            ac->data = NULL;
            redisAsyncFree(ac);
        }
        attempt_failed(n, "connect timeout");
    } else if (n->state == N_DOWN && n->wanted && !n->c->closing) {
        sl__rc_node_connect(n); /* backoff over */
    }
}

/* Connects to n's address addr_at (an address, so hiredis does not look
 * anything up on the loop) and queues the handshake. */
static void connect_addr(node_t *n) {
    sl__redis_client_t *c = n->c;
    uv_timer_stop(&n->timer);
    redisAsyncContext *ac = redisAsyncConnect(n->addrs.addr[n->addr_at], n->addr.port);
    if (ac == NULL || ac->err || ev_attach(c, ac) != 0) {
        char why[128];
        snprintf(why, sizeof why, "%s", ac && ac->err ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        attempt_failed(n, why);
        return;
    }
    ac->data = n;
    n->ac = ac;
    n->state = N_CONNECTING;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    uv_timer_start(&n->timer, connect_timeout_cb, c->o.connect_timeout_ms, 0);
    n->handshake_left = 0;
    const sl__redis_url_t *u = &c->url;
    bool has_user = n->sentinel ? u->has_sentinel_user : u->has_user;
    bool has_password = n->sentinel ? u->has_sentinel_password : u->has_password;
    const char *user = n->sentinel ? u->sentinel_user : u->user;
    size_t user_len = n->sentinel ? u->sentinel_user_len : u->user_len;
    const char *password = n->sentinel ? u->sentinel_password : u->password;
    size_t password_len = n->sentinel ? u->sentinel_password_len : u->password_len;
    if (has_password) {
        const char *argv[3] = {"AUTH", user, password};
        size_t len[3] = {4, user_len, password_len};
        int argc = 3;
        if (!has_user) {
            argv[1] = password;
            len[1] = password_len;
            argc = 2;
        }
        redisAsyncCommandArgv(ac, hs_cb, n, argc, argv, len);
        n->handshake_left++;
    } else if (!n->sentinel) {
        /* a server that wants a password the URL does not give answers
         * NOAUTH: a store that is down, found at connection time */
        redisAsyncCommand(ac, hs_cb, n, "PING");
        n->handshake_left++;
    }
    if (n->sentinel)
        return;
    if (u->db != 0 && u->kind != SL__REDIS_CLUSTER) {
        char db[16];
        snprintf(db, sizeof db, "%u", (unsigned)u->db);
        redisAsyncCommand(ac, hs_cb, n, "SELECT %s", db);
        n->handshake_left++;
    }
    if (u->kind == SL__REDIS_SENTINEL) {
        redisAsyncCommand(ac, hs_cb, n, "ROLE");
        n->handshake_left++;
    }
}

static void on_resolved(void *arg, int rc, const sl__resolved_t *addrs, const char *err) {
    node_t *n = arg;
    sl__redis_client_t *c = n->c;
    n->resolving = NULL;
    c->handles--;
    n->state = N_DOWN;
    if (rc != 0) {
        sl__rc_set_error(c, "resolve", n, err);
        n->failed = true;
        node_lost(n);
        return;
    }
    n->addrs = *addrs;
    n->addr_at = 0;
    connect_addr(n);
}

/* A connection round: look the name up again (off the loop: a slow DNS
 * holds up no command), then try its addresses in order. */
void sl__rc_node_connect(node_t *n) {
    sl__redis_client_t *c = n->c;
    if (c->closing || n->state != N_DOWN)
        return;
    uv_timer_stop(&n->timer);
    n->tried[0] = '\0';
    n->addr_at = 0;
    if (sl__resolve_is_numeric(n->addr.host)) {
        n->addrs.n = 1;
        snprintf(n->addrs.addr[0], sizeof n->addrs.addr[0], "%.45s", n->addr.host);
        connect_addr(n);
        return;
    }
    n->resolving = sl__resolve_start(c->loop, n->addr.host, on_resolved, n);
    if (n->resolving == NULL) {
        sl__rc_set_error(c, "resolve", n, "out of memory");
        n->failed = true;
        node_lost(n);
        return;
    }
    c->handles++; /* the lookup: close() waits for it */
    n->state = N_RESOLVING;
}

void sl__rc_fail_queue(queue_t *q, sl__redis_status_t st) {
    pend_t *p;
    while ((p = q_pop(q)) != NULL) {
        if (p->done)
            maybe_free(p);
        else
            complete(p, st, NULL);
    }
}

/* n has no connection any more (failed attempt, drop, disconnect). */
static void node_lost(node_t *n) {
    sl__redis_client_t *c = n->c;
    uv_timer_stop(&n->timer);
    if (c->closing) {
        sl__rc_fail_queue(&n->waitq, SL__REDIS_CLOSING);
        return;
    }
    if (c->url.kind == SL__REDIS_SENTINEL && !n->sentinel) {
        /* The master may have moved: ask the sentinels again; what waited
         * for this one waits for the next, within its deadline. */
        pend_t *p;
        while ((p = q_pop(&n->waitq)) != NULL) {
            if (p->done)
                maybe_free(p);
            else
                q_push(&c->waitq, p);
        }
        if (c->primary == n)
            c->primary = NULL;
        n->wanted = false;
        sl__rc_discover_later(c);
        return;
    }
    if (n->sentinel) {
        sl__rc_fail_queue(&n->waitq, SL__REDIS_DOWN);
        return;
    }
    /* The backoff starts before any callback runs, and the callbacks get a
     * queue of their own: one that sends again finds the node waiting to
     * reconnect (and fails at once), instead of reconnecting at once and
     * being failed by this same loop, over and over. */
    queue_t q = n->waitq;
    n->waitq.head = n->waitq.tail = NULL;
    for (pend_t *p = q.head; p; p = p->qnext)
        p->q = &q;
    if (n->wanted) {
        uv_timer_start(&n->timer, connect_timeout_cb, n->backoff_ms, 0);
        n->backoff_ms = n->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : n->backoff_ms * 2;
    }
    if (c->url.kind == SL__REDIS_CLUSTER)
        sl__rc_discover_later(c); /* a failover may have moved its slots */
    sl__rc_fail_queue(&q, SL__REDIS_DOWN);
}

static void node_send(node_t *n, pend_t *p) {
    switch (n->state) {
    case N_READY:
        node_write(n, p);
        return;
    case N_RESOLVING:
    case N_CONNECTING:
        q_push(&n->waitq, p);
        return;
    case N_DOWN:
        if (n->failed && !p->internal && uv_is_active((uv_handle_t *)&n->timer)) {
            complete(p, SL__REDIS_DOWN, NULL); /* in backoff: known to be down */
            return;
        }
        q_push(&n->waitq, p);
        sl__rc_node_connect(n);
        return;
    }
}

/* ---- routing ----------------------------------------------------------------- */

static node_t *any_node(sl__redis_client_t *c) {
    node_t *fallback = NULL;
    for (size_t i = 0; i < c->n_nodes; i++) {
        node_t *n = c->nodes[i];
        if (n->sentinel || !n->wanted)
            continue;
        if (n->state == N_READY)
            return n;
        if (fallback == NULL)
            fallback = n;
    }
    return fallback;
}

static void route(pend_t *p) {
    sl__redis_client_t *c = p->c;
    if (c->closing) {
        complete(p, SL__REDIS_CLOSING, NULL);
        return;
    }
    node_t *n = p->target;
    if (n == NULL) {
        switch (c->url.kind) {
        case SL__REDIS_STANDALONE:
            n = c->primary;
            break;
        case SL__REDIS_SENTINEL:
            n = c->primary;
            break;
        case SL__REDIS_CLUSTER:
            if (c->map_ready)
                n = p->slot >= 0 ? c->slots[p->slot] : any_node(c);
            break;
        }
    }
    if (n == NULL) {
        /* Discovery names the node; rate-limited, a slot no master serves
         * must not make every command ask the cluster again at once. */
        q_push(&c->waitq, p);
        if (!c->discovering)
            sl__rc_discover_later(c);
        return;
    }
    node_send(n, p);
}

void sl__rc_route_waiting(sl__redis_client_t *c) {
    queue_t q = c->waitq;
    c->waitq.head = c->waitq.tail = NULL;
    for (pend_t *p = q.head; p; p = p->qnext)
        p->q = &q;
    pend_t *p;
    while ((p = q_pop(&q)) != NULL) {
        if (p->done)
            maybe_free(p);
        else
            route(p);
    }
}

static void pend_cb(redisAsyncContext *ac, void *reply, void *priv) {
    pend_t *p = priv;
    redisReply *r = reply;
    node_t *n = p->node;
    sl__redis_client_t *c = p->c;
    p->hi_refs--;
    n->in_flight--;
    if (r != NULL && n->ac == ac) {
        n->last_rx = uv_now(c->loop);
        n->backoff_ms = BACKOFF_MIN_MS;
    }
    if (p->done) { /* abandoned: its late reply, or the connection going */
        maybe_free(p);
        return;
    }
    if (r == NULL) {
        complete(p, c->closing ? SL__REDIS_CLOSING : SL__REDIS_DOWN, NULL);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR && !c->closing && !n->sentinel && auth_error(r->str)) {
        /* Not authenticated any more (ACL changed): the store is down, not
         * answering. The reconnection's handshake says whether it still is. */
        if (n->ac == ac) {
            sl__rc_set_error(c, "authentication", n, r->str);
            sl__rc_node_drop(n, NULL);
        }
        complete(p, SL__REDIS_DOWN, NULL);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR && !c->closing) {
        if (p->script && !p->script_loaded && strncmp(r->str, "NOSCRIPT", 8) == 0 &&
            n->ac == ac) {
            /* Load the script, then the same command again: in order on one
             * connection, so the load runs first. */
            p->script_loaded = true;
            /* One load per connection at a time: every command that got
             * NOSCRIPT meanwhile is resent behind it, in order. */
            if (!n->script_loading) {
                const char *argv[3] = {"SCRIPT", "LOAD", p->script};
                size_t len[3] = {6, 4, p->script_len};
                if (redisAsyncCommandArgv(n->ac, script_loaded_cb, n, 3, argv, len) == REDIS_OK)
                    n->script_loading = true;
            }
            p->asking = p->asked; /* an importing node answers only after ASKING */
            node_write(n, p);
            return;
        }
        if (c->url.kind == SL__REDIS_CLUSTER && p->redirects < MAX_REDIRECTS) {
            sl__redis_redirect_t rd;
            if (sl__redis_parse_redirect(r->str, r->len, &rd) != SL__REDIS_REDIRECT_NONE) {
                if (rd.to.host[0] == '\0')
                    memcpy(rd.to.host, n->addr.host, sizeof rd.to.host);
                node_t *to = sl__rc_node_get(c, &rd.to, false);
                if (to) {
                    p->redirects++;
                    c->st.redirects++;
                    if (rd.kind == SL__REDIS_REDIRECT_MOVED) {
                        sl__rc_moved(c, rd.slot, to);
                        p->target = NULL;
                    } else {
                        p->asking = true; /* this once; the slot map stays */
                    }
                    node_send(to, p);
                    return;
                }
            }
        }
        if (c->url.kind == SL__REDIS_SENTINEL && p->redirects < MAX_REDIRECTS &&
            strncmp(r->str, "READONLY", 8) == 0) {
            /* The master became a replica (failover): nothing was written,
             * so find the new master and send it there. */
            p->redirects++;
            c->st.redirects++;
            q_push(&c->waitq, p);
            if (n->ac == ac)
                sl__rc_node_drop(n, "READONLY: the master is a replica now");
            sl__rc_discover_later(c);
            return;
        }
    }
    complete(p, SL__REDIS_OK, r);
}

/* ---- formatting ------------------------------------------------------------------------- */

static size_t digits(size_t v) {
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static char *put_uint(char *at, size_t v, size_t n) {
    for (size_t i = n; i > 0; i--) {
        at[i - 1] = (char)('0' + v % 10);
        v /= 10;
    }
    return at + n;
}

/* argv as a RESP multibulk in one malloc'd buffer (freed with free(), as
 * redisFreeCommand() does). hiredis's redisFormatCommandArgv() does the
 * same with a sprintf per argument, which showed up at ~900 instructions
 * per decision in a batch. argvlen NULL: strlen. Returns the length, or -1. */
static long format_command(char **out, int argc, const char *const *argv, const size_t *argvlen) {
    size_t total = 1 + digits((size_t)argc) + 2;
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        total += 1 + digits(len) + 2 + len + 2;
    }
    char *buf = malloc(total);
    if (buf == NULL)
        return -1;
    char *at = buf;
    *at++ = '*';
    at = put_uint(at, (size_t)argc, digits((size_t)argc));
    *at++ = '\r';
    *at++ = '\n';
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        *at++ = '$';
        at = put_uint(at, len, digits(len));
        *at++ = '\r';
        *at++ = '\n';
        if (len)
            memcpy(at, argv[i], len);
        at += len;
        *at++ = '\r';
        *at++ = '\n';
    }
    *out = buf;
    return (long)total;
}

static pend_t *pend_new(sl__redis_client_t *c, int slot, sl__redis_reply_fn fn, void *arg) {
    pend_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->c = c;
    p->fn = fn;
    p->arg = arg;
    p->slot = slot;
    /* The loop's cached time may be a whole callback old; a deadline counts
     * from now. */
    uv_update_time(c->loop);
    p->deadline = uv_now(c->loop) + c->o.timeout_ms;
    return p;
}

void sl__rc_internal_send(sl__redis_client_t *c, node_t *to, sl__redis_reply_fn fn, void *arg,
                          int argc, const char **argv, bool probe) {
    pend_t *p = pend_new(c, -1, fn, arg);
    long len = p ? format_command(&p->cmd, argc, argv, NULL) : -1;
    if (len < 0) {
        free(p);
        if (probe) /* no probe went out: the next send may be one */
            c->probing = false;
        if (fn)
            fn(arg, SL__REDIS_DOWN, NULL);
        return;
    }
    p->cmd_len = (size_t)len;
    p->internal = true;
    p->probe = probe;
    p->target = to;
    if (probe) /* a connect plus a reply */
        p->deadline += c->o.connect_timeout_ms;
    d_insert(c, p);
    route(p);
}

/* ---- breaker probe -------------------------------------------------------------- */

static void probe_done(void *arg, sl__redis_status_t st, const redisReply *r) {
    (void)arg, (void)st, (void)r;
}

static void breaker_timer_cb(uv_timer_t *t) {
    sl__redis_client_t *c = t->data;
    if (!c->open || c->probing || c->closing)
        return;
    c->probing = true;
    const char *argv[1] = {"PING"};
    sl__rc_internal_send(c, NULL, probe_done, c, 1, argv, true);
}

/* ---- the contract ------------------------------------------------------------------ */

int sl__redis_client_new(uv_loop_t *loop, const sl__redis_url_t *url,
                         const sl__redis_client_options_t *opts, sl__redis_client_t **out) {
    *out = NULL;
    if (loop == NULL || url == NULL || url->n_nodes == 0 || url->n_nodes > SL__REDIS_URL_MAX_NODES)
        return SL_EINVAL;
    sl__redis_client_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return SL_ENOMEM;
    c->loop = loop;
    c->url = *url;
    if (opts)
        c->o = *opts;
    if (c->o.timeout_ms == 0)
        c->o.timeout_ms = 200;
    if (c->o.connect_timeout_ms == 0)
        c->o.connect_timeout_ms = c->o.timeout_ms;
    if (c->o.breaker_failures == 0)
        c->o.breaker_failures = 5;
    if (c->o.breaker_cooldown_ms == 0)
        c->o.breaker_cooldown_ms = 1000;
    if (url->kind == SL__REDIS_CLUSTER) {
        c->slots = calloc(SL__REDIS_SLOTS, sizeof *c->slots);
        c->slot_seq = calloc(SL__REDIS_SLOTS, sizeof *c->slot_seq);
        c->map = malloc(sizeof *c->map);
        if (c->slots == NULL || c->slot_seq == NULL || c->map == NULL) {
            free(c->slots);
            free(c->slot_seq);
            free(c->map);
            free(c);
            return SL_ENOMEM;
        }
    }
    uv_timer_init(loop, &c->deadline_timer);
    uv_timer_init(loop, &c->disc_timer);
    uv_timer_init(loop, &c->breaker_timer);
    c->deadline_timer.data = c->disc_timer.data = c->breaker_timer.data = c;
    c->handles = 3;
    switch (url->kind) {
    case SL__REDIS_STANDALONE:
        c->primary = sl__rc_node_get(c, &url->nodes[0], false);
        c->primary->wanted = true;
        sl__rc_node_connect(c->primary);
        break;
    case SL__REDIS_CLUSTER:
    case SL__REDIS_SENTINEL:
        sl__rc_discover(c);
        break;
    }
    *out = c;
    return 0;
}

int sl__redis_client_send(sl__redis_client_t *c, const char *key, size_t key_len, int argc,
                          const char *const *argv, const size_t *argvlen, const char *script,
                          size_t script_len, sl__redis_reply_fn fn, void *arg) {
    if (c->closing)
        return SL__REDIS_CLOSING;
    if (argc <= 0 || argv == NULL) /* before the breaker: it must not take this as its probe */
        return SL__REDIS_DOWN;
    bool probe = false;
    if (c->open) {
        if (c->probing || uv_now(c->loop) < c->opened_at + c->o.breaker_cooldown_ms) {
            c->st.failed++;
            return SL__REDIS_BREAKER_OPEN;
        }
        c->probing = probe = true; /* this one is the probe */
    }
    int slot = key ? sl__redis_key_slot(key, key_len) : -1;
    node_t *to = c->url.kind == SL__REDIS_CLUSTER
                     ? (c->map_ready && slot >= 0 ? c->slots[slot] : NULL)
                     : c->primary;
    if (to && to->state == N_DOWN && to->failed && uv_is_active((uv_handle_t *)&to->timer)) {
        /* Known down (waiting to reconnect): fail now, the caller's callback
         * is not called. */
        c->st.failed++;
        if (probe)
            c->probing = false;
        breaker_account(c, SL__REDIS_DOWN);
        return SL__REDIS_DOWN;
    }
    pend_t *p = pend_new(c, slot, fn, arg);
    long len = p ? format_command(&p->cmd, argc, argv, argvlen) : -1;
    if (len < 0) {
        free(p);
        if (probe)
            c->probing = false;
        c->st.failed++;
        return SL__REDIS_DOWN;
    }
    p->cmd_len = (size_t)len;
    p->script = script;
    p->script_len = script_len;
    p->probe = probe;
    c->st.sent++;
    d_insert(c, p);
    route(p);
    return 0;
}

void sl__redis_client_stats(const sl__redis_client_t *c, sl__redis_client_stats_t *out) {
    *out = c->st;
    out->breaker_open = c->open;
    bool up = c->url.kind == SL__REDIS_CLUSTER ? c->map_ready : c->primary != NULL;
    uint32_t in_flight = 0;
    for (size_t i = 0; i < c->n_nodes; i++) {
        const node_t *n = c->nodes[i];
        if (n->wanted && !n->sentinel && n->state != N_READY)
            up = false;
    }
    for (const pend_t *p = c->dhead; p; p = p->dnext)
        if (!p->internal)
            in_flight++; /* sent or waiting, no reply yet, not timed out */
    out->up = up;
    out->in_flight = in_flight;
    out->nodes = (uint32_t)c->n_nodes;
}

const char *sl__redis_client_last_error(const sl__redis_client_t *c) {
    return c->last_error;
}

void sl__redis_client_close(sl__redis_client_t *c, void (*done)(void *arg), void *arg) {
    if (c->closing)
        return;
    c->closing = true;
    c->done = done;
    c->done_arg = arg;
    while (c->dhead)
        complete(c->dhead, SL__REDIS_CLOSING, NULL);
    sl__rc_fail_queue(&c->waitq, SL__REDIS_CLOSING);
    for (size_t i = 0; i < c->n_nodes; i++) {
        node_t *n = c->nodes[i];
        n->wanted = false;
        if (n->resolving) {
            sl__resolve_cancel(n->resolving, resolve_cancelled, c);
            n->resolving = NULL;
            n->state = N_DOWN;
        }
        if (n->ac)
            sl__rc_node_drop(n, NULL);
        sl__rc_fail_queue(&n->waitq, SL__REDIS_CLOSING);
        uv_close((uv_handle_t *)&n->timer, node_timer_closed);
    }
    uv_close((uv_handle_t *)&c->deadline_timer, handle_closed);
    uv_close((uv_handle_t *)&c->disc_timer, handle_closed);
    uv_close((uv_handle_t *)&c->breaker_timer, handle_closed);
}
