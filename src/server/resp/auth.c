/* auth.c -- AUTH and the NOAUTH gate (auth.h).
 *
 * Replies are Redis's own words, so clients recognise them: redis-py raises
 * AuthenticationError on WRONGPASS and NOAUTH, ioredis and node-redis reject
 * the connection.
 */
#include <string.h>

#include "server/base/secret.h"
#include "server/resp/auth.h"
#include "server/resp/resp_config.h"

#define WRONGPASS "WRONGPASS invalid username-password pair or user is disabled."
#define NOAUTH "NOAUTH Authentication required."

int sld_auth_check(sld_client_t *c, const sld_arg_t *user, const sld_arg_t *pass) {
    const char *want = sld_resp_requirepass(c->rt->cfg);
    bool is_default = user == NULL || (user->len == 7 && memcmp(user->ptr, "default", 7) == 0);
    /* the password is compared even for an unknown user, so that the time
     * taken does not tell which users exist */
    bool right = want == NULL || sld_same_secret(pass->ptr, pass->len, want, strlen(want));
    if (is_default && right) {
        c->authed = true;
        return SL_OK;
    }
    atomic_fetch_add_explicit(&c->d->stats.auth_failures, 1, memory_order_relaxed);
    sld_reply_error(c->out, WRONGPASS);
    return SL_EINVAL;
}

void sld_cmd_auth(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    if (argc > 3) {
        sld_reply_error(c->out, "ERR syntax error");
        return;
    }
    if (sld_auth_check(c, argc == 3 ? &argv[1] : NULL, &argv[argc - 1]) == SL_OK)
        sld_reply_ok(c->out);
}

static bool hello_has_auth(const sld_arg_t *argv, size_t argc) {
    for (size_t i = 2; i + 2 < argc; i++) /* AUTH user pass */
        if (sld_arg_is(&argv[i], "AUTH"))
            return true;
    return false;
}

bool sld_auth_gate(sld_client_t *c, const sld_arg_t *argv, size_t argc) {
    if (c->authed || sld_resp_requirepass(c->rt->cfg) == NULL)
        return true;
    const sld_arg_t *name = &argv[0];
    if (sld_arg_is(name, "AUTH") || sld_arg_is(name, "PING") || sld_arg_is(name, "QUIT"))
        return true;
    if (sld_arg_is(name, "HELLO")) {
        if (hello_has_auth(argv, argc))
            return true;
        sld_reply_error(c->out, "NOAUTH HELLO must be called with the client already "
                                "authenticated, otherwise the HELLO <proto> AUTH <user> <pass> "
                                "option can be used to authenticate the client and select the "
                                "RESP protocol version at the same time");
        return false;
    }
    sld_reply_error(c->out, NOAUTH);
    return false;
}
