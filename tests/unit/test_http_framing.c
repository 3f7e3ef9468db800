/* test_http_framing.c -- ambiguous HTTP/1 framing (src/server/http/http_framing.c):
 * each door RFC 9112 closes (two Content-Length, Transfer-Encoding with
 * Content-Length, obs-fold, ...) is found; plain requests pass; nothing
 * after the head counts. Inputs are exact-length heap copies run at every
 * truncated length, so ASan catches a read past the end. */
#include "rig.h"
#include "server/http/http_framing.h"

/* The verdict on an exact-length copy of s; every prefix is run too (it
 * must not crash or read past its end). */
static const char *verdict(const char *s, bool http10) {
    size_t n = strlen(s);
    const char *whole = NULL;
    for (size_t k = 0; k <= n; k++) {
        char *copy = malloc(k ? k : 1);
        assert_non_null(copy);
        memcpy(copy, s, k);
        const char *v = sld_http_framing_error(copy, k, http10);
        free(copy);
        if (k == n)
            whole = v;
    }
    return whole;
}

static void plain_requests_pass(void **state) {
    (void)state;
    assert_null(verdict("GET / HTTP/1.1\r\nHost: x\r\n\r\n", false));
    assert_null(verdict("GET / HTTP/1.1\r\n\r\n", false));
    assert_null(verdict("POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", false));
    assert_null(verdict("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n", true));
    /* bare LF line ends, as picohttpparser accepts them */
    assert_null(verdict("GET / HTTP/1.1\nHost: x\nContent-Length: 0\n\n", false));
    /* names that only start like the framing headers */
    assert_null(verdict("GET / HTTP/1.1\r\nContent-Length-X: 1\r\nContent-Length: 0\r\n"
                        "Transfer-Encodings: x\r\n\r\n", false));
    /* what follows the head is not looked at: a pipelined request, a body */
    assert_null(verdict("GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\n \r\nContent-Length: 9\r\n\r\n", false));
    assert_null(verdict("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n folded\r\n\r\n", false));
    /* nothing, or a request line only */
    assert_null(verdict("", false));
    assert_null(verdict("GET / HTTP/1.1", false));
}

static void content_length_twice(void **state) {
    (void)state;
    const char *why = verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n", false);
    assert_non_null(why);
    assert_non_null(strstr(why, "Content-Length"));
    /* the same value twice, another case, other headers between */
    assert_non_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nHost: x\r\ncontent-LENGTH: 5\r\n\r\n", false));
}

static void transfer_encoding_with_content_length(void **state) {
    (void)state;
    const char *why = verdict("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n", false);
    assert_non_null(why);
    assert_non_null(strstr(why, "Transfer-Encoding and Content-Length"));
    assert_non_null(verdict("POST / HTTP/1.1\r\ncontent-length: 9\r\nTRANSFER-ENCODING: chunked\r\n\r\n", false));
    assert_non_null(verdict("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                            false));
    /* HTTP/1.0 has no Transfer-Encoding (RFC 9112, 6.1) */
    assert_non_null(verdict("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", true));
}

static void obs_fold(void **state) {
    (void)state;
    const char *why = verdict("GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n", false);
    assert_non_null(why);
    assert_non_null(strstr(why, "obs-fold"));
    assert_non_null(verdict("GET / HTTP/1.1\r\nX-A: one\r\n\ttwo\r\n\r\n", false));
    assert_non_null(verdict("GET / HTTP/1.1\nX-A: one\n two\n\n", false));
    /* a fold that hides a framing header from a parser that unfolds */
    assert_non_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\n Transfer-Encoding: chunked\r\n\r\n", false));
}

/* A name is the bytes before the first colon, compared as written but for
 * the case of letters: other bytes are not folded, space before the colon
 * makes another name, and a line without a colon names nothing. */
static void names_as_written(void **state) {
    (void)state;
    assert_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length : 5\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent\rLength: 5\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nCONTENT\x0dLENGTH: 5\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.1\r\nContent-Length: 5\r\nXContent-Length: 5\r\n\r\n", false));
    assert_null(verdict("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding\r\n\r\n", false));
    assert_non_null(verdict("POST / HTTP/1.1\r\ncOnTeNt-LeNgTh:5\r\nCONTENT-LENGTH:\r\n\r\n", false));
    assert_non_null(verdict("POST / HTTP/1.1\r\nTransfer-Encoding:\r\ntRANSFER-eNCODING: chunked\r\n\r\n", false));
    assert_non_null(verdict("POST / HTTP/1.1\nContent-Length:5\ncontent-length:5:x\n\n", false));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_requests_pass),
        cmocka_unit_test(content_length_twice),
        cmocka_unit_test(transfer_encoding_with_content_length),
        cmocka_unit_test(obs_fold),
        cmocka_unit_test(names_as_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
