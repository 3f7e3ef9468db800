/* grpc_decide.c -- one ShouldRateLimit through the engine (see grpc_decide.h).
 *
 * A call goes through phases, each a walk over the descriptors that one
 * decision at a time may leave (a decision of the Redis store comes later,
 * on the same worker's loop): PEEK (only with several matched
 * descriptors), CONFIRM (the peeks that denied, decided for real), CHARGE.
 * Each descriptor's policy is looked up again in the runtime in force at
 * each decision, so nothing of a runtime is kept across loop turns (within
 * the turn the call starts in, the lookup made when it started serves
 * while that runtime is still the one in force); what the answer needs of
 * a decision (its current limit, its header fields) is copied out when it
 * is made, but for its limit's name, the runtime's own until the call
 * waits for the store (then copied: keep_names). Which rules apply (Envoy
 * ratelimit's, or sluiced's policies named after the domain) and each
 * descriptor's key are settled when the call starts.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine.h"
#include "server/grpc/grpc_decide.h"
#include "server/grpc/grpc_encode.h"
#include "server/grpc/grpc_spare.h"
#include "server/grpc/grpc_stats.h"
#include "server/http/http_ratelimit.h"
#include "server/rls/rls_section.h"

enum phase { PEEK, CONFIRM, CHARGE, DONE };

/* gRPC status codes (grpc/status.h), without its header here */
#define GRPC_OK 0
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_RESOURCE_EXHAUSTED 8
#define GRPC_UNAVAILABLE 14

/* What decides descriptor i now. */
typedef struct resolved {
    const sl_policy_t *p;      /* NULL: nothing to decide */
    bool over;                 /* no policy, yet over the limit (requests_per_unit 0) */
    size_t index;              /* the policy's index in the configuration, SIZE_MAX for rls's */
    const char *name;          /* current_limit.name and the header fields' item name */
    bool rls_limit;            /* rpu and unit are Envoy ratelimit's own */
    uint32_t rpu;
    int unit;
} resolved_t;

typedef struct item {
    char *key;                 /* in the call's own block, or malloc'd (key_owned) */
    size_t key_len;
    bool key_owned;
    sld_rls_entry_t *entries;  /* the descriptor's, for the rls matcher */
    bool replaced;             /* another matched limit replaces its own */
    bool matched;              /* a policy decides it */
    bool decided;              /* status below is from a decision */
    bool charged;              /* a real decision admitted it */
    bool allowed;
    char *name;                /* a kept status.name: name_small, or malloc'd */
    char *inline_values;       /* VALUES_INLINE bytes in the call's block */
    sld_buf_t values;          /* when they do not fit inline_values (malloc'd) */
    size_t nheaders;
    uint64_t remaining;        /* to pick the headers of the most limiting */
    uint64_t limit;            /* the decision's, for near_limit */
    bool limited;              /* over a limit, even if let through */
    char *stat;                /* its stat name (rls rules only), or NULL */
    size_t stat_len;
    char *rule_stat;           /* the rule's own, when stat is detailed */
    bool shadow;               /* the rule is in shadow mode */
    /* From here on, each field is set before it is read: not zeroed when
     * the call starts (ITEM_ZEROED). */
    sld_grpc_status_t status;  /* its name the runtime's until the call waits (keep_names) */
    char name_small[40];
    /* the fields as the encoder takes them (values in inline_values or
     * values), with their names' and values' lengths (name, value, ...) */
    sld_grpc_header_t headers[SLD_HTTP_MAX_HEADERS];
    size_t header_lens[2 * SLD_HTTP_MAX_HEADERS];
    resolved_t rs;             /* as resolved in rs_rt when the call started */
    const sld_runtime_t *rs_rt;
} item_t;

#define ITEM_ZEROED offsetof(item_t, status)

