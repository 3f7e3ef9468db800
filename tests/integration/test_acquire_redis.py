"""test_acquire_redis.py -- waiting with the Redis store (strict): SL.ACQUIRE,
CL.ACQUIRE and wait= hold their places in Redis, so waiters on one key
across two daemons on one redis-server are admitted at the algorithm's
schedule, each at its own slot, as many as the limit allows; a denied
waiter leaves the key in Redis byte for byte as it was; a dead Redis
follows the policy's on_store_failure.

The daemons' Redis calls may take 20 s (STORE), not the default 200 ms:
past it a decision falls back to the daemon's memory (on_store_failure:
local), and under ASan on a loaded machine an EVALSHA took longer, so nine
of ten delayed gateway requests went through within 200 ms. Only the test
of a dead Redis sets a short timeout.

The daemons use `clock: local` and manual test clocks set to one instant,
which stand still: the places are computed on it, and the replies are held
that long in real time, measured loosely (as test_acquire.py)."""
import os
import re
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import harness
from harness import Daemon
import redis
from test_acquire import command, read_int_array
from test_distributed import RedisServer

STORE = "store:\n  type: redis\n  url: %s\n  clock: local\n"
S = 1_000_000
T0 = 1_800_000_000 * S
# reply: allowed, limit, remaining, retry_after_ms, reset_after_ms, delay_ms, limited, limit_index

POLICIES = """\
policies:
  - name: paced
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
  - name: win
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1s}
  - name: both
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
      - {algorithm: fixed_window, limit: 4, period: 1s}
  - name: sliding
    limits:
      - {algorithm: sliding_window, limit: 5, period: 1s}
  - name: open
    on_store_failure: open
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
  - name: closed
    on_store_failure: closed
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
  - name: local
    on_store_failure: local
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
  - name: slow
    limits:
      - {algorithm: gcra, limit: 1, period: 60s}
  - name: slowwin
    limits:
      - {algorithm: fixed_window, limit: 1, period: 60s}
"""


def forwarded_at(entry):
    """When the gateway forwarded a request, from its access-log entry: the
    moment it was read (wall clock, ms) plus how long it was held."""
    import calendar
    stamp, ms = entry["time"].rstrip("Z").split(".")
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")) + int(ms) / 1000 + entry["delay_ms"] / 1000


