/* hello.h -- HELLO [protover [AUTH username password] [SETNAME clientname]]:
 * its arguments and its reply, as Redis 7 has them.
 *
 * Parsing is pure (it points into argv, copies nothing); the reply is the
 * server description a client reads on connect: a map in RESP3, a flat
 * array in RESP2. Not here: checking the password (auth.c), keeping the
 * name and the protocol (the connection's, through sld_client_t).
 */
#ifndef SL_SERVER_HELLO_H
#define SL_SERVER_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "server/base/buf.h"
#include "server/resp/resp.h"

typedef struct sld_hello {
    int proto;              /* 2 or 3; 0: HELLO alone, the protocol stays */
    const sld_arg_t *user;  /* AUTH's username, or NULL */
    const sld_arg_t *pass;  /* AUTH's password (set with user) */
    const sld_arg_t *name;  /* SETNAME's name, or NULL */
} sld_hello_t;

/* Reads argv[0..argc) (argv[0] is HELLO). Returns NULL and fills *h, or
 * the error reply (Redis's words: NOPROTO for another version, a syntax
 * error naming the option) written into err[0..errlen). */
const char *sld_hello_parse(const sld_arg_t *argv, size_t argc, sld_hello_t *h, char *err,
                            size_t errlen);

/* Whether a client name is one Redis takes: printable, no spaces. */
int sld_hello_name_ok(const sld_arg_t *name);

/* The reply: server, version, proto, id, mode, role, modules. */
void sld_hello_reply(sld_buf_t *out, int proto, uint64_t id);

#endif
