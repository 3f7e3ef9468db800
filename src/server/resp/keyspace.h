/* keyspace.h -- Redis's key commands on CL.THROTTLE / GCRA keys:
 * DEL / UNLINK (redis-cell users reset a key with DEL), EXISTS, TTL, PTTL.
 *
 * A CL.THROTTLE key is its name; its state lives under every parameter set
 * (max_burst, rate) it was throttled with. These commands act on the name
 * under every set this daemon has compiled since it started (throttle.h),
 * with the memory store or the Redis store alike (through the engine). A key
 * exists while its state is not empty, i.e. while a CL.THROTTLE on it would
 * not answer as on a new key; its TTL is the time until it is empty again,
 * the expiry redis-cell gives its Redis key (the GCRA's TAT minus now).
 *
 * Not here: keys of configured policies (SL.RESET in commands.c).
 */
#ifndef SL_SERVER_RESP_KEYSPACE_H
#define SL_SERVER_RESP_KEYSPACE_H

#include "server/resp/client.h"

/* DEL / UNLINK key [key ...]  ->  :number of keys that existed (now forgotten) */
void sld_cmd_del(sld_client_t *c, const sld_arg_t *argv, size_t argc);
/* EXISTS key [key ...]  ->  :number of the keys given that exist */
void sld_cmd_exists(sld_client_t *c, const sld_arg_t *argv, size_t argc);
/* TTL key -> :seconds (Redis's rounding), -2 when absent; PTTL: milliseconds */
void sld_cmd_ttl(sld_client_t *c, const sld_arg_t *argv, size_t argc);
void sld_cmd_pttl(sld_client_t *c, const sld_arg_t *argv, size_t argc);

#endif
