/* grpc_messages.c -- protobuf messages <-> plain structs (see grpc_messages.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/ratelimit/v3/rls.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "server/grpc/grpc_messages.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest pb_request_t;
typedef Envoy__Extensions__Common__Ratelimit__V3__RateLimitDescriptor pb_descriptor_t;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse pb_response_t;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus pb_status_t;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit pb_limit_t;
typedef Envoy__Config__Core__V3__HeaderValue pb_header_t;

static sld_span_t span_of(const char *s) { return (sld_span_t){s, s ? strlen(s) : 0}; }

/* A request's memory: protobuf-c's unpacked message and the plain structs
 * come from one block sized from the message (a dozen mallocs less per
 * call); what does not fit is allocated on its own and chained. Freed as
 * one, never piece by piece. */
#define ARENA_MAX ((size_t)64 * 1024)

typedef struct arena_big {
    struct arena_big *next;
    max_align_t data[];
} arena_big_t;

typedef struct arena {
    size_t used, cap;
    arena_big_t *big;
    max_align_t data[];
} arena_t;

static void *arena_alloc(void *user_data, size_t size) {
    arena_t *a = user_data;
    size_t align = _Alignof(max_align_t);
    if (size > SIZE_MAX - sizeof(arena_big_t) - align)
        return NULL;
    size = (size + align - 1) & ~(align - 1);
    if (size <= a->cap - a->used) {
        void *p = (char *)a->data + a->used;
        a->used += size;
        return p;
    }
    arena_big_t *b = malloc(sizeof *b + size);
    if (b == NULL)
        return NULL;
    b->next = a->big;
    a->big = b;
    return b->data;
}

static void arena_keep(void *user_data, void *pointer) {
    (void)user_data;
    (void)pointer; /* freed with the arena */
}

static arena_t *arena_new(size_t len) {
    size_t cap = len < (ARENA_MAX - 512) / 8 ? 512 + 8 * len : ARENA_MAX;
    arena_t *a = malloc(sizeof *a + cap);
    if (a != NULL)
        *a = (arena_t){.used = 0, .cap = cap, .big = NULL};
    return a;
}

static void arena_free(arena_t *a) {
    if (a == NULL)
        return;
    while (a->big) {
        arena_big_t *b = a->big;
        a->big = b->next;
        free(b);
    }
    free(a);
}

static int bad(sld_grpc_rls_request_t *out, char *err, size_t err_len, const char *fmt, size_t a, size_t b) {
    snprintf(err, err_len, fmt, a, b);
    sld_grpc_rls_request_free(out);
    return SL_EINVAL;
}

