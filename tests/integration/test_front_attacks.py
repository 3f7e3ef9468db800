"""test_front_attacks.py -- what an adversarial run found in sluiced's
HTTP and RESP fronts (issue 12, item 5), each reproduced here:

  - the per-IP bypass: X-Forwarded-For lines whose joined length passed
    8 KiB made the key the first line's (the client's own) address;
  - request framing a proxy and sluiced could read differently: two
    Content-Length headers, Transfer-Encoding with Content-Length, an
    obs-folded header line -- each a 400 and a closed connection;
  - clients that pipeline and never read: they must not hold a
    max_connections slot (or memory) for good, on either front.

The daemon runs on the manual test clock; only idle_timeout and the write
timeout are real time.
"""
import os
import re
import socket
import time
import unittest

import harness
from test_http import HttpDaemon, http_config, read_responses
from harness import closed_by_peer

S = 1_000_000

XFF_CONFIG = http_config("""\
trusted_proxies: [127.0.0.1/32]
policies:
  - name: per_ip
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1m}
""")


def auth_status(port, headers):
    """A raw forward-auth request with header lines exactly as given (a
    list of (name, value), repeated names kept as separate lines)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        head = b"GET /v1/auth/per_ip HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        for name, value in headers:
            head += name.encode() + b": " + value.encode() + b"\r\n"
        s.sendall(head + b"\r\n")
        (r,), _ = read_responses(s, 1)
        return r
    finally:
        s.close()


class ForwardedForLines(unittest.TestCase):
    """Several X-Forwarded-For lines are one list (RFC 9110, 5.3): the
    client's own line first, each proxy's after it. The key is the
    rightmost untrusted address of the whole list, however long."""

    @classmethod
    def setUpClass(cls):
        cls.d = HttpDaemon(XFF_CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def setUp(self):
        self.d.advance(60 * S)  # a fresh window

    def test_long_first_line_does_not_choose_the_key(self):
        # The client writes a long line ending in an address of its choice;
        # its proxy (trusted, 127.0.0.1) adds the address it saw on a line
        # of its own. Before the fix the lines together passed 8 KiB, only
        # the first was read, and 40 of 40 requests were admitted.
        filler = ", ".join("198.51.100.%d" % (i % 250) for i in range(700))  # ~9.5 KB
        codes = []
        for i in range(40):
            r = auth_status(self.d.http_port, [("X-Forwarded-For", filler + ", 192.0.2.%d" % i),
                                               ("X-Forwarded-For", "203.0.113.7")])
            codes.append(r.status)
        self.assertEqual(codes, [200] * 5 + [429] * 35)

    def test_every_line_is_read(self):
        # many short lines (h2o takes up to 100 header lines), the real
        # client on the last one
        lines = [("X-Forwarded-For", "192.0.2.%d" % i) for i in range(90)]
        codes = [auth_status(self.d.http_port, lines[:89 - i] + [("X-Forwarded-For", "203.0.113.9")]).status
                 for i in range(7)]
        self.assertEqual(codes, [200] * 5 + [429] * 2)
        # trusted hops on the right are skipped across lines too
        r = auth_status(self.d.http_port, [("X-Forwarded-For", "192.0.2.1, 203.0.113.9"),
                                           ("X-Forwarded-For", "127.0.0.1")])
        self.assertEqual(r.status, 429)

    def test_several_real_ip_lines_the_last_counts(self):
        # X-Real-IP holds one address: a proxy that adds its own line after
        # the client's is the one to believe (the nearest), as with the
        # rightmost X-Forwarded-For entry
        codes = [auth_status(self.d.http_port, [("X-Real-IP", "192.0.2.%d" % i),
                                                ("X-Real-IP", "203.0.113.12")]).status for i in range(7)]
        self.assertEqual(codes, [200] * 5 + [429] * 2)

    def test_too_long_to_read_is_refused(self):
        # past the head limit (64 KiB): refused, not read in part
        big = ", ".join("198.51.100.%d" % (i % 250) for i in range(5000))  # ~70 KB
        r = auth_status(self.d.http_port, [("X-Forwarded-For", big), ("X-Forwarded-For", "203.0.113.11")])
        self.assertEqual(r.status, 431, r)
        self.assertIn(b"headers", r.body)


FRAMING_CONFIG = http_config("""\
policies:
  - name: per_user
    limits:
      - {algorithm: fixed_window, limit: 100, period: 1m}