typedef struct call {
    sld_daemon_t *d;
    uint32_t worker;
    sld_grpc_rls_request_t req;
    sld_grpc_answer_fn answer;
    void *arg;
    enum phase phase;
    bool rls;                  /* Envoy ratelimit's rules decide (rls: section) */
    uint32_t slot;             /* metrics slot of their decisions */
    sld_grpc_stats_t *stats;   /* Envoy ratelimit's per-rule stats, or NULL */
    size_t i;                  /* the descriptor the phase is at */
    size_t nmatched;
    size_t ndenied;            /* decided descriptors whose answer is a denial */
    bool fresh;                /* not yet back on the loop since it started: items' rs hold */
    char *keys;                /* room for the descriptors' keys, after the items */
    item_t items[];
} call_t;

/* Each descriptor's room for its header fields' values in the call's
 * block: a policy of a few limits with a name of a few dozen bytes. */
#define VALUES_INLINE 384

/* The length of a descriptor's key "k1=v1|k2=v2". */
static size_t key_length(const sld_grpc_descriptor_t *desc) {
    size_t len = 0;
    for (size_t k = 0; k < desc->nentries; k++)
        len += desc->entries[k].key.len + 1 + desc->entries[k].value.len + (k > 0);
    return len;
}

/* Writes it, NUL-terminated, into s (key_length + 1 bytes): its length. */
static size_t key_write(const sld_grpc_descriptor_t *desc, char *s) {
    size_t at = 0;
    for (size_t k = 0; k < desc->nentries; k++) {
        const sld_grpc_entry_t *e = &desc->entries[k];
        if (k > 0)
            s[at++] = '|';
        memcpy(s + at, e->key.ptr, e->key.len);
        at += e->key.len;
        s[at++] = '=';
        if (e->value.len)
            memcpy(s + at, e->value.ptr, e->value.len);
        at += e->value.len;
    }
    s[at] = '\0';
    return at;
}

int sld_grpc_descriptor_key(const sld_grpc_descriptor_t *desc, uint32_t max_key_bytes, char **key,
                            size_t *key_len) {
    size_t len = key_length(desc);
    *key = NULL;
    if (len > max_key_bytes)
        return SL_ERANGE;
    if ((*key = malloc(len + 1)) == NULL)
        return SL_ENOMEM;
    *key_len = key_write(desc, *key);
    return SL_OK;
}

/* Sets descriptor i's status name: the runtime's own, valid while the
 * call runs in this loop turn (keep_names copies it when the call waits). */
static void set_name(item_t *it, const char *name) {
    it->status.name = name;
    it->status.name_len = strlen(name);
}

/* The call waits for the store, and the runtime its status names point
 * into may be replaced meanwhile: each is copied into the item. */
static void keep_names(call_t *c) {
    for (size_t i = 0; i < c->req.ndescriptors; i++) {
        item_t *it = &c->items[i];
        const char *name = it->status.name;
        if (!it->decided || name == NULL || name == it->name)
            continue;
        if (it->name != it->name_small)
            free(it->name);
        size_t len = it->status.name_len;
        if (len < sizeof it->name_small) {
            memcpy(it->name_small, name, len + 1);
            it->name = it->name_small;
        } else {
            it->name = strdup(name);
        }
        it->status.name = it->name;
        it->status.name_len = it->name ? len : 0;
    }
}

static void call_free(call_t *c) {
    for (size_t i = 0; i < c->req.ndescriptors; i++) {
        item_t *it = &c->items[i];
        /* what a call of sluiced's policies seldom has: no free(NULL) each */
        if (it->key_owned)
            free(it->key);
        if (it->entries)
            free(it->entries);
        if (it->name && it->name != it->name_small)
            free(it->name);
        if (it->values.data)
            sld_buf_free(&it->values);
        if (it->stat)
            free(it->stat);
        if (it->rule_stat)
            free(it->rule_stat);
    }
    sld_grpc_rls_request_free(&c->req);
    sld_grpc_spare_give(c);
}

static void fail(call_t *c, int status, const char *message) {
    c->answer(c->arg, status, message, NULL, 0);
    call_free(c);
}

