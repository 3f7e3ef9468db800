/* http_request.c -- a request's headers as every HTTP front reads them
 * (see http_request.h). */
#include <string.h>

#include <h2o.h>

#include "server/http/http_request.h"

sld_span_t sld_http_request_header(void *arg, const char *name, size_t len) {
    h2o_req_t *req = arg;
    ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
    if (i < 0)
        return (sld_span_t){NULL, 0};
    h2o_iovec_t v = req->headers.entries[i].value;
    ssize_t next = h2o_find_header_by_str(&req->headers, name, len, i);
    if (next >= 0 && len == 9 && memcmp(name, "x-real-ip", 9) == 0) {
        /* One address per line: the last line is the nearest proxy's, the
         * first may be the client's own. */
        for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k))
            v = req->headers.entries[k].value;
        return (sld_span_t){v.base, v.len};
    }
    if (next < 0 || len != 15 || memcmp(name, "x-forwarded-for", 15) != 0)
        return (sld_span_t){v.base, v.len};
    /* Proxies may each add their own X-Forwarded-For line: one list, the
     * client's line first, so every line is read (the head limit bounds
     * them). */
    size_t total = v.len;
    for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k))
        total += 2 + req->headers.entries[k].value.len;
    char *joined = h2o_mem_alloc_pool(&req->pool, total);
    memcpy(joined, v.base, v.len);
    size_t at = v.len;
    for (ssize_t k = next; k >= 0; k = h2o_find_header_by_str(&req->headers, name, len, k)) {
        h2o_iovec_t more = req->headers.entries[k].value;
        memcpy(joined + at, ", ", 2);
        memcpy(joined + at + 2, more.base, more.len);
        at += 2 + more.len;
    }
    return (sld_span_t){joined, at};
}

sld_span_t sld_http_header_any_case(void *arg, const char *name, size_t len) {
    sld_http_headers_t *h = arg;
    if (h->find == NULL || len >= sizeof h->lower)
        return (sld_span_t){NULL, 0};
    for (size_t i = 0; i < len; i++)
        h->lower[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
    h->lower[len] = '\0';
    return h->find(h->ctx, h->lower, len);
}

/* A header by its lower-case name; ptr NULL when there is no lookup. */
static sld_span_t lower_header(const sld_http_headers_t *h, const char *lower) {
    return h->find ? h->find(h->ctx, lower, strlen(lower)) : (sld_span_t){NULL, 0};
}

void sld_http_forwarded(sld_forwarded_t *fw, sld_http_headers_t *h, const struct sockaddr *peer,
                        const char *user_header) {
    *fw = (sld_forwarded_t){.peer = peer,
                            .x_forwarded_for = lower_header(h, "x-forwarded-for"),
                            .x_real_ip = lower_header(h, "x-real-ip"),
                            .user = sld_http_header_any_case(h, user_header, strlen(user_header)),
                            .header = sld_http_header_any_case,
                            .header_ctx = h};
}

bool sld_http_user_missing(const sld_policy_t *pc, const sld_forwarded_t *fw) {
    if (fw->user.ptr != NULL && fw->user.len > 0)
        return false;
    for (size_t i = 0; i < pc->nkey_attrs; i++)
        if (strcmp(pc->key_attrs[i], "user") == 0)
            return true;
    return false;
}
