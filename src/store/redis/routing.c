/* routing.c -- which node a command of the Redis client goes to: the
 * standalone server, the Sentinel's master, or a Cluster slot's master;
 * commands wait on the client's queue while discovery names it. Redirects
 * in a reply (MOVED, ASK, and READONLY after a Sentinel failover) send the
 * command on, at most MAX_REDIRECTS times.
 *
 * Not here: the slot map and the master themselves (discovery.c), sending
 * on a node (connection.c).
 */
#include "store/redis/client.h"

#include <string.h>

#include "store/redis/client_private.h"

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

void sl__rc_route(pend_t *p) {
    sl__redis_client_t *c = p->c;
    if (c->closing) {
        sl__rc_complete(p, SL__REDIS_CLOSING, NULL);
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
        sl__rc_q_push(&c->waitq, p);
        if (!c->discovering)
            sl__rc_discover_later(c);
        return;
    }
    sl__rc_node_send(n, p);
}

void sl__rc_route_waiting(sl__redis_client_t *c) {
    queue_t q = c->waitq;
    c->waitq.head = c->waitq.tail = NULL;
    for (pend_t *p = q.head; p; p = p->qnext)
        p->q = &q;
    pend_t *p;
    while ((p = sl__rc_q_pop(&q)) != NULL) {
        if (p->done)
            sl__rc_pend_release(p);
        else
            sl__rc_route(p);
    }
}

/* A reply error that sends p elsewhere: true when it was taken care of. */
bool sl__rc_redirect(pend_t *p, node_t *n, const redisAsyncContext *ac, const redisReply *r) {
    sl__redis_client_t *c = p->c;
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
                sl__rc_node_send(to, p);
                return true;
            }
        }
    }
    if (c->url.kind == SL__REDIS_SENTINEL && p->redirects < MAX_REDIRECTS &&
        strncmp(r->str, "READONLY", 8) == 0) {
        /* The master became a replica (failover): nothing was written,
         * so find the new master and send it there. */
        p->redirects++;
        c->st.redirects++;
        sl__rc_q_push(&c->waitq, p);
        if (n->ac == ac)
            sl__rc_node_drop(n, "READONLY: the master is a replica now");
        sl__rc_discover_later(c);
        return true;
    }
    return false;
}
