"""test_gateway_headers.py -- what a forwarded request carries of the
limiter's decision (docs/gateway.md, "Rate limit fields on forwarded
requests"), and the upstream's latency in /metrics:

  - by default the client sees RateLimit-Policy / RateLimit (and the
    X-RateLimit-* fields) on a forwarded 200, with the remaining after its
    own charge, and the upstream sees none of them;
  - headers: {upstream: on} puts them on the request forwarded, replacing
    any the client sent of the same names; {client: off} keeps them off the
    response;
  - a route with several policies lists the items of each;
  - a delayed request carries the fields of its reservation, the gateway's
    own 502 for a dead upstream the fields of the decision that let it go;
  - a shadow route sends the client nothing by default; with upstream: on
    the upstream sees the decision as made (r=0 on a shadowed excess);
  - sluice_gateway_upstream_seconds puts a slow upstream's answer in its
    bucket.

The daemon runs on the test clock (nothing waits for a window); the slow
upstream sleeps 0.3 s before its answer, which is the latency measured.
"""
import re
import subprocess
import threading
import time
import unittest

import harness
import upstream
from harness import Daemon
from test_gateway import curl, gateway_port

CONFIG = """\
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0}
threads: 2
gateway:
  listen: 127.0.0.1:0
  routes:
    - name: plain
      match: {path_prefix: /plain/}
      upstream: http://127.0.0.1:%(up)d
      policies: [per_ip]
    - name: told
      match: {path_prefix: /told/}
      upstream: http://127.0.0.1:%(up)d
      policies: [per_ip_told]
      headers: {upstream: on, client: off}
    - name: both
      match: {path_prefix: /both/}
      upstream: http://127.0.0.1:%(up)d
      policies: [loose, tight]
      headers: {upstream: on}
    - name: shadow
      match: {path_prefix: /shadow/}
      upstream: http://127.0.0.1:%(up)d
      policies: [one]
      excess: shadow
      headers: {upstream: on}
    - name: slow
      match: {path_prefix: /slow/}
      upstream: http://127.0.0.1:%(up)d
    - name: held
      match: {path_prefix: /held/}
      upstream: http://127.0.0.1:%(up)d
      policies: [shaped]
      excess: delay
      headers: {upstream: on}
    - name: dead
      match: {path_prefix: /dead/}
      upstream: http://127.0.0.1:%(dead)d
      policies: [per_ip_dead]
policies:
  - name: per_ip
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1h}
  - name: per_ip_told
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1h}
  - name: loose
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 10, period: 1h}
  - name: tight
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1m}
      - {algorithm: fixed_window, limit: 20, period: 1h}
  - name: shaped
    key: [ip]
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
  - name: per_ip_dead
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1h}
  - name: one
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 1, period: 1h}
"""

