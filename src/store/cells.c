/* cells.c -- a key's state as bytes, for sharing it through Redis in
 * write-back mode (see journal.h).
 *
 * Format: a version byte (1), then per live limit: u64 id, i64 expire_at,
 * u64 word, u32 block kind (0: none) and for a block u32 n and n entries:
 * a sliding_log's timestamps oldest first (u64 for LOG64, else u32), or a
 * sliding_window's precision+1 counters as they lie. Little-endian. A log
 * is written without its free room, so a state is as small as what it
 * holds.
 *
 * The bytes come back from a shared server: decoding trusts nothing and
 * checks every record against the policy the way a snapshot is checked.
 */
#include <stdlib.h>
#include <string.h>

#include "journal.h"

#define CELLS_VERSION 1u
#define RECORD_HEAD 28u /* id, expire_at, word, kind */

typedef struct out {
    unsigned char *p;
    size_t cap, len;
} out_t;

static void put(out_t *o, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++, o->len++)
        if (o->len < o->cap)
            o->p[o->len] = (unsigned char)(v >> (8 * i));
}

typedef struct in {
    const unsigned char *p;
    size_t len, at;
    bool bad;
} in_t;

static uint64_t get(in_t *r, size_t n) {
    if (r->bad || r->len - r->at < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[r->at + i] << (8 * i);
    r->at += n;
    return v;
}

size_t sl__cells_encode(const sl_policy_t *p, const sl__cell_t *cells, sl_usec_t now, void *buf,
                        size_t cap) {
    out_t o = {buf, cap, 0};
    put(&o, CELLS_VERSION, 1);
    for (size_t i = 0; i < p->nlimits; i++) {
        const sl__cell_t *c = &cells[i];
        const sl__block_t *b = c->block;
        if (c->expire_at <= now || (b && b->kind != SL__BLOCK_COUNTERS && b->count == 0))
            continue;
        put(&o, p->limits[i].id, 8);
        put(&o, (uint64_t)c->expire_at, 8);
        put(&o, b ? 0 : c->word, 8);
        put(&o, b ? b->kind : 0, 4);
        if (b == NULL)
            continue;
        uint32_t n = b->kind == SL__BLOCK_COUNTERS ? b->cap : b->count;
        uint32_t w = sl__block_words(b->kind);
        put(&o, n, 4);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t pos = b->kind == SL__BLOCK_COUNTERS ? k : (b->head + k) % b->cap;
            for (uint32_t j = 0; j < w; j++)
                put(&o, b->data[(size_t)pos * w + j], 4);
        }
    }
    return o.len > 1 ? o.len : 0;
}

static int index_of(const sl_policy_t *p, uint64_t id) {
    for (size_t i = 0; i < p->nlimits; i++)
        if (p->limits[i].id == id)
            return (int)i;
    return -1;
}

/* A block of `kind` with the n entries at r, or NULL when they make no
 * sense for limit l (r->bad when they are not even there). */
static sl__block_t *read_block(in_t *r, const sl__limit_t *l, uint32_t kind) {
    uint32_t n = (uint32_t)get(r, 4);
    uint32_t w = sl__block_words(kind);
    if (r->bad || n == 0 || n > SL__MAX_BLOCK_CAP || (r->len - r->at) / 4 / w < n) {
        r->bad = true;
        return NULL;
    }
    bool log = kind != SL__BLOCK_COUNTERS;
    if (kind != sl__limit_block_kind(l) || (log && n > l->capacity) ||
        (!log && n != l->precision + 1)) {
        r->at += sl__block_data_bytes(kind, n);
        return NULL;
    }
    sl__block_t *b = malloc(sl__block_size(kind, n));
    if (b == NULL) {
        r->bad = true;
        return NULL;
    }
    sl__block_init(b, kind, n);
    for (size_t k = 0; k < (size_t)n * w; k++)
        b->data[k] = (uint32_t)get(r, 4);
    if (log)
        b->count = n;
    if (!sl__block_valid(b)) {
        free(b);
        return NULL;
    }
    return b;
}

int sl__cells_decode(const sl_policy_t *p, const void *buf, size_t len, sl__cell_t *cells) {
    memset(cells, 0, p->nlimits * sizeof *cells);
    if (len == 0)
        return SL_OK;
    in_t r = {buf, len, 0, false};
    if (get(&r, 1) != CELLS_VERSION)
        return SL_ECORRUPT;
    uint32_t seen = 0;
    while (!r.bad && r.at < r.len) {
        uint64_t id = get(&r, 8);
        sl_usec_t expire_at = (sl_usec_t)get(&r, 8);
        uint64_t word = get(&r, 8);
        uint32_t kind = (uint32_t)get(&r, 4);
        if (r.bad || kind > SL__BLOCK_COUNTERS || expire_at < 0) {
            r.bad = true;
            break;
        }
        int i = index_of(p, id);
        const sl__limit_t *l = i >= 0 ? &p->limits[i] : &p->limits[0];
        sl__block_t *b = kind ? read_block(&r, l, kind) : NULL;
        if (i < 0 || (seen & (1u << i))) { /* a limit the policy no longer has */
            free(b);
            r.bad = r.bad || (i >= 0);
            continue;
        }
        seen |= 1u << i;
        sl__cell_t c = {expire_at, b ? 0 : word, b, false};
        if ((b == NULL) != (sl__limit_block_kind(l) == SL__BLOCK_NONE) || !sl__limit_cell_valid(l, &c)) {
            free(b); /* not a state of this limit: it starts afresh */
            continue;
        }
        cells[i] = c;
    }
    if (r.bad) {
        sl__cells_release(cells, p->nlimits);
        return SL_ECORRUPT;
    }
    return SL_OK;
}

