/* fuzz_resp_session.c -- libFuzzer target for RESP sessions: HELLO's
 * protocol switches and MULTI / EXEC / DISCARD, as a connection drives them.
 *
 * Each parsed command goes through the pieces the command layer uses:
 * HELLO through sld_hello_parse (and the reply in the session's protocol),
 * MULTI/EXEC/DISCARD through the transaction queue (transaction.c), and any
 * other command, outside a block or run by EXEC, gets replies of every
 * RESP3 type built from its arguments (null, map, set, verbatim). Checked:
 * each command appends exactly one well-formed reply (EXEC: one array of as
 * many replies as were queued), EXEC hands back byte for byte what was
 * queued, a failed block runs nothing, and the queue's bounds hold. Not
 * here: the real handlers and store (the integration tests run those).
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/resp/hello.h"
#include "server/resp/resp.h"
#include "server/resp/transaction.h"

#define MAX_BYTES 4096 /* the session's max_request_bytes */

/* Skips one reply at out[*pos..len): false if it is not well-formed. */
static bool skip_reply(const char *out, size_t len, size_t *pos, int depth) {
    if (*pos >= len || depth > 8)
        return false;
    const char *p = out + *pos, *end = out + len;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL || nl == p || nl[-1] != '\r')
        return false;
    char kind = p[0];
    long long n = 0;
    if (strchr("$*%~=:", kind)) {
        char *stop;
        n = strtoll(p + 1, &stop, 10);
        if (stop != nl - 1)
            return false;
    }
    *pos = (size_t)(nl + 1 - out);
    switch (kind) {
    case '+': case '-': case ':': case '_':
        return true;
    case '$': case '=':
        if (n < 0)
            return kind == '$' && n == -1;
        if ((size_t)n + 2 > len - *pos || out[*pos + (size_t)n] != '\r' || out[*pos + (size_t)n + 1] != '\n')
            return false;
        if (kind == '=' && (n < 4 || memcmp(out + *pos, "txt:", 4) != 0))
            return false;
        *pos += (size_t)n + 2;
        return true;
    case '*': case '~': case '%':
        for (long long i = 0; i < (kind == '%' ? 2 * n : n); i++)
            if (!skip_reply(out, len, pos, depth + 1))
                return false;
        return n >= 0;
    default:
        return false;
    }
}

/* A command that is neither HELLO nor a transaction's: one reply of each
 * RESP3 type in turn, chosen by its argument count. */
static void other(sld_buf_t *out, int proto, const sld_arg_t *argv, size_t argc) {
    switch (argc % 4) {
    case 0:
        sld_reply_nil(out, proto);
        break;
    case 1:
        sld_reply_map(out, proto, argc);
        for (size_t i = 0; i < argc; i++) {
            sld_reply_bulk(out, argv[i].ptr, argv[i].len);
            sld_reply_int(out, (int64_t)argv[i].len);
        }
        break;
    case 2:
        sld_reply_set(out, proto, argc);
        for (size_t i = 0; i < argc; i++)
            sld_reply_bulk(out, argv[i].ptr, argv[i].len);
        break;
    default:
        sld_reply_verbatim(out, proto, argv[argc - 1].ptr, argv[argc - 1].len);
        break;
    }
}

typedef struct session {
    int proto;
    sld_tx_t *tx;
    sld_buf_t shadow; /* what was queued, as the fuzzer saw it */
} session_t;

static void shadow_add(sld_buf_t *b, const sld_arg_t *argv, size_t argc) {
    for (size_t i = 0; i < argc; i++) {
        sld_buf_append(b, &argv[i].len, sizeof argv[i].len);
        sld_buf_append(b, argv[i].ptr, argv[i].len);
    }
}