FIELDS = ("ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


class Upstream(upstream.Upstream):
    """Keeps the rate limit fields each request brought; /slow/ answers after 0.3 s."""

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()
        super().__init__()

    def answer(self, request, body):
        got = {name: request.headers.get_all(name) for name in FIELDS if request.headers.get_all(name)}
        with self.lock:
            self.seen.append(got)
        if request.path.startswith("/slow/"):
            time.sleep(0.3)
        return 200, b"ok\n"


class Headers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.up = Upstream()
        cls.d = Daemon(CONFIG % {"up": cls.up.port, "dead": harness.free_port()})
        cls.port = gateway_port(cls.d)
        cls.http_port = int(re.search(r" http_port=(\d+)", cls.d.output()).group(1))

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.up.close()

    def metric(self, name, **labels):
        """A series of /metrics (the HTTP front), by name and labels."""
        return harness.metric(self.http_port, name, **labels)

    def test_client_sees_the_fields_upstream_none_by_default(self):
        for i in range(3):
            status, h, body = curl(self.port, "/plain/x")
            self.assertEqual((status, body), (200, "ok\n"))
            self.assertEqual(h["ratelimit-policy"], '"per_ip";q=5;w=3600')
            self.assertRegex(h["ratelimit"], r'^"per_ip";r=%d;t=\d+$' % (4 - i))
            self.assertEqual(h["x-ratelimit-remaining"], str(4 - i))
            self.assertEqual(h["x-ratelimit-limit"], "5")
            self.assertNotIn("retry-after", h)
            self.assertEqual(self.up.seen[-1], {})
        # HTTP/2: the same fields
        status, h, _ = curl(self.port, "/plain/x", "--http2-prior-knowledge")
        self.assertEqual(status, 200)
        self.assertRegex(h["ratelimit"], r'^"per_ip";r=1;t=\d+$')
        # a client's own fields reach the upstream unchanged when it is not told
        curl(self.port, "/plain/x", "-H", "RateLimit: \"forged\";r=99;t=1")
        self.assertEqual(self.up.seen[-1], {"ratelimit": ['"forged";r=99;t=1']})

    def test_upstream_on_client_off(self):
        status, h, _ = curl(self.port, "/told/x", "-H", "RateLimit: \"forged\";r=99;t=1",
                            "-H", "X-RateLimit-Remaining: 99")
        self.assertEqual(status, 200)
        for name in FIELDS:
            self.assertNotIn(name, h)
        seen = self.up.seen[-1]
        self.assertEqual(seen["ratelimit-policy"], ['"per_ip_told";q=5;w=3600'])
        self.assertEqual(len(seen["ratelimit"]), 1)  # the forged one dropped
        self.assertRegex(seen["ratelimit"][0], r'^"per_ip_told";r=4;t=\d+$')
        self.assertEqual(seen["x-ratelimit-remaining"], ["4"])

    def test_several_policies_list_each(self):
        status, h, _ = curl(self.port, "/both/x")
        self.assertEqual(status, 200)
        self.assertEqual(h["ratelimit-policy"], '"loose";q=10;w=3600, "tight-1";q=3;w=60, "tight-2";q=20;w=3600')
        self.assertRegex(h["ratelimit"], r'^"loose";r=9;t=\d+, "tight-1";r=2;t=\d+, "tight-2";r=19;t=\d+$')
        # the X- fields: the policy with the fewest left (tight)
        self.assertEqual((h["x-ratelimit-limit"], h["x-ratelimit-remaining"]), ("3", "2"))
        seen = self.up.seen[-1]
        self.assertEqual(seen["ratelimit-policy"], [h["ratelimit-policy"]])
        self.assertEqual(seen["ratelimit"], [h["ratelimit"]])

    def test_shadow(self):
        status, h, _ = curl(self.port, "/shadow/x")
        self.assertEqual(status, 200)
        self.assertNotIn("ratelimit", h)  # a shadow route changes nothing for its clients
        self.assertRegex(self.up.seen[-1]["ratelimit"][0], r'^"one";r=0;t=\d+$')
        status, h, _ = curl(self.port, "/shadow/x")  # over the limit, forwarded anyway
        self.assertEqual(status, 200)
        self.assertNotIn("ratelimit", h)
        self.assertRegex(self.up.seen[-1]["ratelimit"][0], r'^"one";r=0;t=\d+$')
        self.assertEqual(self.up.seen[-1]["x-ratelimit-remaining"], ["0"])

    def test_delayed_and_failed(self):
        # gcra 10/s, no burst: the second request at once is held 100 ms
        # (real time: the test clock stands still, the loop's timer does not)
        for i in range(2):
            status, h, _ = curl(self.port, "/held/x")
            self.assertEqual(status, 200)
            self.assertEqual(h["ratelimit-policy"], '"shaped";q=10;w=1')
            self.assertEqual(self.up.seen[-1]["ratelimit"], [h["ratelimit"]])
        # the gateway's own 502 is a forwarded request's answer too
        status, h, body = curl(self.port, "/dead/x")
        self.assertEqual(status, 502, body)
        self.assertRegex(h["ratelimit"], r'^"per_ip_dead";r=4;t=\d+$')

    def test_server_field_once(self):
        """sluiced writes its Server field itself (libh2o's is off, bench/README.md):
        exactly one, on forwarded answers (the upstream's own not passed on, as
        libh2o's proxy did), the gateway's own answers and the HTTP front's,
        over HTTP/1.1 and HTTP/2."""
        def servers(port, path, *args):
            out = subprocess.run(["curl", "-s", "-i", "--max-time", "10"] + list(args) +
                                 ["http://127.0.0.1:%d%s" % (port, path)],
                                 stdout=subprocess.PIPE, check=True).stdout.decode()
            head = out.replace("\r\n", "\n").partition("\n\n")[0].split("\n")
            return head[0].split()[1], [l.split(":", 1)[1].strip() for l in head[1:]
                                        if l.lower().startswith("server:")]
        for args in ((), ("--http2-prior-knowledge",)):
            self.assertEqual(servers(self.port, "/slow/x", *args), ("200", ["sluiced"]))  # forwarded
            self.assertEqual(servers(self.port, "/nowhere", *args), ("404", ["sluiced"]))  # no route
            self.assertEqual(servers(self.http_port, "/v1/check?policy=per_ip&key=s", *args),
                             ("200", ["sluiced"]))
        self.assertEqual(servers(self.port, "/dead/x"), ("502", ["sluiced"]))  # libh2o's, rewritten

    def test_upstream_latency_histogram(self):
        before = self.metric("sluice_gateway_upstream_seconds_count", route="slow")
        total = self.metric("sluice_gateway_upstream_seconds_sum", route="slow")
        slow = lambda le: self.metric("sluice_gateway_upstream_seconds_bucket", route="slow", le=le)
        under, over = slow("0.1"), slow("0.5")
        self.assertEqual(curl(self.port, "/slow/x")[0], 200)
        self.assertEqual(self.metric("sluice_gateway_upstream_seconds_count", route="slow"), before + 1)
        # the one latency observed, as the gateway measured it: the
        # upstream sleeps 0.3 s, and on a loaded machine (ASan) it took
        # more than 0.5 s, so which buckets count it follows from the sum
        took = self.metric("sluice_gateway_upstream_seconds_sum", route="slow") - total
        self.assertGreaterEqual(took, 0.3)
        self.assertEqual(slow("0.1"), under)  # 0.3 s is not under 0.1 s
        self.assertEqual(slow("0.5"), over + (1 if took <= 0.5 else 0), took)
        self.assertEqual(slow("+Inf"), before + 1)


if __name__ == "__main__":
    harness.main()
