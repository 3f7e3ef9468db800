/* fuzz_cells.c -- libFuzzer target for the write-back state bytes.
 *
 * In write-back mode every daemon reads key states that another daemon (or
 * anyone who can write to Redis) put there: sl__cells_decode() must refuse
 * what is not a state and hand over only cells the algorithms can work on.
 * The input is decoded for a policy with one limit of each state shape
 * (rate, window, sub-window counters, 32- and 64-bit logs); what decodes is
 * then decided, charged and imported into a memory store at several
 * instants, and must encode and decode again. Build and run: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/journal.h"

static sl_policy_t *policy;

static void setup(void) {
    static const sl_limit_t limits[] = {
        {.algorithm = SL_GCRA, .limit = 10, .period = SL_USEC_PER_SEC, .burst = 4},
        {.algorithm = SL_FIXED_WINDOW, .limit = 5, .period = 60 * SL_USEC_PER_SEC},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 7, .period = 60 * SL_USEC_PER_SEC, .precision = 6},
        {.algorithm = SL_SLIDING_LOG, .limit = 6, .period = 3600 * SL_USEC_PER_SEC},
        {.algorithm = SL_SLIDING_LOG, .limit = 4, .period = (sl_usec_t)1 << 40},
        {.algorithm = SL_TOKEN_BUCKET, .limit = 3, .period = SL_USEC_PER_SEC, .count_denied = true},
    };
    sl_policy_config_t pc = {.name = "f", .limits = limits, .nlimits = 6};
    if (sl_policy_new(&pc, &policy, NULL, 0) != SL_OK)
        abort();
    sl__policy_write_back(policy, 3, 10000);
}

static const sl_usec_t instants[] = {0, 1, 1800000000000000, 1800000000500000, (sl_usec_t)1 << 61,
                                     ((sl_usec_t)1 << 62)};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (policy == NULL)
        setup();
    sl__cell_t cells[SL_MAX_LIMITS];
    if (sl__cells_decode(policy, data, size, cells) != SL_OK)
        return 0;
    uint64_t costs[SL_MAX_LIMITS] = {1, 2, 3, 1, 1, 5};
    for (size_t t = 0; t < sizeof instants / sizeof instants[0]; t++) {
        sl__verdict_t v;
        for (size_t i = 0; i < policy->nlimits; i++)
            sl__limit_decide(&policy->limits[i], &cells[i], instants[t], 1, &v);
        if (sl__policy_force(policy, cells, instants[t], instants[t] / 2, costs, sl__cells_prepare,
                             policy) != SL_OK)
            abort();
    }
    sl_usec_t now = instants[3];
    size_t need = sl__cells_encode(policy, cells, now, NULL, 0);
    unsigned char *again = need ? malloc(need) : NULL;
    if (need && (again == NULL || sl__cells_encode(policy, cells, now, again, need) != need))
        abort();
    sl__cell_t back[SL_MAX_LIMITS];
    if (sl__cells_decode(policy, again, need, back) != SL_OK)
        abort(); /* what we encode must decode */
    free(again);
    sl__cells_release(cells, policy->nlimits);
    /* and a decoded state is one the store takes and decides on. A store
     * per input: libFuzzer checks for leaks after an input, and the store
     * tags its out-of-line records' pointers (V_OUT), which LeakSanitizer
     * cannot follow from a store that outlives the input. */
    sl_memory_options_t mo = {.shards = 1, .seed = 1};
    sl_store_t *store = NULL;
    if (sl_store_memory_new(&mo, &store) != SL_OK)
        abort();
    if (sl__memory_import(store, policy, "k", 1, back, now, NULL, NULL) != SL_OK)
        abort();
    sl_limiter_t *limiter = NULL;
    sl_decision_t d;
    if (sl_limiter_new(store, NULL, &limiter) == SL_OK) {
        sl_check(limiter, policy, "k", 1, 1, &d);
        sl_limiter_free(limiter);
    }
    sl_store_free(store);
    return 0;
}
