/* rules_feed.c -- following the rules kept in Redis (see rules_feed.h).
 *
 * One read at a time: a version poll or a hash read in flight holds off
 * the next tick. A published change forgets the version seen, so the hash
 * is read whatever the counter says.
 */
#include "store/redis/rules_feed.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#define RESUBSCRIBE_MS 1000

struct sl__redis_rules_feed {
    uv_loop_t *loop;
    const sl__redis_url_t *url;
    sl__redis_client_t *client;
    sl__redis_rules_hooks_t hooks;
    uv_timer_t poll;
    uv_timer_t resubscribe;
    redisAsyncContext *sub;
    bool fetching;
    bool stopping;
    bool first_read;          /* the rules were read once (or Redis said no) */
    long long seen_version;   /* -1: read the rules at the next tick */
};

/* ---- reading ------------------------------------------------------------------------------ */

static void on_rules(void *arg, sl__redis_status_t status, bool ok, const sl__redis_field_t *fields,
                     size_t n) {
    (void)status;
    sl__redis_rules_feed_t *f = arg;
    f->fetching = false;
    f->first_read = true;
    if (f->stopping)
        return;
    if (!ok) {
        f->seen_version = -1; /* try again at the next tick */
        f->hooks.failed(f->hooks.arg);
        return;
    }
    f->hooks.rules(f->hooks.arg, fields, n, f->seen_version);
}

static void fetch(sl__redis_rules_feed_t *f) {
    if (f->fetching || f->stopping)
        return;
    if (sl__redis_send_hgetall(f->client, SL__REDIS_RULES_KEY, sizeof SL__REDIS_RULES_KEY - 1,
                               SL__REDIS_RULES_MAX, on_rules, f) == 0)
        f->fetching = true;
}

static void on_version(void *arg, sl__redis_status_t status, bool ok, const char *str, size_t len) {
    (void)status, (void)len;
    sl__redis_rules_feed_t *f = arg;
    f->fetching = false;
    if (f->stopping)
        return;
    if (!ok) {
        f->first_read = true; /* Redis cannot say now: start on the file's */
        f->hooks.failed(f->hooks.arg);
        return;
    }
    /* a string reply ends at its length, and Redis ends it with a NUL too */
    long long v = str ? strtoll(str, NULL, 10) : 0;
    if (v == f->seen_version)
        return;
    f->seen_version = v;
    fetch(f);
}

static void on_poll(uv_timer_t *t) {
    sl__redis_rules_feed_t *f = t->data;
    if (f->fetching || f->stopping)
        return;
    if (sl__redis_send_get(f->client, SL__REDIS_RULES_VERSION_KEY, sizeof SL__REDIS_RULES_VERSION_KEY - 1,
                           on_version, f) == 0)
        f->fetching = true;
    else
        f->first_read = true;
}

bool sl__redis_rules_feed_read_once(const sl__redis_rules_feed_t *f) { return f->first_read; }

void sl__redis_rules_feed_reread(sl__redis_rules_feed_t *f) { f->seen_version = -1; }

/* ---- the subscriber --------------------------------------------------------------------------- */

static void subscribe(sl__redis_rules_feed_t *f);

static void on_resubscribe(uv_timer_t *t) { subscribe(t->data); }

static void on_message(redisAsyncContext *ac, void *reply_, void *arg) {
    (void)ac;
    sl__redis_rules_feed_t *f = arg;
    redisReply *reply = reply_;
    if (reply == NULL || f->stopping)
        return;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 && reply->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(reply->element[0]->str, "message") == 0) {
        if (f->hooks.published)
            f->hooks.published(f->hooks.arg, reply->element[2]->str, reply->element[2]->len);
        f->seen_version = -1; /* whatever the version says: read now */
        if (!f->fetching)
            fetch(f);
    }
}

