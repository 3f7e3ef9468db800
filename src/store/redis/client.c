/* client.c -- the asynchronous Redis client (client.h): its commands and
 * its contract. A command's life (pend_t), deadlines, the circuit breaker,
 * formatting, and new / send / stats / close.
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
 * hiredis 0.14 has no async timeouts, so deadlines are uv timers.
 *
 * Not here: connections and what comes back on them (connection.c), which
 * node a command goes to (routing.c), the Cluster slot map and Sentinel
 * (discovery.c); the structures they share are in client_private.h.
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

/* ---- the deadline list ------------------------------------------------------------ */

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

void sl__rc_pend_release(pend_t *p) {
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

void sl__rc_complete(pend_t *p, sl__redis_status_t st, const redisReply *r) {
    if (p->done)
        return;
    sl__redis_client_t *c = p->c;
    p->done = true;
    d_remove(c, p);
    sl__rc_q_remove(p);
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
    sl__rc_pend_release(p);
}

static void deadline_cb(uv_timer_t *t) {
    sl__redis_client_t *c = t->data;
    uint64_t now = uv_now(c->loop);
    while (c->dhead && c->dhead->deadline <= now) {
        pend_t *p = c->dhead;
        node_t *n = p->node;
        sl__rc_complete(p, SL__REDIS_TIMEOUT, NULL);
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

void sl__rc_handle_closed(sl__redis_client_t *c) {
    if (--c->handles == 0 && c->closing)
        finish_close(c);
}

static void handle_closed(uv_handle_t *h) {
    sl__rc_handle_closed(h->data);
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
    sl__rc_route(p);
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
    sl__rc_route(p);
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
        sl__rc_complete(c->dhead, SL__REDIS_CLOSING, NULL);
    sl__rc_fail_queue(&c->waitq, SL__REDIS_CLOSING);
    for (size_t i = 0; i < c->n_nodes; i++)
        sl__rc_node_close(c->nodes[i]);
    uv_close((uv_handle_t *)&c->deadline_timer, handle_closed);
    uv_close((uv_handle_t *)&c->disc_timer, handle_closed);
    uv_close((uv_handle_t *)&c->breaker_timer, handle_closed);
}
