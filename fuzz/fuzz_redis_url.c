/* fuzz_redis_url.c -- libFuzzer target for the Redis URL parser.
 *
 * Parses the input as a URL; on success every field must be within its
 * limits and NUL-terminated, on failure there must be a message. Then the
 * same bytes as a MOVED/ASK error text. Build and run: make fuzz.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "sluice.h"
#include "store/redis/cluster.h"
#include "store/redis/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sl__redis_url_t u;
    char err[256];
    int rc = sl__redis_url_parse((const char *)data, size, &u, err, sizeof err);
    if (rc == 0) {
        assert(u.n_nodes >= 1 && u.n_nodes <= SL__REDIS_URL_MAX_NODES);
        for (size_t i = 0; i < u.n_nodes; i++) {
            assert(strlen(u.nodes[i].host) >= 1 && strlen(u.nodes[i].host) <= SL__REDIS_URL_MAX_HOST);
            assert(u.nodes[i].port != 0);
        }
        assert(u.user_len <= SL__REDIS_URL_MAX_CRED && u.user[u.user_len] == '\0');
        assert(u.password_len <= SL__REDIS_URL_MAX_CRED && u.password[u.password_len] == '\0');
        assert(u.db < SL__REDIS_URL_MAX_DB);
        assert(u.kind != SL__REDIS_SENTINEL || u.master[0] != '\0');
    } else {
        assert(rc == SL_EINVAL && err[0] != '\0' && strlen(err) < sizeof err);
    }
    sl__redis_redirect_t rd;
    if (sl__redis_parse_redirect((const char *)data, size, &rd) != SL__REDIS_REDIRECT_NONE)
        assert(rd.slot < SL__REDIS_SLOTS && rd.to.port != 0);
    (void)sl__redis_key_slot(data, size);
    return 0;
}
