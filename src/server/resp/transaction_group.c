/* transaction_group.c -- EXEC's commands run as one group (see
 * transaction_group.h). */
#include <stdint.h>
#include <stdlib.h>

#include "server/engine/engine.h"
#include "server/engine/policies.h"
#include "server/engine/throttle.h"
#include "server/resp/throttle_args.h"
#include "server/resp/transaction_group.h"

/* The (policy, key) command argv touches into *r: true when it touches
 * one; *every_key when it may touch keys under every parameter set. A
 * command whose arguments do not resolve touches nothing (its handler
 * answers an error). */
static bool touched(sld_client_t *c, const sld_arg_t *argv, size_t argc, sld_request_t *r,
                    bool *every_key) {
    const sld_arg_t *name = &argv[0];
    if (sld_arg_is(name, "CL.THROTTLE") || sld_arg_is(name, "GCRA")) {
        sld_throttle_args_t a;
        const sl_policy_t *p, *local;
        if ((sld_arg_is(name, "GCRA") ? sld_gcra_parse(argv, argc, &a)
                                       : sld_throttle_parse(argv, argc, &a)) != NULL ||
            sld_throttles_get(c->d->throttles, a.max_burst, a.interval_ns, &p, &local) != SL_OK)
            return false;
        *r = (sld_request_t){.origin = {.rt = c->rt, .index = SIZE_MAX, .local = local}, .p = p,
                             .key = a.key.ptr, .key_len = a.key.len};
        return true;
    }
    if (argc >= 3 && (sld_arg_is(name, "SL.CHECK") || sld_arg_is(name, "SL.PEEK") ||
                      sld_arg_is(name, "SL.RESET"))) {
        size_t index;
        const sl_policy_t *p = sld_policies_find(c->rt->policies, argv[1].ptr, argv[1].len,
                                                 argv[2].ptr, argv[2].len, NULL, &index);
        if (p == NULL)
            return false;
        *r = (sld_request_t){.origin = {.rt = c->rt, .index = index}, .p = p, .key = argv[2].ptr,
                             .key_len = argv[2].len};
        return true;
    }
    /* a key under every parameter set; or every shard in turn (the store's
     * statistics), which a thread holding some may take only if it holds
     * them all (any other order could wait on a group waiting on it) */
    if (sld_arg_is(name, "DEL") || sld_arg_is(name, "UNLINK") || sld_arg_is(name, "EXISTS") ||
        sld_arg_is(name, "TTL") || sld_arg_is(name, "PTTL") || sld_arg_is(name, "INFO") ||
        sld_arg_is(name, "DBSIZE") || sld_arg_is(name, "SL.STATS"))
        *every_key = true;
    return false;
}

void sld_tx_exec(sld_client_t *c, const sld_tx_t *tx, sld_tx_run_fn run) {
    sld_arg_t args[SLD_TX_MAX_ARGS];
    size_t pos = 0, n;
    /* one request per command at most; out of memory: the whole store */
    sld_request_t *reqs = tx->n ? malloc(tx->n * sizeof *reqs) : NULL;
    size_t k = 0;
    bool every_key = tx->n > 0 && reqs == NULL;
    while (reqs && sld_tx_next(tx, &pos, args, &n))
        k += touched(c, args, n, &reqs[k], &every_key);
    sld_engine_t *e = c->d->engine;
    if (k > 0 || every_key)
        sld_engine_group_begin(e, c->worker, reqs, k, every_key);
    pos = 0;
    while (sld_tx_next(tx, &pos, args, &n))
        run(c, args, n);
    if (k > 0 || every_key)
        sld_engine_group_end(e, c->worker);
    free(reqs);
}
