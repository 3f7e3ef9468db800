/* tcp_stall.c -- output that stopped moving (see tcp_stall.h).
 *
 * <linux/tcp.h>, not <netinet/tcp.h>: glibc's struct tcp_info stops before
 * tcpi_bytes_acked (Linux 4.1); the two headers cannot be mixed.
 */
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/sockios.h>
#include <linux/tcp.h>

#include "server/net/tcp_stall.h"

bool sld_tcp_stalled(sld_tcp_stall_t *s, int fd, size_t queued, uint64_t now, sl_usec_t timeout) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    int unacked = 0; /* bytes in the kernel's send queue: not sent, or not acknowledged */
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked ||
        ioctl(fd, SIOCOUTQ, &unacked) != 0)
        return false;
    if ((queued == 0 && unacked <= 0) || ti.tcpi_bytes_acked != s->acked) {
        s->acked = ti.tcpi_bytes_acked;
        s->since = now;
        return false;
    }
    return timeout > 0 && now >= s->since && (now - s->since) * 1000 >= (uint64_t)timeout;
}
