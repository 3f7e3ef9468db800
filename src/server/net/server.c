/* server.c -- worker loops and the fronts on them (see server.h).
 *
 * A worker runs one loop with a wake-up (reloads, the stop), a tick (every
 * second; every 50 ms while stopping) that each front uses to close idle
 * connections and clients that do not read, and a prepare hook that records
 * the runtime generation the worker has seen (a retired runtime is freed
 * once every worker has seen a newer one). Stopping: each front stops
 * accepting and answers what it received; once every front is idle the
 * engine lets go of the worker (its Redis client closes) and the loop
 * ends; after the grace period the fronts close what is left at once.
 *
 * Not here: connections (resp/, http/), listening sockets (listener.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "server/engine/engine.h"
#include "server/net/listener.h"
#include "server/observe/extra_metrics.h"
#include "server/net/server.h"

#define TICK_MS 1000
#define STOP_TICK_MS 50

typedef struct worker worker_t;

/* A front on one worker: its hooks and its state there. */
typedef struct front_worker {
    const sld_front_t *front;
    void *state; /* NULL: not started */
} front_worker_t;

struct worker {
    sld_server_t *s;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t wake;
    uv_timer_t tick;
    uv_prepare_t prepare;
    _Atomic uint64_t seen_generation;
    front_worker_t *fronts;  /* s->nfronts of them */
    bool stopping;
    bool store_detaching;    /* the engine lets go of this worker (its Redis client closes) */
    bool store_detached;     /* ... and has */
    uint64_t stop_deadline;  /* loop time, ms; force-close after it */
};

struct sld_server {
    sld_daemon_t *d;
    sld_front_t *fronts;
    sld_spread_t **spreads;  /* one per front: its connections over the workers */
    sld_metrics_extra_t metrics; /* sluice_worker_connections */
    size_t nfronts;
    worker_t *workers;
    uint32_t nworkers;
    atomic_bool stop;
    uint64_t grace_ms;
};

/* ---- worker loop ------------------------------------------------------------------------ */

