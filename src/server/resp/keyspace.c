/* keyspace.c -- DEL, UNLINK, EXISTS, TTL, PTTL on CL.THROTTLE keys
 * (keyspace.h).
 *
 * One command becomes, for each key and each parameter set, a peek (does the
 * key have state, and until when) and, for DEL, a reset. With the memory
 * store every answer comes at once; with Redis they come later, and the
 * command's reply waits in its place (the reply queue) until the last one.
 * A DEL resets a key under a set once its peek has answered that the key
 * has state there: a reset may reach Redis before an earlier peek does.
 */
#include <stdlib.h>
#include <string.h>

#include "server/base/decimal.h"
#include "server/engine/engine.h"
#include "server/resp/keyspace.h"

typedef enum ks_kind { KS_DEL, KS_EXISTS, KS_TTL, KS_PTTL } ks_kind_t;

typedef struct ks_op ks_op_t;

typedef struct probe {
    ks_op_t *op;
    uint32_t key;      /* index in op->keys */
    uint32_t set;      /* index in op->sets */
} probe_t;

/* A key as kept for answers that come later: a span of op->bytes. */
typedef struct kept_key {
    size_t off, len;
} kept_key_t;

struct ks_op {
    ks_kind_t kind;
    sld_engine_t *e;
    uint32_t worker;
    sld_origin_t origin; /* CL.THROTTLE's, its local share set per request */
    sld_reply_t *slot; /* the reply's place when answers come later, else NULL */
    size_t pending;    /* engine answers still to come (+1 while asking) */
    int rc;            /* the first error */
    sl_usec_t ttl;     /* the longest reset_after seen (TTL, PTTL) */
    size_t nkeys, nsets;
    bool *existed;     /* per key */
    kept_key_t *keys;  /* per key */
    char *bytes;       /* the keys' bytes */
    const sl_policy_t **sets, **locals;
    probe_t *probes;   /* nkeys x nsets when answers come later: the callbacks' argument */
};


static void write_reply(const ks_op_t *op, sld_buf_t *out) {
    if (op->rc != SL_OK) {
        sld_reply_errorf(out, "ERR %s",
                         op->rc == SL_EIO ? "the store did not answer" : sl_strerror(op->rc));
        return;
    }
    int64_t n = 0;
    for (size_t i = 0; i < op->nkeys; i++)
        n += op->existed[i];
    if (op->kind == KS_DEL || op->kind == KS_EXISTS)
        sld_reply_int(out, n);
    else if (n == 0)
        sld_reply_int(out, -2);
    else if (op->kind == KS_PTTL)
        sld_reply_int(out, sld_ms_up(op->ttl));
    else /* Redis rounds TTL to the nearest second */
        sld_reply_int(out, (sld_ms_up(op->ttl) + 500) / 1000);
}

static void op_free(ks_op_t *op) {
    free(op->existed);
    free(op->keys);
    free(op->bytes);
    free(op->sets);
    free(op->probes);
    free(op);
}

/* One answer fewer to wait for; the last one writes the late reply. */
static void settle(ks_op_t *op) {
    if (--op->pending > 0 || op->slot == NULL)
        return;
    write_reply(op, sld_reply_buf(op->slot));
    sld_reply_done(op->slot);
    op_free(op);
}

static void failed(ks_op_t *op, int rc) {
    if (rc != SL_OK && op->rc == SL_OK)
        op->rc = rc;
}

static void on_reset(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    (void)d, (void)limits;
    probe_t *pr = arg;
    failed(pr->op, rc);
    settle(pr->op);
}

static sld_request_t request(const ks_op_t *op, size_t key, size_t set, unsigned flags) {
    sld_request_t r = {.origin = op->origin, .p = op->sets[set], .flags = flags,
                       .key = op->bytes + op->keys[key].off, .key_len = op->keys[key].len};
    r.origin.local = op->locals[set];
    return r;
}

/* A peek's answer: the key has state under this set when it is not empty
 * (reset_after > 0). DEL then resets it: only after the peek, since a reset
 * may reach the store before an earlier peek does. */
static void peeked(ks_op_t *op, size_t key, size_t set, int rc, const sl_decision_t *d) {
    failed(op, rc);
    if (rc != SL_OK || d->reset_after <= 0)
        return;
    op->existed[key] = true;
    if (d->reset_after > op->ttl)
        op->ttl = d->reset_after;
    if (op->kind != KS_DEL)
        return;
    sld_request_t r = request(op, key, set, 0);
    probe_t *pr = op->slot ? &op->probes[key * op->nsets + set] : NULL;
    op->pending++;
    rc = sld_engine_reset(op->e, op->worker, &r, pr ? on_reset : NULL, pr);
    if (rc != SLD_PENDING) {
        failed(op, rc);
        op->pending--;
    }
}

