"""test_gateway_docs.py -- docs/gateway.md's configurations, run as written.

The guide promises two files: the complete working configuration at its
top (rate limits, delay, concurrency, round robin, TLS, access log) and the
file that replaces an nginx limit_req + limit_conn + proxy_pass block. Both
are read out of the guide itself, so a guide that drifts from what sluiced
accepts fails here. Only what cannot stay literal is changed: addresses
move to free loopback ports (the upstreams at 127.0.0.1:900N become small
Python upstreams), /etc/sluice/ and /var/log/sluice/ become the test's
directory (the certificate made with the guide's own openssl line), and the
decision fronts are put on free ports (the HTTP one for /metrics); the
nginx replacement gets an access log, which says which requests it held.

  - the working configuration starts, every route answers through it
    (HTTP/1.1 and HTTPS with HTTP/2 by ALPN), its access log gets a line;
  - the nginx replacement, given 25 requests at once from one address,
    does what nginx's burst=20 delay=5 does: 6 at once, 15 held at the
    rate, 4 refused with 429.
"""
import os
import re
import shlex
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
import upstream
from harness import Daemon

SOURCE = os.environ.get("SLUICE_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GUIDE = os.path.join(SOURCE, "docs", "gateway.md")


def guide_blocks():
    """The fenced blocks of the guide, in order, as (info string, text)."""
    with open(GUIDE) as f:
        text = f.read()
    return re.findall(r"^```(\S*)\n(.*?)^```$", text, re.M | re.S)


def working_configuration():
    """The first yaml block: the one under "A working configuration"."""
    return next(body for info, body in guide_blocks() if info == "yaml")


def nginx_replacement():
    with open(GUIDE) as f:
        text = f.read()
    m = re.search(r"<!-- test: gateway-sluice -->\n```yaml\n(.*?)^```$", text, re.M | re.S)
    return m.group(1)


def certificate_command():
    """The guide's openssl line (under TLS), joined."""
    for info, body in guide_blocks():
        if body.startswith("openssl req"):
            return shlex.split(body.replace("\\\n", " "))
    raise AssertionError("docs/gateway.md lost its openssl line")


class Recording(upstream.Upstream):
    """Answers 200 and keeps (monotonic time it reached the socket, path) of
    every request."""

    def __init__(self, name):
        self.name = name
        self.seen = []
        self.lock = threading.Lock()
        super().__init__()
        harness.stamp_arrivals(self)

    def answer(self, request, body):
        with self.lock:
            self.seen.append((harness.arrival(request), request.path))
        return 200, ("%s saw %s\n" % (self.name, request.path)).encode()

    def paths(self):
        with self.lock:
            return [p for _, p in self.seen]


def curl(url, *args):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "10", "-w", "%{http_code} %{http_version}"]
                         + list(args) + [url], stdout=subprocess.PIPE, check=True).stdout.decode()
    status, version = out.split()
    return int(status), version


def localised(config, ports, directory, upstreams):
    """The guide's file with its addresses and paths made this test's (and
    the HTTP front on a free port, for /metrics)."""
    for literal, port in ports.items():
        config = config.replace("127.0.0.1:%d" % literal, "127.0.0.1:%d" % port)
    for n, up in upstreams.items():
        config = config.replace("127.0.0.1:%d" % n, "127.0.0.1:%d" % up.port)
    config = config.replace("/etc/sluice/", directory + "/").replace("/var/log/sluice/", directory + "/")
    return "listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0}\n" + config


