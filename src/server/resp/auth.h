/* auth.h -- the RESP front's password: AUTH, HELLO ... AUTH, and the gate
 * that answers NOAUTH before a client has authenticated.
 *
 * The password is the configuration's requirepass (a reload changes it for
 * every AUTH after it; a connection that authenticated stays so). There is
 * one user, "default", as in Redis without ACLs.
 *
 * Not here: where the password comes from (config/), the HELLO reply
 * (commands), TLS (put a TLS proxy in front: docs/protocol.md).
 */
#ifndef SL_SERVER_RESP_AUTH_H
#define SL_SERVER_RESP_AUTH_H

#include <stdbool.h>

#include "server/resp/client.h"

/* Checks a password for user (NULL: "default"). SL_OK: c is authenticated
 * and nothing is written. Otherwise SL_EINVAL and the error reply
 * (-WRONGPASS ...) is already written to c->out, and the failure counted.
 * Without requirepass every password of "default" is right (Redis 6+). */
int sld_auth_check(sld_client_t *c, const sld_arg_t *user /* NULL: "default" */,
                   const sld_arg_t *pass);

/* Whether argv may run on c now. When not, writes -NOAUTH and returns false.
 * Before AUTH only AUTH, HELLO with AUTH, PING and QUIT pass. */
bool sld_auth_gate(sld_client_t *c, const sld_arg_t *argv, size_t argc);

/* AUTH [user] password */
void sld_cmd_auth(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