static void on_sub_disconnect(const redisAsyncContext *ac, int status) {
    (void)status;
    sl__redis_rules_feed_t *f = ac->data;
    f->sub = NULL;
    if (!f->stopping)
        uv_timer_start(&f->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
}

static void on_sub_connect(const redisAsyncContext *ac, int status) {
    sl__redis_rules_feed_t *f = ac->data;
    if (status != REDIS_OK) {
        f->sub = NULL; /* hiredis frees it */
        if (!f->stopping)
            uv_timer_start(&f->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
    }
}

static void subscribe(sl__redis_rules_feed_t *f) {
    if (f->stopping || f->sub)
        return;
    const sl__redis_addr_t *a = &f->url->nodes[0];
    redisAsyncContext *ac = redisAsyncConnect(a->host, a->port);
    if (ac == NULL || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        uv_timer_start(&f->resubscribe, on_resubscribe, RESUBSCRIBE_MS, 0);
        return;
    }
    ac->data = f;
    redisLibuvAttach(ac, f->loop);
    redisAsyncSetConnectCallback(ac, on_sub_connect);
    redisAsyncSetDisconnectCallback(ac, on_sub_disconnect);
    if (f->url->has_password) {
        if (f->url->has_user)
            redisAsyncCommand(ac, NULL, NULL, "AUTH %b %b", f->url->user, f->url->user_len, f->url->password,
                              f->url->password_len);
        else
            redisAsyncCommand(ac, NULL, NULL, "AUTH %b", f->url->password, f->url->password_len);
    }
    redisAsyncCommand(ac, on_message, f, "SUBSCRIBE " SL__REDIS_RULES_CHANNEL);
    f->sub = ac;
}

/* ---- life ------------------------------------------------------------------------------------ */

int sl__redis_rules_feed_new(uv_loop_t *loop, const sl__redis_url_t *url,
                             const sl__redis_client_options_t *opts, uint32_t poll_ms,
                             const sl__redis_rules_hooks_t *hooks, sl__redis_rules_feed_t **out) {
    sl__redis_rules_feed_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    f->loop = loop;
    f->url = url;
    f->hooks = *hooks;
    f->seen_version = -1;
    if (sl__redis_client_new(loop, url, opts, &f->client) != 0) {
        free(f);
        return -1;
    }
    uv_timer_init(loop, &f->poll);
    uv_timer_init(loop, &f->resubscribe);
    f->poll.data = f->resubscribe.data = f;
    uv_timer_start(&f->poll, on_poll, 0, poll_ms);
    /* a Sentinel URL names sentinels, not the master: the version poll serves */
    if (url->kind != SL__REDIS_SENTINEL)
        subscribe(f);
    *out = f;
    return 0;
}

static void on_client_closed(void *arg) { (void)arg; }

void sl__redis_rules_feed_stop(sl__redis_rules_feed_t *f) {
    if (f == NULL)
        return;
    f->stopping = true;
    uv_timer_stop(&f->poll);
    uv_timer_stop(&f->resubscribe);
    uv_close((uv_handle_t *)&f->poll, NULL);
    uv_close((uv_handle_t *)&f->resubscribe, NULL);
    if (f->sub) {
        redisAsyncContext *ac = f->sub;
        f->sub = NULL;
        ac->data = f;
        redisAsyncFree(ac);
    }
    sl__redis_client_close(f->client, on_client_closed, f);
}

void sl__redis_rules_feed_free(sl__redis_rules_feed_t *f) { free(f); }

/* ---- writing --------------------------------------------------------------------------------- */

typedef struct share {
    void (*fn)(void *arg, bool ok);
    void *arg;
    int replies;       /* of the three commands */
    bool failed;
} share_t;

static void on_shared(void *arg, sl__redis_status_t status, bool ok, long long value) {
    (void)status, (void)value;
    share_t *sh = arg;
    if (!ok)
        sh->failed = true;
    if (++sh->replies < 3)
        return;
    sh->fn(sh->arg, !sh->failed);
    free(sh);
}

int sl__redis_rules_share(sl__redis_client_t *c, const char *name, const char *json, size_t json_len,
                          void (*fn)(void *arg, bool ok), void *arg) {
    size_t nlen = strlen(name);
    const char *argv[3][4] = {{"HSET", SL__REDIS_RULES_KEY, name, json ? json : ""},
                              {"INCR", SL__REDIS_RULES_VERSION_KEY},
                              {"PUBLISH", SL__REDIS_RULES_CHANNEL, name}};
    const size_t argvlen[3][4] = {{4, sizeof SL__REDIS_RULES_KEY - 1, nlen, json ? json_len : 0},
                                  {4, sizeof SL__REDIS_RULES_VERSION_KEY - 1},
                                  {7, sizeof SL__REDIS_RULES_CHANNEL - 1, nlen}};
    const int argc[3] = {4, 2, 3};
    share_t *sh = calloc(1, sizeof *sh);
    if (sh == NULL)
        return -1;
    *sh = (share_t){.fn = fn, .arg = arg};
    int sent = 0;
    for (int i = 0; i < 3; i++) {
        /* one slot (the {sluice} tag), one connection: they arrive in order */
        if (sl__redis_send_int(c, SL__REDIS_RULES_KEY, sizeof SL__REDIS_RULES_KEY - 1, argc[i], argv[i],
                               argvlen[i], on_shared, sh) != 0)
            break;
        sent++;
    }
    if (sent == 0) {
        free(sh);
        return -1;
    }
    if (sent < 3) {
        sh->failed = true;
        sh->replies += 3 - sent; /* the last reply still to come answers */
    }
    return 0;
}
