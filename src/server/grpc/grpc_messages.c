/* grpc_messages.c -- protobuf messages <-> plain structs through protobuf-c
 * (see grpc_messages.h; the RateLimitRequest read by hand: grpc_request.c). */
#include <stdbool.h>
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

static void arena_free(void *p) {
    arena_t *a = p;
    if (a == NULL)
        return;
    while (a->big) {
        arena_big_t *b = a->big;
        a->big = b->next;
        free(b);
    }
    free(a);
}

int sld_grpc_rls_refuse(sld_grpc_rls_request_t *out, char *err, size_t err_len, const char *fmt, size_t a,
                        size_t b) {
    snprintf(err, err_len, fmt, a, b);
    sld_grpc_rls_request_free(out);
    return SL_EINVAL;
}

int sld_grpc_rls_decode_pb(const uint8_t *buf, size_t len, sld_grpc_rls_request_t *out, char *err,
                           size_t err_len) {
    memset(out, 0, sizeof *out);
    arena_t *arena = arena_new(len);
    if (arena == NULL) {
        snprintf(err, err_len, "out of memory");
        return SL_ENOMEM;
    }
    out->owner_ = arena;
    out->release_ = arena_free;
    ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_keep, .allocator_data = arena};
    pb_request_t *m = envoy__service__ratelimit__v3__rate_limit_request__unpack(&alloc, len, buf);
    if (m == NULL)
        return sld_grpc_rls_refuse(out, err, err_len, "the request is not a RateLimitRequest (malformed protobuf)",
                                   0, 0);
    out->domain = span_of(m->domain);
    if (out->domain.len == 0)
        return sld_grpc_rls_refuse(out, err, err_len, "the domain is empty", 0, 0);
    if (m->n_descriptors == 0)
        return sld_grpc_rls_refuse(out, err, err_len, "there are no descriptors", 0, 0);
    if (m->n_descriptors > SLD_GRPC_MAX_DESCRIPTORS)
        return sld_grpc_rls_refuse(out, err, err_len, "%zu descriptors: at most %zu", m->n_descriptors,
                                   SLD_GRPC_MAX_DESCRIPTORS);
    size_t nentries = 0;
    for (size_t i = 0; i < m->n_descriptors; i++) {
        const pb_descriptor_t *d = m->descriptors[i];
        if (d->n_entries == 0)
            return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu has no entries", i, 0);
        if (d->n_entries > SLD_GRPC_MAX_ENTRIES)
            return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu has too many entries (at most %zu)", i,
                       SLD_GRPC_MAX_ENTRIES);
        for (size_t k = 0; k < d->n_entries; k++)
            if (d->entries[k]->key == NULL || d->entries[k]->key[0] == '\0')
                return sld_grpc_rls_refuse(out, err, err_len, "descriptor %zu: entry %zu has an empty key", i, k);
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
    if (r->release_ != NULL)
        r->release_(r->owner_); /* the bytes, descriptors and entries with it */
    memset(r, 0, sizeof *r);
}

static bool span_eq(sld_span_t a, sld_span_t b) { return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0; }

const char *sld_grpc_rls_differ(int rc_a, const sld_grpc_rls_request_t *a, const char *err_a, int rc_b,
                                const sld_grpc_rls_request_t *b, const char *err_b) {
    if (rc_a != rc_b)
        return "the code";
    if (rc_a != SL_OK)
        return strcmp(err_a, err_b) == 0 ? NULL : "the error message";
    if (!span_eq(a->domain, b->domain))
        return "the domain";
    if (a->ndescriptors != b->ndescriptors)
        return "the number of descriptors";
    for (size_t i = 0; i < a->ndescriptors; i++) {
        const sld_grpc_descriptor_t *x = &a->descriptors[i], *y = &b->descriptors[i];
        if (x->nentries != y->nentries)
            return "a descriptor's number of entries";
        for (size_t k = 0; k < x->nentries; k++)
            if (!span_eq(x->entries[k].key, y->entries[k].key) || !span_eq(x->entries[k].value, y->entries[k].value))
                return "an entry";
        if (x->has_limit != y->has_limit || x->limit_rpu != y->limit_rpu || x->limit_unit != y->limit_unit)
            return "a descriptor's limit";
        if (x->hits != y->hits)
            return "a descriptor's hits";
    }
    return NULL;
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