class AcquireRedis(unittest.TestCase):
    def setUp(self):
        self.redis = RedisServer()
        self.daemons = []

    def tearDown(self):
        try:
            for d in self.daemons:
                d.stop()
        finally:
            self.redis.stop()

    def daemon(self, extra_store="  timeout: 20s\n"):
        cfg = ("listen:\n  resp: 127.0.0.1:0\n  http: 127.0.0.1:0\nthreads: 2\n"
               + STORE % self.redis.url + extra_store
               + POLICIES)
        d = Daemon(cfg, test_clock=T0)
        d.http_port = int(re.search(r"http_port=(\d+)", d.output()).group(1))
        self.daemons.append(d)
        return d

    def state(self, policy, key):
        return self.redis.client().get(b"sl:{" + policy.encode() + b"\0" + key.encode() + b"}")

    def keep_in_redis(self, policy, key):
        """Until the returned stop() is called, takes the key's expiry away
        in Redis as soon as a write sets one. The daemons' clocks stand
        still, but Redis counts a key's time to live (exp - now: 1.1 s for
        11 places of gcra 10/s) in real time: a test that holds replies for
        1 s and then reads the key had 0.1 s to spare, and under ASan at
        load 12 the key had expired (a check on it was admitted)."""
        name = b"sl:{" + policy.encode() + b"\0" + key.encode() + b"}"
        rc = self.redis.client()
        done = threading.Event()

        def run():
            try:
                while not done.is_set():
                    rc.persist(name)
                    done.wait(0.005)
            except redis.exceptions.ConnectionError:
                pass  # Redis stopped (tearDown runs before the cleanups)
        t = threading.Thread(target=run, daemon=True)
        t.start()

        def stop():
            done.set()
            t.join(10)
        return stop

    def acquire_all(self, socks_and_counts, *args):
        """Pipelines count SL.ACQUIRE args on each socket, all at once;
        returns per socket the (reply, seconds) of each, in order."""
        results = [None] * len(socks_and_counts)
        start = time.monotonic()

        def run(i, sock, n):
            sock.sendall(b"".join(command("SL.ACQUIRE", *args) for _ in range(n)))
            sock.settimeout(15)
            buf, out = b"", []
            for _ in range(n):
                reply, buf = read_int_array(sock, buf)
                out.append((reply, time.monotonic() - start))
            results[i] = out
        threads = [threading.Thread(target=run, args=(i, s, n)) for i, (s, n) in enumerate(socks_and_counts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        return results

    def test_waiters_across_two_daemons_get_the_schedule(self):
        # gcra 10/s: T = 100 ms. 16 waiters on one key, 8 pipelined on each
        # daemon at once, with TIMEOUT 1 s: 11 get the slots 0, 100, ...
        # 1000 ms between them, each one slot, none twice; the other 5 are
        # denied at once with the retry of a wait that would reach a slot.
        a, b = self.daemon(), self.daemon()
        sa, sb = a.raw(), b.raw()
        stop_keeping = self.keep_in_redis("paced", "k")
        self.addCleanup(stop_keeping)
        got = self.acquire_all([(sa, 8), (sb, 8)], "paced", "k", "TIMEOUT", 1000)
        replies = [r for per in got for r in per]
        admitted = sorted(r[5] for r, _ in replies if r[0] == 1)
        self.assertEqual(admitted, [100 * i for i in range(11)], replies)
        denied = [r for r, _ in replies if r[0] == 0]
        self.assertEqual(len(denied), 5)
        for r in denied:
            self.assertEqual(r[3], 100)
            self.assertEqual(r[5], 0)
        for per in got:  # per connection: in order, each held until its slot
            slots = [r[5] for r, _ in per if r[0] == 1]
            self.assertEqual(slots, sorted(slots))
            for r, at in per:
                if r[0] == 1:
                    self.assertGreaterEqual(at, r[5] / 1000 - 0.03, (r, at))
                    self.assertLess(at, r[5] / 1000 + 0.6, (r, at))
        # a denial charges nothing: the key in Redis is unchanged by it
        before = self.state("paced", "k")
        self.assertIsNotNone(before)
        deny = b.client().execute_command("SL.ACQUIRE", "paced", "k", "TIMEOUT", 200)
        self.assertEqual(deny[0], 0)
        self.assertEqual(deny[3], 900)  # the next slot is 1100 ms away, 200 of it allowed
        self.assertEqual(self.state("paced", "k"), before)
        # and a plain check on the other daemon sees every place taken
        check = a.client().execute_command("SL.CHECK", "paced", "k")
        self.assertEqual(check[0], 0)
        self.assertEqual(check[3], 1100)
        stop_keeping()
        sa.close()
        sb.close()

    def wait_for_peek(self, client, policy, key, field, want):
        deadline = time.time() + 5
        while client.execute_command("SL.PEEK", policy, key)[field] != want and time.time() < deadline:
            time.sleep(0.005)
        self.assertEqual(client.execute_command("SL.PEEK", policy, key)[field], want)

    def test_disconnected_waiter_gives_its_place_to_the_next(self):
        # as test_acquire.py's on the memory store: gcra 1 per minute, the
        # first now, the second held a minute in Redis. Its client leaves:
        # its place goes back in Redis, and the next waiter (on the other
        # daemon) gets it (60 s, not 120 s).
        a, b = self.daemon(), self.daemon()
        ca, cb = a.client(), b.client()
        self.assertEqual(ca.execute_command("SL.ACQUIRE", "slow", "g", "TIMEOUT", 0)[0], 1)
        s = a.raw()
        s.sendall(command("SL.ACQUIRE", "slow", "g", "TIMEOUT", 600000))
        self.wait_for_peek(cb, "slow", "g", 3, 120000)
        s.close()
        self.wait_for_peek(cb, "slow", "g", 3, 60000)
        s2 = b.raw()
        s2.sendall(command("SL.ACQUIRE", "slow", "g", "TIMEOUT", 600000))
        self.wait_for_peek(ca, "slow", "g", 3, 120000)  # the place at 60 s
        s2.close()
        self.wait_for_peek(ca, "slow", "g", 3, 60000)

    def test_http_wait_client_gone_gives_its_place_to_the_next(self):
        # an HTTP/1 wait= client held a minute in Redis closes its socket
        # (the daemon looks at it every 100 ms): its place goes back, and
        # the next waiter (on the other daemon) gets it
        import socket
        a, b = self.daemon(), self.daemon()
        ca, cb = a.client(), b.client()
        self.assertEqual(ca.execute_command("SL.ACQUIRE", "slow", "h", "TIMEOUT", 0)[0], 1)
        s = socket.create_connection(("127.0.0.1", a.http_port), timeout=10)
        s.sendall(b"GET /v1/check?policy=slow&key=h&wait=1h HTTP/1.1\r\nHost: x\r\n\r\n")
        self.wait_for_peek(cb, "slow", "h", 3, 120000)
        s.close()
        self.wait_for_peek(cb, "slow", "h", 3, 60000)
        s2 = b.raw()
        s2.sendall(command("SL.ACQUIRE", "slow", "h", "TIMEOUT", 600000))
        self.wait_for_peek(ca, "slow", "h", 3, 120000)  # the place at 60 s
        s2.close()
        self.wait_for_peek(ca, "slow", "h", 3, 60000)

    def test_cl_acquire_disconnected_waiter_gives_its_place_back(self):
        # CL.ACQUIRE's ad-hoc policy (max_burst 0, 1 per minute) in Redis:
        # the second waiter leaves and its place goes back
        a, b = self.daemon(), self.daemon()
        ca, cb = a.client(), b.client()

        def reset_after(c):
            return c.execute_command("CL.THROTTLE", "cg", 0, 1, 60, 0)[4]

        def until(c, want):
            deadline = time.time() + 5
            while reset_after(c) != want and time.time() < deadline:
                time.sleep(0.005)
            self.assertEqual(reset_after(c), want)
        self.assertEqual(ca.execute_command("CL.ACQUIRE", "cg", 0, 1, 60, "TIMEOUT", 0)[0], 0)
        s = a.raw()
        s.sendall(command("CL.ACQUIRE", "cg", 0, 1, 60, "TIMEOUT", 600000))
        until(cb, 120)
        s.close()
        until(cb, 60)

    def test_disconnected_waiter_gives_back_a_fixed_window_place(self):
        # 1 per window of 60 s, full: a waiter holds the next window's
        # place in Redis; its client leaves and the window is uncounted, so
        # a check in that window passes (it would be denied otherwise)
        a = self.daemon()
        c = a.client()
        self.assertEqual(c.execute_command("SL.CHECK", "slowwin", "w")[0], 1)
        before = self.state("slowwin", "w")
        s = a.raw()
        s.sendall(command("SL.ACQUIRE", "slowwin", "w", "TIMEOUT", 600000))
        deadline = time.time() + 5
        while self.state("slowwin", "w") == before and time.time() < deadline:
            time.sleep(0.005)
        reserved = self.state("slowwin", "w")
        self.assertNotEqual(reserved, before)
        s.close()
        deadline = time.time() + 5
        while self.state("slowwin", "w") == reserved and time.time() < deadline:
            time.sleep(0.005)
        self.assertNotEqual(self.state("slowwin", "w"), reserved)
        a.clock(c, "SET", T0 + 60 * S)  # the window it had been charged to
        self.assertEqual(c.execute_command("SL.CHECK", "slowwin", "w")[0], 1)
        self.assertEqual(c.execute_command("SL.CHECK", "slowwin", "w")[0], 0)

    def test_gateway_client_gone_gives_the_place_back(self):
        # a gateway route with excess: delay on Redis, gcra 1 per minute:
        # the first now, the second held a minute; its client leaves and
        # the place goes back in Redis (as test_acquire_gateway.py's)
        import socket
        import http.client
        import upstream

        class Up(upstream.Upstream):
            def answer(self, request, body):
                return 200, b"ok\n"
        up = Up()
        try:
            gw = ("gateway:\n  listen: 127.0.0.1:0\n  routes:\n    - name: line\n"
                  "      upstream: http://127.0.0.1:%d\n      policies: [slowroute]\n"
                  "      excess: delay\n      max_delay: 600s\n" % up.port)
            cfg = ("listen:\n  resp: 127.0.0.1:0\n  http: 127.0.0.1:0\nthreads: 2\n"
                   + STORE % self.redis.url + "  timeout: 20s\n" + gw + POLICIES
                   + "  - name: slowroute\n    key: [route]\n    limits:\n"
                   "      - {algorithm: gcra, limit: 1, period: 60s}\n")
            d = Daemon(cfg, test_clock=T0)
            self.daemons.append(d)
            port = int(re.search(r" gateway_port=(\d+)", d.output()).group(1))
            c = d.client()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/line/0")
            self.assertEqual(conn.getresponse().status, 200)
            conn.close()
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /line/1 HTTP/1.1\r\nHost: x\r\n\r\n")
            self.wait_for_peek(c, "slowroute", "route=line", 3, 120000)
            s.close()  # the gateway looks at a held client's socket every 100 ms
            self.wait_for_peek(c, "slowroute", "route=line", 3, 60000)
        finally:
            up.close()

    def test_fixed_window_across_daemons(self):
        # 3 per window of 1 s, half way through a full window: 4 waiters on
        # two daemons with TIMEOUT 1 s get the next window (500 ms away),
        # three of them; the fourth would need the window after.
        a, b = self.daemon(), self.daemon()
        for d in (a, b):
            d.clock(d.client(), "SET", T0 + S // 2)
        self.assertEqual([a.client().execute_command("SL.CHECK", "win", "w")[0] for _ in range(3)], [1, 1, 1])
        sa, sb = a.raw(), b.raw()
        got = self.acquire_all([(sa, 2), (sb, 2)], "win", "w", "TIMEOUT", 1000)
        replies = [r for per in got for r, _ in per]
        self.assertEqual(sorted(r[0] for r in replies), [0, 1, 1, 1])
        self.assertEqual([r[5] for r in replies if r[0] == 1], [500, 500, 500])
        self.assertEqual([r[3] for r in replies if r[0] == 0], [500])
        sa.close()
        sb.close()

    def test_several_limits_wait_for_the_latest(self):
        # gcra 10/s and 4 per fixed window: the fifth waiter of the instant
        # runs when the next window opens (1 s), later than its gcra slot.
        a = self.daemon()
        s = a.raw()
        got = self.acquire_all([(s, 6)], "both", "m", "TIMEOUT", 1000)[0]
        self.assertEqual([r[0] for r, _ in got], [1, 1, 1, 1, 1, 0])
        self.assertEqual([r[5] for r, _ in got[:5]], [0, 100, 200, 300, 1000])
        s.close()

    def test_cl_acquire_and_http_wait(self):
        a, b = self.daemon(), self.daemon()
        s = a.raw()
        s.sendall(b"".join(command("CL.ACQUIRE", "c", 0, 10, 1, "TIMEOUT", 150) for _ in range(3)))
        s.settimeout(10)
        buf, replies = b"", []
        for _ in range(3):
            reply, buf = read_int_array(s, buf)
            replies.append(reply)
        self.assertEqual([r[0] for r in replies], [0, 0, 1])  # 0: allowed, as CL.THROTTLE says
        s.close()
        # wait= on the other daemon: held its 100 ms, then 200
        base = "http://127.0.0.1:%d" % b.http_port
        self.assertEqual(urllib.request.urlopen(base + "/v1/check?policy=paced&key=h").status, 200)
        start = time.monotonic()
        with urllib.request.urlopen(base + "/v1/check?policy=paced&key=h&wait=1s") as r:
            self.assertEqual(r.status, 200)
        self.assertGreaterEqual(time.monotonic() - start, 0.07)
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/v1/check?policy=paced&key=h&wait=50ms")
        self.assertEqual(e.exception.code, 429)
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/v1/check?policy=sliding&key=h&wait=1s")
        self.assertEqual(e.exception.code, 400)
        self.assertIn(b"sliding_window and sliding_log cannot wait", e.exception.read())

    def test_refusals(self):
        a = self.daemon()
        import redis
        with self.assertRaises(redis.ResponseError) as e:
            a.client().execute_command("SL.ACQUIRE", "sliding", "k", "TIMEOUT", 100)
        self.assertIn("sliding_window and sliding_log cannot wait", str(e.exception))
        self.assertIsNone(self.state("sliding", "k"))
        # TIMEOUT 0 is SL.CHECK, in Redis
        self.assertEqual(a.client().execute_command("SL.ACQUIRE", "sliding", "k", "TIMEOUT", 0)[0], 1)
        self.assertIsNotNone(self.state("sliding", "k"))

    def test_dead_redis_follows_the_fail_mode(self):
        a = self.daemon("  timeout: 100ms\n  nodes: 2\n  breaker: {failures: 3, cooldown: 200ms}\n")
        c = a.client()
        self.assertEqual(c.execute_command("SL.ACQUIRE", "paced", "k", "TIMEOUT", 100)[0], 1)
        self.redis.kill()
        # open admits now; closed denies
        for i in range(5):
            self.assertEqual(c.execute_command("SL.ACQUIRE", "open", "o", "TIMEOUT", 1000)[:1], [1])
            self.assertEqual(c.execute_command("SL.ACQUIRE", "closed", "c", "TIMEOUT", 1000)[0], 0)
        # local reserves in this daemon's memory, at its share (10/s over 2
        # nodes: 200 ms apart)
        s = a.raw()
        got = self.acquire_all([(s, 4)], "local", "l", "TIMEOUT", 500)[0]
        self.assertEqual([r[0] for r, _ in got], [1, 1, 1, 0])
        self.assertEqual([r[5] for r, _ in got[:3]], [0, 200, 400])
        s.close()
        self.assertEqual(a.proc.poll(), None)

    def test_gateway_delay_on_redis(self):
        # two gateways on one Redis, one route with two policies: ten
        # requests split between them are forwarded at one schedule, the
        # places held in Redis (as test_acquire_gateway.py on one daemon)
        import upstream
        import http.client

        class Up(upstream.Upstream):
            def __init__(self):
                self.lock = threading.Lock()
                self.times = []
                super().__init__()

            def answer(self, request, body):
                with self.lock:
                    self.times.append(time.monotonic())
                return 200, b"ok\n"
        up = Up()
        try:
            gw = ("gateway:\n  listen: 127.0.0.1:0\n  access_log: %s\n  routes:\n    - name: two\n"
                  "      upstream: http://127.0.0.1:%d\n      policies: [fast, win2]\n"
                  "      excess: delay\n      max_delay: 10s\n")
            extra = ("  - name: fast\n    key: [route]\n    limits:\n"
                     "      - {algorithm: gcra, limit: 10, period: 1s, burst: 2}\n"
                     "  - name: win2\n    key: [route]\n    limits:\n"
                     "      - {algorithm: fixed_window, limit: 4, period: 1s}\n")
            ds, logs = [], []
            for _ in range(2):
                logs.append(os.path.join(tempfile.mkdtemp(prefix="sluiced-acqgw-"), "gateway.log"))
                cfg = ("listen:\n  resp: 127.0.0.1:0\n  http: 127.0.0.1:0\nthreads: 2\n"
                       + STORE % self.redis.url + "  timeout: 20s\n"
                       + gw % (logs[-1], up.port) + POLICIES + extra)
                d = Daemon(cfg, test_clock=T0)
                self.daemons.append(d)
                ds.append(int(re.search(r" gateway_port=(\d+)", d.output()).group(1)))
            statuses = []

            def one(port, i):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
                try:
                    conn.request("GET", "/r/%d" % i)
                    statuses.append(conn.getresponse().status)
                finally:
                    conn.close()
            threads = [threading.Thread(target=one, args=(ds[i % 2], i)) for i in range(10)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            self.assertEqual(statuses, [200] * 10)
            # when each was forwarded, on the gateways' own clock (the
            # access log: when it was read, and how long it was held): the
            # upstream's arrival times carry its connection set-up, and
            # under ASan on a loaded machine the ones forwarded at once
            # arrived 0.4 s late, less than 0.85 s before the next window's
            entries = [e for log in logs for e in harness.access_log(log, 5, path_prefix="/r/")]
            self.assertEqual(len(entries), 10, entries)
            self.assertEqual(len(up.times), 10)
            times = sorted(forwarded_at(e) for e in entries)
            # the places: 0, 0, 0, 0.1, then 1.0 (x3), 1.1, then 2.0 (x2):
            # four per window of the fixed window. Requests that arrive
            # together interleave their steps in Redis, and a place lost by
            # one policy after another was charged stays spent there, so the
            # later places may come later, never sooner: never five within
            # a window's second
            early = [t for t in times if t - times[0] < 0.5]
            self.assertEqual(len(early), 4, times)
            for i in range(len(times) - 4):
                self.assertGreater(times[i + 4] - times[i], 0.85, times)
        finally:
            up.close()


if __name__ == "__main__":
    unittest.main()
