/* test_http_api.c -- the HTTP endpoints, apart from the wire
 * (src/server/http/: the dispatcher http_api.c and its route groups; docs/protocol.md "HTTP").
 *
 * Each test builds a daemon as sluiced's main() does (configuration parsed
 * from YAML, metrics, runtime, memory store, limiter, per-worker counters)
 * but with a fake clock and no server, then hands sld_http_handle() requests
 * made of spans. Every span (method, path, query, body, header values) is an
 * exact-length heap copy without a NUL, so ASan catches a read past one.
 * Header names are looked up by the lower-case name the wire layer keeps: a
 * lookup by any other spelling is a failure.
 *
 * Keys built by forward-auth and by check attributes are verified through
 * the store: a POST /v1/check of that exact key with cost 0 charges nothing
 * and reports what is left ("remaining"). No test sleeps, nothing is bound;
 * client addresses are loopback (127.0.0.0/8, ::1) or the IPv6
 * documentation prefix 2001:db8::/32, written in headers only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "rig.h"
#include "server/http/http_api.h"
#include "server/daemon/runtime.h"
#include "server/daemon/front_config.h"
#include "server/daemon/wiring.h"

#define WORKERS 2
#define MAX_OWNED 32
#define MAX_HDRS 8
#define TOKEN "test-admin-token-0123456789"

/* ---- configurations -------------------------------------------------------- */

/* Most tests: every kind of key, an admin token, 127.0.0.1 and ::1 trusted. */
static const char main_yaml[] =
    "threads: 2\n"
    "limits:\n"
    "  max_key_bytes: 64\n"
    "trusted_proxies: [127.0.0.1/32, \"::1/128\"]\n"
    "admin_token: " TOKEN "\n"
    "policies:\n"
    "  - name: fw\n"
    "    limits: [{algorithm: fixed_window, limit: 3, period: 10s}]\n"
    "  - name: one\n"
    "    limits: [{algorithm: gcra, limit: 1, period: 10s}]\n"
    "  - name: two\n"
    "    limits:\n"
    "      - {algorithm: fixed_window, limit: 2, period: 10s}\n"
    "      - {algorithm: fixed_window, limit: 100, period: 1s}\n"
    "  - name: per_ip\n"
    "    key: [ip]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n"
    "  - name: strict_ip\n"
    "    key: [ip]\n"
    "    limits: [{algorithm: fixed_window, limit: 1, period: 1m}]\n"
    "  - name: per_user\n"
    "    key: [user]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n"
    "  - name: per_ep\n"
    "    key: [endpoint]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n"
    "  - name: per_method\n"
    "    key: [method]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n"
    "  - name: per_tenant\n"
    "    key: [\"header:X-Tenant\"]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n"
    "  - name: rich\n"
    "    key: [user, endpoint]\n"
    "    mode: soft\n"
    "    soft_percent: 20\n"
    "    limits:\n"
    "      - {algorithm: gcra, limit: 10, period: 1500ms, burst: 5, count_denied: true}\n"
    "      - {algorithm: sliding_window, limit: 100, period: 1m, precision: 6}\n"
    "      - {algorithm: leaky_bucket, limit: 5, period: 1s, burst: 8, shaper: true}\n"
    "      - {algorithm: token_bucket, limit: 7, period: 2500us}\n"
    "      - {algorithm: sliding_log, limit: 3, period: 1.5h}\n"
    "      - {algorithm: fixed_window, limit: 4, period: 1d}\n"
    "    tiers:\n"
    "      - name: gold\n"
    "        keys: [\"user=alice|endpoint=/x\", \"we\\\"ird\"]\n"
    "        limits: [{algorithm: gcra, limit: 100, period: 1s}]\n"
    "      - name: silver\n"
    "        keys: [bob]\n"
    "        limits:\n"
    "          - {algorithm: fixed_window, limit: 50, period: 1s}\n"
    "          - {algorithm: sliding_window, limit: 500, period: 10s, precision: 10}\n"
    "  - name: elastic_p\n"
    "    key: [\"header:X-Tenant\", method]\n"
    "    mode: elastic\n"
    "    pool: {algorithm: token_bucket, limit: 1000, period: 1s, burst: 2000}\n"
    "    limits: [{algorithm: gcra, limit: 5, period: 1s}]\n"
    "  - name: shadow_p\n"
    "    mode: shadow\n"
    "    limits: [{algorithm: sliding_window, limit: 10, period: 10s}]\n"
    "  - name: escapes\n"
    "    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"
    "    tiers:\n"
    "      - name: odd\n"
    "        keys: [\"back\\\\slash\", \"tab\\tkey\", \"sl/ash\", \"uni\\u00e9\", \"nl\\nx\", \"q\\\"uote\"]\n"
    "        limits: [{algorithm: gcra, limit: 3, period: 1s}]\n";

static const char *const main_policies[] = {"fw",      "one",        "two",        "per_ip",
                                             "strict_ip", "per_user", "per_ep",     "per_method",
                                             "per_tenant", "rich",    "elastic_p", "shadow_p",
                                             "escapes"};

/* Forward-auth behind nginx: the user in X-API-Key, 403 on a denial, IPv6
 * keyed by /48, no admin token. */
static const char auth_yaml[] =
    "threads: 2\n"
    "trusted_proxies: [127.0.0.1/32, \"::1/128\"]\n"
    "ipv6_prefix: 48\n"
    "user_header: X-API-Key\n"
    "auth_deny_status: 403\n"
    "policies:\n"
    "  - name: per_user\n"
    "    key: [user]\n"
    "    limits: [{algorithm: fixed_window, limit: 2, period: 1m}]\n"
    "  - name: per_ip\n"
    "    key: [ip]\n"
    "    limits: [{algorithm: fixed_window, limit: 10, period: 1m}]\n";

/* One policy and the admin API: the last policy cannot be removed. */
static const char solo_yaml[] =
    "threads: 2\n"
    "admin_token: " TOKEN "\n"
    "policies:\n"
    "  - name: only\n"
    "    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n";

/* ---- the fixture ----------------------------------------------------------- */

static sl_usec_t fake_now; /* the limiter's clock: tests set it, nothing else moves it */

static sl_usec_t fake_clock(void *ctx) {
    (void)ctx;
    return fake_now;
}

typedef struct fx {
    sld_daemon_t d;
    sld_http_reply_t reply;
    struct sockaddr_storage peer;
    char *hnames[MAX_HDRS];          /* lower-cased, NUL-terminated */
    sld_span_t hvalues[MAX_HDRS];
    size_t nh;
    void *owned[MAX_OWNED];          /* the spans of the last request */
    size_t nowned;
    char text[4][16384];              /* header values and bodies as C strings */
    unsigned ntext;
} fx_t;

