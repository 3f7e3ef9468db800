/* evaluate_call.c -- evaluations sent and their reply read (see
 * evaluate_call.h). */
#include "store/redis/evaluate_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/policy.h"

typedef struct call {
    sl__redis_eval_fn fn;
    void *arg;
    size_t n;
    bool batch;  /* sent as a batch (several, or a place to report) */
    sl__redis_eval_req_t reqs[];
} call_t;

/* The reason an answer is unusable, with the server's error text when the
 * reply is an error (as the daemon has always logged it). */
static const char *explain(const redisReply *r, const char *why, char *buf, size_t len) {
    bool error = r && r->type == REDIS_REPLY_ERROR;
    snprintf(buf, len, "%s%s%.*s", why ? why : "?", error ? ": " : "",
             error ? (int)(r->len > 200 ? 200 : r->len) : 0, error ? r->str : "");
    return buf;
}

static void on_reply(void *arg, sl__redis_status_t status, const redisReply *reply) {
    call_t *call = arg;
    size_t n = call->n;
    size_t offsets[SL__REDIS_MAX_BATCH];
    const char *batch_why = NULL;
    int batch_rc = status != SL__REDIS_OK ? SL_EIO
                   : !call->batch        ? SL_OK
                                         : sl__redis_batch_offsets(call->reqs, n, reply, offsets, &batch_why);
    for (size_t i = 0; i < n; i++) {
        sl_decision_t d;
        sl_limit_report_t limits[SL_MAX_LIMITS];
        char buf[SL__REDIS_EVAL_WHY_LEN];
        const char *why = NULL;
        int rc = SL_EIO;
        if (status == SL__REDIS_OK) {
            const char *reason = batch_why;
            rc = batch_rc != SL_OK ? batch_rc
                 : !call->batch    ? sl__redis_parse_evaluate(call->reqs[0].p, reply, &d, limits, &reason)
                                   : sl__redis_parse_evaluate_at(&call->reqs[i], reply, offsets[i], &d, limits,
                                                                 &reason);
            if (rc == SL_OK && call->batch && call->reqs[i].held)
                sl__redis_parse_held_at(&call->reqs[i], reply, offsets[i], call->reqs[i].held);
            if (rc != SL_OK) {
                rc = SL_EIO;
                why = explain(reply, reason, buf, sizeof buf);
            }
        }
        call->fn(call->arg, i, status, rc, rc == SL_OK ? &d : NULL, rc == SL_OK ? limits : NULL, why);
    }
    free(call);
}

int sl__redis_evaluate_send(sl__redis_client_t *c, const sl__redis_eval_req_t *reqs, size_t n,
                            sl_usec_t now, sl__redis_eval_fn fn, void *arg) {
    if (n == 0 || n > SL__REDIS_MAX_BATCH)
        return -1;
    call_t *call = malloc(sizeof *call + n * sizeof *reqs);
    if (call == NULL)
        return -1;
    sl__redis_call_t cmd;
    /* only a batch reply says what a place held */
    bool batch = n > 1 || reqs[0].held != NULL;
    for (size_t i = 0; i < n; i++)
        if (reqs[i].held)
            reqs[i].held->at = 0;
    int rc = batch                 ? sl__redis_build_evaluate_batch(reqs, n, now, &cmd)
             : reqs[0].max_wait > 0 ? sl__redis_build_reserve(reqs[0].p, reqs[0].key, reqs[0].key_len,
                                                              reqs[0].cost, now, reqs[0].max_wait,
                                                              reqs[0].not_before, reqs[0].peek, &cmd)
                                    : sl__redis_build_evaluate(reqs[0].p, reqs[0].key, reqs[0].key_len,
                                                               reqs[0].cost, now, reqs[0].peek, &cmd);
    if (rc != SL_OK) {
        free(call);
        return -1;
    }
    call->fn = fn;
    call->arg = arg;
    call->n = n;
    call->batch = batch;
    memcpy(call->reqs, reqs, n * sizeof *reqs);
    int st = sl__redis_client_send(c, cmd.key, cmd.key_len, cmd.argc, cmd.argv, cmd.argvlen,
                                   sl__redis_evaluate_lua, sl__redis_evaluate_lua_len, on_reply, call);
    sl__redis_call_free(&cmd);
    if (st != 0)
        free(call);
    return st;
}

typedef struct refund_call {
    sl__redis_refund_fn fn;
    void *arg;
} refund_call_t;

static void on_refund_reply(void *arg, sl__redis_status_t status, const redisReply *reply) {
    refund_call_t rc = *(refund_call_t *)arg;
    free(arg);
    bool ok = status == SL__REDIS_OK && reply && reply->type == REDIS_REPLY_INTEGER && reply->integer >= 0;
    if (rc.fn)
        rc.fn(rc.arg, status, ok, ok ? (uint32_t)reply->integer : 0);
}

int sl__redis_refund_send(sl__redis_client_t *c, const sl_policy_t *p, const void *key, size_t key_len,
                          uint64_t cost, sl_usec_t now, const sl__held_t *held, sl__redis_refund_fn fn,
                          void *arg) {
    sl__redis_call_t cmd;
    if (sl__redis_build_refund(p, key, key_len, cost, now, held, &cmd) != SL_OK)
        return -1;
    refund_call_t *call = malloc(sizeof *call);
    if (call == NULL) {
        sl__redis_call_free(&cmd);
        return -1;
    }
    *call = (refund_call_t){fn, arg};
    int st = sl__redis_client_send(c, cmd.key, cmd.key_len, cmd.argc, cmd.argv, cmd.argvlen,
                                   sl__redis_evaluate_lua, sl__redis_evaluate_lua_len, on_refund_reply, call);
    sl__redis_call_free(&cmd);
    if (st != 0)
        free(call);
    return st;
}
