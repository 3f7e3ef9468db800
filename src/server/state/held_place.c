/* held_place.c -- a waiter's place, kept to be given back (see
 * held_place.h). */
#include "server/state/held_place.h"

#include <stdlib.h>
#include <string.h>

#include "server/engine/policies.h"

struct sld_held_place {
    char policy[SL_MAX_POLICY_NAME + 1];
    const sl_policy_t *adhoc; /* CL.ACQUIRE's (policy ""): lives as long as the daemon */
    uint64_t cost;
    sl__held_t held;
    size_t key_len;
    char key[];
};

static sld_held_place_t *place_of(const sld_request_t *r, const sl__held_t *held);

sld_held_place_t *sld_held_place_new(const sld_request_t *r, const sl__held_t *held) {
    return held->at > 0 ? place_of(r, held) : NULL;
}

sld_held_place_t *sld_held_place_pending(const sld_request_t *r) {
    const sl__held_t none = {0};
    return place_of(r, &none);
}

sl__held_t *sld_held_place_held(sld_held_place_t *hp) { return &hp->held; }

static sld_held_place_t *place_of(const sld_request_t *r, const sl__held_t *held) {
    bool adhoc = r->origin.index == SIZE_MAX; /* CL.THROTTLE's parameters: engine/throttle.h */
    if (r->origin.rt == NULL && !adhoc)
        return NULL;
    const sld_policy_t *pc = adhoc ? NULL : sld_policies_config(r->origin.rt->policies, r->origin.index);
    size_t name_len = pc ? strlen(pc->name) : 0;
    if (adhoc ? r->p == NULL : name_len == 0 || name_len > SL_MAX_POLICY_NAME)
        return NULL;
    sld_held_place_t *hp = malloc(sizeof *hp + r->key_len);
    if (hp == NULL)
        return NULL;
    memcpy(hp->policy, adhoc ? "" : pc->name, name_len + 1);
    hp->adhoc = adhoc ? r->p : NULL;
    hp->cost = r->cost;
    hp->held = *held;
    hp->key_len = r->key_len;
    if (r->key_len)
        memcpy(hp->key, r->key, r->key_len);
    return hp;
}

void sld_held_place_give_back(sld_daemon_t *d, uint32_t worker, sld_held_place_t *hp) {
    if (hp == NULL || hp->held.at <= 0) { /* nothing was held (an answer without a place) */
        free(hp);
        return;
    }
    const sld_runtime_t *rt = sld_runtime(d);
    size_t index = SIZE_MAX;
    const sl_policy_t *p = hp->adhoc ? hp->adhoc
                                     : sld_policies_find(rt->policies, hp->policy, strlen(hp->policy),
                                                         hp->key, hp->key_len, NULL, &index);
    if (p != NULL) {
        sld_request_t r = {.origin = {.rt = rt, .index = index}, .p = p, .key = hp->key,
                           .key_len = hp->key_len, .cost = hp->cost, .held = &hp->held};
        (void)sld_engine_refund(d->engine, worker, &r);
    }
    free(hp);
}

void sld_held_place_free(sld_held_place_t *hp) { free(hp); }