static void on_peeked(void *arg, int rc, const sl_decision_t *d, const sl_limit_report_t *limits) {
    (void)limits;
    probe_t *pr = arg;
    peeked(pr->op, pr->key, pr->set, rc, d);
    settle(pr->op);
}

/* The op with copies of the keys and of the set table; NULL: no memory. */
static ks_op_t *op_new(sld_client_t *c, ks_kind_t kind, const sld_arg_t *keys, size_t nkeys) {
    ks_op_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return NULL;
    size_t bytes = 0;
    for (size_t i = 0; i < nkeys; i++)
        bytes += keys[i].len;
    op->kind = kind;
    op->e = c->d->engine;
    op->worker = c->worker;
    op->origin = (sld_origin_t){.rt = c->rt, .index = SIZE_MAX, .slot = c->d->throttle_slot};
    op->nkeys = nkeys;
    op->existed = calloc(nkeys, sizeof *op->existed);
    op->keys = calloc(nkeys, sizeof *op->keys);
    op->bytes = malloc(bytes + 1);
    op->sets = malloc(2 * SLD_THROTTLE_MAX_SETS * sizeof *op->sets);
    if (!op->existed || !op->keys || !op->bytes || !op->sets) {
        op_free(op);
        return NULL;
    }
    for (size_t i = 0, off = 0; i < nkeys; off += keys[i].len, i++) {
        memcpy(op->bytes + off, keys[i].ptr, keys[i].len);
        op->keys[i] = (kept_key_t){.off = off, .len = keys[i].len};
    }
    op->locals = op->sets + SLD_THROTTLE_MAX_SETS;
    op->nsets = sld_throttles_list(c->d->throttles, op->sets, op->locals, SLD_THROTTLE_MAX_SETS);
    return op;
}

static void run(sld_client_t *c, ks_kind_t kind, const sld_arg_t *keys, size_t nkeys) {
    for (size_t i = 0; i < nkeys; i++)
        if (keys[i].len > c->rt->cfg->max_key_bytes) {
            sld_reply_errorf(c->out, "ERR key is %zu bytes, longer than max_key_bytes (%u)",
                             keys[i].len, c->rt->cfg->max_key_bytes);
            return;
        }
    ks_op_t *op = op_new(c, kind, keys, nkeys);
    if (op && op->nsets > 0 && sld_engine_defers(op->e, op->sets[0])) {
        op->probes = calloc(nkeys * op->nsets, sizeof *op->probes);
        if (op->probes == NULL || (op->slot = sld_reply_defer(c->replies)) == NULL) {
            op_free(op);
            op = NULL;
        } else {
            c->out = sld_reply_queue_tail(c->replies); /* later replies wait behind it */
        }
    }
    if (op == NULL) {
        sld_reply_error(c->out, "ERR out of memory");
        return;
    }
    op->pending = 1;
    for (size_t k = 0; k < nkeys; k++)
        for (size_t s = 0; s < op->nsets; s++) {
            sld_request_t r = request(op, k, s, SL_DECIDE_PEEK);
            probe_t *pr = NULL;
            if (op->slot) {
                pr = &op->probes[k * op->nsets + s];
                *pr = (probe_t){.op = op, .key = (uint32_t)k, .set = (uint32_t)s};
            }
            sl_decision_t d = {0};
            op->pending++;
            int rc = sld_engine_decide(op->e, op->worker, &r, &d, NULL, pr ? on_peeked : NULL, pr);
            if (rc != SLD_PENDING) {
                peeked(op, k, s, rc, &d);
                op->pending--;
            }
        }
    if (op->pending > 1) { /* answers to come: the last one replies */
        settle(op);
        return;
    }
    if (op->slot) { /* everything answered at once: nothing was written behind the place */
        sld_reply_undefer(c->replies, op->slot);
        c->out = sld_reply_queue_tail(c->replies);
    }
    write_reply(op, c->out);
    op_free(op);
}

void sld_cmd_del(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    run(c, KS_DEL, argv + 1, argc - 1);
}

void sld_cmd_exists(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    run(c, KS_EXISTS, argv + 1, argc - 1);
}

void sld_cmd_ttl(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    run(c, KS_TTL, argv + 1, 1);
}

void sld_cmd_pttl(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    (void)argc;
    run(c, KS_PTTL, argv + 1, 1);
}