static void command(session_t *s, sld_buf_t *out, const sld_arg_t *argv, size_t argc) {
    size_t before = out->len;
    size_t replies = 1;
    if (sld_arg_is(&argv[0], "MULTI")) {
        if (s->tx) {
            sld_reply_error(out, "ERR MULTI calls can not be nested");
        } else {
            s->tx = sld_tx_new();
            assert(s->tx);
            sld_buf_reset(&s->shadow);
            sld_reply_ok(out);
        }
    } else if (sld_arg_is(&argv[0], "DISCARD")) {
        sld_tx_free(s->tx);
        s->tx = NULL;
        sld_reply_ok(out);
    } else if (sld_arg_is(&argv[0], "EXEC")) {
        if (s->tx == NULL) {
            sld_reply_error(out, "ERR EXEC without MULTI");
        } else if (s->tx->failed) {
            size_t pos = 0, n;
            sld_arg_t args[SLD_TX_MAX_ARGS];
            assert(!sld_tx_next(s->tx, &pos, args, &n)); /* a failed block runs nothing */
            sld_reply_error(out, "EXECABORT Transaction discarded because of previous errors.");
        } else {
            sld_tx_t *tx = s->tx;
            s->tx = NULL;
            sld_reply_array(out, tx->n);
            sld_buf_t again = {0};
            sld_arg_t args[SLD_TX_MAX_ARGS];
            size_t pos = 0, n, count = 0;
            while (sld_tx_next(tx, &pos, args, &n)) {
                assert(n >= 1 && n <= SLD_TX_MAX_ARGS);
                shadow_add(&again, args, n);
                command(s, out, args, n); /* one reply each, checked there */
                count++;
            }
            assert(count == tx->n);
            assert(again.len == s->shadow.len && memcmp(again.data, s->shadow.data, again.len) == 0);
            sld_buf_free(&again);
            sld_tx_free(tx);
        }
        replies = 0; /* checked as one array below */
        size_t pos = before;
        assert(skip_reply(out->data, out->len, &pos, 0) && pos == out->len);
    } else if (s->tx) {
        switch (sld_tx_add(s->tx, argv, argc, MAX_BYTES)) {
        case SLD_TX_QUEUED:
            shadow_add(&s->shadow, argv, argc);
            sld_reply_simple(out, "QUEUED");
            break;
        case SLD_TX_FAILED:
            sld_reply_simple(out, "QUEUED");
            break;
        default:
            assert(s->tx->failed && s->tx->cmds.len == 0);
            sld_reply_error(out, "ERR transaction too large");
            break;
        }
        assert(s->tx->n <= SLD_TX_MAX_COMMANDS && s->tx->arg_bytes <= MAX_BYTES);
    } else if (sld_arg_is(&argv[0], "HELLO")) {
        sld_hello_t h;
        char err[160];
        const char *e = sld_hello_parse(argv, argc, &h, err, sizeof err);
        if (e) {
            sld_reply_error(out, e);
        } else {
            assert(h.proto == 0 || h.proto == 2 || h.proto == 3);
            assert((h.user == NULL) == (h.pass == NULL));
            if (h.name)
                assert(sld_hello_name_ok(h.name));
            if (h.proto)
                s->proto = h.proto;
            sld_hello_reply(out, s->proto, 1);
        }
    } else {
        other(out, s->proto, argv, argc);
    }
    if (replies == 1) {
        size_t pos = before;
        assert(skip_reply(out->data, out->len, &pos, 0) && pos == out->len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const sld_resp_limits_t lim = {.max_args = SLD_TX_MAX_ARGS, .max_bulk = MAX_BYTES,
                                          .max_inline = 1024};
    sld_arg_t argv[SLD_TX_MAX_ARGS];
    session_t s = {.proto = SLD_PROTO_2};
    sld_buf_t out = {0};
    const char *p = (const char *)data;
    size_t left = size;
    for (;;) {
        size_t argc, need;
        const char *why;
        ssize_t used = sld_resp_parse(p, left, &lim, argv, &argc, &need, &why);
        if (used <= 0)
            break;
        if (argc > 0)
            command(&s, &out, argv, argc);
        if (out.len > (1u << 20))
            sld_buf_reset(&out);
        p += used;
        left -= (size_t)used;
    }
    assert(!out.failed);
    sld_tx_free(s.tx); /* a connection closed inside MULTI: nothing run */
    sld_buf_free(&s.shadow);
    sld_buf_free(&out);
    return 0;
}
