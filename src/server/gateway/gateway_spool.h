/* gateway_spool.h -- where the bodies libh2o 2.2 holds go: memory up to a
 * small threshold, then a temporary file mapped into memory.
 *
 * libh2o 2.2 does not stream through its reverse proxy: a request body is
 * read whole before the handler runs, and an upstream's response is read
 * as fast as the upstream sends it, whatever the client takes. Both sit in
 * socket buffers, which libh2o moves to an unlinked temporary file
 * (mkstemp, mmap) once they pass a threshold (h2o_socket_buffer_mmap_settings,
 * 32 MB by default, for every listener of the process). The gateway lowers
 * the threshold so that a large body costs page cache backed by a file,
 * not anonymous memory, and names the directory ($TMPDIR, else /tmp).
 *
 * Not here: forwarding (gateway_forward.h), the limits on bodies
 * (limits.max_request_bytes, http_server.h).
 */
#ifndef SL_SERVER_GATEWAY_SPOOL_H
#define SL_SERVER_GATEWAY_SPOOL_H

#include <stddef.h>

#define SLD_GW_SPOOL_THRESHOLD (4u << 20) /* bytes of one buffer held in memory */

/* Sets libh2o's buffers' threshold and directory, for the whole process;
 * before any listener starts. The directory chosen, for the log. */
const char *sld_gw_spool_setup(void);

#endif
