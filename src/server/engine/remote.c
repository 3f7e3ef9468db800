/* remote.c -- the daemon's side of the Redis store (see remote.h).
 *
 * One client per worker loop; an evaluation is built and read back in
 * store/redis/ (evaluate_call.c over script.c) and sent by client.c. This
 * file only ties them to the workers, batches by instant and slot, and
 * counts what happens; the fallbacks are decide.c's. It reads no Redis
 * reply itself.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/policy.h"
#include "server/base/log.h"
#include "server/engine/remote.h"
#include "store/redis/client.h"
#include "store/redis/command.h"
#include "store/redis/evaluate_call.h"
#include "store/redis/resolve.h"
#include "store/redis/rules_feed.h"
#include "store/redis/script.h"
#include "store/redis/url.h"

#define PUBLISH_MS 100   /* how fresh the state other threads read is */
#define BATCH_SPREAD_US 1000  /* clock local: arrivals one batch may span */
/* Script calls a worker keeps in flight before it holds the next batch
 * back until one is answered (a full batch still goes): under load the
 * decisions that arrive during a round trip share the next call, so
 * Redis pays its per-call cost (the command, the script's setup, the
 * MGET, the reply, two system calls) once for many; idle, a decision
 * goes at the end of its loop turn as before (bench/README.md). */
#define MAX_IN_FLIGHT 1

typedef struct remote_worker {
    sl__redis_client_t *client;
    uv_timer_t publish;
    /* the client's state, published by its worker for other threads */
    _Atomic bool up, breaker_open, attached;
    _Atomic uint64_t reconnects;
    struct sld_remote *r;
    uv_check_t check;          /* sends the batch at the end of a loop turn */
    struct queued *queue[SL__REDIS_MAX_BATCH];
    struct queued *unsent;     /* could not be sent: answered at the end of the turn */
    size_t nqueued;
    uint32_t in_flight;        /* batches sent, not yet answered */
    sl_usec_t batch_now;
    unsigned batch_slot;
    void (*detached)(void *arg);
    void *detached_arg;
} remote_worker_t;

struct sld_remote {
    sl__redis_url_t url;
    sl__redis_client_options_t opts;
    uint32_t nworkers;
    remote_worker_t *workers;
    char description[256];
    _Atomic uint64_t calls, failures, timeouts;
    _Atomic uint64_t latency_count, latency_sum_us; /* answered script calls */
    _Atomic uint64_t fallback[4]; /* by sld_store_failure_t */
    _Atomic bool warned_reply;
    /* the store as a whole, for the log: said once per change, not per
     * worker or command; 0 not known yet, 1 up, 2 down */
    _Atomic int said;
    uv_mutex_t error_lock;     /* guards last_error, written by every worker */
    char last_error[SLD_REMOTE_ERROR_LEN];
    bool clock_local;
    bool cluster;   /* a batch holds one slot's requests */
};

/* url with "***" for the password before the last '@' and for the value
 * of sentinel_password=. */
static void mask_passwords(const char *url, char *out, size_t len) {
    size_t at = 0;
    const char *scheme = strstr(url, "://");
    const char *auth_end = strrchr(url, '@');
    const char *q = strchr(url, '?');
    if (auth_end && q && auth_end > q)
        auth_end = NULL; /* an '@' in the options, not a password */
    for (const char *p = url; *p && at + 1 < len;) {
        if (auth_end && scheme && p == scheme + 3 && auth_end > scheme) {
            at += (size_t)snprintf(out + at, len - at, "***");
            p = auth_end;
            continue;
        }
        if (q && p > q && strncmp(p, "sentinel_password=", 18) == 0 && (p[-1] == '?' || p[-1] == '&')) {
            at += (size_t)snprintf(out + at, len - at, "sentinel_password=***");
            p += 18;
            while (*p && *p != '&')
                p++;
            continue;
        }
        out[at++] = *p++;
    }
    out[at < len ? at : len - 1] = '\0';
}

