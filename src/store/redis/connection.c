/* connection.c -- the Redis client's connections, one per node, and what
 * comes back on them: host names looked up off the loop, each address
 * tried in order, the AUTH/SELECT/ROLE handshake, reconnection with
 * backoff, and each reply handed to its command (NOSCRIPT reloads the
 * script and resends; MOVED, ASK and READONLY go to routing.c).
 *
 * A context is torn down with redisAsyncFree(), which runs the pending
 * callbacks with a NULL reply (at once, or when the current callback
 * returns); a context is watched on the loop by uv_adapter.c.
 * hiredis only ever gets addresses (resolve.c looks names up), so it never
 * resolves anything on the loop. A server that refuses our credentials (or
 * wants some we do not have: NOAUTH) is a node that is down, not one that
 * answers.
 *
 * Not here: a command's life, deadlines and the breaker (client.c), which
 * node a command goes to (routing.c), the node table's upkeep (discovery.c).
 */
#include "store/redis/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"
#include "store/redis/client_private.h"

static void node_lost(node_t *n);
static void pend_cb(redisAsyncContext *ac, void *reply, void *priv);

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

/* ---- handles ----------------------------------------------------------------- */

static void resolve_cancelled(void *arg) {
    sl__redis_client_t *c = arg;
    sl__rc_handle_closed(c);
}

static void node_timer_closed(uv_handle_t *h) {
    node_t *n = h->data;
    sl__redis_client_t *c = n->c;
    sl__rc_handle_closed(c);
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
    sl__rc_handle_closed(c);
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
        sl__rc_complete(p, SL__REDIS_DOWN, NULL);
        return;
    }
    p->asked = p->asking;
    if (p->asking) {
        p->asking = false;
        redisAsyncCommand(n->ac, ignore_cb, NULL, "ASKING");
    }
    if (redisAsyncFormattedCommand(n->ac, pend_cb, p, p->cmd, p->cmd_len) != REDIS_OK) {
        sl__rc_complete(p, SL__REDIS_DOWN, NULL);
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
    while (n->state == N_READY && (p = sl__rc_q_pop(&n->waitq)) != NULL) {
        if (p->done)
            sl__rc_pend_release(p);
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

/* The evaluation script writes expiries with SET ... PXAT, which Redis
 * has since 6.2: an older server would fail every decision with a syntax
 * error from inside the script, so it is refused at connection time with
 * its version named. A server that does not answer INFO (an ACL without
 * it, a proxy) is taken on trust. */
#define MIN_MAJOR 6
#define MIN_MINOR 2

static void info_cb(redisAsyncContext *ac, void *reply, void *priv) {
    node_t *n = priv;
    redisReply *r = reply;
    if (r == NULL || n->ac != ac)
        return;
    const char *v = r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    unsigned major = 0, minor = 0;
    if (v != NULL && sscanf(v + 14, "%u.%u", &major, &minor) == 2 &&
        (major < MIN_MAJOR || (major == MIN_MAJOR && minor < MIN_MINOR))) {
        char why[128];
        snprintf(why, sizeof why, "Redis %u.%u is too old: the Redis store needs %d.%d or later (SET ... PXAT)",
                 major, minor, MIN_MAJOR, MIN_MINOR);
        sl__rc_node_drop(n, why);
        return;
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
    if (ac == NULL || ac->err || sl__rc_uv_attach(c, ac) != 0) {
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
    redisAsyncCommand(ac, info_cb, n, "INFO server");
    n->handshake_left++;
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
    while ((p = sl__rc_q_pop(q)) != NULL) {
        if (p->done)
            sl__rc_pend_release(p);
        else
            sl__rc_complete(p, st, NULL);
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
        while ((p = sl__rc_q_pop(&n->waitq)) != NULL) {
            if (p->done)
                sl__rc_pend_release(p);
            else
                sl__rc_q_push(&c->waitq, p);
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

void sl__rc_node_send(node_t *n, pend_t *p) {
    switch (n->state) {
    case N_READY:
        node_write(n, p);
        return;
    case N_RESOLVING:
    case N_CONNECTING:
        sl__rc_q_push(&n->waitq, p);
        return;
    case N_DOWN:
        if (n->failed && !p->internal && uv_is_active((uv_handle_t *)&n->timer)) {
            sl__rc_complete(p, SL__REDIS_DOWN, NULL); /* in backoff: known to be down */
            return;
        }
        sl__rc_q_push(&n->waitq, p);
        sl__rc_node_connect(n);
        return;
    }
}

/* ---- replies ----------------------------------------------------------------- */

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
        sl__rc_pend_release(p);
        return;
    }
    if (r == NULL) {
        sl__rc_complete(p, c->closing ? SL__REDIS_CLOSING : SL__REDIS_DOWN, NULL);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR && !c->closing && !n->sentinel && auth_error(r->str)) {
        /* Not authenticated any more (ACL changed): the store is down, not
         * answering. The reconnection's handshake says whether it still is. */
        if (n->ac == ac) {
            sl__rc_set_error(c, "authentication", n, r->str);
            sl__rc_node_drop(n, NULL);
        }
        sl__rc_complete(p, SL__REDIS_DOWN, NULL);
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
        if (sl__rc_redirect(p, n, ac, r))
            return;
    }
    sl__rc_complete(p, SL__REDIS_OK, r);
}

/* The part of sl__redis_client_close() that is n's: its lookup cancelled,
 * its connection dropped, what waits on it failed, its timer closed. */
void sl__rc_node_close(node_t *n) {
    sl__redis_client_t *c = n->c;
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
