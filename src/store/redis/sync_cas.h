/* sync_cas.h -- write-back mode's compare-and-sets in Redis (sync.lua):
 * several keys' shared states written in one call, each only if Redis
 * still holds the version the caller merged onto.
 *
 * The caller (the daemon's sync) merges in C and hands over bytes; this
 * module formats the call and reads each key's answer out of the reply, so
 * that nothing above src/store/redis/ reads a Redis reply.
 *
 * Not here: merging (store/cells.c), what the daemon does with an answer.
 */
#ifndef SL_STORE_REDIS_SYNC_CAS_H
#define SL_STORE_REDIS_SYNC_CAS_H

#include <stddef.h>

#include "store/redis/client.h"

#define SL__REDIS_CAS_VERSION_BYTES 8 /* a state's version, first in its value */
#define SL__REDIS_CAS_MAX 64          /* keys per call */

/* One key's compare-and-set. The pointers must stay valid until
 * sl__redis_cas_send() returns (the call is formatted at once). */
typedef struct sl__redis_cas {
    const char *key;                /* the state's key */
    size_t key_len;
    const unsigned char *expected;  /* the version merged onto; NULL: no key was found */
    const unsigned char *version;   /* the new version */
    const unsigned char *value;     /* the merged state; empty (len 0): delete the key */
    size_t value_len;
    const char *ttl_ms;             /* its time to live, ms, in decimal */
} sl__redis_cas_t;

typedef enum sl__redis_cas_answer {
    SL__REDIS_CAS_WRITTEN = 0,  /* the state is in Redis */
    SL__REDIS_CAS_CONFLICT,     /* another version was there: data/len is that whole value
                                   (version first; len 0 when there is no key) */
    SL__REDIS_CAS_REFUSED,      /* Redis answered but did not write: data/len is its error
                                   text, or NULL when the reply made no sense */
    SL__REDIS_CAS_LOST          /* no answer (timeout, down, closing): it may have been
                                   written; status says why */
} sl__redis_cas_answer_t;

/* Called once per key i of a call, in order, on the client's loop. data
 * is valid only during the call. */
typedef void (*sl__redis_cas_fn)(void *arg, size_t i, sl__redis_cas_answer_t answer,
                                 sl__redis_status_t status, const void *data, size_t len);

/* Sends cas[0..n) (1 <= n <= SL__REDIS_CAS_MAX, keys of one Cluster slot)
 * as one call. Returns 0, or what sl__redis_client_send() returns when it
 * could not be sent (an sl__redis_status_t), or -1 when out of memory:
 * then fn is not called. */
int sl__redis_cas_send(sl__redis_client_t *c, const sl__redis_cas_t *cas, size_t n,
                       sl__redis_cas_fn fn, void *arg);

#endif
