/* transaction.c -- the queue of one MULTI ... EXEC block (see transaction.h). */
#include <stdlib.h>
#include <string.h>

#include "server/resp/transaction.h"

sld_tx_t *sld_tx_new(void) { return calloc(1, sizeof(sld_tx_t)); }

void sld_tx_free(sld_tx_t *tx) {
    if (tx == NULL)
        return;
    sld_buf_free(&tx->cmds);
    free(tx);
}

void sld_tx_fail(sld_tx_t *tx) {
    tx->failed = true;
    sld_buf_free(&tx->cmds); /* never run now: no reason to hold them */
    tx->cmds = (sld_buf_t){0};
}

static void put_u32(sld_buf_t *b, uint32_t v) { sld_buf_append(b, &v, sizeof v); }

static uint32_t get_u32(const char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

sld_tx_rc_t sld_tx_add(sld_tx_t *tx, const sld_arg_t *argv, size_t argc, size_t max_bytes) {
    if (tx->failed)
        return SLD_TX_FAILED;
    size_t bytes = 0;
    for (size_t i = 0; i < argc; i++)
        bytes += argv[i].len;
    sld_tx_rc_t rc = SLD_TX_QUEUED;
    if (tx->n >= SLD_TX_MAX_COMMANDS)
        rc = SLD_TX_TOO_MANY;
    else if (argc == 0 || argc > SLD_TX_MAX_ARGS || bytes > max_bytes || tx->arg_bytes > max_bytes - bytes)
        rc = SLD_TX_TOO_BIG;
    if (rc == SLD_TX_QUEUED) {
        put_u32(&tx->cmds, (uint32_t)argc);
        for (size_t i = 0; i < argc; i++) {
            put_u32(&tx->cmds, (uint32_t)argv[i].len);
            sld_buf_append(&tx->cmds, argv[i].ptr, argv[i].len);
        }
        if (tx->cmds.failed)
            rc = SLD_TX_NO_MEMORY;
    }
    if (rc != SLD_TX_QUEUED) {
        sld_tx_fail(tx);
        return rc;
    }
    tx->n++;
    tx->arg_bytes += bytes;
    return SLD_TX_QUEUED;
}

bool sld_tx_next(const sld_tx_t *tx, size_t *pos, sld_arg_t *argv, size_t *argc) {
    if (tx->failed || *pos >= tx->cmds.len)
        return false;
    const char *p = tx->cmds.data + *pos;
    size_t n = get_u32(p);
    p += sizeof(uint32_t);
    for (size_t i = 0; i < n; i++) { /* written by sld_tx_add: within bounds */
        size_t len = get_u32(p);
        p += sizeof(uint32_t);
        argv[i] = (sld_arg_t){p, len};
        p += len;
    }
    *argc = n;
    *pos = (size_t)(p - tx->cmds.data);
    return true;
}