static void set_peer(fx_t *f, const char *ip) {
    memset(&f->peer, 0, sizeof f->peer);
    if (strchr(ip, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&f->peer;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(40000);
        assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&f->peer;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(40000);
        assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
    }
}

static fx_t *fx_new(const char *yaml) {
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[SLD_MAX_ERROR] = "";
    sld_config_t *cfg = NULL;
    if (sld_config_parse("test.yaml", yaml, strlen(yaml), &cfg, err, sizeof err) != SL_OK)
        fail_msg("configuration refused: %s", err);
    assert_int_equal(sld_metrics_new(WORKERS, &f->d.metrics), SL_OK);
    sld_runtime_t *rt = NULL;
    if (sld_runtime_build(&f->d, cfg, 1, &rt, err, sizeof err) != SL_OK)
        fail_msg("runtime refused: %s", err);
    atomic_store(&f->d.runtime, rt);
    f->d.threads = WORKERS;
    sl_memory_options_t mo = {.shards = 4, .seed = 12345};
    assert_int_equal(sl_store_memory_new(&mo, &f->d.store), SL_OK);
    sl_limiter_options_t lo = {.clock = fake_clock};
    assert_int_equal(sl_limiter_new(f->d.store, &lo, &f->d.limiter), SL_OK);
    f->d.counters = aligned_alloc(64, sizeof(sld_counters_t) * WORKERS);
    assert_non_null(f->d.counters);
    memset(f->d.counters, 0, sizeof(sld_counters_t) * WORKERS);
    f->d.ncounters = WORKERS;
    assert_int_equal(sld_daemon_engine_new(&f->d), SL_OK);
    f->d.config = (sld_config_hooks_t){.edit = sld_runtime_edit, .reload = sld_runtime_reload};
    fake_now = SEC(1000);
    set_peer(f, "127.0.0.1");
    return f;
}

static void drop_request(fx_t *f) {
    for (size_t i = 0; i < f->nowned; i++)
        free(f->owned[i]);
    f->nowned = 0;
    f->nh = 0;
}

static void fx_free(fx_t *f) {
    drop_request(f);
    sld_http_reply_free(&f->reply);
    sld_runtime_shutdown(&f->d);
    sld_engine_free(f->d.engine);
    sld_metrics_free(f->d.metrics);
    free(f->d.counters);
    sl_limiter_free(f->d.limiter);
    sl_store_free(f->d.store);
    free(f);
}

static int setup_main(void **state) {
    *state = fx_new(main_yaml);
    return 0;
}

static int setup_auth(void **state) {
    *state = fx_new(auth_yaml);
    return 0;
}

static int setup_solo(void **state) {
    *state = fx_new(solo_yaml);
    return 0;
}

/* A tier key longer than the default max_key_bytes (1024), which this file raises. */
static int setup_long_keys(void **state) {
    static char yaml[4096];
    char key[2001];
    memset(key, 'k', 2000);
    key[2000] = '\0';
    snprintf(yaml, sizeof yaml,
             "limits:\n"
             "  max_key_bytes: 4096\n"
             "admin_token: " TOKEN "\n"
             "policies:\n"
             "  - name: long\n"
             "    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"
             "    tiers:\n"
             "      - name: t\n"
             "        keys: [%s]\n"
             "        limits: [{algorithm: gcra, limit: 2, period: 1s}]\n",
             key);
    *state = fx_new(yaml);
    return 0;
}

static int teardown(void **state) {
    fx_free(*state);
    return 0;
}

/* ---- requests -------------------------------------------------------------- */

static void *own_bytes(fx_t *f, const char *s, size_t n) {
    assert_true(f->nowned < MAX_OWNED);
    char *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, s, n);
    f->owned[f->nowned++] = p;
    return p;
}

static sld_span_t own_len(fx_t *f, const char *s, size_t n) { return (sld_span_t){own_bytes(f, s, n), n}; }

static sld_span_t own(fx_t *f, const char *s) { return own_len(f, s, strlen(s)); }

static sld_span_t lookup(void *ctx, const char *name, size_t len) {
    fx_t *f = ctx;
    for (size_t i = 0; i < len; i++)
        if (name[i] >= 'A' && name[i] <= 'Z')
            fail_msg("header looked up as \"%.*s\": the wire layer keeps lower-case names", (int)len, name);
    for (size_t i = 0; i < f->nh; i++)
        if (strlen(f->hnames[i]) == len && memcmp(f->hnames[i], name, len) == 0)
            return f->hvalues[i];
    return (sld_span_t){NULL, 0};
}

/* A request on `worker`: target is the path with an optional "?query";
 * headers are name, value pairs ending with NULL (or NULL for none). */
static sld_http_reply_t *call_on(fx_t *f, uint32_t worker, const char *method, const char *target,
                                 const char *body, const char *const *headers) {
    drop_request(f);
    sld_http_request_t req = {.peer = (const struct sockaddr *)&f->peer, .header = lookup, .header_ctx = f};
    req.method = own(f, method);
    const char *q = strchr(target, '?');
    req.path = own_len(f, target, q ? (size_t)(q - target) : strlen(target));
    if (q)
        req.query = own(f, q + 1);
    if (body)
        req.body = own(f, body);
    for (size_t i = 0; headers && headers[i]; i += 2) {
        assert_true(f->nh < MAX_HDRS);
        assert_non_null(headers[i + 1]);
        size_t n = strlen(headers[i]);
        char *name = own_bytes(f, headers[i], n + 1);
        for (size_t j = 0; j < n; j++)
            if (name[j] >= 'A' && name[j] <= 'Z')
                name[j] = (char)(name[j] + 32);
        f->hnames[f->nh] = name;
        f->hvalues[f->nh] = own(f, headers[i + 1]);
        f->nh++;
    }
    sld_http_handle(&f->d, worker, &req, &f->reply);
    return &f->reply;
}

static sld_http_reply_t *call(fx_t *f, const char *method, const char *target, const char *body,
                              const char *const *headers) {
    return call_on(f, 0, method, target, body, headers);
}

#define H(...) ((const char *const[]){__VA_ARGS__, NULL})

static sld_http_reply_t *get(fx_t *f, const char *target) { return call(f, "GET", target, NULL, NULL); }

static sld_http_reply_t *post(fx_t *f, const char *target, const char *body) {
    return call(f, "POST", target, body, NULL);
}

static sld_http_reply_t *admin(fx_t *f, const char *method, const char *target, const char *body) {
    return call(f, method, target, body, H("Authorization", "Bearer " TOKEN));
}

/* ---- replies --------------------------------------------------------------- */

static char *next_text(fx_t *f) { return f->text[f->ntext++ % 4]; }

/* The value of the one header called name, as a C string, or NULL. */
static const char *hval(fx_t *f, const char *name) {
    const sld_http_reply_t *r = &f->reply;
    const char *found = NULL;
    for (size_t i = 0; i < r->nheaders; i++) {
        if (strcmp(r->headers[i].name, name) != 0)
            continue;
        if (found)
            fail_msg("header %s given twice", name);
        char *t = next_text(f);
        assert_true(r->headers[i].off + r->headers[i].len <= r->values.len);
        assert_true(r->headers[i].len < sizeof f->text[0]);
        memcpy(t, r->values.data + r->headers[i].off, r->headers[i].len);
        t[r->headers[i].len] = '\0';
        found = t;
    }
    return found;
}

/* The body as a C string ("" when there is none). */
static const char *body(fx_t *f) {
    const sld_buf_t *b = &f->reply.body;
    char *t = next_text(f);
    assert_true(b->len < sizeof f->text[0]);
    if (b->len)
        memcpy(t, b->data, b->len);
    t[b->len] = '\0';
    return t;
}

/* A number member of a JSON body. */
static long long jnum(fx_t *f, const char *field) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", field);
    const char *b = body(f), *at = strstr(b, pat);
    if (at == NULL)
        fail_msg("no %s in %s", field, b);
    return strtoll(at + strlen(pat), NULL, 10);
}

static void expect_contains(const char *text, const char *part) {
    if (strstr(text, part) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", part, text);
}

static void expect_status(fx_t *f, int status) {
    if (f->reply.status != status)
        fail_msg("status %d, expected %d; body: %s", f->reply.status, status, body(f));
}

/* A JSON error: status, content type, and the body's exact beginning. */
static void expect_error(fx_t *f, int status, const char *code, const char *param) {
    expect_status(f, status);
    assert_non_null(f->reply.content_type);
    assert_string_equal(f->reply.content_type, "application/json");
    char head[256];
    if (param)
        snprintf(head, sizeof head, "{\"error\":\"%s\",\"parameter\":\"%s\",\"message\":\"", code, param);
    else
        snprintf(head, sizeof head, "{\"error\":\"%s\",\"message\":\"", code);
    const char *b = body(f);
    if (strncmp(b, head, strlen(head)) != 0)
        fail_msg("body %s does not start with %s", b, head);
    assert_true(strlen(b) > strlen(head) + 3 && strcmp(b + strlen(b) - 3, "\"}\n") == 0);
}

static void expect_no_header(fx_t *f, const char *name) {
    const char *v = hval(f, name);
    if (v != NULL)
        fail_msg("unexpected %s: %s", name, v);
}

/* What a key has left under a policy, charging nothing (cost 0). */
static long long remaining_of(fx_t *f, const char *policy, const char *key) {
    char json[256];
    snprintf(json, sizeof json, "{\"policy\":\"%s\",\"key\":\"%s\",\"cost\":0}", policy, key);
    post(f, "/v1/check", json);
    expect_status(f, 200);
    return jnum(f, "remaining");
}

/* ---- 1-3. check: answers and rate limit headers ------------------------------ */

static void check_get_allowed(void **state) {
    fx_t *f = *state;
    get(f, "/v1/check?policy=fw&key=alice");
    expect_status(f, 200);
    assert_string_equal(f->reply.content_type, "application/json");
    assert_string_equal(body(f), "{\"allowed\":true,\"policy\":\"fw\",\"limit\":3,\"remaining\":2,"
                                 "\"reset_after_ms\":10000,\"retry_after_ms\":0,\"limited\":false}\n");
    assert_int_equal(f->reply.nheaders, 5);
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"fw\";q=3;w=10");
    assert_string_equal(hval(f, "RateLimit"), "\"fw\";r=2;t=10");
    assert_string_equal(hval(f, "X-RateLimit-Limit"), "3");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "2");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "10");
    expect_no_header(f, "Retry-After");

    /* 3.5 s later, in the same window: reset rounds up (6.5 s -> 7) */
    fake_now += MS(3500);
    get(f, "/v1/check?policy=fw&key=alice&cost=2");
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"allowed\":true,\"policy\":\"fw\",\"limit\":3,\"remaining\":0,"
                                 "\"reset_after_ms\":6500,\"retry_after_ms\":0,\"limited\":false}\n");
    assert_string_equal(hval(f, "RateLimit"), "\"fw\";r=0;t=7");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "7");
    expect_no_header(f, "Retry-After");

    /* HEAD would charge like a GET but must change nothing: refused */
    call(f, "HEAD", "/v1/check?policy=fw&key=bob", NULL, NULL);
    expect_status(f, 405);
    call(f, "GET", "/v1/check?policy=fw&key=bob", NULL, NULL);
    expect_status(f, 200);
    assert_int_equal(jnum(f, "remaining"), 2);
}