int sld_grpc_rls_decode(const uint8_t *buf, size_t len, sld_grpc_rls_request_t *out, char *err,
                        size_t err_len) {
    memset(out, 0, sizeof *out);
    arena_t *arena = arena_new(len);
    if (arena == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    out->owner_ = arena;
    ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_keep, .allocator_data = arena};
    pb_request_t *m = envoy__service__ratelimit__v3__rate_limit_request__unpack(&alloc, len, buf);
    if (m == NULL)
        return bad(out, err, err_len, "the request is not a RateLimitRequest (malformed protobuf)", 0, 0);
    out->domain = span_of(m->domain);
    if (out->domain.len == 0)
        return bad(out, err, err_len, "the domain is empty", 0, 0);
    if (m->n_descriptors == 0)
        return bad(out, err, err_len, "there are no descriptors", 0, 0);
    if (m->n_descriptors > SLD_GRPC_MAX_DESCRIPTORS)
        return bad(out, err, err_len, "%zu descriptors: at most %zu", m->n_descriptors, SLD_GRPC_MAX_DESCRIPTORS);
    size_t nentries = 0;
    for (size_t i = 0; i < m->n_descriptors; i++) {
        const pb_descriptor_t *d = m->descriptors[i];
        if (d->n_entries == 0)
            return bad(out, err, err_len, "descriptor %zu has no entries", i, 0);
        if (d->n_entries > SLD_GRPC_MAX_ENTRIES)
            return bad(out, err, err_len, "descriptor %zu has too many entries (at most %zu)", i,
                       SLD_GRPC_MAX_ENTRIES);
        for (size_t k = 0; k < d->n_entries; k++)
            if (d->entries[k]->key == NULL || d->entries[k]->key[0] == '\0')
                return bad(out, err, err_len, "descriptor %zu: entry %zu has an empty key", i, k);
        nentries += d->n_entries;
    }
    out->descriptors = arena_alloc(arena, m->n_descriptors * sizeof *out->descriptors);
    out->entries_ = arena_alloc(arena, nentries * sizeof *out->entries_);
    if (out->descriptors == NULL || out->entries_ == NULL) {
        sld_grpc_rls_request_free(out);
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    memset(out->descriptors, 0, m->n_descriptors * sizeof *out->descriptors);
    out->ndescriptors = m->n_descriptors;
    uint64_t request_hits = m->hits_addend ? m->hits_addend : 1;
    sld_grpc_entry_t *e = out->entries_;
    for (size_t i = 0; i < m->n_descriptors; i++) {
        const pb_descriptor_t *d = m->descriptors[i];
        sld_grpc_descriptor_t *o = &out->descriptors[i];
        o->entries = e;
        o->nentries = d->n_entries;
        for (size_t k = 0; k < d->n_entries; k++, e++) {
            e->key = span_of(d->entries[k]->key);
            e->value = span_of(d->entries[k]->value);
        }
        if (d->limit) {
            o->has_limit = true;
            o->limit_rpu = d->limit->requests_per_unit;
            o->limit_unit = (int)d->limit->unit;
        }
        /* as Envoy's reference service: a descriptor's own hits_addend
         * replaces the request's, and 0 counts as 1 */
        o->hits = d->hits_addend ? (d->hits_addend->value ? d->hits_addend->value : 1) : request_hits;
    }
    return SL_OK;
}

void sld_grpc_rls_request_free(sld_grpc_rls_request_t *r) {
    arena_free(r->owner_); /* the message, descriptors and entries with it */
    memset(r, 0, sizeof *r);
}

/* statuses or headers up to this many are encoded from the stack */
#define ENCODE_ON_STACK 8

int sld_grpc_rls_encode(int overall_code, const sld_grpc_status_t *statuses, size_t n,
                        const sld_grpc_header_t *headers, size_t nheaders, uint8_t **out,
                        size_t *out_len) {
    pb_response_t m = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
    /* the statuses, their limits and durations, the headers, and the
     * pointer arrays protobuf-c wants: on the stack for an answer of a few
     * (every answer of Envoy's), else allocated */
    pb_status_t st_s[ENCODE_ON_STACK], *stp_s[ENCODE_ON_STACK];
    pb_limit_t lim_s[ENCODE_ON_STACK];
    Google__Protobuf__Duration dur_s[ENCODE_ON_STACK];
    pb_header_t hv_s[ENCODE_ON_STACK], *hvp_s[ENCODE_ON_STACK];
    bool heap_st = n > ENCODE_ON_STACK, heap_hv = nheaders > ENCODE_ON_STACK;
    pb_status_t *st = heap_st ? calloc(n, sizeof *st) : st_s;
    pb_status_t **stp = heap_st ? calloc(n, sizeof *stp) : stp_s;
    pb_limit_t *lim = heap_st ? calloc(n, sizeof *lim) : lim_s;
    Google__Protobuf__Duration *dur = heap_st ? calloc(n, sizeof *dur) : dur_s;
    pb_header_t *hv = heap_hv ? calloc(nheaders, sizeof *hv) : hv_s;
    pb_header_t **hvp = heap_hv ? calloc(nheaders, sizeof *hvp) : hvp_s;
    int rc = SL_ENOMEM;
    *out = NULL;
    if (st == NULL || stp == NULL || lim == NULL || dur == NULL || hv == NULL || hvp == NULL)
        goto done;
    m.overall_code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)overall_code;
    for (size_t i = 0; i < n; i++) {
        const sld_grpc_status_t *s = &statuses[i];
        envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&st[i]);
        st[i].code = (Envoy__Service__Ratelimit__V3__RateLimitResponse__Code)s->code;
        if (s->has_limit) {
            envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&lim[i]);
            lim[i].name = (char *)(s->name ? s->name : "");
            lim[i].requests_per_unit = s->rpu;
            lim[i].unit = (Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit__Unit)s->unit;
            st[i].current_limit = &lim[i];
            st[i].limit_remaining = s->remaining;
            google__protobuf__duration__init(&dur[i]);
            sl_usec_t us = s->until_reset > 0 ? s->until_reset : 0;
            dur[i].seconds = us / SL_USEC_PER_SEC;
            dur[i].nanos = (int32_t)(us % SL_USEC_PER_SEC) * 1000;
            st[i].duration_until_reset = &dur[i];
        }
        stp[i] = &st[i];
    }
    m.n_statuses = n;
    m.statuses = stp;
    for (size_t i = 0; i < nheaders; i++) {
        envoy__config__core__v3__header_value__init(&hv[i]);
        hv[i].key = (char *)headers[i].key;
        hv[i].value = (char *)headers[i].value;
        hvp[i] = &hv[i];
    }
    m.n_response_headers_to_add = nheaders;
    m.response_headers_to_add = hvp;
    size_t len = envoy__service__ratelimit__v3__rate_limit_response__get_packed_size(&m);
    *out = malloc(len ? len : 1);
    if (*out == NULL)
        goto done;
    *out_len = envoy__service__ratelimit__v3__rate_limit_response__pack(&m, *out);
    rc = SL_OK;
