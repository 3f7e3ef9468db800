/* fuzz_redis_reply.c -- libFuzzer target for what sluiced reads from Redis.
 *
 * The input is read twice: as RESP (hiredis's reader builds the replies)
 * handed to the CLUSTER SLOTS parser and the evaluation reply parsers, and
 * as the bytes of a binary batch reply of evaluate.lua. Whatever a broken
 * or hostile server sends must be refused or read within bounds, never
 * crash. hiredis's own reader allocates what a header announces, so inputs
 * announcing more than 100,000 elements or bytes are skipped: that is
 * hiredis's limit to set, not ours. Build and run: make fuzz.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "sluice.h"
#include "store/redis/cluster.h"
#include "store/redis/script.h"

static sl_policy_t *policies[3];

static void setup(void) {
    static sl_limit_t one[] = {{.algorithm = SL_GCRA, .limit = 10, .period = SL_USEC_PER_SEC, .burst = 4}};
    static sl_limit_t three[] = {
        {.algorithm = SL_SLIDING_LOG, .limit = 10, .period = 3600 * SL_USEC_PER_SEC},
        {.algorithm = SL_FIXED_WINDOW, .limit = 3, .period = 60 * SL_USEC_PER_SEC},
        {.algorithm = SL_SLIDING_WINDOW, .limit = 7, .period = 60 * SL_USEC_PER_SEC, .precision = 6},
    };
    sl_policy_config_t a = {.name = "a", .limits = one, .nlimits = 1};
    sl_policy_config_t b = {.name = "b", .limits = three, .nlimits = 3};
    sl_policy_config_t c = {.name = "c", .limits = one, .nlimits = 1, .mode = SL_MODE_ELASTIC,
                            .pool = {.algorithm = SL_TOKEN_BUCKET, .limit = 100, .period = SL_USEC_PER_SEC}};
    if (sl_policy_new(&a, &policies[0], NULL, 0) || sl_policy_new(&b, &policies[1], NULL, 0) ||
        sl_policy_new(&c, &policies[2], NULL, 0))
        abort();
}

/* Whether a RESP header in the input announces something huge. */
static bool announces_too_much(const uint8_t *data, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*' && data[i] != '$' && data[i] != '%' && data[i] != '~')
            continue;
        uint64_t n = 0;
        for (size_t k = i + 1; k < size && data[k] >= '0' && data[k] <= '9'; k++)
            if ((n = n * 10 + (uint64_t)(data[k] - '0')) > 100000)
                return true;
    }
    return false;
}

static void read_evaluation(const redisReply *r, size_t n) {
    sl__redis_eval_req_t reqs[SL__REDIS_MAX_BATCH];
    for (size_t i = 0; i < n; i++)
        reqs[i] = (sl__redis_eval_req_t){.p = policies[i % 3], .key = "k", .key_len = 1, .cost = 1};
    sl_decision_t d;
    sl_limit_report_t limits[SL_MAX_LIMITS];
    const char *why = NULL;
    for (size_t i = 0; i < 3; i++)
        if (sl__redis_parse_evaluate(policies[i], r, &d, limits, &why) == SL_OK && d.limit_index >= 0)
            (void)limits[d.limit_index];
    size_t offsets[SL__REDIS_MAX_BATCH];
    if (sl__redis_batch_offsets(reqs, n, r, offsets, &why) == SL_OK) {
        for (size_t i = 0; i < n; i++)
            if (sl__redis_parse_evaluate_at(&reqs[i], r, offsets[i], &d, limits, &why) == SL_OK &&
                d.limit_index >= 0 && (size_t)d.limit_index >= sl_policy_limit_count(reqs[i].p))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (policies[0] == NULL)
        setup();
    size_t n = size ? (size_t)data[0] % SL__REDIS_MAX_BATCH + 1 : 1;
    /* the bytes as evaluate.lua's binary reply */
    redisReply s = {.type = REDIS_REPLY_STRING, .str = (char *)data, .len = size};
    read_evaluation(&s, n);
    if (announces_too_much(data, size))
        return 0;
    /* the bytes as RESP, reply after reply */
    redisReader *reader = redisReaderCreate();
    redisReaderFeed(reader, (const char *)data, size);
    static sl__redis_slot_map_t map;
    for (int k = 0; k < 16; k++) {
        void *reply = NULL;
        if (redisReaderGetReply(reader, &reply) != REDIS_OK || reply == NULL)
            break;
        const char *why = NULL;
        if (sl__redis_parse_cluster_slots(reply, "127.0.0.1", &map, &why) == 0 && map.assigned > SL__REDIS_SLOTS)
            abort();
        read_evaluation(reply, n);
        const redisReply *r = reply;
        if (r->type == REDIS_REPLY_ERROR) {
            sl__redis_redirect_t rd;
            (void)sl__redis_parse_redirect(r->str, r->len, &rd);
        }
        freeReplyObject(reply);
    }
    redisReaderFree(reader);
    return 0;
}