static bool resolve(const call_t *c, const sld_runtime_t *rt, size_t i, resolved_t *out) {
    const item_t *it = &c->items[i];
    const sld_grpc_descriptor_t *desc = &c->req.descriptors[i];
    memset(out, 0, sizeof *out);
    out->index = SIZE_MAX;
    sld_rls_config_t *rules = sld_rls_rules(rt->cfg);
    if (!c->rls) {
        if (rules != NULL)
            return false; /* rules came with a reload meanwhile */
        out->p = sld_policies_find(rt->policies, c->req.domain.ptr, c->req.domain.len, it->key, it->key_len,
                                   NULL, &out->index);
        if (out->p)
            out->name = sld_policies_config(rt->policies, out->index)->name;
        return out->p != NULL;
    }
    if (rules == NULL || it->replaced || !sld_rls_has_domain(rules, c->req.domain.ptr, c->req.domain.len))
        return false;
    if (desc->has_limit) {
        /* a request-supplied limit, as the reference applies it: in a known
         * domain, whatever the rules say */
        out->p = sld_rls_override_policy(rules, desc->limit_rpu, (sld_rls_unit_t)desc->limit_unit);
        out->over = out->p == NULL && desc->limit_rpu == 0;
        out->name = "override";
        out->rls_limit = true;
        out->rpu = desc->limit_rpu;
        out->unit = desc->limit_unit;
        return out->p != NULL || out->over;
    }
    const sld_rls_limit_t *l =
        sld_rls_match(rules, c->req.domain.ptr, c->req.domain.len, it->entries, desc->nentries);
    if (l == NULL || l->unlimited)
        return false;
    out->p = l->policy;
    out->over = l->policy == NULL; /* requests_per_unit 0 */
    out->name = l->name ? l->name : l->stat_name;
    out->rls_limit = true;
    out->rpu = l->requests_per_unit;
    out->unit = (int)l->unit;
    return true;
}

/* The header ids rls.response_headers asks for, one bit each.
 * Retry-After goes with either kind. */
static unsigned headers_wanted(sld_rls_headers_t mode) {
    unsigned ietf = 1u << SLD_H_RATELIMIT_POLICY | 1u << SLD_H_RATELIMIT;
    unsigned x = 1u << SLD_H_X_RATELIMIT_LIMIT | 1u << SLD_H_X_RATELIMIT_REMAINING | 1u << SLD_H_X_RATELIMIT_RESET;
    unsigned all = ietf | x | 1u << SLD_H_RETRY_AFTER;
    switch (mode) {
    case SLD_RLS_HEADERS_OFF:
        return 0;
    case SLD_RLS_HEADERS_IETF:
        return all & ~x;
    case SLD_RLS_HEADERS_X:
        return all & ~ietf;
    default:
        return all;
    }
}

