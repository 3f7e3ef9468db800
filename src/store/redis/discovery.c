/* discovery.c -- where the client's commands go, found out: the Cluster
 * slot map (CLUSTER SLOTS from any master or seed, MOVED on top of it) and
 * the table of nodes it names, and the Sentinel master by quorum.
 *
 * Slot map: a refresh never undoes a newer MOVED. Every MOVED takes a
 * sequence number for its slot; a CLUSTER SLOTS reply is applied only to
 * the slots no MOVED changed since the command was sent.
 *
 * Node table: after each refresh, the nodes the map no longer names (they
 * left the cluster, or were seeds) are closed and freed once nothing is in
 * flight on them; the table never holds more than MAX_NODES.
 *
 * Sentinel: every configured sentinel is asked at once; the master named
 * by a strict majority of them is followed (quorum.h).
 *
 * Not here: connections (connection.c), commands (client.c), routing
 * (routing.c).
 */
#include <stdio.h>
#include <string.h>

#include "sluice.h"
#include "store/redis/client.h"
#include "store/redis/client_private.h"

static void ask_sentinels(sl__redis_client_t *c);

static void disc_timer_cb(uv_timer_t *t) {
    sl__rc_discover(t->data);
}

void sl__rc_discover_in(sl__redis_client_t *c, uint64_t ms) {
    if (c->closing || c->url.kind == SL__REDIS_STANDALONE)
        return;
    if (uv_is_active((uv_handle_t *)&c->disc_timer) && uv_timer_get_due_in(&c->disc_timer) <= ms)
        return;
    uv_timer_start(&c->disc_timer, disc_timer_cb, ms, 0);
}

/* Asks again soon (rate-limited), e.g. after a MOVED or a lost node. */
void sl__rc_discover_later(sl__redis_client_t *c) {
    uint64_t now = uv_now(c->loop);
    uint64_t at = c->last_disc + REFRESH_MIN_MS;
    sl__rc_discover_in(c, at > now ? at - now : 0);
}

static void disc_done(sl__redis_client_t *c, bool ok) {
    c->discovering = false;
    c->disc_node = NULL;
    if (ok) {
        c->disc_tried = 0;
        sl__rc_route_waiting(c);
        return;
    }
    c->disc_next++;
    if (++c->disc_tried < c->url.n_nodes + c->n_nodes) {
        sl__rc_discover(c); /* the next one at once */
    } else {
        c->disc_tried = 0; /* a whole round failed: again soon */
        sl__rc_discover_later(c);
    }
}

/* Whether n may leave the table: not a master of the map (nor of a slot a
 * MOVED gave it), not the node being asked, nothing in flight on it. */
static bool forgettable(const sl__redis_client_t *c, const node_t *n, const node_t *from) {
    return !n->sentinel && !n->wanted && n != from && n != c->primary && n->in_flight == 0 &&
           n->waitq.head == NULL && n->resolving == NULL && !sl__rc_node_busy(n);
}

/* Nodes that left the cluster (absent from the latest map) are closed and
 * freed once nothing is in flight on them, so the table holds the current
 * masters, the seeds being asked and little else. */
static void forget_departed(sl__redis_client_t *c, const node_t *from) {
    for (size_t i = 0; i < c->n_nodes;) {
        node_t *n = c->nodes[i];
        if (!forgettable(c, n, from)) {
            i++;
            continue;
        }
        c->nodes[i] = c->nodes[--c->n_nodes];
        sl__rc_node_forget(n);
    }
}

void sl__rc_moved(sl__redis_client_t *c, uint16_t slot, node_t *to) {
    to->wanted = true;
    if (c->slots == NULL)
        return;
    c->slots[slot] = to;
    c->slot_seq[slot] = ++c->moved_seq;
    sl__rc_discover_later(c);
}

static void on_slots(void *arg, sl__redis_status_t st, const redisReply *r) {
    sl__redis_client_t *c = arg;
    node_t *from = c->disc_node;
    if (c->closing) {
        c->discovering = false;
        return;
    }
    const char *why = "no reply";
    if (st != SL__REDIS_OK ||
        sl__redis_parse_cluster_slots(r, from ? from->addr.host : NULL, c->map, &why) != 0 ||
        c->map->assigned == 0) {
        sl__rc_set_error(c, "CLUSTER SLOTS", from, c->map->assigned == 0 && st == SL__REDIS_OK
                                                ? "no slot is assigned" : why);
        disc_done(c, false);
        return;
    }
    node_t *masters[SL__REDIS_MAX_MASTERS];
    for (size_t m = 0; m < c->map->n_masters; m++)
        masters[m] = sl__rc_node_get(c, &c->map->masters[m], false);
    /* A MOVED seen after this CLUSTER SLOTS was sent is newer than its
     * reply: that slot keeps the MOVED's node. */
    for (size_t s = 0; s < SL__REDIS_SLOTS; s++)
        if (c->slot_seq[s] <= c->disc_seq)
            c->slots[s] = c->map->slot[s] == SL__REDIS_NO_NODE ? NULL : masters[c->map->slot[s]];
    for (size_t i = 0; i < c->n_nodes; i++)
        if (!c->nodes[i]->sentinel)
            c->nodes[i]->wanted = false;
    for (size_t s = 0; s < SL__REDIS_SLOTS; s++)
        if (c->slots[s])
            c->slots[s]->wanted = true;
    for (size_t i = 0; i < c->n_nodes; i++) {
        node_t *n = c->nodes[i];
        if (n->wanted && n->state == N_DOWN && !uv_is_active((uv_handle_t *)&n->timer))
            sl__rc_node_connect(n);
    }
    c->map_ready = true;
    forget_departed(c, from);
    disc_done(c, true);
}

