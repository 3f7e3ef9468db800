/* sync_cas.c -- write-back mode's compare-and-sets (see sync_cas.h): one
 * EVALSHA of sync.lua per call, its reply split into one answer per key. */
#include "store/redis/sync_cas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/redis/script.h"

typedef struct call {
    sl__redis_cas_fn fn;
    void *arg;
    size_t n;
} call_t;

/* One key's answer: r is its part of the reply ({1} or {0, value}), or the
 * whole reply when that is an error. */
static void answer(const call_t *call, size_t i, sl__redis_status_t status, const redisReply *r) {
    if (status != SL__REDIS_OK) {
        call->fn(call->arg, i, SL__REDIS_CAS_LOST, status, NULL, 0);
        return;
    }
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
              r->element[0]->type == REDIS_REPLY_INTEGER;
    if (ok && r->element[0]->integer == 1) {
        call->fn(call->arg, i, SL__REDIS_CAS_WRITTEN, status, NULL, 0);
    } else if (ok && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        call->fn(call->arg, i, SL__REDIS_CAS_CONFLICT, status, r->element[1]->str,
                 r->element[1]->len);
    } else if (r && r->type == REDIS_REPLY_ERROR) {
        call->fn(call->arg, i, SL__REDIS_CAS_REFUSED, status, r->str, r->len);
    } else {
        call->fn(call->arg, i, SL__REDIS_CAS_REFUSED, status, NULL, 0);
    }
}

static void on_reply(void *arg, sl__redis_status_t status, const redisReply *r) {
    call_t *call = arg;
    bool parts = status == SL__REDIS_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements == call->n;
    for (size_t i = 0; i < call->n; i++)
        answer(call, i, status, parts ? r->element[i] : r);
    free(call);
}

int sl__redis_cas_send(sl__redis_client_t *c, const sl__redis_cas_t *cas, size_t n,
                       sl__redis_cas_fn fn, void *arg) {
    if (n == 0 || n > SL__REDIS_CAS_MAX)
        return -1;
    call_t *call = malloc(sizeof *call);
    const char **argv = malloc((3 + 5 * n) * sizeof *argv);
    size_t *argvlen = malloc((3 + 5 * n) * sizeof *argvlen);
    int st = -1;
    if (call && argv && argvlen) {
        char count[8];
        snprintf(count, sizeof count, "%zu", n);
        argv[0] = "EVALSHA";
        argvlen[0] = 7;
        argv[1] = sl__redis_sync_lua_sha1;
        argvlen[1] = 40;
        argv[2] = count;
        argvlen[2] = strlen(count);
        for (size_t i = 0; i < n; i++) {
            const sl__redis_cas_t *k = &cas[i];
            size_t key = 3 + i, a = 3 + n + 4 * i;
            argv[key] = k->key;
            argvlen[key] = k->key_len;
            argv[a] = k->expected ? (const char *)k->expected : "";
            argvlen[a] = k->expected ? SL__REDIS_CAS_VERSION_BYTES : 0;
            argv[a + 1] = (const char *)k->version;
            argvlen[a + 1] = SL__REDIS_CAS_VERSION_BYTES;
            argv[a + 2] = k->value_len ? (const char *)k->value : "";
            argvlen[a + 2] = k->value_len;
            argv[a + 3] = k->ttl_ms;
            argvlen[a + 3] = strlen(k->ttl_ms);
        }
        call->fn = fn;
        call->arg = arg;
        call->n = n;
        st = sl__redis_client_send(c, cas[0].key, cas[0].key_len, (int)(3 + 5 * n), argv, argvlen,
                                   sl__redis_sync_lua, sl__redis_sync_lua_len, on_reply, call);
    }
    free(argv);
    free(argvlen);
    if (st != 0)
        free(call);
    return st;
}