int sld_remote_new(const sld_config_t *cfg, uint32_t nworkers, sld_remote_t **out, char *err,
                   size_t err_len) {
    sld_remote_t *r = calloc(1, sizeof *r);
    if (r == NULL || (r->workers = calloc(nworkers ? nworkers : 1, sizeof *r->workers)) == NULL) {
        free(r);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    char why[256];
    if (sl__redis_url_parse(cfg->store_url, strlen(cfg->store_url), &r->url, why, sizeof why) != 0) {
        snprintf(err, err_len, "store.url: %s", why);
        sld_remote_free(r);
        return SL_EINVAL;
    }
    if (uv_mutex_init(&r->error_lock) != 0) {
        free(r->workers);
        free(r);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    r->nworkers = nworkers;
    r->clock_local = cfg->store_clock_local;
    r->cluster = r->url.kind == SL__REDIS_CLUSTER;
    r->opts.timeout_ms = (uint32_t)((cfg->store_timeout + 999) / 1000);
    r->opts.connect_timeout_ms = r->opts.timeout_ms;
    r->opts.breaker_failures = cfg->breaker_failures;
    r->opts.breaker_cooldown_ms = (uint32_t)((cfg->breaker_cooldown + 999) / 1000);
    /* the URL without its passwords, for INFO and logs */
    char url[sizeof r->description - 40];
    mask_passwords(cfg->store_url, url, sizeof url);
    snprintf(r->description, sizeof r->description, "%s (%s, clock %s)", url,
             cfg->store_write_back ? "write_back" : "strict",
             cfg->store_clock_local ? "local" : "server");
    *out = r;
    return SL_OK;
}

void sld_remote_free(sld_remote_t *r) {
    if (r == NULL)
        return;
    if (r->nworkers)
        uv_mutex_destroy(&r->error_lock);
    free(r->workers);
    free(r);
}

static void on_publish(uv_timer_t *t);
static void on_check(uv_check_t *h);
static void flush_batch(sld_remote_t *r, remote_worker_t *w, bool answer_now);
static void answer_unsent(sld_remote_t *r, remote_worker_t *w);

int sld_remote_attach(sld_remote_t *r, uint32_t worker, uv_loop_t *loop) {
    if (worker >= r->nworkers)
        return SL_EINVAL;
    if (sl__redis_client_new(loop, &r->url, &r->opts, &r->workers[worker].client) != 0)
        return SL_ENOMEM;
    remote_worker_t *w = &r->workers[worker];
    /* up until the client says otherwise: a worker that has not needed
     * Redis yet must not make the daemon look unready */
    atomic_store(&w->up, true);
    atomic_store(&w->attached, true);
    w->r = r;
    uv_timer_init(loop, &w->publish);
    w->publish.data = w;
    uv_timer_start(&w->publish, on_publish, PUBLISH_MS, PUBLISH_MS);
    uv_check_init(loop, &w->check);
    w->check.data = w;
    uv_check_start(&w->check, on_check);
    return SL_OK;
}

/* Whether every attached worker's client is up (what /readyz says). */
static bool all_up(sld_remote_t *r) {
    for (uint32_t i = 0; i < r->nworkers; i++) {
        remote_worker_t *w = &r->workers[i];
        if (!atomic_load_explicit(&w->attached, memory_order_relaxed))
            continue;
        if (!atomic_load_explicit(&w->up, memory_order_relaxed) ||
            atomic_load_explicit(&w->breaker_open, memory_order_relaxed))
            return false;
    }
    return true;
}

static void publish(remote_worker_t *w) {
    if (w->client == NULL)
        return;
    sld_remote_t *r = w->r;
    sl__redis_client_stats_t s;
    sl__redis_client_stats(w->client, &s);
    const char *why = sl__redis_client_last_error(w->client);
    /* still connecting for the first time, nothing failed yet: not known */
    if (!s.up && !s.breaker_open && !(why && why[0]) && atomic_load(&r->said) == 0)
        return;
    if (!s.up || s.breaker_open) {
        uv_mutex_lock(&r->error_lock);
        snprintf(r->last_error, sizeof r->last_error, "%s", why && why[0] ? why : "no answer");
        uv_mutex_unlock(&r->error_lock);
    }
    atomic_store_explicit(&w->up, s.up, memory_order_relaxed);
    atomic_store_explicit(&w->breaker_open, s.breaker_open, memory_order_relaxed);
    atomic_store_explicit(&w->reconnects, s.reconnects, memory_order_relaxed);
    /* said once per change of the whole store, with the client's reason
     * (each address tried, an authentication refused...) */
    int now = all_up(r) ? 1 : 2;
    int before = atomic_exchange(&r->said, now);
    if (now == before || (before == 0 && now == 1))
        return;
    if (now == 2) {
        char reason[SLD_REMOTE_ERROR_LEN];
        uv_mutex_lock(&r->error_lock);
        snprintf(reason, sizeof reason, "%s", r->last_error);
        uv_mutex_unlock(&r->error_lock);
        if (before == 0)
            sld_error("store: cannot reach Redis at %s (%s); deciding by on_store_failure until "
                      "it answers", r->description, reason);
        else
            sld_warn("store: lost Redis (%s); deciding by on_store_failure until it is back",
                     reason);
    } else {
        sld_info("store: Redis is back");
    }
}

static void on_publish(uv_timer_t *t) { publish(t->data); }

static void on_client_closed(void *arg) {
    remote_worker_t *w = arg;
    w->client = NULL;
    atomic_store(&w->attached, false);
    atomic_store(&w->up, false);
    if (w->detached)
        w->detached(w->detached_arg);
}

void sld_remote_detach(sld_remote_t *r, uint32_t worker, void (*done)(void *arg), void *arg) {
    remote_worker_t *w = &r->workers[worker];
    if (w->client == NULL) {
        if (done)
            done(arg);
        return;
    }
    w->detached = done;
    w->detached_arg = arg;
    uv_timer_stop(&w->publish);
    uv_close((uv_handle_t *)&w->publish, NULL);
    flush_batch(r, w, true);
    answer_unsent(r, w);
    uv_check_stop(&w->check);
    uv_close((uv_handle_t *)&w->check, NULL);
    sl__redis_client_close(w->client, on_client_closed, w);
}

/* ---- batches -------------------------------------------------------------------------------- */

/* One evaluation waiting in its worker's batch. */
typedef struct queued {
    struct queued *next;       /* in the worker's unsent list */
    sl__redis_eval_req_t req;  /* req.key points at key[] */
    sld_remote_fn fn;
    void *arg;
    char key[];
} queued_t;

/* A batch on the wire: its requests, answered in order. */
typedef struct batch {
    sld_remote_t *r;
    remote_worker_t *w;
    size_t n;
    uint64_t sent_ns;          /* uv_hrtime() at send: the call's latency */
    queued_t *items[SL__REDIS_MAX_BATCH];
} batch_t;

static void answer(sld_remote_t *r, queued_t *q, int rc, const sl_decision_t *d,
                   const sl_limit_report_t *limits) {
    if (rc != SL_OK)
        atomic_fetch_add_explicit(&r->failures, 1, memory_order_relaxed);
    sld_remote_fn fn = q->fn;
    void *arg = q->arg;
    free(q);
    fn(arg, rc, d, limits);
}

/* One request's answer (evaluate_call.h): the batch's own bookkeeping at
 * the first, then the request's caller. */
static void on_batch_answer(void *arg, size_t i, sl__redis_status_t status, int rc,
                            const sl_decision_t *d, const sl_limit_report_t *limits, const char *why) {
    batch_t *b = arg;
    sld_remote_t *r = b->r;
    if (i == 0) {
        if (status == SL__REDIS_TIMEOUT)
            atomic_fetch_add_explicit(&r->timeouts, b->n, memory_order_relaxed);
        if (status != SL__REDIS_OK || !atomic_load_explicit(&b->w->up, memory_order_relaxed))
            publish(b->w);
        /* only calls Redis answered: a timeout's time is the timeout's */
        if (status == SL__REDIS_OK) {
            atomic_fetch_add_explicit(&r->latency_count, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->latency_sum_us, (uv_hrtime() - b->sent_ns) / 1000,
                                      memory_order_relaxed);
        }
    }
    if (rc != SL_OK && status == SL__REDIS_OK && !atomic_exchange(&r->warned_reply, true))
        sld_error("store: unusable answer from Redis (%s); deciding by on_store_failure (logged once)",
                  why ? why : "?");
    bool last = i + 1 == b->n;
    answer(r, b->items[i], rc, d, limits);
    if (!last)
        return;
    remote_worker_t *w = b->w;
    free(b);
    /* what was held back while it was on its way goes now (not while the
     * worker detaches: what is queued then is answered there) */
    if (--w->in_flight < MAX_IN_FLIGHT && w->nqueued > 0 && w->detached == NULL)
        flush_batch(r, w, false);
}

/* Sends what the worker has gathered as one EVALSHA. What cannot be sent is
 * answered (by the fallbacks) now if answer_now, else at the end of the
 * loop turn: never from inside sld_remote_evaluate(), whose caller is in
 * the middle of its own work. */
static void flush_batch(sld_remote_t *r, remote_worker_t *w, bool answer_now) {
    size_t n = w->nqueued;
    if (n == 0)
        return;
    /* the queue is the worker's: an answer below may start the next batch */
    queued_t *items[SL__REDIS_MAX_BATCH];
    memcpy(items, w->queue, n * sizeof *items);
    w->nqueued = 0;
    batch_t *b = malloc(sizeof *b);
    if (b != NULL && w->client != NULL) {
        sl__redis_eval_req_t reqs[SL__REDIS_MAX_BATCH];
        for (size_t i = 0; i < n; i++)
            reqs[i] = items[i]->req;
        b->r = r;
        b->w = w;
        b->n = n;
        memcpy(b->items, items, n * sizeof *b->items);
        b->sent_ns = uv_hrtime();
        int st = sl__redis_evaluate_send(w->client, reqs, n, w->batch_now, on_batch_answer, b);
        if (st == 0) {
            w->in_flight++;
            return;
        }
        if (st > 0) /* not sent: the client's state tells why */
            publish(w);
    }
    free(b);
    for (size_t i = 0; i < n; i++) {
        if (answer_now) {
            answer(r, items[i], SL_EIO, NULL, NULL);
        } else {
            items[i]->next = w->unsent;
            w->unsent = items[i];
        }
    }
}

static void answer_unsent(sld_remote_t *r, remote_worker_t *w) {
    while (w->unsent) {
        queued_t *q = w->unsent;
        w->unsent = q->next;
        answer(r, q, SL_EIO, NULL, NULL);
    }
}

/* After the loop has run every callback of this turn: what they asked goes
 * out together. */
static void on_check(uv_check_t *h) {
    remote_worker_t *w = h->data;
    if (w->in_flight < MAX_IN_FLIGHT) /* else it goes when one is answered */
        flush_batch(w->r, w, true);
    answer_unsent(w->r, w);
}

int sld_remote_evaluate(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                        size_t key_len, uint64_t cost, bool peek, sl_usec_t max_wait,
                        sl_usec_t not_before, sl_usec_t now, sld_remote_fn fn, void *arg) {
    return sld_remote_reserve(r, worker, p, key, key_len, cost, peek, max_wait, not_before, now, NULL, fn,
                              arg);
}

static void on_refunded(void *arg, sl__redis_status_t status, bool ok, uint32_t changed) {
    (void)status, (void)changed;
    if (!ok)
        atomic_fetch_add_explicit(&((sld_remote_t *)arg)->failures, 1, memory_order_relaxed);
}

int sld_remote_refund(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                      size_t key_len, uint64_t cost, sl_usec_t now, const sl__held_t *held) {
    remote_worker_t *w = &r->workers[worker];
    if (w->client == NULL || atomic_load_explicit(&w->breaker_open, memory_order_relaxed))
        return SL_EIO;
    return sl__redis_refund_send(w->client, p, key, key_len, cost, now, held, on_refunded, r) == 0 ? SL_OK
                                                                                                   : SL_EIO;
}

int sld_remote_reserve(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                       size_t key_len, uint64_t cost, bool peek, sl_usec_t max_wait, sl_usec_t not_before,
                       sl_usec_t now, sl__held_t *held, sld_remote_fn fn, void *arg) {
    remote_worker_t *w = &r->workers[worker];
    atomic_fetch_add_explicit(&r->calls, 1, memory_order_relaxed);
    /* an open breaker answers at once, without a trip through the batch */
    if (w->client == NULL || atomic_load_explicit(&w->breaker_open, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&r->failures, 1, memory_order_relaxed);
        return SL_EIO;
    }
    queued_t *q = malloc(sizeof *q + key_len);
    if (q == NULL) {
        atomic_fetch_add_explicit(&r->failures, 1, memory_order_relaxed);
        return SL_EIO;
    }
    memcpy(q->key, key, key_len);
    q->req = (sl__redis_eval_req_t){.p = p, .key = q->key, .key_len = key_len, .cost = cost, .peek = peek,
                                    .max_wait = max_wait, .not_before = not_before, .held = held};
    q->fn = fn;
    q->arg = arg;
    /* one batch: one instant, and in a Cluster one slot. With the daemon's
     * clock the instant is the latest arrival of the turn (the batch is
     * decided when it leaves); arrivals more than BATCH_SPREAD_US apart, or
     * out of order (a clock set back), go in batches of their own. */
    unsigned slot = r->cluster ? sl__redis_slot_of(p, key, key_len) : 0;
    bool server_time = now == SL__REDIS_SERVER_TIME;
    if (w->nqueued > 0 &&
        (w->batch_slot != slot || server_time != (w->batch_now == SL__REDIS_SERVER_TIME) ||
         (!server_time && (now < w->batch_now || now - w->batch_now > BATCH_SPREAD_US))))
        flush_batch(r, w, false);
    if (w->nqueued == 0) {
        w->batch_now = now;
        w->batch_slot = slot;
    } else if (now != SL__REDIS_SERVER_TIME && now > w->batch_now) {
        w->batch_now = now;
    }
    w->queue[w->nqueued++] = q;
    if (w->nqueued == SL__REDIS_MAX_BATCH)
        flush_batch(r, w, false);
    return SL_OK;
}

void sld_remote_group_begin(sld_remote_t *r, uint32_t worker, size_t n) {
    remote_worker_t *w = &r->workers[worker];
    /* the block's evaluations should fit in one script call: what is
     * queued goes first when they would not fit after it */
    if (w->nqueued > 0 && w->nqueued + n > SL__REDIS_MAX_BATCH)
        flush_batch(r, w, false);
}

typedef struct int_call {
    remote_worker_t *w;
    sld_remote_done_fn fn;
    void *arg;
} int_call_t;

static void on_int_reply(void *arg, sl__redis_status_t status, bool ok, long long value) {
    (void)value;
    int_call_t c = *(int_call_t *)arg;
    free(arg);
    if (status != SL__REDIS_OK || !atomic_load_explicit(&c.w->up, memory_order_relaxed))
        publish(c.w);
    c.fn(c.arg, ok ? SL_OK : SL_EIO);
}

int sld_remote_command_int(sld_remote_t *r, uint32_t worker, const char *key, size_t key_len, int argc,
                           const char *const *argv, const size_t *argvlen, sld_remote_done_fn fn,
                           void *arg) {
    remote_worker_t *w = &r->workers[worker];
    /* evaluations queued before it go first, on the same connection, so
     * that a reset lands after the decisions asked before it */
    flush_batch(r, w, false);
    int_call_t *c = malloc(sizeof *c);
    if (c == NULL || w->client == NULL) {
        free(c);
        return SL_EIO;
    }
    *c = (int_call_t){w, fn, arg};
    if (sl__redis_send_int(w->client, key, key_len, argc, argv, argvlen, on_int_reply, c) != 0) {
        free(c);
        return SL_EIO;
    }
    return SL_OK;
}

typedef struct share {
    remote_worker_t *w;
    sld_remote_done_fn fn;
    void *arg;
} share_t;

static void on_shared(void *arg, bool ok) {
    share_t sh = *(share_t *)arg;
    free(arg);
    if (!ok)
        publish(sh.w);
    sh.fn(sh.arg, ok ? SL_OK : SL_EIO);
}

int sld_remote_share_rule(sld_remote_t *r, uint32_t worker, const char *name, const char *json,
                          size_t json_len, sld_remote_done_fn fn, void *arg) {
    remote_worker_t *w = &r->workers[worker];
    share_t *sh = malloc(sizeof *sh);
    if (sh == NULL || w->client == NULL) {
        free(sh);
        return SL_EIO;
    }
    *sh = (share_t){w, fn, arg};
    if (sl__redis_rules_share(w->client, name, json, json_len, on_shared, sh) != 0) {
        free(sh);
        return SL_EIO;
    }
    return SL_OK;
}

int sld_remote_reset(sld_remote_t *r, uint32_t worker, const sl_policy_t *p, const void *key,
                     size_t key_len, sld_remote_done_fn fn, void *arg) {
    sl__redis_call_t call;
    if (sl__redis_build_reset(p, key, key_len, &call) != SL_OK)
        return SL_EIO;
    int rc = sld_remote_command_int(r, worker, call.key, call.key_len, call.argc, call.argv, call.argvlen,
                                    fn, arg);
    sl__redis_call_free(&call);
    return rc;
}

const sl__redis_url_t *sld_remote_url(const sld_remote_t *r) { return &r->url; }

const sl__redis_client_options_t *sld_remote_options(const sld_remote_t *r) { return &r->opts; }

void sld_remote_count_fallback(sld_remote_t *r, sld_store_failure_t mode) {
    if ((unsigned)mode <= SLD_FAIL_LOCAL)
        atomic_fetch_add_explicit(&r->fallback[mode], 1, memory_order_relaxed);
}

void sld_remote_stats(sld_remote_t *r, sld_remote_stats_t *out) {
    memset(out, 0, sizeof *out);
    out->up = true;
    for (uint32_t i = 0; i < r->nworkers; i++) {
        remote_worker_t *w = &r->workers[i];
        bool breaker = atomic_load_explicit(&w->breaker_open, memory_order_relaxed);
        out->up = out->up && atomic_load_explicit(&w->attached, memory_order_relaxed) &&
                  atomic_load_explicit(&w->up, memory_order_relaxed) && !breaker;
        out->breaker_open = out->breaker_open || breaker;
        out->reconnects += atomic_load_explicit(&w->reconnects, memory_order_relaxed);
    }
    if (!out->up) {
        uv_mutex_lock(&r->error_lock);
        snprintf(out->last_error, sizeof out->last_error, "%s", r->last_error);
        uv_mutex_unlock(&r->error_lock);
    }
    out->calls = atomic_load(&r->calls);
    out->failures = atomic_load(&r->failures);
    out->timeouts = atomic_load(&r->timeouts);
    out->latency_count = atomic_load(&r->latency_count);
    out->latency_sum_us = atomic_load(&r->latency_sum_us);
    out->fallback_open = atomic_load(&r->fallback[SLD_FAIL_OPEN]);
    out->fallback_closed = atomic_load(&r->fallback[SLD_FAIL_CLOSED]);
    out->fallback_local = atomic_load(&r->fallback[SLD_FAIL_LOCAL]);
}

bool sld_remote_clock_local(const sld_remote_t *r) { return r->clock_local; }

int sld_remote_resolve(sld_remote_t *r, char *err, size_t err_len) {
    for (size_t i = 0; i < r->url.n_nodes; i++) {
        const sl__redis_addr_t *a = &r->url.nodes[i];
        if (sl__resolve_is_numeric(a->host))
            continue;
        sl__resolved_t addrs;
        char why[300];
        if (sl__resolve_now(a->host, &addrs, why, sizeof why) != 0) {
            snprintf(err, err_len, "store.url: %s", why);
            return SL_EINVAL;
        }
        char list[SL__RESOLVE_MAX * (SL__RESOLVE_ADDR_LEN + 2)];
        sld_info("store: %s resolves to %s (tried in this order, looked up again at each "
                 "connection)", a->host, sl__resolve_format(&addrs, list, sizeof list));
    }
    return SL_OK;
}

const char *sld_remote_describe(const sld_remote_t *r) { return r->description; }

bool sld_remote_supports(const sl_policy_t *p, const char **why) {
    return sl__redis_policy_supported(p, why);
}
