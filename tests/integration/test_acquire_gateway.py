"""test_acquire_gateway.py -- excess: delay on a gateway route with several
policies (docs/gateway.md, "Delay"): all or nothing, a request waits for
the latest of its policies' places and each policy is charged at that
moment; one that any policy cannot admit within max_delay is refused and
charges none. A real sluiced (manual clock, standing still) in front of a
Python upstream that notes when each request arrives.

Route `two`: gcra 10/s burst 2 and a fixed window of 4 per second, both
keyed by ip and route. Ten requests at once: the places are 0, 0, 0, then
100 ms (gcra), then the window is full until 1 s: the fifth runs at 1 s
and gcra is charged from there, so it still has its burst for the sixth
and seventh at 1 s, then 1.1 s; the window of 1 s is full after four, the
ninth and tenth run when the next opens, at 2 s.
"""
import http.client
import re
import socket
import threading
import time
import unittest

import harness
import upstream
from harness import Daemon

SCHEDULE = [0, 0, 0, 0.1, 1.0, 1.0, 1.0, 1.1, 2.0, 2.0]


class Upstream(upstream.Upstream):
    def __init__(self):
        self.lock = threading.Lock()
        self.times = []
        super().__init__()

    def answer(self, request, body):
        with self.lock:
            self.times.append((request.path, time.monotonic()))
        return 200, b"ok\n"

    def arrivals(self, prefix):
        with self.lock:
            return sorted(t for p, t in self.times if p.startswith(prefix))


CONFIG = """\
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0}
threads: 2
gateway:
  listen: 127.0.0.1:0
  routes:
    - name: two
      match: {path_prefix: /two/}
      upstream: http://127.0.0.1:%(up)d
      policies: [fast, win]
      excess: delay
      max_delay: 10s
    - name: tight
      match: {path_prefix: /tight/}
      upstream: http://127.0.0.1:%(up)d
      policies: [fast, win]
      excess: delay
      max_delay: 500ms
    - name: line
      match: {path_prefix: /line/}
      upstream: http://127.0.0.1:%(up)d
      policies: [slow, win]
      excess: delay
      max_delay: 60s
policies:
  - name: slow
    key: [ip, route]
    limits:
      - {algorithm: gcra, limit: 1, period: 10s}
  - name: fast
    key: [ip, route]
    limits:
      - {algorithm: gcra, limit: 10, period: 1s, burst: 2}
  - name: win
    key: [ip, route]
    limits:
      - {algorithm: fixed_window, limit: 4, period: 1s}
"""


class DelaySeveral(unittest.TestCase):
    def setUp(self):
        self.up = Upstream()
        self.d = Daemon(CONFIG % {"up": self.up.port})
        self.port = int(re.search(r" gateway_port=(\d+)", self.d.output()).group(1))
        self.r = self.d.client()

    def tearDown(self):
        self.d.stop()
        self.up.close()

    def get(self, path, timeout=20):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def parallel(self, paths):
        return harness.get_at_once(self.port, paths, timeout=20)[0]

    def peek(self, policy, route):
        """SL.PEEK of a policy's key for this client on a route."""
        return self.r.execute_command("SL.PEEK", policy, "ip=127.0.0.1|route=%s" % route)

    def test_waits_for_the_latest_place(self):
        results = self.parallel(["/two/%d" % i for i in range(10)])
        self.assertEqual([r[0] for r in results.values()], [200] * 10, results)
        times = self.up.arrivals("/two/")
        self.assertEqual(len(times), 10)
        # the three at once may reach the upstream late (new connections),
        # so may a held one: the schedule is measured among the held ones,
        # from the earliest origin they imply
        origin = min(t - want for want, t in zip(SCHEDULE[3:], times[3:]))
        for want, t in zip(SCHEDULE[3:], times[3:]):
            self.assertLess(t - origin - want, 0.3, times)
        self.assertLess(abs(times[8] - times[4] - 1.0), 0.1, times)  # the window of 2 s opens 1 s later
        # both policies hold exactly these ten places: gcra's next is 2 s
        # away (charged at the moments the requests ran, not at their own
        # earlier places: else it would be 0.8 s), the window now is full
        self.assertEqual(self.peek("fast", "two")[3], 2000)
        win = self.peek("win", "two")
        self.assertEqual(win[0], 0)  # this window (and the next) are full

    def test_all_or_nothing(self):
        # max_delay 500 ms: four pass (0, 0, 0, 100 ms); the fifth has a
        # gcra place at 200 ms but the window's only at 1 s: refused, and
        # neither policy is charged for it.
        socks = []
        for i in range(4):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(b"GET /tight/%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
            socks.append(s)
        deadline = time.time() + 5
        while self.peek("win", "tight")[2] > 0 and time.time() < deadline:
            time.sleep(0.01)
        fast_before = self.peek("fast", "tight")
        self.assertEqual(fast_before[3], 200)  # the fifth's gcra place: 200 ms away
        status, body = self.get("/tight/5")
        self.assertEqual(status, 429, body)
        self.assertEqual(self.peek("fast", "tight"), fast_before)  # gcra: nothing charged
        self.assertEqual(self.get("/tight/6")[0], 429)
        self.assertEqual(self.peek("fast", "tight"), fast_before)
        for s in socks:
            self.assertIn(b"200", s.recv(100))
            s.close()
        self.assertEqual(len(self.up.arrivals("/tight/")), 4)

    def test_client_gone_gives_the_places_back(self):
        # gcra 1 per 10 s: the first now, the second held 10 s. Its client
        # leaves: both policies' places go back, and the next request gets
        # them (10 s, not 20 s).
        self.assertEqual(self.get("/line/0")[0], 200)
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(b"GET /line/1 HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.time() + 5
        while self.peek("slow", "line")[3] < 20000 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(self.peek("slow", "line")[3], 20000)
        s.close()
        deadline = time.time() + 5  # the gateway looks at a held client's socket every 100 ms
        while self.peek("slow", "line")[3] > 10000 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(self.peek("slow", "line")[3], 10000)
        s2 = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s2.sendall(b"GET /line/2 HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.time() + 5
        while self.peek("slow", "line")[3] < 20000 and time.time() < deadline:
            time.sleep(0.01)
        self.assertEqual(self.peek("slow", "line")[3], 20000)  # it has the place at 10 s
        s2.close()
        self.assertEqual(len(self.up.arrivals("/line/")), 1)


if __name__ == "__main__":
    unittest.main()