/* ---- Sentinel by quorum ------------------------------------------------------------------ */

static void follow(sl__redis_client_t *c, const sl__redis_addr_t *a) {
    node_t *m = sl__rc_node_get(c, a, false);
    if (m == NULL)
        return;
    if (c->primary && c->primary != m) {
        node_t *old = c->primary;
        c->primary = NULL;
        old->wanted = false;
        if (old->ac)
            sl__rc_node_drop(old, "the sentinels name another master");
    }
    c->primary = m;
    m->wanted = true;
    if (m->state == N_DOWN)
        m->failed = false; /* a new chance: what waits goes to its queue */
}

/* Every answer is in: follow the majority's master, or say there is none. */
static void round_done(sl__redis_client_t *c) {
    sl__redis_sentinel_round_t *rd = &c->round;
    rd->running = false;
    c->discovering = false;
    size_t votes;
    int at = sl__redis_sentinel_majority(rd->answers, c->url.n_nodes, c->url.n_nodes, &votes);
    if (at >= 0) {
        follow(c, &rd->answers[at].master);
        /* ask again now and then: a failover does not always break the
         * connection to the old master at once */
        sl__rc_discover_in(c, SENTINEL_CHECK_MS);
        sl__rc_route_waiting(c);
        return;
    }
    char report[400];
    snprintf(c->last_error, sizeof c->last_error,
             "SENTINEL get-master-addr-by-name %s: no majority of the %zu sentinels names one "
             "master (%zu agree; %s)%s",
             c->url.master, c->url.n_nodes, votes,
             sl__redis_sentinel_report(rd->answers, c->url.nodes, c->url.n_nodes, report,
                                       sizeof report),
             c->primary ? "; keeping the master followed so far" : "");
    /* again soon while no master is known, at the usual pace while one is */
    if (c->primary) {
        sl__rc_discover_in(c, SENTINEL_CHECK_MS);
        sl__rc_route_waiting(c);
    } else {
        sl__rc_discover_later(c);
    }
}

static void on_master_addr(void *arg, sl__redis_status_t st, const redisReply *r) {
    struct sl__redis_sentinel_ask *ask = arg;
    sl__redis_client_t *c = ask->client;
    sl__redis_sentinel_round_t *rd = &c->round;
    if (ask->round != rd->id || !rd->running)
        return;
    sl__redis_sentinel_answer_t *a = &rd->answers[ask->index];
    const char *why = "no reply";
    a->ok = st == SL__REDIS_OK && sl__redis_parse_master_addr(r, &a->master, &why) == 0;
    if (!a->ok) {
        node_t *s = sl__rc_node_get(c, &c->url.nodes[ask->index], true);
        /* a connection that failed says more than "no reply" */
        snprintf(a->why, sizeof a->why, "%.190s",
                 st != SL__REDIS_OK && s && s->why[0] ? s->why : why);
    }
    if (--rd->pending == 0 && !c->closing)
        round_done(c);
}

/* Asks every configured sentinel at once; round_done() decides. */
static void ask_sentinels(sl__redis_client_t *c) {
    sl__redis_sentinel_round_t *rd = &c->round;
    rd->id++;
    rd->running = true;
    c->discovering = true;
    rd->pending = c->url.n_nodes + 1; /* + 1: no decision before every question is out */
    for (size_t i = 0; i < c->url.n_nodes; i++) {
        sl__redis_sentinel_answer_t *a = &rd->answers[i];
        memset(a, 0, sizeof *a);
        rd->ask[i] = (struct sl__redis_sentinel_ask){c, i, rd->id};
        node_t *s = sl__rc_node_get(c, &c->url.nodes[i], true);
        if (s == NULL) {
            snprintf(a->why, sizeof a->why, "out of memory");
            rd->pending--;
            continue;
        }
        if (s->state == N_DOWN)
            uv_timer_stop(&s->timer); /* ask it now, whatever its backoff */
        const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", c->url.master};
        sl__rc_internal_send(c, s, on_master_addr, &rd->ask[i], 3, argv, false);
    }
    if (--rd->pending == 0 && !c->closing)
        round_done(c);
}

void sl__rc_discover(sl__redis_client_t *c) {
    if (c->closing || c->discovering || c->url.kind == SL__REDIS_STANDALONE)
        return;
    uv_timer_stop(&c->disc_timer);
    c->last_disc = uv_now(c->loop);
    if (c->url.kind == SL__REDIS_CLUSTER) {
        /* Any connected master, else the seeds and known nodes in turn. */
        node_t *n = NULL;
        for (size_t i = 0; i < c->n_nodes && n == NULL; i++)
            if (c->nodes[i]->state == N_READY && c->nodes[i]->wanted)
                n = c->nodes[i];
        if (n == NULL) {
            size_t k = c->disc_next % (c->url.n_nodes + c->n_nodes);
            n = k < c->url.n_nodes ? sl__rc_node_get(c, &c->url.nodes[k], false)
                                   : c->nodes[k - c->url.n_nodes];
            if (n && n->state == N_DOWN && uv_is_active((uv_handle_t *)&n->timer))
                uv_timer_stop(&n->timer); /* ask it now, whatever its backoff */
        }
        if (n == NULL)
            return;
        c->discovering = true;
        c->disc_node = n;
        c->disc_seq = c->moved_seq;
        const char *argv[2] = {"CLUSTER", "SLOTS"};
        sl__rc_internal_send(c, n, on_slots, c, 2, argv, false);
    } else {
        ask_sentinels(c);
    }
}