static void close_handle(uv_handle_t *h) {
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void on_store_detached(void *arg) {
    worker_t *w = arg;
    w->store_detached = true;
}

/* Every second: the fronts close idle connections and those whose client
 * does not read; when stopping, the stragglers are forced after the grace
 * period, and the loop ends once every front is idle. */
static void on_tick(uv_timer_t *t) {
    worker_t *w = t->data;
    sld_server_t *s = w->s;
    uint64_t now = uv_now(&w->loop);
    bool force = w->stopping && now >= w->stop_deadline;
    bool idle = true;
    for (size_t k = 0; k < s->nfronts; k++) {
        front_worker_t *fw = &w->fronts[k];
        if (fw->state == NULL)
            continue;
        const sld_front_ops_t *ops = fw->front->ops;
        if (force)
            ops->force_close(fw->state);
        else
            ops->tick(fw->state, now);
        idle = idle && ops->idle(fw->state);
    }
    if (w->stopping && idle) {
        /* Decisions still waiting on Redis held their connections open
         * until now; what is left of the client can go. */
        if (!w->store_detaching) {
            w->store_detaching = true;
            sld_engine_detach(s->d->engine, (uint32_t)(w - s->workers), on_store_detached, w);
        }
        if (w->store_detached)
            uv_stop(&w->loop); /* a front's own handles (h2o's) would keep it running: worker_run ends it */
    }
}

static void begin_stop(worker_t *w) {
    if (w->stopping)
        return;
    w->stopping = true;
    w->stop_deadline = uv_now(&w->loop) + w->s->grace_ms;
    for (size_t k = 0; k < w->s->nfronts; k++)
        if (w->fronts[k].state != NULL)
            w->fronts[k].front->ops->begin_stop(w->fronts[k].state);
    uv_timer_start(&w->tick, on_tick, 0, STOP_TICK_MS);
}

static void on_wake(uv_async_t *a) {
    worker_t *w = a->data;
    if (atomic_load(&w->s->stop))
        begin_stop(w);
}

static void on_prepare(uv_prepare_t *p) {
    worker_t *w = p->data;
    atomic_store(&w->seen_generation, sld_runtime(w->s->d)->generation);
}

/* Runs the loop until the worker has stopped (on_tick), then closes what is left. */
static void worker_run(void *arg) {
    worker_t *w = arg;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    for (size_t k = 0; k < w->s->nfronts; k++)
        if (w->fronts[k].state != NULL)
            w->fronts[k].front->ops->dispose(w->fronts[k].state);
    close_handle((uv_handle_t *)&w->tick);
    close_handle((uv_handle_t *)&w->prepare);
    close_handle((uv_handle_t *)&w->wake);
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

/* ---- start and stop ----------------------------------------------------------------------- */

static int worker_init(worker_t *w, sld_server_t *s, char *err, size_t err_len) {
    w->s = s;
    int rc = uv_loop_init(&w->loop);
    if (rc == 0)
        rc = uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    if (rc == 0)
        rc = uv_timer_init(&w->loop, &w->tick);
    w->tick.data = w;
    if (rc == 0)
        rc = uv_timer_start(&w->tick, on_tick, TICK_MS, TICK_MS);
    if (rc == 0)
        rc = uv_prepare_init(&w->loop, &w->prepare);
    w->prepare.data = w;
    if (rc == 0)
        rc = uv_prepare_start(&w->prepare, on_prepare);
    if (rc != 0)
        snprintf(err, err_len, "cannot start a worker: %s", uv_strerror(rc));
    return rc;
}

/* Serves every front on worker i: the first worker's bind picks each
 * front's port (port 0: any free one), the others share it through
 * SO_REUSEPORT. */
static int worker_serve(sld_server_t *s, uint32_t i, int *ports, char *err, size_t err_len) {
    worker_t *w = &s->workers[i];
    for (size_t k = 0; k < s->nfronts; k++) {
        const sld_front_t *f = &s->fronts[k];
        int fd = f->listen ? sld_listener_open(f->listen, i == 0 ? -1 : ports[k], &ports[k], err, err_len) : -1;
        if ((fd < 0 && f->listen) || f->ops->start(f->ctx, &w->loop, fd, s->spreads[k], i, &w->fronts[k].state, err,
                                                       err_len) != SL_OK)
            return SL_EIO;
    }
    return SL_OK;
}

static void server_free(sld_server_t *s) {
    for (uint32_t i = 0; i < s->nworkers; i++)
        for (size_t k = 0; k < s->nfronts; k++)
            if (s->workers[i].fronts[k].state != NULL)
                s->fronts[k].ops->free(s->workers[i].fronts[k].state);
    if (s->workers)
        free(s->workers[0].fronts);
    for (size_t k = 0; s->spreads != NULL && k < s->nfronts; k++)
        sld_spread_free(s->spreads[k]);
    free(s->spreads);
    free(s->workers);
    free(s->fronts);
    free(s);
}

static void write_metrics(void *ctx, sld_buf_t *out) {
    const sld_server_t *s = ctx;
    sld_spread_write_metrics(s->spreads, s->nfronts, out);
}

/* Stops and frees the workers [0, s->nworkers) and the server; on the
 * calling thread, for a start that failed half-way. */
static void abandon(sld_server_t *s) {
    atomic_store(&s->stop, true);
    for (uint32_t k = 0; k < s->nworkers; k++) {
        begin_stop(&s->workers[k]);
        worker_run(&s->workers[k]);
        uv_loop_close(&s->workers[k].loop);
    }
    server_free(s);
}

int sld_server_start(sld_daemon_t *d, const sld_front_t *fronts, size_t nfronts, uint32_t threads,
                     sld_server_t **out, char *err, size_t err_len) {
    if (nfronts == 0 || threads == 0) {
        snprintf(err, err_len, "nothing to serve");
        return SL_EINVAL;
    }
    sld_server_t *s = calloc(1, sizeof *s);
    front_worker_t *fw = calloc((size_t)threads * nfronts, sizeof *fw);
    int *ports = malloc(nfronts * sizeof *ports);
    if (s != NULL) {
        s->workers = calloc(threads, sizeof *s->workers);
        s->fronts = malloc(nfronts * sizeof *s->fronts);
    }
    d->counters = aligned_alloc(64, sizeof(sld_counters_t) * threads);
    if (s == NULL || fw == NULL || ports == NULL || s->workers == NULL || s->fronts == NULL ||
        d->counters == NULL) {
        if (s != NULL) {
            free(s->workers);
            free(s->fronts);
        }
        free(s);
        free(fw);
        free(ports);
        free(d->counters);
        d->counters = NULL;
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    s->d = d;
    memcpy(s->fronts, fronts, nfronts * sizeof *fronts);
    s->nfronts = nfronts;
    s->spreads = calloc(nfronts, sizeof *s->spreads);
    bool spread_ok = s->spreads != NULL;
    for (size_t k = 0; spread_ok && k < nfronts; k++)
        spread_ok = sld_spread_new(threads, fronts[k].ops->name, &s->spreads[k]) == SL_OK;
    if (!spread_ok) {
        free(ports);
        free(fw); /* not yet the workers' (server_free frees it through them) */
        snprintf(err, err_len, "out of memory");
        abandon(s);
        return SL_ENOMEM;
    }
    memset(d->counters, 0, sizeof(sld_counters_t) * threads);
    d->ncounters = threads;
    for (size_t k = 0; k < nfronts; k++)
        ports[k] = -1;
    for (uint32_t i = 0; i < threads; i++) {
        s->workers[i].fronts = &fw[(size_t)i * nfronts];
        for (size_t k = 0; k < nfronts; k++)
            s->workers[i].fronts[k].front = &s->fronts[k];
    }
    int rc = SL_OK;
    for (uint32_t i = 0; i < threads && rc == SL_OK; i++) {
        worker_t *w = &s->workers[i];
        if (worker_init(w, s, err, err_len) != 0) {
            rc = SL_EIO; /* a half-made loop is left as it is: libuv could not start it */
            break;
        }
        s->nworkers = i + 1;
        atomic_store(&w->seen_generation, sld_runtime(d)->generation);
        if (sld_engine_attach(d->engine, i, &w->loop) != SL_OK) {
            snprintf(err, err_len, "cannot start the store's client (Redis)");
            rc = SL_EIO;
            break;
        }
        rc = worker_serve(s, i, ports, err, err_len);
    }
    if (rc != SL_OK) {
        free(ports);
        abandon(s);
        return rc;
    }
    for (size_t k = 0; k < nfronts; k++) {
        sld_spread_set_port(s->spreads[k], ports[k]);
        if (fronts[k].port != NULL)
            *fronts[k].port = ports[k];
    }
    free(ports);
    s->metrics = (sld_metrics_extra_t){.write = write_metrics, .ctx = s};
    sld_metrics_extra_set_workers(&s->metrics);
    for (uint32_t i = 0; i < threads; i++)
        uv_thread_create(&s->workers[i].thread, worker_run, &s->workers[i]);
    *out = s;
    return SL_OK;
}

void sld_server_wake(sld_server_t *s) {
    for (uint32_t i = 0; i < s->nworkers; i++)
        uv_async_send(&s->workers[i].wake);
}

bool sld_server_quiescent(sld_server_t *s, uint64_t generation) {
    for (uint32_t i = 0; i < s->nworkers; i++)
        if (atomic_load(&s->workers[i].seen_generation) < generation)
            return false;
    return true;
}

void sld_server_stop(sld_server_t *s, uint64_t grace_ms) {
    if (s == NULL)
        return;
    s->grace_ms = grace_ms;
    atomic_store(&s->stop, true);
    sld_server_wake(s);
    for (uint32_t i = 0; i < s->nworkers; i++) {
        uv_thread_join(&s->workers[i].thread);
        uv_loop_close(&s->workers[i].loop);
    }
    sld_metrics_extra_set_workers(NULL); /* no scrape runs: the workers that answer them are gone */
    server_free(s);
}