/* Copies out what the answer needs of a decision of descriptor i. */
static void record(call_t *c, const sld_runtime_t *rt, size_t i, const resolved_t *rs, const sl_decision_t *dec,
                   const sl_limit_report_t *lr, bool real) {
    item_t *it = &c->items[i];
    const sl_policy_t *p = rs->p;
    /* a configured policy's soft tolerance shows in its header fields */
    uint32_t soft = 0;
    if (rs->index != SIZE_MAX) {
        const sld_policy_t *pc = sld_policies_config(rt->policies, rs->index);
        soft = pc->mode == SL_MODE_SOFT ? pc->soft_percent : 0;
    }
    /* a descriptor decided again (CONFIRM) trades its earlier answer */
    if (it->decided && !it->allowed)
        c->ndenied--;
    if (!dec->allowed)
        c->ndenied++;
    it->decided = true;
    it->allowed = dec->allowed;
    it->limited = dec->limited || !dec->allowed;
    it->limit = dec->limit;
    it->charged = it->charged || (real && dec->allowed);
    it->remaining = dec->remaining;
    const sl_limit_t *l = sl_policy_limit(p, dec->limit_index > 0 ? (size_t)dec->limit_index : 0);
    it->status = (sld_grpc_status_t){.code = dec->allowed ? SLD_GRPC_CODE_OK : SLD_GRPC_CODE_OVER_LIMIT,
                                     .has_limit = true,
                                     .remaining = dec->remaining > UINT32_MAX ? UINT32_MAX : (uint32_t)dec->remaining,
                                     .until_reset = dec->allowed || dec->retry_after == SL_NEVER ||
                                                            dec->retry_after < dec->reset_after
                                                        ? dec->reset_after
                                                        : dec->retry_after};
    if (rs->rls_limit) {
        it->status.rpu = rs->rpu;
        it->status.unit = rs->unit;
    } else {
        sld_grpc_limit_unit(l->limit, l->period, &it->status.unit, &it->status.rpu);
    }
    set_name(it, rs->name);
    it->nheaders = 0;
    if (lr == NULL)
        return;
    /* the HTTP front's own fields, written into a reply of our own whose
     * values the item then keeps: in its room in the block when they fit
     * (the writer then never grows it), else in a buffer of its own (and a
     * later decision's reuse) */
    sld_http_reply_t r;
    r.nheaders = 0;
    bool fits = sld_http_rate_headers_room(p, it->status.name_len) <= VALUES_INLINE;
    if (fits) {
        r.values = (sld_buf_t){.data = it->inline_values, .cap = VALUES_INLINE};
    } else {
        r.values = it->values;
        sld_buf_reset(&r.values);
    }
    sld_http_rate_headers(&r, rs->name, p, soft, dec, lr);
    if (!fits)
        it->values = r.values;
    if (r.values.failed)
        return;
    unsigned wanted = headers_wanted(sld_rls_response_headers(rt->cfg));
    /* counted in a local: the stores below could alias it->nheaders */
    size_t nh = 0;
    for (size_t k = 0; k < r.nheaders; k++) {
        const sld_http_header_t *f = &r.headers[k];
        if (!(wanted >> f->id & 1))
            continue;
        it->headers[nh] = (sld_grpc_header_t){f->name, r.values.data + f->off};
        it->header_lens[2 * nh] = sld_http_header_name_lens[f->id];
        it->header_lens[2 * nh + 1] = f->len;
        nh++;
    }
    it->nheaders = nh;
}

/* Envoy ratelimit's stats of each rule that decided a descriptor, as
 * answered. A descriptor that was only asked (another one denied, so
 * nothing was charged) counts as its answer says, as the reference, which
 * charges it, would count it. */
static void count_stats(const call_t *c) {
    for (size_t i = 0; i < c->req.ndescriptors; i++) {
        const item_t *it = &c->items[i];
        if (it->stat == NULL || !it->decided || it->replaced)
            continue;
        uint64_t hits = c->req.descriptors[i].hits;
        uint64_t used = it->limit > it->remaining ? it->limit - it->remaining : 0;
        if (it->charged) /* remaining is after this one: what was in use before it */
            used = used > hits ? used - hits : 0;
        sld_grpc_hits_t h = sld_grpc_hits_classify(it->limit, used, hits, it->allowed, it->limited, it->shadow);
        const char *rule = it->rule_stat ? it->rule_stat : it->stat;
        sld_grpc_stats_count(c->stats, c->worker, c->req.domain.ptr, c->req.domain.len, it->stat, it->stat_len, rule,
                             strlen(rule), it->rule_stat != NULL, &h);
    }
}

/* answers up to this many bytes are encoded on the stack */
#define ANSWER_ON_STACK 2048