""")


class Framing(unittest.TestCase):
    """Each request below is framed so that a proxy in front and sluiced
    could disagree on where it ends; what follows it on the connection
    (a second check) must never be served: 400, then the connection
    closes."""

    @classmethod
    def setUpClass(cls):
        cls.d = HttpDaemon(FRAMING_CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    SMUGGLED = b"GET /v1/check?policy=per_user&key=smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    def refused(self, raw):
        s = socket.create_connection(("127.0.0.1", self.d.http_port), timeout=10)
        try:
            s.sendall(raw)
            (r,), rest = read_responses(s, 1)
            self.assertEqual(r.status, 400, r)
            self.assertIn(b"ambiguous request framing", r.body)
            self.assertEqual(r.header("Connection"), "close")
            self.assertEqual(rest, b"")
            self.assertTrue(closed_by_peer(s))
        finally:
            s.close()
        # nothing smuggled was charged
        r = self.d.get("/v1/check?policy=per_user&key=smuggled")
        self.assertEqual(r.json()["remaining"], 99, r)
        self.d.advance(60 * S)

    def body(self):
        return b'{"policy":"per_user","key":"a"}'

    def test_two_content_lengths(self):
        b = self.body()
        for first, second in ((len(b), len(b) + len(self.SMUGGLED)), (len(b) + len(self.SMUGGLED), len(b)),
                              (len(b), len(b))):
            self.refused(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\ncontent-length: %d\r\n\r\n" % (first, second)
                         + b + self.SMUGGLED)

    def test_transfer_encoding_with_content_length(self):
        b = self.body()
        chunked = b"%x\r\n" % len(b) + b + b"\r\n0\r\n\r\n"
        for order in ((b"Transfer-Encoding: chunked", b"Content-Length: %d" % len(chunked)),
                      (b"Content-Length: %d" % (len(chunked) + len(self.SMUGGLED)), b"Transfer-Encoding: chunked")):
            self.refused(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + order[0] + b"\r\n" + order[1] + b"\r\n\r\n" + chunked + self.SMUGGLED)

    def test_obs_fold(self):
        for fold in (b" ", b"\t"):
            self.refused(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: one\r\n" + fold + b"two\r\n\r\n"
                         + self.SMUGGLED)
            self.refused(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 31\r\n" + fold +
                         b"0\r\n\r\n" + self.body() + self.SMUGGLED)

    def test_plain_framing_still_served(self):
        b = self.body()
        chunked = b"%x\r\n" % len(b) + b + b"\r\n0\r\n\r\n"
        s = socket.create_connection(("127.0.0.1", self.d.http_port), timeout=10)
        s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(b) + b +
                  b"POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked +
                  b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        rs, rest = read_responses(s, 3)
        s.close()
        self.assertEqual([r.status for r in rs], [200, 200, 200])
        self.assertEqual(rest, b"")


SLOW_CONFIG = http_config("""\
limits:
  max_connections: 20
  idle_timeout: 3s
policies:
  - name: per_user
    limits:
      - {algorithm: fixed_window, limit: 1000000, period: 1m}
""")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))


def socket_kib(ports):
    """Kernel memory of the daemon's side of every connection on `ports`
    (ss's skmem: receive and send queues' allocations), in KiB."""
    import subprocess
    out = subprocess.run(["ss", "-tmnH", "state", "established"], capture_output=True, text=True).stdout
    total, lines = 0, out.split("\n")
    for i, line in enumerate(lines):
        f = line.split()
        if len(f) >= 4 and any(f[2].endswith(":%d" % p) for p in ports) and i + 1 < len(lines):
            m = re.search(r"skmem:\(r(\d+),rb\d+,t(\d+),tb\d+,f\d+,w(\d+)", lines[i + 1])
            if m:
                total += int(m.group(1)) + int(m.group(2)) + int(m.group(3))
    return total // 1024


def non_reader(port, request, count):
    """A connection with a small receive buffer that pipelines `count`
    requests and never reads a reply."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    data = request * count
    try:
        while data:
            data = data[s.send(data):]
    except BlockingIOError:
        pass  # the daemon stopped reading: what is left is never sent
    return s


def served(s, timeout=10.0):
    """Waits until a reply starts arriving, without taking it (MSG_PEEK),
    and says whether it is an answer (the connection holds a slot) rather
    than a refusal."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            head = s.recv(12, socket.MSG_PEEK)
            if len(head) == 12:
                return head.startswith(b"HTTP/1.1 200") or head.startswith(b"*8\r\n")
        except BlockingIOError:
            time.sleep(0.02)
    return False


class ClientsThatNeverRead(unittest.TestCase):
    """20 clients pipeline hundreds of requests and never read a reply,
    with max_connections: 20 and idle_timeout: 3s. Before the fix their
    writes blocked forever and nothing closed them: every slot was held
    for good, /healthz and PING were never answered again."""

    def test_every_slot_comes_back(self):
        with HttpDaemon(SLOW_CONFIG) as d:
            base = rss_kib(d.proc.pid)
            http_req = b"GET /v1/check?policy=per_user&key=slow HTTP/1.1\r\nHost: x\r\n\r\n"
            resp_req = b"*3\r\n$8\r\nSL.CHECK\r\n$8\r\nper_user\r\n$4\r\nslow\r\n"
            clients = [non_reader(d.http_port, http_req, 20000) for _ in range(10)]
            clients += [non_reader(d.port, resp_req, 20000) for _ in range(10)]
            for c in clients:  # 20 served: every slot is taken
                self.assertTrue(served(c), "a client was not served")
            time.sleep(0.5)  # what the writes settle at (not a rate window)
            held_rss = rss_kib(d.proc.pid) - base
            held_sock = socket_kib((d.port, d.http_port))
            print("\nheld by 20 clients that never read: daemon RSS +%d KiB, kernel socket buffers %d KiB "
                  "(%.0f KiB per connection)" % (held_rss, held_sock, (held_rss + held_sock) / 20.0))
            t0 = time.time()
            connections = None
            while time.time() - t0 < 15:
                try:  # a free slot answers; sluice_connections counts this one too
                    r = d.get("/metrics")
                    if r.status == 200:
                        connections = int(re.search(rb"^sluice_connections (\d+)", r.body, re.M).group(1))
                        if connections <= 1:
                            break
                except OSError:
                    pass
                time.sleep(0.25)
            print("connections left after %.1f s: %s; kernel socket buffers then %d KiB"
                  % (time.time() - t0, connections, socket_kib((d.port, d.http_port))))
            self.assertEqual(connections, 1, "slots still held after 15 s")
            self.assertEqual(d.get("/healthz").status, 200)
            self.assertTrue(d.client().ping())
            for c in clients:  # the daemon closed each one
                c.setblocking(True)
                self.assertTrue(closed_by_peer(c, timeout=5.0))
                c.close()


if __name__ == "__main__":
    harness.main()