void sl__cells_release(sl__cell_t *cells, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(cells[i].block);
        cells[i] = (sl__cell_t){0, 0, NULL, false};
    }
}

int sl__cells_prepare(void *ctx, size_t i, sl__cell_t *cell, uint32_t block_cap) {
    const sl_policy_t *p = ctx;
    if (block_cap == 0)
        return SL_OK;
    uint32_t kind = sl__limit_block_kind(&p->limits[i]);
    sl__block_t *b = malloc(sl__block_size(kind, block_cap));
    if (b == NULL)
        return SL_ENOMEM;
    sl__block_init(b, kind, block_cap);
    if (cell->block) {
        sl__block_move(cell->block, b);
        free(cell->block);
    }
    cell->block = b;
    return SL_OK;
}

sl_usec_t sl__cells_recovered_at(const sl_policy_t *p, const sl__cell_t *cells) {
    sl_usec_t at = 0;
    for (size_t i = 0; i < p->nlimits; i++)
        if (cells[i].expire_at > at)
            at = cells[i].expire_at;
    return at;
}

/* Copies into out (when not NULL) the live records of `buf` for limits p
 * does not have: another daemon's configuration (a rolling change) keeps
 * its states through our merges. Returns the bytes; *until gets the
 * latest expiry among them. Nothing when buf does not parse. */
static size_t foreign_records(const sl_policy_t *p, const unsigned char *buf, size_t len,
                              sl_usec_t now, unsigned char *out, sl_usec_t *until) {
    in_t r = {buf, len, 1, len == 0 || buf[0] != CELLS_VERSION};
    size_t n = 0;
    while (!r.bad && r.at < r.len) {
        size_t start = r.at;
        uint64_t id = get(&r, 8);
        sl_usec_t expire_at = (sl_usec_t)get(&r, 8);
        get(&r, 8);
        uint32_t kind = (uint32_t)get(&r, 4);
        if (kind != 0) {
            uint64_t entries = get(&r, 4) * (kind == SL__BLOCK_LOG64 ? 2 : 1);
            if (r.bad || entries > (r.len - r.at) / 4)
                return 0;
            r.at += (size_t)entries * 4;
        }
        if (r.bad || kind > SL__BLOCK_COUNTERS)
            return 0;
        if (index_of(p, id) >= 0 || expire_at <= now)
            continue;
        if (out)
            memcpy(out + n, buf + start, r.at - start);
        n += r.at - start;
        if (expire_at > *until)
            *until = expire_at;
    }
    return r.bad ? 0 : n;
}

int sl__cells_merge(const sl_policy_t *p, const void *shared, size_t shared_len,
                    const uint64_t *costs, sl_usec_t since, sl_usec_t now, unsigned char **out,
                    size_t *out_len, sl_usec_t *recovered_at) {
    sl__cell_t cells[SL_MAX_LIMITS];
    *out = NULL;
    *out_len = 0;
    /* A state that cannot be read is dropped rather than kept failing every
     * sync: the charges still go in, on a fresh state. */
    int corrupt = sl__cells_decode(p, shared, shared_len, cells);
    int rc = sl__policy_force(p, cells, now, since, costs, sl__cells_prepare, (void *)p);
    sl_usec_t until = sl__cells_recovered_at(p, cells);
    size_t foreign = corrupt ? 0 : foreign_records(p, shared, shared_len, now, NULL, &until);
    size_t need = rc == SL_OK ? sl__cells_encode(p, cells, now, NULL, 0) : 0;
    if (rc == SL_OK && need + foreign > 0) {
        size_t total = (need ? need : 1) + foreign;
        *out = malloc(total);
        if (*out == NULL) {
            rc = SL_ENOMEM;
        } else {
            size_t at = need ? sl__cells_encode(p, cells, now, *out, need) : 1;
            (*out)[0] = CELLS_VERSION;
            foreign_records(p, shared, shared_len, now, *out + at, &until);
            *out_len = total;
        }
    }
    if (recovered_at)
        *recovered_at = until;
    sl__cells_release(cells, p->nlimits);
    return rc != SL_OK ? rc : corrupt;
}