class WorkingConfiguration(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluiced-gwdocs-")
        argv = certificate_command()
        argv = [a.replace("/etc/sluice/", cls.dir + "/") for a in argv]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.ups = {n: Recording("up%d" % n) for n in (9000, 9001, 9002, 9003)}
        cls.plain, cls.tls = harness.free_port(), harness.free_port()
        config = localised(working_configuration(), {8080: cls.plain, 8443: cls.tls}, cls.dir, cls.ups)
        cls.d = Daemon(config)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        for up in cls.ups.values():
            up.close()

    def test_every_route_answers(self):
        base = "http://127.0.0.1:%d" % self.plain
        key = ("-H", "X-Api-Key: k1")
        self.assertEqual(curl(base + "/api/a", "-H", "Host: api.example.com", *key), (200, "1.1"))
        self.assertEqual(curl(base + "/static/a", "--http2-prior-knowledge"), (200, "2"))
        self.assertEqual(curl(base + "/search/a"), (200, "1.1"))
        self.assertEqual(curl(base + "/reports/a", *key), (200, "1.1"))
        self.assertEqual(curl(base + "/a"), (200, "1.1"))
        self.assertEqual(curl(base + "/b"), (200, "1.1"))
        # the same over TLS, HTTP/2 chosen by ALPN, the certificate the guide's line made
        self.assertEqual(curl("https://api.example.com:%d/api/b" % self.tls, "--http2", "--cacert",
                              os.path.join(self.dir, "cert.pem"), "--resolve",
                              "api.example.com:%d:127.0.0.1" % self.tls, "-H", "X-Api-Key: k1"), (200, "2"))
        self.assertEqual(self.ups[9000].paths().count("/api/a") + self.ups[9000].paths().count("/api/b"), 2)
        self.assertIn("/static/a", self.ups[9001].paths())
        self.assertIn("/reports/a", self.ups[9002].paths())
        # rest: the two upstreams in turn (one connection each: the turns of
        # up to two workers, so each upstream got one of the two or both went
        # to one worker's two turns)
        self.assertEqual(len([p for p in self.ups[9000].paths() + self.ups[9003].paths() if p in ("/a", "/b")]), 2)
        log = os.path.join(self.dir, "gateway.log")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (os.path.exists(log) and os.path.getsize(log) > 0):
            time.sleep(0.05)
        with open(log) as f:
            self.assertIn('"route":"api"', f.read())


class NginxReplacement(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluiced-gwnginx-")
        self.ups = {n: Recording("up%d" % n) for n in (9000, 9001)}
        self.port = harness.free_port()
        self.log = os.path.join(self.dir, "gateway.log")
        config = nginx_replacement().replace("gateway:\n", "gateway:\n  access_log: %s\n" % self.log, 1)
        self.d = Daemon(localised(config, {8080: self.port}, self.dir, self.ups))
        self.http_port = int(re.search(r" ready: .*\bhttp_port=(\d+)", self.d.output()).group(1))

    def decided(self, result):
        return harness.metric(self.http_port, "sluice_gateway_requests_total", route="api", result=result)

    def tearDown(self):
        self.d.stop()
        for up in self.ups.values():
            up.close()

    def test_burst_20_delay_5(self):
        # connected first, then the 25 requests written back to back: "at
        # once" is not left to how fast 25 client processes start
        socks = [socket.create_connection(("127.0.0.1", self.port), timeout=20) for _ in range(25)]
        sent_at = time.monotonic()  # no decision on them comes before this
        for i, s in enumerate(socks):
            s.sendall(b"GET /api/%d HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % i)
        results = []
        for s in socks:
            answer = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
            s.close()
            results.append(int(answer.split(b" ", 2)[1]))
        self.assertEqual(sorted(results), [200] * 21 + [429] * 4)
        # what the gateway decided: 21 forwarded, of which burst - delay = 15
        # held (so 1 + delay=5 at once), the rest refused; counted by the
        # gateway, not read off arrival times, which a loaded machine smears
        self.assertEqual([self.decided(r) for r in ("forwarded", "delayed", "rejected")], [21, 15, 4])
        times = sorted(t for up in self.ups.values() for t, _ in up.seen)
        self.assertEqual(len(times), 21)
        # six at once, the others held 100 ms apart, none early (which were
        # held: from the access log this test adds to the guide's file)
        arrivals = {p: t for up in self.ups.values() for t, p in up.seen}
        log = harness.access_log(self.log, 25, path_prefix="/api/")  # the 429s too
        harness.assert_burst_then_schedule(self, log, arrivals, sent_at, 6, 0.1)
        # and the two upstreams took them in turn
        self.assertGreater(len(self.ups[9000].seen), 0)
        self.assertGreater(len(self.ups[9001].seen), 0)


if __name__ == "__main__":
    harness.main()
