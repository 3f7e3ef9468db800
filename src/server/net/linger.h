/* linger.h -- closing a connection without a reset, while stopping.
 *
 * Closing a socket whose client is still sending (data received and not
 * read) makes the kernel answer with a reset, and a reset can destroy the
 * replies still on their way: a client sees "connection reset" for a
 * request it was owed an answer to. A lingering close (as nginx's
 * lingering_close, and what h2o leaves as a TODO) sends FIN after the last
 * reply, then reads and discards whatever the client still sends until it
 * closes its side too, or a deadline passes.
 *
 * A worker keeps its lingering sockets here: the caller hands over a file
 * descriptor it no longer uses elsewhere (a dup() of the connection's, so
 * the event loop may close its own) and calls sld_linger_poll() from a
 * timer. Not an event-loop object: plain non-blocking calls, every few tens
 * of milliseconds, only during a stop.
 */
#ifndef SL_SERVER_LINGER_H
#define SL_SERVER_LINGER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sld_linger {
    int *fds;
    size_t n, cap;
} sld_linger_t;

/* Takes fd: shuts its sending side (FIN after what is queued) and keeps it
 * until the client closes. On failure (no memory) it is closed at once. */
void sld_linger_add(sld_linger_t *l, int fd);

/* Reads and discards what each socket received; closes those whose client
 * has closed its side (or that failed). */
void sld_linger_poll(sld_linger_t *l);

/* Closes every socket left (the deadline has passed) and frees the list. */
void sld_linger_close_all(sld_linger_t *l);

static inline bool sld_linger_empty(const sld_linger_t *l) { return l->n == 0; }

#endif