static void check_denied_retry_after(void **state) {
    fx_t *f = *state;
    /* gcra 1 per 10 s: one now, the next in exactly 10 s */
    get(f, "/v1/check?policy=one&key=k");
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"allowed\":true,\"policy\":\"one\",\"limit\":1,\"remaining\":0,"
                                 "\"reset_after_ms\":10000,\"retry_after_ms\":0,\"limited\":false}\n");
    assert_string_equal(hval(f, "RateLimit"), "\"one\";r=0;t=10");

    fake_now = SEC(1000) + MS(8800); /* 1.2 s left: every second count rounds up to 2 */
    get(f, "/v1/check?policy=one&key=k");
    expect_status(f, 429);
    assert_string_equal(f->reply.content_type, "application/json");
    assert_string_equal(body(f), "{\"allowed\":false,\"policy\":\"one\",\"limit\":1,\"remaining\":0,"
                                 "\"reset_after_ms\":1200,\"retry_after_ms\":1200,\"limited\":true}\n");
    assert_int_equal(f->reply.nheaders, 6);
    /* limited: over a limit, which a denial is too (sluice.h: !allowed in hard mode) */
    assert_string_equal(hval(f, "Retry-After"), "2");
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"one\";q=1;w=10");
    assert_string_equal(hval(f, "RateLimit"), "\"one\";r=0;t=2");
    assert_string_equal(hval(f, "X-RateLimit-Limit"), "1");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "0");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "2");

    fake_now = SEC(1008); /* exactly 2 s left: 2, not 3 */
    get(f, "/v1/check?policy=one&key=k");
    expect_status(f, 429);
    assert_string_equal(hval(f, "Retry-After"), "2");
    assert_int_equal(jnum(f, "retry_after_ms"), 2000);

    fake_now = SEC(1010) - 1; /* one microsecond left: 1 s, 1 ms */
    get(f, "/v1/check?policy=one&key=k");
    expect_status(f, 429);
    assert_string_equal(hval(f, "Retry-After"), "1");
    assert_int_equal(jnum(f, "retry_after_ms"), 1);
    assert_string_equal(hval(f, "RateLimit"), "\"one\";r=0;t=1");

    fake_now = SEC(1010); /* a client that waited Retry-After is admitted */
    get(f, "/v1/check?policy=one&key=k");
    expect_status(f, 200);
    expect_no_header(f, "Retry-After");

    /* a cost that can never pass: 429, retry_after_ms -1 */
    get(f, "/v1/check?policy=fw&key=big&cost=4");
    expect_status(f, 429);
    assert_int_equal(jnum(f, "retry_after_ms"), -1);
}

/* On a 429 no limit announces a reset earlier than Retry-After. */
static void check_denied_reset_never_before_retry(void **state) {
    fx_t *f = *state;
    get(f, "/v1/check?policy=two&key=k");
    expect_status(f, 200);
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"two-1\";q=2;w=10, \"two-2\";q=100;w=1");
    assert_string_equal(hval(f, "RateLimit"), "\"two-1\";r=1;t=10, \"two-2\";r=99;t=1");
    assert_string_equal(hval(f, "X-RateLimit-Limit"), "2");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "1");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "10");

    fake_now = SEC(1000) + MS(8800); /* two-1: 1.2 s left; two-2: a new 1 s window, 0.2 s left */
    get(f, "/v1/check?policy=two&key=k");
    expect_status(f, 200);
    assert_string_equal(hval(f, "RateLimit"), "\"two-1\";r=0;t=2, \"two-2\";r=99;t=1");

    get(f, "/v1/check?policy=two&key=k");
    expect_status(f, 429);
    assert_string_equal(hval(f, "Retry-After"), "2");
    /* the denying two-1 says Retry-After; two-2 keeps its own t=1 (raised to
     * Retry-After it would be past its window, w=1: the draft forbids t > w) */
    assert_string_equal(hval(f, "RateLimit"), "\"two-1\";r=0;t=2, \"two-2\";r=99;t=1");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "2");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "0");
    assert_string_equal(body(f), "{\"allowed\":false,\"policy\":\"two\",\"limit\":2,\"remaining\":0,"
                                 "\"reset_after_ms\":1200,\"retry_after_ms\":1200,\"limited\":true}\n");
}

static void check_item_names(void **state) {
    fx_t *f = *state;
    get(f, "/v1/check?policy=fw&key=a");
    expect_contains(hval(f, "RateLimit-Policy"), "\"fw\";");
    assert_null(strstr(hval(f, "RateLimit-Policy"), "\"fw-1\""));
    /* six limits, in configuration order: rich-1 .. rich-6 (the key is in no tier);
     * q and w as docs/protocol.md defines them: the sliding window's w is a
     * period and a sub-window (60 + 10), the leaky bucket's q its burst of 8,
     * drained at 5/s in w=2 */
    post(f, "/v1/check", "{\"policy\":\"rich\",\"key\":\"nobody\"}");
    expect_status(f, 200);
    assert_string_equal(hval(f, "RateLimit-Policy"),
                        "\"rich-1\";q=10;w=2, \"rich-2\";q=100;w=70, \"rich-3\";q=8;w=2, "
                        "\"rich-4\";q=7;w=1, \"rich-5\";q=3;w=5400, \"rich-6\";q=4;w=86400");
    const char *rl = hval(f, "RateLimit");
    for (int i = 1; i <= 6; i++) {
        char item[32];
        snprintf(item, sizeof item, "\"rich-%d\";r=", i);
        expect_contains(rl, item);
    }
    /* a shaper's answer always says delay_ms */
    expect_contains(body(f), "\"delay_ms\":0");
    /* a tier's key: named after the policy, its own limits, the tier said */
    post(f, "/v1/check", "{\"policy\":\"rich\",\"key\":\"bob\"}");
    expect_status(f, 200);
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"rich-1\";q=50;w=1, \"rich-2\";q=500;w=11");
    expect_contains(body(f), "\"policy\":\"rich\",\"tier\":\"silver\",");
}

/* soft, shadow and elastic let a request over its limit through: 200, limited. */
static void check_limited_but_allowed(void **state) {
    fx_t *f = *state;
    for (int i = 0; i < 10; i++) {
        get(f, "/v1/check?policy=shadow_p&key=s");
        expect_status(f, 200);
        expect_contains(body(f), "\"limited\":false");
    }
    get(f, "/v1/check?policy=shadow_p&key=s");
    expect_status(f, 200);
    expect_contains(body(f), "\"allowed\":true");
    expect_contains(body(f), "\"limited\":true");
    expect_contains(body(f), "\"retry_after_ms\":0");
    expect_no_header(f, "Retry-After");
}

/* ---- 4. POST, attributes ---------------------------------------------------- */

static void check_post_key(void **state) {
    fx_t *f = *state;
    post(f, "/v1/check", "{\"policy\": \"fw\", \"key\": \"alice\", \"cost\": 2}");
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"allowed\":true,\"policy\":\"fw\",\"limit\":3,\"remaining\":1,"
                                 "\"reset_after_ms\":10000,\"retry_after_ms\":0,\"limited\":false}\n");
    assert_string_equal(hval(f, "RateLimit"), "\"fw\";r=1;t=10");
    /* the same key through GET shares the budget */
    get(f, "/v1/check?policy=fw&key=alice");
    assert_int_equal(jnum(f, "remaining"), 0);
    post(f, "/v1/check", "{\"policy\":\"fw\",\"key\":\"alice\"}");
    expect_status(f, 429);
    assert_string_equal(hval(f, "Retry-After"), "10");
    /* a tier by key */
    post(f, "/v1/check", "{\"policy\":\"rich\",\"key\":\"we\\\"ird\"}");
    expect_status(f, 200);
    expect_contains(body(f), "\"tier\":\"gold\"");
}

