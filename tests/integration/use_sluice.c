/* use_sluice.c -- a user program built against the installed libsluice. */
#include <stdio.h>
#include <sluice.h>

int main(void) {
    sl_store_t *store;
    sl_limiter_t *limiter;
    sl_policy_t *policy;
    sl_limit_t limit = {.algorithm = SL_TOKEN_BUCKET, .limit = 3, .period = 60 * SL_USEC_PER_SEC};
    sl_policy_config_t cfg = {.name = "per_user", .limits = &limit, .nlimits = 1};
    if (sl_store_memory_new(NULL, &store) || sl_limiter_new(store, NULL, &limiter) ||
        sl_policy_new(&cfg, &policy, NULL, 0))
        return 1;
    int allowed = 0;
    for (int i = 0; i < 5; i++) {
        sl_decision_t d;
        if (sl_check(limiter, policy, "alice", 5, 1, &d) != SL_OK)
            return 1;
        allowed += d.allowed;
    }
    printf("use_sluice: %d of 5 allowed (%s)\n", allowed, SL_VERSION_STRING);
    sl_policy_free(policy);
    sl_limiter_free(limiter);
    sl_store_free(store);
    return allowed == 3 ? 0 : 1;
}
