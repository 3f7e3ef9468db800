/* quorum.c -- Sentinel answers and their majority (quorum.h). */
#include "store/redis/quorum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

int sl__redis_parse_master_addr(const redisReply *r, sl__redis_addr_t *out, const char **why) {
    if (r == NULL) {
        *why = "no reply";
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        *why = r->str;
        return -1;
    }
    if (r->type == REDIS_REPLY_NIL) {
        *why = "unknown master name";
        return -1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[0]->len == 0 || r->element[0]->len > SL__REDIS_URL_MAX_HOST ||
        memchr(r->element[0]->str, '\0', r->element[0]->len) != NULL) {
        *why = "not a [host, port] reply";
        return -1;
    }
    char *end;
    long port = strtol(r->element[1]->str, &end, 10);
    if (r->element[1]->len == 0 || *end != '\0' || port <= 0 || port > 65535) {
        *why = "the port is not a port";
        return -1;
    }
    memcpy(out->host, r->element[0]->str, r->element[0]->len);
    out->host[r->element[0]->len] = '\0';
    out->port = (uint16_t)port;
    return 0;
}

static bool same(const sl__redis_addr_t *a, const sl__redis_addr_t *b) {
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

int sl__redis_sentinel_majority(const sl__redis_sentinel_answer_t *answers, size_t n,
                                size_t configured, size_t *votes) {
    int best = -1;
    size_t best_votes = 0;
    for (size_t i = 0; i < n; i++) {
        if (!answers[i].ok)
            continue;
        size_t v = 0;
        for (size_t k = 0; k < n; k++)
            v += answers[k].ok && same(&answers[k].master, &answers[i].master);
        if (v > best_votes) {
            best_votes = v;
            best = (int)i;
        }
    }
    *votes = best_votes;
    return best_votes * 2 > configured ? best : -1;
}

const char *sl__redis_sentinel_report(const sl__redis_sentinel_answer_t *answers,
                                      const sl__redis_addr_t *sentinels, size_t n, char *buf,
                                      size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++) {
        int k = answers[i].ok
                    ? snprintf(buf + at, len - at, "%s%s:%u says %s:%u", i ? ", " : "",
                               sentinels[i].host, (unsigned)sentinels[i].port,
                               answers[i].master.host, (unsigned)answers[i].master.port)
                    : snprintf(buf + at, len - at, "%s%s:%u: %s", i ? ", " : "", sentinels[i].host,
                               (unsigned)sentinels[i].port, answers[i].why);
        if (k < 0)
            break;
        at += (size_t)k;
    }
    return buf;
}