static void check_attributes(void **state) {
    fx_t *f = *state;
    /* ip (v4): the key is "ip=<address>" */
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_status(f, 200);
    assert_string_equal(hval(f, "RateLimit"), "\"per_ip\";r=9;t=20");
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.5"), 9);
    /* user */
    post(f, "/v1/check", "{\"policy\":\"per_user\",\"attributes\":{\"user\":\"Bearer tok-a\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_user", "user=Bearer tok-a"), 9);
    /* endpoint: the path, without the query */
    post(f, "/v1/check", "{\"policy\":\"per_ep\",\"attributes\":{\"endpoint\":\"/api/items?page=2\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/items"), 9);
    /* method, upper-cased */
    post(f, "/v1/check", "{\"policy\":\"per_method\",\"attributes\":{\"method\":\"post\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_method", "method=POST"), 9);
    /* header:X-Tenant, given as "header:X-Tenant", as "X-Tenant" or in another case */
    post(f, "/v1/check", "{\"policy\":\"per_tenant\",\"attributes\":{\"header:X-Tenant\":\"acme\"}}");
    expect_status(f, 200);
    post(f, "/v1/check", "{\"policy\":\"per_tenant\",\"attributes\":{\"X-Tenant\":\"acme\"}}");
    expect_status(f, 200);
    post(f, "/v1/check", "{\"policy\":\"per_tenant\",\"attributes\":{\"x-tenant\":\"acme\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_tenant", "header:X-Tenant=acme"), 7);
    /* two attributes build a tuple key, and may pick a tier */
    post(f, "/v1/check", "{\"policy\":\"rich\",\"attributes\":{\"endpoint\":\"/x\",\"user\":\"alice\"}}");
    expect_status(f, 200);
    expect_contains(body(f), "\"tier\":\"gold\"");
    /* attributes win over a key given with them: the key is built */
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"key\":\"ignored\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_status(f, 200);
    assert_int_equal(jnum(f, "remaining"), 8);
}

/* Two addresses in one /64 share a budget; another /64 has its own. */
static void check_attributes_ipv6(void **state) {
    fx_t *f = *state;
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"2001:db8:1:2::1\"}}");
    assert_int_equal(jnum(f, "remaining"), 9);
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"2001:db8:1:2:ffff:ffff:ffff:fffe\"}}");
    assert_int_equal(jnum(f, "remaining"), 8);
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"2001:db8:1:3::1\"}}");
    assert_int_equal(jnum(f, "remaining"), 9);
    assert_int_equal(remaining_of(f, "per_ip", "ip=2001:db8:1:2::/64"), 8);
    assert_int_equal(remaining_of(f, "per_ip", "ip=2001:db8:1:3::/64"), 9);
    /* loopback: ::1 is in ::/64 */
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"::1\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=::/64"), 9);
}

static void check_attribute_errors(void **state) {
    fx_t *f = *state;
    /* per_user keys on user: another attribute does not do */
    post(f, "/v1/check", "{\"policy\":\"per_user\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    post(f, "/v1/check", "{\"policy\":\"per_user\",\"attributes\":{\"user\":\"\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    post(f, "/v1/check", "{\"policy\":\"per_tenant\",\"attributes\":{\"X-Other\":\"acme\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    /* fw is keyed by the key the client gives */
    post(f, "/v1/check", "{\"policy\":\"fw\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    post(f, "/v1/check", "{\"policy\":\"fw\",\"key\":\"k\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    /* not an address */
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"localhost\"}}");
    expect_error(f, 400, "bad_request", "attributes");
    /* a policy on attributes without them: the key is missing */
    post(f, "/v1/check", "{\"policy\":\"per_ip\"}");
    expect_error(f, 400, "bad_request", "key");
    /* nothing was charged by any of these */
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.5"), 10);
    assert_int_equal(remaining_of(f, "fw", "k"), 3);
}

/* ---- 5. check errors --------------------------------------------------------- */

static void check_errors(void **state) {
    fx_t *f = *state;
    get(f, "/v1/check?policy=nope&key=a");
    expect_error(f, 404, "unknown_policy", "policy");
    post(f, "/v1/check", "{\"policy\":\"nope\",\"key\":\"a\"}");
    expect_error(f, 404, "unknown_policy", "policy");
    get(f, "/v1/check?policy=fw&key=a&cost=abc");
    expect_error(f, 400, "bad_request", "cost");
    get(f, "/v1/check?policy=fw&key=a&cost=-1");
    expect_error(f, 400, "bad_request", "cost");
    post(f, "/v1/check", "{\"policy\":\"fw\",\"key\":\"a\",\"cost\":1.5}");
    expect_error(f, 400, "bad_request", "cost");
    get(f, "/v1/check?policy=fw&key=a&cots=1");
    expect_error(f, 400, "bad_request", "query");
    get(f, "/v1/check?key=a");
    expect_error(f, 400, "bad_request", "policy");
    get(f, "/v1/check");
    expect_error(f, 400, "bad_request", "policy");
    get(f, "/v1/check?policy=fw");
    expect_error(f, 400, "bad_request", "key");
    post(f, "/v1/check", "{\"policy\":\"fw\",\"key\":\"a\"");
    expect_error(f, 400, "bad_request", "body");
    post(f, "/v1/check", "not json");
    expect_error(f, 400, "bad_request", "body");
    post(f, "/v1/check", NULL);
    expect_error(f, 400, "bad_request", "body");
    post(f, "/v1/check", "{\"policy\":\"fw\",\"key\":\"a\",\"extra\":1}");
    expect_error(f, 400, "bad_request", "body");

    call(f, "PUT", "/v1/check?policy=fw&key=a", NULL, NULL);
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "GET, POST");
    call(f, "DELETE", "/v1/check", NULL, NULL);
    expect_status(f, 405);
    assert_string_equal(hval(f, "Allow"), "GET, POST");

    get(f, "/v1/checks?policy=fw&key=a");
    expect_error(f, 404, "not_found", NULL);
    get(f, "/");
    expect_error(f, 404, "not_found", NULL);
    get(f, "/v1/check/");
    expect_error(f, 404, "not_found", NULL);

    /* max_key_bytes is 64: 64 bytes pass, 65 do not */
    char target[256], key[66];
    memset(key, 'k', 65);
    key[65] = '\0';
    snprintf(target, sizeof target, "/v1/check?policy=fw&key=%s", key);
    get(f, target);
    expect_error(f, 400, "bad_request", "key");
    key[64] = '\0';
    snprintf(target, sizeof target, "/v1/check?policy=fw&key=%s", key);
    get(f, target);
    expect_status(f, 200);
    /* a key built from attributes is held to the bound too */
    char json[256];
    snprintf(json, sizeof json, "{\"policy\":\"per_user\",\"attributes\":{\"user\":\"%s\"}}", key);
    post(f, "/v1/check", json);
    expect_status(f, 400);

    /* no error charged anything */
    assert_int_equal(remaining_of(f, "fw", "a"), 3);
}

/* ---- 6. forward-auth ---------------------------------------------------------- */

static void auth_client_ip(void **state) {
    fx_t *f = *state;
    /* an untrusted peer: X-Forwarded-For and X-Real-IP are not believed */
    set_peer(f, "127.0.0.9");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "127.0.0.50", "X-Real-IP", "127.0.0.51"));
    expect_status(f, 200);
    assert_null(f->reply.content_type);
    assert_int_equal(f->reply.body.len, 0);
    assert_string_equal(hval(f, "RateLimit"), "\"per_ip\";r=9;t=20");
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"per_ip\";q=10;w=60");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "9");
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.9"), 9);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.50"), 10);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.51"), 10);

    /* a trusted peer: the rightmost X-Forwarded-For entry that is not trusted */
    set_peer(f, "127.0.0.1");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "127.0.0.60, 127.0.0.61, 127.0.0.1"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.61"), 9);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.60"), 10);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.1"), 10);

    /* X-Forwarded-For before X-Real-IP; X-Real-IP when there is none */
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "127.0.0.80", "X-Real-IP", "127.0.0.81"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.80"), 9);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.81"), 10);
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Real-IP", "127.0.0.70"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.70"), 9);
    /* neither: the trusted peer itself */
    call(f, "GET", "/v1/auth/per_ip", NULL, NULL);
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.1"), 9);

    /* IPv6 behind the trusted ::1, grouped by /64 */
    set_peer(f, "::1");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "2001:db8:1:2::a"));
    expect_status(f, 200);
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "[2001:db8:1:2:ffff::b]:443"));
    expect_status(f, 200);
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "8");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "2001:db8:1:3::a"));
    expect_status(f, 200);
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "9");
    assert_int_equal(remaining_of(f, "per_ip", "ip=2001:db8:1:2::/64"), 8);
    assert_int_equal(remaining_of(f, "per_ip", "ip=2001:db8:1:3::/64"), 9);
    /* ::1 itself, no header */
    call(f, "GET", "/v1/auth/per_ip", NULL, NULL);
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=::/64"), 9);
}

