/* command.c -- plain commands and their answers (see command.h). */
#include "store/redis/command.h"

#include <stdlib.h>

#include <hiredis/hiredis.h>

typedef struct call {
    union {
        sl__redis_int_fn i;
        sl__redis_string_fn s;
        sl__redis_hash_fn h;
    } fn;
    void *arg;
    size_t max_fields;
} call_t;

static call_t *new_call(void *arg) {
    call_t *c = calloc(1, sizeof *c);
    if (c)
        c->arg = arg;
    return c;
}

static int send_call(sl__redis_client_t *client, const char *key, size_t key_len, int argc,
                const char *const *argv, const size_t *argvlen, sl__redis_reply_fn on_reply, call_t *c) {
    if (c == NULL)
        return -1;
    int st = sl__redis_client_send(client, key, key_len, argc, argv, argvlen, NULL, 0, on_reply, c);
    if (st != 0)
        free(c);
    return st;
}

static void on_int(void *arg, sl__redis_status_t status, const redisReply *r) {
    call_t c = *(call_t *)arg;
    free(arg);
    bool ok = status == SL__REDIS_OK && r && r->type == REDIS_REPLY_INTEGER;
    c.fn.i(c.arg, status, ok, ok ? r->integer : 0);
}

int sl__redis_send_int(sl__redis_client_t *client, const char *key, size_t key_len, int argc,
                       const char *const *argv, const size_t *argvlen, sl__redis_int_fn fn, void *arg) {
    call_t *c = new_call(arg);
    if (c)
        c->fn.i = fn;
    return send_call(client, key, key_len, argc, argv, argvlen, on_int, c);
}

static void on_string(void *arg, sl__redis_status_t status, const redisReply *r) {
    call_t c = *(call_t *)arg;
    free(arg);
    bool ok = status == SL__REDIS_OK && r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL);
    bool str = ok && r->type == REDIS_REPLY_STRING;
    c.fn.s(c.arg, status, ok, str ? r->str : NULL, str ? r->len : 0);
}

int sl__redis_send_get(sl__redis_client_t *client, const char *key, size_t key_len, sl__redis_string_fn fn,
                       void *arg) {
    const char *argv[2] = {"GET", key};
    size_t argvlen[2] = {3, key_len};
    call_t *c = new_call(arg);
    if (c)
        c->fn.s = fn;
    return send_call(client, key, key_len, 2, argv, argvlen, on_string, c);
}

static void on_hash(void *arg, sl__redis_status_t status, const redisReply *r) {
    call_t c = *(call_t *)arg;
    free(arg);
    bool ok = status == SL__REDIS_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements % 2 == 0 &&
              r->elements / 2 <= c.max_fields;
    size_t n = ok ? r->elements / 2 : 0;
    sl__redis_field_t *fields = n ? malloc(n * sizeof *fields) : NULL;
    if (n && fields == NULL)
        ok = false;
    for (size_t i = 0; ok && i < n; i++) {
        const redisReply *k = r->element[2 * i], *v = r->element[2 * i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            ok = false;
        else
            fields[i] = (sl__redis_field_t){k->str, k->len, v->str, v->len};
    }
    c.fn.h(c.arg, status, ok, ok ? fields : NULL, ok ? n : 0);
    free(fields);
}

int sl__redis_send_hgetall(sl__redis_client_t *client, const char *key, size_t key_len, size_t max_fields,
                           sl__redis_hash_fn fn, void *arg) {
    const char *argv[2] = {"HGETALL", key};
    size_t argvlen[2] = {7, key_len};
    call_t *c = new_call(arg);
    if (c) {
        c->fn.h = fn;
        c->max_fields = max_fields;
    }
    return send_call(client, key, key_len, 2, argv, argvlen, on_hash, c);
}
