/* command.h -- plain commands whose answer is read here, so that nothing
 * above src/store/redis/ reads a Redis reply: those answered by an integer
 * (DEL, HSET, INCR, PUBLISH), a string or nothing (GET), or a hash's
 * fields and values (HGETALL).
 *
 * Not here: the scripts' calls (evaluate_call.c, sync_cas.c), connections
 * (client.c).
 */
#ifndef SL_STORE_REDIS_COMMAND_H
#define SL_STORE_REDIS_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "store/redis/client.h"

/* The answer to a command whose reply is an integer: ok when it came as
 * one; status says what became of the call (ok is false unless it is
 * SL__REDIS_OK). Called once, on the client's loop. */
typedef void (*sl__redis_int_fn)(void *arg, sl__redis_status_t status, bool ok, long long value);

/* Sends argv (key names its Cluster slot; NULL: any node). Returns 0, an
 * sl__redis_status_t when it could not be sent, or -1 when out of memory:
 * then fn is not called. */
int sl__redis_send_int(sl__redis_client_t *c, const char *key, size_t key_len, int argc,
                       const char *const *argv, const size_t *argvlen, sl__redis_int_fn fn, void *arg);

/* The answer to GET: ok with str/len (str NULL when the key does not
 * exist), or !ok (no answer, or not a string). str is valid during the
 * call only. */
typedef void (*sl__redis_string_fn)(void *arg, sl__redis_status_t status, bool ok, const char *str,
                                    size_t len);

int sl__redis_send_get(sl__redis_client_t *c, const char *key, size_t key_len, sl__redis_string_fn fn,
                       void *arg);

/* One field of a hash and its value; valid during the callback only. */
typedef struct sl__redis_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} sl__redis_field_t;

/* The answer to HGETALL: ok with fields[0..n), or !ok (no answer, an
 * error, a reply that is not a hash, or more than max_fields fields). */
typedef void (*sl__redis_hash_fn)(void *arg, sl__redis_status_t status, bool ok,
                                  const sl__redis_field_t *fields, size_t n);

int sl__redis_send_hgetall(sl__redis_client_t *c, const char *key, size_t key_len, size_t max_fields,
                           sl__redis_hash_fn fn, void *arg);

#endif