/* ipv6_prefix: 48 groups 2001:db8:1:2:: and 2001:db8:1:3:: */
static void auth_ipv6_prefix(void **state) {
    fx_t *f = *state;
    set_peer(f, "::1");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "2001:db8:1:2::a"));
    expect_status(f, 200);
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "2001:db8:1:3::a"));
    expect_status(f, 200);
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "8");
    call(f, "GET", "/v1/auth/per_ip", NULL, H("X-Forwarded-For", "2001:db8:2::a"));
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "9");
    assert_int_equal(remaining_of(f, "per_ip", "ip=2001:db8:1::/48"), 8);
}

static void auth_user_default_header(void **state) {
    fx_t *f = *state;
    call(f, "GET", "/v1/auth/per_user", NULL, H("Authorization", "Bearer tok-a"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_user", "user=Bearer tok-a"), 9);
    call(f, "GET", "/v1/auth/per_user", NULL, NULL);
    expect_error(f, 401, "unauthorized", "user");
    assert_string_equal(hval(f, "WWW-Authenticate"), "Bearer realm=\"sluice\"");
    call(f, "GET", "/v1/auth/per_user", NULL, H("Authorization", ""));
    expect_status(f, 401);
}

static void auth_user_custom_header(void **state) {
    fx_t *f = *state;
    call(f, "GET", "/v1/auth/per_user", NULL, H("X-API-Key", "k1"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_user", "user=k1"), 1);
    /* Authorization is not the user header here */
    call(f, "GET", "/v1/auth/per_user", NULL, H("Authorization", "Bearer k1"));
    expect_error(f, 401, "unauthorized", "user");
    assert_string_equal(hval(f, "WWW-Authenticate"), "ApiKey realm=\"sluice\", header=\"X-API-Key\"");
    call(f, "GET", "/v1/auth/per_user", NULL, NULL);
    expect_status(f, 401);
    assert_non_null(hval(f, "WWW-Authenticate"));
    assert_int_equal(remaining_of(f, "per_user", "user=k1"), 1);
}

static void auth_endpoint_method_header(void **state) {
    fx_t *f = *state;
    /* endpoint: X-Original-URI (path only), else X-Forwarded-Uri, else the path's tail */
    call(f, "GET", "/v1/auth/per_ep", NULL,
         H("X-Original-URI", "/api/items?page=2", "X-Forwarded-Uri", "/api/fwd"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/items"), 9);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/fwd"), 10);
    call(f, "GET", "/v1/auth/per_ep/api/tail", NULL, H("X-Forwarded-Uri", "/api/fwd"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/fwd"), 9);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/tail"), 10);
    call(f, "GET", "/v1/auth/per_ep/api/tail", NULL, NULL);
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ep", "endpoint=/api/tail"), 9);
    call(f, "GET", "/v1/auth/per_ep", NULL, NULL);
    expect_error(f, 400, "bad_request", "key");

    /* method: X-Original-Method, else X-Forwarded-Method, else the request's */
    call(f, "GET", "/v1/auth/per_method", NULL, H("X-Original-Method", "delete", "X-Forwarded-Method", "PATCH"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_method", "method=DELETE"), 9);
    call(f, "GET", "/v1/auth/per_method", NULL, H("X-Forwarded-Method", "PATCH"));
    assert_int_equal(remaining_of(f, "per_method", "method=PATCH"), 9);
    call(f, "PUT", "/v1/auth/per_method", NULL, NULL);
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_method", "method=PUT"), 9);

    /* header:X-Tenant */
    call(f, "GET", "/v1/auth/per_tenant", NULL, H("X-Tenant", "acme"));
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_tenant", "header:X-Tenant=acme"), 9);
    call(f, "GET", "/v1/auth/per_tenant", NULL, NULL);
    expect_error(f, 400, "bad_request", "key");
}

static void auth_denied_default_429(void **state) {
    fx_t *f = *state;
    set_peer(f, "127.0.0.9");
    call(f, "GET", "/v1/auth/strict_ip", NULL, NULL);
    expect_status(f, 200);
    call(f, "POST", "/v1/auth/strict_ip", "ignored", NULL);
    expect_status(f, 429);
    assert_int_equal(f->reply.body.len, 0);
    assert_null(f->reply.content_type);
    assert_string_equal(hval(f, "Retry-After"), "20"); /* the 1 m window began at 960 s */
    assert_string_equal(hval(f, "RateLimit"), "\"strict_ip\";r=0;t=20");
    assert_string_equal(hval(f, "X-RateLimit-Reset"), "20");
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "0");
}

static void auth_denied_configured_403(void **state) {
    fx_t *f = *state;
    call(f, "GET", "/v1/auth/per_user", NULL, H("X-API-Key", "k1"));
    call(f, "GET", "/v1/auth/per_user", NULL, H("X-API-Key", "k1"));
    expect_status(f, 200);
    assert_string_equal(hval(f, "X-RateLimit-Remaining"), "0");
    call(f, "GET", "/v1/auth/per_user", NULL, H("X-API-Key", "k1"));
    expect_status(f, 403);
    assert_int_equal(f->reply.body.len, 0);
    assert_string_equal(hval(f, "RateLimit"), "\"per_user\";r=0;t=20");
    /* /v1/check is not forward-auth: a denial there is still 429 */
    post(f, "/v1/check", "{\"policy\":\"per_user\",\"attributes\":{\"user\":\"k1\"}}");
    expect_status(f, 429);
}

static void auth_errors(void **state) {
    fx_t *f = *state;
    call(f, "GET", "/v1/auth/nope", NULL, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    call(f, "GET", "/v1/auth/nope/x", NULL, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    call(f, "GET", "/v1/auth/", NULL, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    /* a policy keyed by the client's key cannot be used for forward-auth */
    call(f, "GET", "/v1/auth/fw", NULL, NULL);
    expect_error(f, 400, "bad_request", "policy");
    assert_int_equal(remaining_of(f, "fw", ""), 3);
}

/* ---- 7. health and metrics ---------------------------------------------------- */

static void health_and_ready(void **state) {
    fx_t *f = *state;
    get(f, "/healthz");
    expect_status(f, 200);
    assert_string_equal(f->reply.content_type, "text/plain; charset=utf-8");
    assert_string_equal(body(f), "ok\n");
    get(f, "/readyz");
    expect_status(f, 200);
    assert_string_equal(body(f), "ready\n");
    post(f, "/healthz", "");
    expect_status(f, 405);
    assert_string_equal(hval(f, "Allow"), "GET");
    atomic_store(&f->d.stopping, true);
    get(f, "/readyz");
    expect_status(f, 503);
    assert_string_equal(body(f), "stopping\n");
    get(f, "/healthz");
    expect_status(f, 200);
}

static void metrics_count_decisions(void **state) {
    fx_t *f = *state;
    call_on(f, 0, "GET", "/v1/check?policy=fw&key=m", NULL, NULL);
    call_on(f, 0, "GET", "/v1/check?policy=fw&key=m", NULL, NULL);
    call_on(f, 1, "GET", "/v1/check?policy=fw&key=m", NULL, NULL);
    expect_status(f, 200);
    call_on(f, 1, "GET", "/v1/check?policy=fw&key=m", NULL, NULL);
    expect_status(f, 429);
    set_peer(f, "127.0.0.9");
    call_on(f, 1, "GET", "/v1/auth/strict_ip", NULL, NULL);
    call_on(f, 1, "GET", "/v1/auth/strict_ip", NULL, NULL);
    expect_status(f, 429);
    call_on(f, 0, "GET", "/v1/check?policy=nope&key=m", NULL, NULL); /* not a decision */
    /* INFO's totals over both workers: 2 + 2 allowed, 2 denied */
    uint64_t allowed, denied;
    sld_metrics_totals(f->d.metrics, &allowed, &denied);
    assert_int_equal(allowed, 4);
    assert_int_equal(denied, 2);

    get(f, "/metrics");
    expect_status(f, 200);
    assert_string_equal(f->reply.content_type, "text/plain; version=0.0.4; charset=utf-8");
    const sld_buf_t *b = &f->reply.body;
    char *text = malloc(b->len + 1);
    assert_non_null(text);
    memcpy(text, b->data, b->len);
    text[b->len] = '\0';
    expect_contains(text, "\nsluice_decisions_total{policy=\"fw\",result=\"allowed\"} 3\n");
    expect_contains(text, "\nsluice_decisions_total{policy=\"fw\",result=\"denied\"} 1\n");
    expect_contains(text, "\nsluice_decisions_total{policy=\"strict_ip\",result=\"allowed\"} 1\n");
    expect_contains(text, "\nsluice_decisions_total{policy=\"strict_ip\",result=\"denied\"} 1\n");
    expect_contains(text, "\nsluice_decisions_total{policy=\"one\",result=\"allowed\"} 0\n");
    free(text);
    post(f, "/metrics", "");
    expect_status(f, 405);
}

/* ---- 8. admin ------------------------------------------------------------------ */

static void admin_off_without_token(void **state) {
    fx_t *f = *state;
    call(f, "GET", "/v1/admin/policies", NULL, H("Authorization", "Bearer " TOKEN));
    expect_error(f, 404, "not_found", NULL);
    call(f, "DELETE", "/v1/admin/policies/per_ip", NULL, H("Authorization", "Bearer " TOKEN));
    expect_error(f, 404, "not_found", NULL);
    call(f, "GET", "/v1/check?policy=per_ip&key=x", NULL, NULL);
    expect_status(f, 200);
}

static void admin_authorisation(void **state) {
    fx_t *f = *state;
    static const char *const refused[] = {
        NULL,                                  /* no header */
        "",
        TOKEN,                                 /* no scheme */
        "Basic " TOKEN,
        "Bearer",
        "Bearer ",
        "Bearer test-admin-token-0123456788",  /* wrong, same length */
        "Bearer test-admin-token-012345678",   /* a prefix */
        "Bearer test-admin-token-01234567890", /* longer */
        "Bearer x",
        "Bearer TEST-ADMIN-TOKEN-0123456789",  /* the token is case-sensitive */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (refused[i])
            call(f, "GET", "/v1/admin/policies", NULL, H("Authorization", refused[i]));
        else
            call(f, "GET", "/v1/admin/policies", NULL, NULL);
        expect_error(f, 401, "unauthorized", NULL);
        assert_string_equal(hval(f, "WWW-Authenticate"), "Bearer realm=\"sluice admin\"");
    }
    /* refused before anything else: a delete does nothing */
    call(f, "DELETE", "/v1/admin/policies/fw", NULL, H("Authorization", "Bearer wrong"));
    expect_status(f, 401);
    get(f, "/v1/check?policy=fw&key=a");
    expect_status(f, 200);

    static const char *const accepted[] = {"Bearer " TOKEN, "bearer " TOKEN, "BEARER " TOKEN,
                                           "BeArEr " TOKEN};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        call(f, "GET", "/v1/admin/policies", NULL, H("Authorization", accepted[i]));
        expect_status(f, 200);
    }
}

static void admin_list_and_get(void **state) {
    fx_t *f = *state;
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_status(f, 200);
    assert_string_equal(f->reply.content_type, "application/json");
    const sld_buf_t *b = &f->reply.body;
    char *text = malloc(b->len + 1);
    assert_non_null(text);
    memcpy(text, b->data, b->len);
    text[b->len] = '\0';
    static const char head[] = "{\"generation\":1,\"policies\":[{\"name\":\"fw\",";
    assert_true(strncmp(text, head, sizeof head - 1) == 0);
    assert_string_equal(text + b->len - 4, "}]}\n");
    const char *at = text;
    for (size_t i = 0; i < sizeof main_policies / sizeof main_policies[0]; i++) {
        char item[96];
        snprintf(item, sizeof item, "{\"name\":\"%s\",", main_policies[i]);
        const char *next = strstr(at, item);
        if (next == NULL)
            fail_msg("%s missing (or out of order) in %s", main_policies[i], text);
        at = next + 1;
    }
    free(text);

    admin(f, "GET", "/v1/admin/policies/fw", NULL);
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"name\":\"fw\",\"key\":[\"key\"],\"mode\":\"hard\",\"limits\":"
                                 "[{\"algorithm\":\"fixed_window\",\"limit\":3,\"period\":\"10s\"}]}\n");
    admin(f, "GET", "/v1/admin/policies/per_tenant", NULL);
    assert_string_equal(body(f), "{\"name\":\"per_tenant\",\"key\":[\"header:X-Tenant\"],\"mode\":\"hard\","
                                 "\"limits\":[{\"algorithm\":\"fixed_window\",\"limit\":10,\"period\":\"60s\"}]}\n");
    admin(f, "GET", "/v1/admin/policies/nope", NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    admin(f, "GET", "/v1/admin/policies/fw/x", NULL);
    expect_status(f, 404);
    admin(f, "GET", "/v1/admin/policies/", NULL);
    expect_status(f, 404);
    admin(f, "GET", "/v1/admin/nope", NULL);
    expect_error(f, 404, "not_found", NULL);
    admin(f, "GET", "/v1/admin", NULL);
    expect_error(f, 404, "not_found", NULL);
}

/* Every field renders as the configuration writes it. */
static void admin_get_renders_every_field(void **state) {
    fx_t *f = *state;
    admin(f, "GET", "/v1/admin/policies/rich", NULL);
    expect_status(f, 200);
    assert_string_equal(
        body(f),
        "{\"name\":\"rich\",\"key\":[\"user\",\"endpoint\"],\"mode\":\"soft\",\"soft_percent\":20,\"limits\":["
        "{\"algorithm\":\"gcra\",\"limit\":10,\"period\":\"1500ms\",\"burst\":5,\"count_denied\":true},"
        "{\"algorithm\":\"sliding_window\",\"limit\":100,\"period\":\"60s\",\"precision\":6},"
        "{\"algorithm\":\"leaky_bucket\",\"limit\":5,\"period\":\"1s\",\"burst\":8,\"shaper\":true},"
        "{\"algorithm\":\"token_bucket\",\"limit\":7,\"period\":\"2500us\"},"
        "{\"algorithm\":\"sliding_log\",\"limit\":3,\"period\":\"5400s\"},"
        "{\"algorithm\":\"fixed_window\",\"limit\":4,\"period\":\"86400s\"}],"
        "\"tiers\":[{\"name\":\"gold\",\"keys\":[\"user=alice|endpoint=/x\",\"we\\\"ird\"],\"limits\":["
        "{\"algorithm\":\"gcra\",\"limit\":100,\"period\":\"1s\"}]},"
        "{\"name\":\"silver\",\"keys\":[\"bob\"],\"limits\":["
        "{\"algorithm\":\"fixed_window\",\"limit\":50,\"period\":\"1s\"},"
        "{\"algorithm\":\"sliding_window\",\"limit\":500,\"period\":\"10s\",\"precision\":10}]}]}\n");
    admin(f, "GET", "/v1/admin/policies/elastic_p", NULL);
    assert_string_equal(body(f), "{\"name\":\"elastic_p\",\"key\":[\"header:X-Tenant\",\"method\"],"
                                 "\"mode\":\"elastic\",\"limits\":[{\"algorithm\":\"gcra\",\"limit\":5,"
                                 "\"period\":\"1s\"}],\"pool\":{\"algorithm\":\"token_bucket\",\"limit\":1000,"
                                 "\"period\":\"1s\",\"burst\":2000}}\n");
    admin(f, "GET", "/v1/admin/policies/shadow_p", NULL);
    assert_string_equal(body(f), "{\"name\":\"shadow_p\",\"key\":[\"key\"],\"mode\":\"shadow\",\"limits\":"
                                 "[{\"algorithm\":\"sliding_window\",\"limit\":10,\"period\":\"10s\"}]}\n");
}

static void admin_put_and_delete(void **state) {
    fx_t *f = *state;
    static const char policy[] = "{\"limits\":[{\"algorithm\":\"gcra\",\"limit\":2,\"period\":\"1s\"}]}";
    admin(f, "PUT", "/v1/admin/policies/fresh", policy);
    expect_status(f, 201);
    assert_string_equal(f->reply.content_type, "application/json");
    assert_string_equal(body(f), "{\"policy\":\"fresh\",\"created\":true,\"generation\":2}\n");
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_contains(body(f), "{\"generation\":2,");
    expect_contains(body(f), "{\"name\":\"fresh\",");
    get(f, "/v1/check?policy=fresh&key=a");
    expect_status(f, 200);
    expect_contains(body(f), "\"policy\":\"fresh\"");
    assert_string_equal(hval(f, "RateLimit-Policy"), "\"fresh\";q=2;w=1");
    get(f, "/v1/check?policy=fresh&key=a"); /* gcra 2/s, no burst: one per 500 ms */
    expect_status(f, 429);
    /* the other policies are untouched, and keep their counters */
    get(f, "/v1/check?policy=fw&key=a");
    expect_status(f, 200);

    admin(f, "PUT", "/v1/admin/policies/fresh", policy);
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"policy\":\"fresh\",\"created\":false,\"generation\":3}\n");
    /* the same limit again: its counters survive the edit */
    get(f, "/v1/check?policy=fresh&key=a");
    expect_status(f, 429);
    admin(f, "PUT", "/v1/admin/policies/fresh",
          "{\"mode\":\"hard\",\"limits\":[{\"algorithm\":\"gcra\",\"limit\":2,\"period\":\"1s\",\"burst\":3}]}");
    expect_status(f, 200);
    get(f, "/v1/check?policy=fresh&key=a");
    expect_status(f, 200);
    assert_string_equal(hval(f, "X-RateLimit-Limit"), "4");

    /* an invalid policy: 400 with the validation's message; nothing applied */
    static const char bad[] = "{\"limits\":[{\"algorithm\":\"gcra\",\"limit\":0,\"period\":\"1s\"}]}";
    char err[SLD_MAX_ERROR] = "";
    sld_policy_t *p = NULL;
    assert_int_not_equal(sld_config_parse_policy("fresh", bad, sizeof bad - 1, 1024, &p, err, sizeof err), SL_OK);
    assert_true(strlen(err) > 0);
    admin(f, "PUT", "/v1/admin/policies/fresh", bad);
    expect_error(f, 400, "invalid_policy", "body");
    sld_buf_t want = {0};
    sld_buf_append_str(&want, "{\"error\":\"invalid_policy\",\"parameter\":\"body\",\"message\":");
    sld_json_string(&want, err, strlen(err));
    sld_buf_append_str(&want, "}\n");
    sld_buf_append(&want, "", 1);
    assert_string_equal(body(f), want.data);
    sld_buf_free(&want);
    admin(f, "PUT", "/v1/admin/policies/fresh", "not json");
    expect_error(f, 400, "invalid_policy", "body");
    admin(f, "PUT", "/v1/admin/policies/fresh", NULL);
    expect_error(f, 400, "invalid_policy", "body");
    admin(f, "PUT", "/v1/admin/policies/bad%20name", policy);
    expect_error(f, 400, "invalid_policy", "policy");
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_contains(body(f), "{\"generation\":4,");
    assert_null(strstr(body(f), "bad%20name"));

    admin(f, "DELETE", "/v1/admin/policies/fresh", NULL);
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"deleted\":\"fresh\",\"generation\":5}\n");
    get(f, "/v1/check?policy=fresh&key=a");
    expect_error(f, 404, "unknown_policy", "policy");
    admin(f, "GET", "/v1/admin/policies/fresh", NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    admin(f, "DELETE", "/v1/admin/policies/fresh", NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_contains(body(f), "{\"generation\":5,");

    /* a configured policy can go too; forward-auth then knows it no more */
    admin(f, "DELETE", "/v1/admin/policies/per_ip", NULL);
    expect_status(f, 200);
    call(f, "GET", "/v1/auth/per_ip", NULL, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
}

static void admin_delete_last(void **state) {
    fx_t *f = *state;
    admin(f, "DELETE", "/v1/admin/policies/only", NULL);
    expect_error(f, 409, "conflict", NULL);
    get(f, "/v1/check?policy=only&key=a");
    expect_status(f, 200);
    admin(f, "PUT", "/v1/admin/policies/second", "{\"limits\":[{\"algorithm\":\"gcra\",\"limit\":1,\"period\":\"1s\"}]}");
    expect_status(f, 201);
    admin(f, "DELETE", "/v1/admin/policies/only", NULL);
    expect_status(f, 200);
    admin(f, "DELETE", "/v1/admin/policies/second", NULL);
    expect_error(f, 409, "conflict", NULL);
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_status(f, 200);
    assert_string_equal(body(f), "{\"generation\":3,\"policies\":[{\"name\":\"second\",\"key\":[\"key\"],"
                                 "\"mode\":\"hard\",\"limits\":[{\"algorithm\":\"gcra\",\"limit\":1,"
                                 "\"period\":\"1s\"}]}]}\n");
}

static void admin_reset_key(void **state) {
    fx_t *f = *state;
    for (int i = 0; i < 3; i++)
        get(f, "/v1/check?policy=fw&key=k");
    get(f, "/v1/check?policy=fw&key=k");
    expect_status(f, 429);
    get(f, "/v1/check?policy=fw&key=other");
    expect_status(f, 200);
    admin(f, "POST", "/v1/admin/reset", "{\"policy\":\"fw\",\"key\":\"k\"}");
    expect_status(f, 200);
    assert_string_equal(f->reply.content_type, "application/json");
    assert_string_equal(body(f), "{\"reset\":true,\"policy\":\"fw\"}\n");
    get(f, "/v1/check?policy=fw&key=k");
    expect_status(f, 200);
    assert_int_equal(jnum(f, "remaining"), 2);
    assert_int_equal(remaining_of(f, "fw", "other"), 2); /* only that key */

    /* by attributes, and in a tier */
    post(f, "/v1/check", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.5"), 9);
    admin(f, "POST", "/v1/admin/reset", "{\"policy\":\"per_ip\",\"attributes\":{\"ip\":\"127.0.0.5\"}}");
    expect_status(f, 200);
    assert_int_equal(remaining_of(f, "per_ip", "ip=127.0.0.5"), 10);
    post(f, "/v1/check", "{\"policy\":\"rich\",\"key\":\"bob\"}");
    assert_int_equal(jnum(f, "remaining"), 49);
    admin(f, "POST", "/v1/admin/reset", "{\"policy\":\"rich\",\"key\":\"bob\"}");
    expect_status(f, 200);
    post(f, "/v1/check", "{\"policy\":\"rich\",\"key\":\"bob\"}");
    assert_int_equal(jnum(f, "remaining"), 49);

    admin(f, "POST", "/v1/admin/reset", "{\"policy\":\"nope\",\"key\":\"k\"}");
    expect_error(f, 404, "unknown_policy", "policy");
    admin(f, "POST", "/v1/admin/reset", "{\"policy\":\"fw\"}");
    expect_error(f, 400, "bad_request", "key");
    admin(f, "POST", "/v1/admin/reset", "{");
    expect_error(f, 400, "bad_request", "body");
}

static void admin_reload_and_methods(void **state) {
    fx_t *f = *state;
    assert_null(f->d.config_path);
    admin(f, "POST", "/v1/admin/reload", NULL);
    expect_error(f, 409, "no_config_file", NULL);
    admin(f, "GET", "/v1/admin/policies", NULL);
    expect_contains(body(f), "{\"generation\":1,");

    admin(f, "GET", "/v1/admin/reload", NULL);
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "POST");
    admin(f, "GET", "/v1/admin/reset", NULL);
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "POST");
    admin(f, "POST", "/v1/admin/policies", "{}");
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "GET");
    admin(f, "DELETE", "/v1/admin/policies", NULL);
    expect_status(f, 405);
    admin(f, "POST", "/v1/admin/policies/fw", "{}");
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "GET, PUT, DELETE");
    admin(f, "PATCH", "/v1/admin/policies/fw", "{}");
    expect_status(f, 405);
    admin(f, "GET", "/v1/admin/policies/fw", NULL);
    expect_status(f, 200);
}

/* The route table's order of questions: the admin gate before the method,
 * the row that owns a path before any method, 404 for no row. */
static void routes_gate_then_method(void **state) {
    fx_t *f = *state;
    /* without the token a wrong method or an unknown admin path says 401 only */
    call(f, "PATCH", "/v1/admin/reset", NULL, NULL);
    expect_error(f, 401, "unauthorized", NULL);
    expect_no_header(f, "Allow");
    call(f, "GET", "/v1/admin/nothing", NULL, NULL);
    expect_error(f, 401, "unauthorized", NULL);
    /* with it: 405 for a known path, the admin 404 for an unknown one */
    admin(f, "PATCH", "/v1/admin/reset", NULL);
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "POST");
    admin(f, "GET", "/v1/admin/nothing", NULL);
    expect_error(f, 404, "not_found", NULL);
    expect_contains(body(f), "admin paths:");
    admin(f, "GET", "/v1/admin", NULL);
    expect_error(f, 404, "not_found", NULL);
    expect_contains(body(f), "admin paths:");
    admin(f, "GET", "/v1/admin/policies/", NULL);
    expect_contains(body(f), "admin paths:");
    /* a path that cannot be a policy's name: 404 whatever the method */
    admin(f, "POST", "/v1/admin/policies/a/b", "{}");
    expect_error(f, 404, "unknown_policy", "policy");
    char target[128];
    snprintf(target, sizeof target, "/v1/admin/policies/%065d", 0);
    admin(f, "GET", target, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    snprintf(target, sizeof target, "/v1/admin/policies/%064d", 0);
    admin(f, "GET", target, NULL);
    expect_error(f, 404, "unknown_policy", "policy");
    expect_contains(body(f), "no policy named");
    /* the other fronts: their rows' methods, and no row at all */
    call(f, "OPTIONS", "/metrics", NULL, NULL);
    expect_error(f, 405, "method_not_allowed", NULL);
    assert_string_equal(hval(f, "Allow"), "GET");
    call(f, "HEAD", "/healthz", NULL, NULL);
    expect_status(f, 200);
    call(f, "get", "/healthz", NULL, NULL); /* methods are case-sensitive */
    expect_status(f, 405);
    get(f, "/v1/adminx");
    expect_error(f, 404, "not_found", NULL);
    expect_contains(body(f), "no such path");
    get(f, "/v1/check/");
    expect_error(f, 404, "not_found", NULL);
    call(f, "BREW", "/v1/auth/", NULL, NULL); /* forward-auth takes any method */
    expect_error(f, 404, "unknown_policy", "policy");
}

/* ---- 9. the round trip ------------------------------------------------------------ */

/* GET a policy, drop its "name", PUT it back: the same GET, one generation on. */
static void round_trip(fx_t *f, const char *name, long long generation) {
    static char target[128], before[16384], head[96], put[16384];
    snprintf(target, sizeof target, "/v1/admin/policies/%s", name);
    admin(f, "GET", target, NULL);
    expect_status(f, 200);
    snprintf(before, sizeof before, "%s", body(f));
    snprintf(head, sizeof head, "{\"name\":\"%s\",", name);
    size_t hn = strlen(head);
    assert_true(strncmp(before, head, hn) == 0);
    snprintf(put, sizeof put, "{%s", before + hn);
    admin(f, "PUT", target, put);
    if (f->reply.status != 200)
        fail_msg("PUT of %s's own GET JSON: %d %s", name, f->reply.status, body(f));
    assert_int_equal(jnum(f, "generation"), generation);
    admin(f, "GET", target, NULL);
    expect_status(f, 200);
    assert_string_equal(body(f), before);
}

static void admin_round_trip(void **state) {
    fx_t *f = *state;
    for (size_t i = 0; i < sizeof main_policies / sizeof main_policies[0]; i++)
        round_trip(f, main_policies[i], (long long)i + 2);
    /* and the policies still decide: the tiers came through, escapes and all */
    post(f, "/v1/check", "{\"policy\":\"rich\",\"attributes\":{\"user\":\"alice\",\"endpoint\":\"/x\"}}");
    expect_status(f, 200);
    expect_contains(body(f), "\"tier\":\"gold\"");
    static const char *const odd[] = {"back\\\\slash", "tab\\tkey", "sl/ash", "uni\\u00e9", "nl\\nx", "q\\\"uote"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"policy\":\"escapes\",\"key\":\"%s\"}", odd[i]);
        post(f, "/v1/check", json);
        expect_status(f, 200);
        expect_contains(body(f), "\"tier\":\"odd\"");
    }
    post(f, "/v1/check", "{\"policy\":\"escapes\",\"key\":\"tabkey\"}");
    assert_null(strstr(body(f), "\"tier\""));
}

/* A PUT is validated against the running max_key_bytes, not the default
 * (1024): this file allows 4096-byte keys and has a 2000-byte tier key, and
 * the round trip must hold for every policy the file accepts. */
static void admin_round_trip_long_tier_key(void **state) {
    fx_t *f = *state;
    char key[2001], json[2100];
    memset(key, 'k', 2000);
    key[2000] = '\0';
    snprintf(json, sizeof json, "{\"policy\":\"long\",\"key\":\"%s\"}", key);
    post(f, "/v1/check", json);
    expect_status(f, 200);
    expect_contains(body(f), "\"tier\":\"t\"");
    round_trip(f, "long", 2);
}

/* The other side: a tier key longer than the running max_key_bytes is
 * refused (400) as the file would refuse it; no request could reach it. */
static void admin_put_tier_key_over_max_key_bytes(void **state) {
    fx_t *f = *state;
    char key[66], json[512], yaml[512];
    memset(key, 'k', 65);
    key[65] = '\0';
    /* the file's rule, for reference */
    snprintf(yaml, sizeof yaml,
             "limits: {max_key_bytes: 64}\n"
             "policies:\n"
             "  - name: x\n"
             "    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"
             "    tiers: [{name: t, keys: [%s], limits: [{algorithm: gcra, limit: 2, period: 1s}]}]\n",
             key);
    sld_config_t *cfg = NULL;
    char err[SLD_MAX_ERROR] = "";
    assert_int_equal(sld_config_parse("x.yaml", yaml, strlen(yaml), &cfg, err, sizeof err), SL_EINVAL);
    expect_contains(err, "limits.max_key_bytes");

    snprintf(json, sizeof json,
             "{\"limits\":[{\"algorithm\":\"gcra\",\"limit\":1,\"period\":\"1s\"}],"
             "\"tiers\":[{\"name\":\"t\",\"keys\":[\"%s\"],\"limits\":[{\"algorithm\":\"gcra\",\"limit\":2,"
             "\"period\":\"1s\"}]}]}",
             key);
    admin(f, "PUT", "/v1/admin/policies/x", json);
    expect_error(f, 400, "invalid_policy", "body");
    expect_contains(body(f), "max_key_bytes");
}

int main(void) {
#define T(fn, setup) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(check_get_allowed, setup_main),
        T(check_denied_retry_after, setup_main),
        T(check_denied_reset_never_before_retry, setup_main),
        T(check_item_names, setup_main),
        T(check_limited_but_allowed, setup_main),
        T(check_post_key, setup_main),
        T(check_attributes, setup_main),
        T(check_attributes_ipv6, setup_main),
        T(check_attribute_errors, setup_main),
        T(check_errors, setup_main),
        T(auth_client_ip, setup_main),
        T(auth_ipv6_prefix, setup_auth),
        T(auth_user_default_header, setup_main),
        T(auth_user_custom_header, setup_auth),
        T(auth_endpoint_method_header, setup_main),
        T(auth_denied_default_429, setup_main),
        T(auth_denied_configured_403, setup_auth),
        T(auth_errors, setup_main),
        T(health_and_ready, setup_main),
        T(metrics_count_decisions, setup_main),
        T(admin_off_without_token, setup_auth),
        T(admin_authorisation, setup_main),
        T(admin_list_and_get, setup_main),
        T(admin_get_renders_every_field, setup_main),
        T(admin_put_and_delete, setup_main),
        T(admin_delete_last, setup_solo),
        T(admin_reset_key, setup_main),
        T(admin_reload_and_methods, setup_main),
        T(routes_gate_then_method, setup_main),
        T(admin_round_trip, setup_main),
        T(admin_round_trip_long_tier_key, setup_long_keys),
        T(admin_put_tier_key_over_max_key_bytes, setup_main),
    };
#undef T
    /* the fronts' keys (listen:, admin_token, requirepass), as sluiced registers them */
    if (sld_daemon_config_register() != SL_OK)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
