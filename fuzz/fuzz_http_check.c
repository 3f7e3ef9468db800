/* fuzz_http_check.c -- libFuzzer target for check requests (http_check.c).
 *
 * Parses every input both as a query string and as a JSON body, into scratch
 * of exactly the input's length. On success every span lies inside the input
 * or the scratch, the policy is non-empty and nattrs <= SLD_CHECK_MAX_ATTRS;
 * on error *param and *why are set. A parsed request is then written back as
 * JSON with sld_json_string and parsed again: that must succeed, with the
 * same fields when they came from JSON (whose strings are UTF-8 already).
 * The input itself, as a JSON string literal, must parse too.
 * Build and run: make fuzz.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_check.h"
#include "sluice.h"

static int inside(sld_span_t s, const char *base, size_t len) {
    return s.ptr >= base && s.len <= len && (size_t)(s.ptr - base) <= len - s.len;
}

static void check_span(sld_span_t s, const char *in, const char *scratch, size_t len) {
    assert(s.ptr != NULL && (inside(s, in, len) || inside(s, scratch, len)));
}

static int same(sld_span_t a, sld_span_t b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* Parses body[0..len) as JSON into *out with its own scratch (freed by the caller). */
static int parse_json(const char *body, size_t len, char **scratch, sld_check_request_t *out) {
    const char *param = NULL, *why = NULL;
    *scratch = malloc(len ? len : 1);
    assert(*scratch != NULL);
    int rc = sld_check_parse_json(body, len, *scratch, out, &param, &why);
    assert(rc == SL_OK || (rc == SL_EINVAL && param != NULL && why != NULL));
    return rc;
}

/* r written back as a JSON body must read as r again. */
static void round_trip(const sld_check_request_t *r, int exact) {
    sld_buf_t b = {0};
    sld_buf_append_str(&b, "{\"policy\":");
    sld_json_string(&b, r->policy.ptr, r->policy.len);
    if (r->has_key) {
        sld_buf_append_str(&b, ",\"key\":");
        sld_json_string(&b, r->key.ptr, r->key.len);
    }
    sld_buf_printf(&b, ",\"cost\":%llu,\"attributes\":{", (unsigned long long)r->cost);
    for (size_t i = 0; i < r->nattrs; i++) {
        if (i > 0)
            sld_buf_append_str(&b, ",");
        sld_json_string(&b, r->attrs[i].name.ptr, r->attrs[i].name.len);
        sld_buf_append_str(&b, ":");
        sld_json_string(&b, r->attrs[i].value.ptr, r->attrs[i].value.len);
    }
    sld_buf_append_str(&b, "}}");
    assert(!b.failed);
    sld_check_request_t again;
    char *scratch;
    int rc = parse_json(b.data, b.len, &scratch, &again);
    assert(rc == SL_OK);
    assert(again.cost == r->cost && again.has_key == r->has_key && again.nattrs == r->nattrs);
    if (exact) {
        assert(same(again.policy, r->policy));
        assert(!r->has_key || same(again.key, r->key));
        for (size_t i = 0; i < r->nattrs; i++)
            assert(same(again.attrs[i].name, r->attrs[i].name) &&
                   same(again.attrs[i].value, r->attrs[i].value));
    }
    free(scratch);
    sld_buf_free(&b);
}

static void check_request(const sld_check_request_t *r, const char *in, const char *scratch,
                          size_t len) {
    check_span(r->policy, in, scratch, len);
    assert(r->policy.len > 0);
    if (r->has_key)
        check_span(r->key, in, scratch, len);
    assert(r->nattrs <= SLD_CHECK_MAX_ATTRS);
    for (size_t i = 0; i < r->nattrs; i++) {
        check_span(r->attrs[i].name, in, scratch, len);
        assert(r->attrs[i].name.len > 0);
        check_span(r->attrs[i].value, in, scratch, len);
    }
    assert(r->cost <= INT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *in = (const char *)data;
    sld_check_request_t r;
    const char *param = NULL, *why = NULL;
    char *scratch = malloc(size ? size : 1);
    assert(scratch != NULL);

    int rc = sld_check_parse_query(in, size, scratch, &r, &param, &why);
    assert(rc == SL_OK || (rc == SL_EINVAL && param != NULL && why != NULL));
    if (rc == SL_OK) {
        check_request(&r, in, scratch, size);
        assert(r.nattrs == 0);
        round_trip(&r, 0); /* a query's values may be any bytes: U+FFFD may replace some */
    }

    param = why = NULL;
    rc = sld_check_parse_json(in, size, scratch, &r, &param, &why);
    assert(rc == SL_OK || (rc == SL_EINVAL && param != NULL && why != NULL));
    if (rc == SL_OK) {
        check_request(&r, in, scratch, size);
        round_trip(&r, 1);
    }
    free(scratch);

    /* Any bytes as a JSON string literal: always valid JSON. */
    sld_buf_t b = {0};
    sld_buf_append_str(&b, "{\"policy\":\"p\",\"key\":");
    sld_json_string(&b, in, size);
    sld_buf_append_str(&b, "}");
    assert(!b.failed);
    sld_check_request_t lit;
    rc = parse_json(b.data, b.len, &scratch, &lit);
    assert(rc == SL_OK && lit.has_key && lit.key.len >= size); /* U+FFFD is 3 bytes, for at most 3 */
    free(scratch);
    sld_buf_free(&b);
    return 0;
}