done:
    if (heap_st) {
        free(st);
        free(stp);
        free(lim);
        free(dur);
    }
    if (heap_hv) {
        free(hv);
        free(hvp);
    }
    return rc;
}

int sld_grpc_health_decode(const uint8_t *buf, size_t len, char **service) {
    Grpc__Health__V1__HealthCheckRequest *m = grpc__health__v1__health_check_request__unpack(NULL, len, buf);
    *service = NULL;
    if (m == NULL)
        return SL_EINVAL;
    *service = strdup(m->service ? m->service : "");
    grpc__health__v1__health_check_request__free_unpacked(m, NULL);
    return *service ? SL_OK : SL_ENOMEM;
}

int sld_grpc_health_encode(int status, uint8_t **out, size_t *out_len) {
    Grpc__Health__V1__HealthCheckResponse m = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    m.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)status;
    size_t len = grpc__health__v1__health_check_response__get_packed_size(&m);
    *out = malloc(len ? len : 1);
    if (*out == NULL)
        return SL_ENOMEM;
    *out_len = grpc__health__v1__health_check_response__pack(&m, *out);
    return SL_OK;
}

void sld_grpc_limit_unit(uint64_t limit, sl_usec_t period, int *unit, uint32_t *rpu) {
    /* Shortest first: the first unit at least as long as the period. */
    static const sld_rls_unit_t units[] = {SLD_RLS_SECOND, SLD_RLS_MINUTE, SLD_RLS_HOUR,
                                           SLD_RLS_DAY,    SLD_RLS_WEEK,   SLD_RLS_MONTH,
                                           SLD_RLS_YEAR};
    size_t n = sizeof units / sizeof units[0], i = 0;
    while (i + 1 < n && sld_rls_unit_usec(units[i]) < period)
        i++;
    __extension__ unsigned __int128 scaled =
        period > 0 ? (unsigned __int128)limit * (uint64_t)sld_rls_unit_usec(units[i]) / (uint64_t)period : limit;
    *unit = (int)units[i];
    *rpu = scaled > UINT32_MAX ? UINT32_MAX : scaled < 1 ? 1 : (uint32_t)scaled;
}
