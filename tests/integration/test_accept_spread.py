"""test_accept_spread.py -- each front's connections are spread evenly over
the worker threads (src/server/net/accept_spread.c, docs/architecture.md,
"Which worker serves a connection"): a real sluiced with two workers, and
64 keep-alive connections opened at once (as `wrk -c64` does) to each of
the HTTP front, the gateway, the RESP front and the gRPC front. /metrics'
sluice_worker_connections{front,port,worker} must show 32 +- 1 on each
worker of each front, every connection must still be served (a request on
each after the spread), and the counts must come back down as the clients
close. The kernel's SO_REUSEPORT hash alone gives spreads such as 22/42.

No waiting on a clock: the waits are for the daemon to see connections
come and go, and are bounded.
"""
import http.client
import http.server
import re
import socket
import threading
import time
import unittest

import upstream
from harness import Daemon, gateway_port

N = 64

CONFIG = """\
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0, grpc: 127.0.0.1:0}
threads: 2
gateway:
  listen: 127.0.0.1:0
  routes:
    - name: all
      match: {path_prefix: /}
      upstream: http://127.0.0.1:%(up)d
policies:
  - name: open
    limits:
      - {algorithm: token_bucket, limit: 1000000, period: 1s}
"""

SERIES = re.compile(r'^sluice_worker_connections\{front="([^"]+)",port="(\d+)",worker="(\d+)"\} (-?\d+)$', re.M)


class Ok(upstream.Upstream):
    def answer(self, request, body):
        return 200, b"ok\n"


# The gateway opens up to 64 upstream connections at once: socketserver's
# backlog of 5 would drop SYNs, and their retransmissions take seconds.
http.server.ThreadingHTTPServer.request_queue_size = 128


def together(fn, n):
    """fn(i) for i in range(n), from n threads started at once; the results in order."""
    out = [None] * n
    errors = []
    go = threading.Barrier(n)

    def run(i):
        try:
            go.wait(10)
            out[i] = fn(i)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if errors:
        raise errors[0]
    return out


def http_get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body


def resp_ping(sock):
    sock.sendall(b"PING\r\n")
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise AssertionError("RESP connection closed")
        data += chunk
    return data


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC client's first bytes
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def h2_hello(sock):
    sock.sendall(H2_PREFACE)
    head = b""
    while len(head) < 9:
        chunk = sock.recv(9 - len(head))
        if not chunk:
            raise AssertionError("gRPC connection closed")
        head += chunk
    return head[3]  # the frame type: 4 = SETTINGS