/* Encodes and sends the answer, then frees the call. */
static void finish(call_t *c) {
    size_t n = c->req.ndescriptors;
    if (c->rls && c->stats)
        count_stats(c);
    sld_grpc_status_t st[SLD_GRPC_MAX_DESCRIPTORS];
    bool over = false;
    const item_t *worst = NULL;
    for (size_t i = 0; i < n; i++) {
        const item_t *it = &c->items[i];
        st[i] = it->decided ? it->status : (sld_grpc_status_t){.code = SLD_GRPC_CODE_OK};
        if (!it->decided)
            continue;
        over = over || !it->allowed;
        /* the headers of the most limiting descriptor: a denied one, else
         * the one with the fewest left (as Envoy's reference service) */
        if (worst == NULL || (worst->allowed && !it->allowed) ||
            (worst->allowed == it->allowed && it->remaining < worst->remaining))
            worst = it;
    }
    sld_grpc_response_t r = {.overall_code = over ? SLD_GRPC_CODE_OVER_LIMIT : SLD_GRPC_CODE_OK,
                             .statuses = st,
                             .nstatuses = n,
                             .response_headers = worst ? worst->headers : NULL,
                             .nresponse_headers = worst ? worst->nheaders : 0,
                             .response_header_lens = worst ? worst->header_lens : NULL};
    /* written straight from the structs: on the stack for every answer of
     * a few descriptors, allocated only past that */
    uint8_t stack[ANSWER_ON_STACK];
    size_t cap = sld_grpc_response_bound(&r);
    uint8_t *body = cap <= sizeof stack ? stack : malloc(cap);
    if (body == NULL) {
        fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    size_t len = sld_grpc_response_write(&r, body);
    c->answer(c->arg, GRPC_OK, NULL, body, len);
    if (body != stack)
        free(body);
    call_free(c);
}

/* The next descriptor the phase decides, from c->i on; moves to the next
 * phase at the end of one. False when everything is decided. */
static bool next(call_t *c) {
    size_t n = c->req.ndescriptors;
    for (;;) {
        for (; c->i < n; c->i++) {
            const item_t *it = &c->items[c->i];
            if (!it->matched)
                continue;
            if (c->phase == PEEK || (c->phase == CONFIRM && !it->allowed) || (c->phase == CHARGE && !it->charged))
                return true;
        }
        c->i = 0;
        bool denied = c->ndenied > 0;
        if (c->phase == PEEK) {
            c->phase = denied ? CONFIRM : CHARGE;
        } else if (c->phase == CONFIRM) {
            /* every denial passed when asked for real (a race): charge the rest */
            c->phase = denied ? DONE : CHARGE;
        } else {
            c->phase = DONE;
        }
        if (c->phase == DONE)
            return false;
    }
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr);

/* Decides what is left, as long as the store answers at once. */
static void advance(call_t *c) {
    while (next(c)) {
        const sld_runtime_t *rt = sld_runtime(c->d);
        item_t *it = &c->items[c->i];
        /* a runtime still in force within the turn the call started in is
         * the same object (it is not freed before the turn ends): the
         * policy resolved then, used in place */
        const resolved_t *rs = &it->rs;
        resolved_t now;
        if (!c->fresh || it->rs_rt != rt) {
            if (!resolve(c, rt, c->i, &now))
                now.p = NULL;
            rs = &now;
        }
        if (rs->p == NULL) { /* gone with a reload meanwhile */
            it->matched = false;
            continue;
        }
        uint32_t slot = rs->index == SIZE_MAX ? c->slot : sld_policies_slot(rt->policies, rs->index);
        sld_request_t r = {.origin = {.rt = rt, .index = rs->index, .slot = slot},
                           .p = rs->p, .key = it->key, .key_len = it->key_len,
                           .cost = c->req.descriptors[c->i].hits,
                           .flags = c->phase == PEEK ? SL_DECIDE_PEEK : 0};
        sl_decision_t dec;
        sl_limit_report_t lr[SL_MAX_LIMITS];
        int rc = sld_engine_decide(c->d->engine, c->worker, &r, &dec, lr, on_decided, c);
        if (rc == SLD_PENDING) {
            keep_names(c);
            return;
        }
        if (rc != SL_OK) {
            fail(c, GRPC_UNAVAILABLE, sl_strerror(rc));
            return;
        }
        record(c, rt, c->i, rs, &dec, lr, c->phase != PEEK);
        c->i++;
    }
    finish(c);
}

static void on_decided(void *arg, int rc, const sl_decision_t *dec, const sl_limit_report_t *lr) {
    call_t *c = arg;
    c->fresh = false;
    if (rc != SL_OK) {
        fail(c, GRPC_UNAVAILABLE, sl_strerror(rc));
        return;
    }
    const sld_runtime_t *rt = sld_runtime(c->d);
    resolved_t rs;
    if (!resolve(c, rt, c->i, &rs) || rs.p == NULL)
        c->items[c->i].matched = false;
    else
        record(c, rt, c->i, &rs, dec, lr, c->phase != PEEK);
    c->i++;
    advance(c);
}

/* The stat name descriptor it counts under (none when no limit applies or
 * it is unlimited): the rule's, or the request's values (detailed_metric,
 * value_to_metric) with the rule's kept for when those are past the bound;
 * request-supplied limits all count as "override". */
static int stat_names(item_t *it, const sld_rls_match_t *m, const sld_rls_limit_t *l, bool has_limit,
                      sld_span_t domain, uint32_t max_key) {
    if (has_limit) {
        it->stat = strdup("override");
        it->stat_len = it->stat ? strlen(it->stat) : 0;
        return it->stat ? SL_OK : SL_ENOMEM;
    }
    if (l == NULL || l->unlimited)
        return SL_OK;
    it->shadow = l->shadow_mode || (l->policy && sl_policy_mode(l->policy) == SL_MODE_SHADOW);
    size_t room = (size_t)max_key + domain.len + 64;
    char *buf = malloc(room);
    if (buf == NULL)
        return SL_ENOMEM;
    size_t len = sld_rls_stat(buf, room, m, domain.ptr, domain.len, it->entries, m->n);
    if (len == 0 || (len == strlen(l->stat_name) && memcmp(buf, l->stat_name, len) == 0)) {
        free(buf);
        it->stat = strdup(l->stat_name);
        it->stat_len = it->stat ? strlen(it->stat) : 0;
        return it->stat ? SL_OK : SL_ENOMEM;
    }
    it->stat = buf;
    it->stat_len = len;
    it->rule_stat = strdup(l->stat_name);
    return it->rule_stat ? SL_OK : SL_ENOMEM;
}

/* Settles each descriptor's key (and entries for the matcher), what
 * replaces what, and which are over before any decision. */
static int prepare(call_t *c, const sld_runtime_t *rt) {
    size_t n = c->req.ndescriptors;
    uint32_t max_key = rt->cfg->max_key_bytes;
    sld_rls_config_t *rules = sld_rls_rules(rt->cfg);
    const sld_rls_limit_t *limits[SLD_GRPC_MAX_DESCRIPTORS]; /* each set below, with rules */
    c->rls = rules != NULL;
    for (size_t i = 0; i < n; i++) {
        item_t *it = &c->items[i];
        const sld_grpc_descriptor_t *desc = &c->req.descriptors[i];
        if (!c->rls) {
            it->key = c->keys; /* the block holds every key: written, then measured */
            it->key_len = key_write(desc, it->key);
            if (it->key_len > max_key)
                return SL_ERANGE;
            c->keys += it->key_len + 1;
            continue;
        }
        it->key_owned = true;
        if ((it->entries = calloc(desc->nentries, sizeof *it->entries)) == NULL ||
            (it->key = malloc((size_t)max_key + 1)) == NULL)
            return SL_ENOMEM;
        for (size_t k = 0; k < desc->nentries; k++)
            it->entries[k] = (sld_rls_entry_t){desc->entries[k].key.ptr, desc->entries[k].key.len,
                                               desc->entries[k].value.ptr, desc->entries[k].value.len};
        sld_rls_match_t m;
        const sld_rls_limit_t *l = sld_rls_lookup(rules, c->req.domain.ptr, c->req.domain.len, it->entries,
                                                  desc->nentries, &m);
        limits[i] = desc->has_limit ? NULL : l;
        if (c->stats && sld_rls_has_domain(rules, c->req.domain.ptr, c->req.domain.len) &&
            stat_names(it, &m, l, desc->has_limit, c->req.domain, max_key) != SL_OK)
            return SL_ENOMEM;
        it->key_len = l && !desc->has_limit
                          ? sld_rls_match_key(it->key, max_key, &m, c->req.domain.ptr, c->req.domain.len,
                                              it->entries, desc->nentries)
                          : sld_rls_key(it->key, max_key, c->req.domain.ptr, c->req.domain.len, it->entries,
                                        desc->nentries);
        if (it->key_len == 0)
            return SL_ERANGE;
    }
    if (c->rls) {
        const sld_rls_limit_t *kept[SLD_GRPC_MAX_DESCRIPTORS];
        memcpy(kept, limits, n * sizeof kept[0]);
        sld_rls_apply_replaces(kept, n);
        for (size_t i = 0; i < n; i++)
            c->items[i].replaced = limits[i] != NULL && kept[i] == NULL;
    }
    bool over = false;
    for (size_t i = 0; i < n; i++) {
        item_t *it = &c->items[i];
        resolved_t rs;
        it->matched = resolve(c, rt, i, &rs);
        it->rs = rs;
        it->rs_rt = it->matched ? rt : NULL;
        if (it->matched && rs.over) {
            /* over before anything is counted: as the reference, every hit */
            it->matched = false;
            it->decided = true;
            it->allowed = false;
            c->ndenied++;
            it->status = (sld_grpc_status_t){.code = SLD_GRPC_CODE_OVER_LIMIT, .has_limit = true,
                                             .rpu = rs.rpu, .unit = rs.unit};
            set_name(it, rs.name ? rs.name : "");
            over = true;
        }
        c->nmatched += it->matched;
    }
    c->phase = c->nmatched > 1 || over ? PEEK : CHARGE;
    return SL_OK;
}

void sld_grpc_decide(sld_daemon_t *d, uint32_t worker, uint32_t slot, sld_grpc_stats_t *stats,
                     sld_grpc_rls_request_t *req, sld_grpc_answer_fn answer, void *arg) {
    size_t n = req->ndescriptors;
    /* one block, the worker's spare: the call, its items, their header
     * values' room, and room for the keys of sluiced's policies (Envoy
     * ratelimit's rules build theirs apart, up to max_key_bytes) */
    size_t head = sizeof(call_t) + n * sizeof(item_t), keys = 0;
    for (size_t i = 0; i < n; i++)
        keys += key_length(&req->descriptors[i]) + 1;
    call_t *c = sld_grpc_spare_take(head + n * VALUES_INLINE + keys);
    if (c != NULL) {
        memset(c, 0, sizeof *c);
        for (size_t i = 0; i < n; i++) {
            memset(&c->items[i], 0, ITEM_ZEROED);
            c->items[i].inline_values = (char *)c + head + i * VALUES_INLINE;
        }
        c->keys = (char *)c + head + n * VALUES_INLINE;
    }
    if (c == NULL) {
        sld_grpc_rls_request_free(req);
        answer(arg, GRPC_RESOURCE_EXHAUSTED, "out of memory", NULL, 0);
        return;
    }
    c->d = d;
    c->worker = worker;
    c->slot = slot;
    c->stats = stats;
    c->req = *req;
    memset(req, 0, sizeof *req);
    c->answer = answer;
    c->arg = arg;
    c->fresh = true;
    int rc = prepare(c, sld_runtime(d));
    if (rc != SL_OK) {
        fail(c, rc == SL_ERANGE ? GRPC_INVALID_ARGUMENT : GRPC_RESOURCE_EXHAUSTED,
             rc == SL_ERANGE ? "a descriptor's entries are longer than limits.max_key_bytes" : "out of memory");
        return;
    }
    advance(c);
}
