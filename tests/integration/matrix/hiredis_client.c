/* hiredis_client.c -- the client matrix's scenario run by hiredis, the C
 * client (tests/integration/test_client_matrix.py runs it).
 *
 * Usage: hiredis_client PORT PREFIX scenario
 *        hiredis_client PORT PREFIX auth PASSWORD
 * Prints one JSON object: each step's reply (integers, strings, arrays) or
 * {"error": "..."}; the Python test holds the expected values, so every
 * client is judged by the same table. Exit status 0 unless it could not
 * connect at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

static void json_string(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_reply(const redisReply *r) {
    if (r == NULL) {
        printf("{\"error\": \"no reply\"}");
        return;
    }
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        printf("%lld", r->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
#ifdef REDIS_REPLY_VERB /* hiredis 1.0's RESP3 types; Debian 12 has 0.14 */
    case REDIS_REPLY_VERB:
#endif
        json_string(r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        printf("{\"error\": ");
        json_string(r->str, r->len);
        putchar('}');
        break;
    case REDIS_REPLY_ARRAY:
#ifdef REDIS_REPLY_SET
    case REDIS_REPLY_SET:
    case REDIS_REPLY_PUSH:
#endif
        putchar('[');
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                printf(", ");
            json_reply(r->element[i]);
        }
        putchar(']');
        break;
    default:
        printf("null");
    }
}

static redisContext *ctx;
static const char *prefix;
static int steps;

static void begin(const char *name) {
    printf("%s\"%s\": ", steps++ ? ", " : "", name);
}

/* Runs one command (printf-style, %s for the key) and returns its reply. */
static redisReply *cmd(const char *fmt, const char *key) {
    char k[256];
    snprintf(k, sizeof k, "%s:%s", prefix, key);
    return redisCommand(ctx, fmt, k);
}

static void step(const char *name, const char *fmt, const char *key) {
    redisReply *r = cmd(fmt, key);
    begin(name);
    json_reply(r);
    freeReplyObject(r);
}

static void scenario(void) {
    redisReply *r = redisCommand(ctx, "PING");
    begin("ping");
    json_reply(r);
    freeReplyObject(r);

    begin("throttle");
    putchar('[');
    for (int i = 0; i < 3; i++) {
        r = cmd("CL.THROTTLE %s 1 1 60", "k");
        printf("%s", i ? ", " : "");
        json_reply(r);
        freeReplyObject(r);
    }
    putchar(']');

    /* MULTI ... EXEC: the EXEC reply holds both; an error while queueing
     * shows as EXEC's reply */
    freeReplyObject(redisCommand(ctx, "MULTI"));
    freeReplyObject(cmd("CL.THROTTLE %s 5 1 60", "t"));
    freeReplyObject(cmd("CL.THROTTLE %s 5 1 60", "t"));
    r = redisCommand(ctx, "EXEC");
    begin("multi");
    json_reply(r);
    freeReplyObject(r);
    step("after_multi", "CL.THROTTLE %s 5 1 60", "t");

    freeReplyObject(redisCommand(ctx, "MULTI"));
    freeReplyObject(cmd("CL.THROTTLE %s 5 1 60", "d"));
    r = redisCommand(ctx, "DISCARD");
    begin("discard");
    json_reply(r);
    freeReplyObject(r);
    step("after_discard", "CL.THROTTLE %s 5 1 60", "d");

    step("del", "DEL %s", "k");
    step("after_del", "CL.THROTTLE %s 1 1 60", "k");
}

static void auth(const char *password) {
    step("noauth", "CL.THROTTLE %s 1 1 60", "a");
    redisReply *r = redisCommand(ctx, "AUTH %s", password);
    begin("auth");
    json_reply(r);
    freeReplyObject(r);
    step("authed", "CL.THROTTLE %s 1 1 60", "a");
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[3], "auth") == 0 && argc < 5)) {
        fprintf(stderr, "usage: %s PORT PREFIX scenario | auth PASSWORD\n", argv[0]);
        return 2;
    }
    ctx = redisConnect("127.0.0.1", atoi(argv[1]));
    if (ctx == NULL || ctx->err) {
        fprintf(stderr, "cannot connect: %s\n", ctx ? ctx->errstr : "out of memory");
        return 1;
    }
    prefix = argv[2];
    putchar('{');
    if (strcmp(argv[3], "auth") == 0)
        auth(argv[4]);
    else
        scenario();
    printf("}\n");
    redisFree(ctx);
    return 0;
}