class Spread(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.up = Ok()
        cls.d = Daemon(CONFIG % {"up": cls.up.port})
        out = cls.d.output()
        cls.http_port = int(re.search(r" http_port=(\d+)", out).group(1))
        cls.grpc_port = int(re.search(r" grpc_port=(\d+)", out).group(1))
        cls.gw_port = gateway_port(cls.d)
        # /metrics is read through one connection of the HTTP front's 64, so
        # that reading it adds no connection of its own
        cls.scrape = None

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.up.close()

    def counts(self, conn):
        """{front: [worker 0's, worker 1's]} from /metrics over conn."""
        status, body = http_get(conn, "/metrics")
        self.assertEqual(status, 200)
        found = {}
        for front, port, worker, n in SERIES.findall(body.decode()):
            found.setdefault((front, int(port)), {})[int(worker)] = int(n)
        return {k: [v[w] for w in sorted(v)] for k, v in found.items()}

    def wait_counts(self, conn, key, total, timeout=10.0):
        deadline = time.time() + timeout
        while True:
            c = self.counts(conn).get(key)
            if c is not None and sum(c) == total:
                return c
            if time.time() > deadline:
                self.fail("%s: counts %s, expected %d in all" % (key, c, total))
            time.sleep(0.02)

    def assertEven(self, counts, total):
        self.assertEqual(len(counts), 2, counts)
        self.assertEqual(sum(counts), total, counts)
        # each within one of the mean: a worker keeps a connection while it
        # has at most one more than the fewest (no hand-over for that)
        self.assertLessEqual(max(counts) - min(counts), 2, counts)

    def test_every_front_spreads_evenly(self):
        # HTTP: 64 keep-alive connections at once, each with a /v1/check answered
        def http_open(i):
            conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
            self.assertEqual(http_get(conn, "/v1/check?policy=open&key=k%d" % i)[0], 200)
            return conn

        hconns = together(http_open, N)
        scrape = hconns[0]
        http_key = ("http", self.http_port)
        self.assertEven(self.wait_counts(scrape, http_key, N), N)

        # the gateway: 64 keep-alive connections, each forwarded once
        def gw_open(i):
            conn = http.client.HTTPConnection("127.0.0.1", self.gw_port, timeout=10)
            self.assertEqual(http_get(conn, "/x/%d" % i), (200, b"ok\n"))
            return conn

        gconns = together(gw_open, N)
        self.assertEven(self.wait_counts(scrape, ("gateway", self.gw_port), N), N)

        # RESP: 64 connections, a PING each
        def resp_open(i):
            s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
            self.assertEqual(resp_ping(s), b"+PONG\r\n")
            return s

        rsocks = together(resp_open, N)
        self.assertEven(self.wait_counts(scrape, ("resp", self.d.port), N), N)

        # gRPC: 64 HTTP/2 connections, each answered with the server's SETTINGS
        def grpc_open(i):
            s = socket.create_connection(("127.0.0.1", self.grpc_port), timeout=10)
            self.assertEqual(h2_hello(s), 4)
            return s

        gsocks = together(grpc_open, N)
        self.assertEven(self.wait_counts(scrape, ("grpc", self.grpc_port), N), N)

        # every connection still works where it went (a hand-over included)
        for i, conn in enumerate(hconns):
            self.assertEqual(http_get(conn, "/v1/check?policy=open&key=again%d" % i)[0], 200)
        for i, conn in enumerate(gconns):
            self.assertEqual(http_get(conn, "/y/%d" % i), (200, b"ok\n"))
        for s in rsocks:
            self.assertEqual(resp_ping(s), b"+PONG\r\n")

        # the counts come back down as the clients close (the scrape's stays)
        for conn in hconns[1:] + gconns:
            conn.close()
        for s in rsocks + gsocks:
            s.close()
        self.wait_counts(scrape, http_key, 1)
        for key in (("gateway", self.gw_port), ("resp", self.d.port), ("grpc", self.grpc_port)):
            self.assertEqual(self.wait_counts(scrape, key, 0), [0, 0])
        scrape.close()

    def test_refused_connections_are_not_counted(self):
        """Over max_connections a connection is refused by the worker that
        serves it and counts for nobody (admission stays once per
        connection)."""
        with Daemon(CONFIG.replace("threads: 2", "threads: 2\nlimits: {max_connections: 4}") %
                    {"up": self.up.port}) as d:
            http_port = int(re.search(r" http_port=(\d+)", d.output()).group(1))
            scrape = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
            self.counts(scrape)  # connected: one of the four
            held = [socket.create_connection(("127.0.0.1", d.port), timeout=10) for _ in range(3)]
            for s in held:
                self.assertEqual(resp_ping(s), b"+PONG\r\n")
            extra = [socket.create_connection(("127.0.0.1", d.port), timeout=10) for _ in range(4)]
            for s in extra:  # told at once, before any command
                self.assertIn(b"max number of clients", s.recv(256))
                s.close()
            c = self.wait_counts(scrape, ("resp", d.port), 3)
            self.assertLessEqual(max(c) - min(c), 1, c)
            for s in held:
                s.close()
            self.wait_counts(scrape, ("resp", d.port), 0)
            scrape.close()


if __name__ == "__main__":
    import harness
    harness.main()
