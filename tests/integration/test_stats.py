"""test_stats.py -- GET /v1/stats (docs/http.md, docs/operations.md "Who is
being limited"), on a real daemon:

  - one key hammered over RESP and HTTP among a crowd of quiet ones is named
    first among the heavy hitters by requests and by denials, for the
    minute and the hour, within 2 s; its policy's per-second counts hold
    the decisions in the right second;
  - the minute window forgets it two minutes on (the test clock), the hour
    does not;
  - with admin_token configured, /v1/stats needs it (401 without);
  - each heavy key's remaining / retry_after (a peek, not counted), the
    delayed series (wait=), and with a gateway its routes.

The daemon runs on the manual test clock: time moves only by SL.TESTCLOCK.
"""
import json
import re
import subprocess
import time
import unittest

import harness
import upstream
from test_http import ADMIN_TOKEN, S, HttpDaemon, http_config

# The sketches are off by default (their cost: bench/README.md); these
# tests turn them on.
OBSERVE_ON = "observe: {heavy_hitters: on}\n"

POLICIES = """\
policies:
  - name: per_ip
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1m}
  - name: quiet
    limits:
      - {algorithm: fixed_window, limit: 5, period: 1m}
  - name: spaced
    limits:
      - {algorithm: gcra, limit: 1, period: 1s}
"""


def policy(stats, name):
    for p in stats["policies"]:
        if p["name"] == name:
            return p
    raise AssertionError("no policy %r in /v1/stats: %s" % (name, [p["name"] for p in stats["policies"]]))


class Stats(unittest.TestCase):
    def setUp(self):
        self.d = HttpDaemon(http_config(POLICIES + OBSERVE_ON))
        self.r = self.d.resp

    def tearDown(self):
        self.r.connection_pool.disconnect()
        self.d.stop()

    def stats(self):
        res = self.d.get("/v1/stats")
        self.assertEqual(res.status, 200, res.body)
        self.assertTrue(res.headers["content-type"][0].startswith("application/json"))
        return json.loads(res.body)

    def test_hammered_key_is_named_first(self):
        for i in range(40):  # a crowd, each within its limit
            self.r.execute_command("SL.CHECK", "per_ip", "10.0.0.%d" % i)
        started = time.monotonic()
        for _ in range(200):
            self.r.execute_command("SL.CHECK", "per_ip", "203.0.113.7")
        for _ in range(20):
            self.d.get("/v1/check?policy=per_ip&key=203.0.113.7")
        st = self.stats()
        self.assertLess(time.monotonic() - started, 2.0)
        p = policy(st, "per_ip")
        self.assertEqual(p["totals"], {"allowed": 45, "limited": 0, "denied": 215})
        for win in ("minute", "hour"):
            req = p["heavy_hitters"][win]["requests"]
            self.assertEqual(req["total"], 260)
            self.assertEqual(req["top"][0]["key"], "203.0.113.7")
            self.assertLessEqual(abs(req["top"][0]["count"] - 220), req["bound"])
            self.assertLessEqual(len(req["top"]), 10)
            den = p["heavy_hitters"][win]["denials"]
            self.assertEqual(den["total"], 215)
            top = dict(den["top"][0])
            # what it has left now: a peek, which charges and counts nothing
            remaining, retry_after = top.pop("remaining"), top.pop("retry_after")
            self.assertEqual(top, {"key": "203.0.113.7", "count": 215, "truncated": False})
            self.assertEqual(remaining, 0)
            self.assertGreater(retry_after, 0)
            self.assertLessEqual(retry_after, 60)
            quiet = [e for e in req["top"] if e["key"] == "10.0.0.1"]
            if quiet:
                self.assertEqual((quiet[0]["remaining"], quiet[0]["retry_after"]), (4, 0))
        self.assertEqual(st["heavy_hitters"], {"keys": "show", "counters": 64})
        # the decisions were all in the current second: the chart shows them a second on
        self.d.advance(S)
        per = policy(self.stats(), "per_ip")["per_second"]
        self.assertEqual(len(per["allowed"]), st["seconds"])
        self.assertEqual((per["allowed"][-1], per["denied"][-1], per["limited"][-1]), (45, 215, 0))
        self.assertEqual(per["delayed"][-1], 0)
        # the peeks of the heavy keys were not counted
        self.assertEqual(policy(self.stats(), "per_ip")["totals"], {"allowed": 45, "limited": 0, "denied": 215})
        self.assertEqual(sum(per["denied"]), 215)
        # a policy never decided is left out
        self.assertNotIn("quiet", [q["name"] for q in st["policies"]])
        self.assertIn("memory", st["store"])
        self.assertIn("evictions", st["store"]["memory"])
        self.assertIsNone(st["routes"])  # no gateway

    def test_delayed_series_counts_waits(self):
        # wait= holds an admitted request for its moment: delayed, and allowed
        for _ in range(3):
            res = self.d.get("/v1/check?policy=spaced&key=w&wait=5s")
            self.assertEqual(res.status, 200, res.body)
        self.d.advance(S)
        per = policy(self.stats(), "spaced")["per_second"]
        self.assertEqual((per["allowed"][-1], per["delayed"][-1], per["denied"][-1]), (3, 2, 0))

    def test_minute_forgets_hour_keeps(self):
        for _ in range(3):
            self.r.execute_command("SL.CHECK", "per_ip", "abuser")
        self.d.advance(120 * S)
        p = policy(self.stats(), "per_ip")
        self.assertEqual(p["heavy_hitters"]["minute"]["requests"]["top"], [])
        self.assertEqual(p["heavy_hitters"]["hour"]["requests"]["top"][0]["key"], "abuser")
        self.d.advance(3600 * S)
        p = policy(self.stats(), "per_ip")
        self.assertEqual(p["heavy_hitters"]["hour"]["requests"]["top"], [])


class StatsRedis(unittest.TestCase):
    """The Redis store's figures: how long Redis takes to answer."""

    def setUp(self):
        from test_distributed import RedisServer  # its redis-server on a free port
        self.redis = RedisServer()
        self.addCleanup(self.redis.stop)
        store = "store:\n  type: redis\n  url: %s\n  clock: local\n" % self.redis.url
        self.d = HttpDaemon(http_config(POLICIES + OBSERVE_ON, store))
        self.addCleanup(self.d.stop)
        self.addCleanup(lambda: self.d.resp.connection_pool.disconnect())

    def store(self):
        res = self.d.get("/v1/stats")
        self.assertEqual(res.status, 200, res.body)
        return json.loads(res.body)["store"]

    def test_latency_counts_script_calls(self):
        before = self.store()
        self.assertTrue(before["shared"])
        self.assertEqual(set(before["latency"]), {"count", "sum_seconds"})
        # one request at a time: each is a loop turn of its own, so one
        # script call (a call batches what one turn gathered)
        for i in range(10):
            self.d.resp.execute_command("SL.CHECK", "per_ip", "k%d" % i)
        after = self.store()
        self.assertEqual(after["calls"] - before["calls"], 10)
        self.assertEqual(after["latency"]["count"] - before["latency"]["count"], 10)
        self.assertGreater(after["latency"]["sum_seconds"], before["latency"]["sum_seconds"])
        # a mean a loopback Redis cannot miss by much: above 0, below a second
        mean = after["latency"]["sum_seconds"] / after["latency"]["count"]
        self.assertGreater(mean, 0)
        self.assertLess(mean, 1.0)


class StatsConfig(unittest.TestCase):
    def daemon(self, section):
        return HttpDaemon(http_config(POLICIES + section))

    def test_keys_hashed_or_hidden_or_off(self):
        for section, want in (("observe: {heavy_hitters: on, keys: hash, counters: 16}\n", "hash"),
                              ("observe: {heavy_hitters: on, keys: hide}\n", "hide"),
                              ("observe: {heavy_hitters: off}\n", None),
                              ("", None)):  # off by default
            d = self.daemon(section)
            try:
                d.resp.execute_command("SL.CHECK", "per_ip", "198.51.100.1")
                res = d.get("/v1/stats")
                if want is None:
                    self.assertEqual(res.status, 404)
                    continue
                st = json.loads(res.body)
                self.assertEqual(st["heavy_hitters"]["keys"], want)
                top = policy(st, "per_ip")["heavy_hitters"]["hour"]["requests"]["top"]
                self.assertEqual(top[0]["count"], 1)
                self.assertNotIn(b"198.51.100.1", res.body)
                if want == "hash":
                    self.assertRegex(top[0]["key"], "^[0-9a-f]{16}$")
                    self.assertEqual(st["heavy_hitters"]["counters"], 16)
                else:
                    self.assertIsNone(top[0]["key"])
            finally:
                d.resp.connection_pool.disconnect()
                d.stop()

    def test_bad_settings_are_refused(self):
        for section, message in (("observe: {keys: maybe}\n", "observe.keys"),
                                 ("observe: {counters: 2}\n", "observe.counters"),
                                 ("observe: {sample_above: lots}\n", "observe.sample_above"),
                                 ("observe: {sample_above: -1}\n", "observe.sample_above"),
                                 ("observe: {heavy_hitters: yes please}\n", "observe.heavy_hitters"),
                                 ("observe: {top: 5}\n", "top")):
            d = harness.Daemon(http_config(POLICIES + section), expect_start=False)
            rc = d.proc.wait(timeout=20)  # it must refuse the file, not start
            d.stop(expect=None)
            self.assertNotEqual(rc, 0)
            self.assertIn(message, d.output())


class StatsToken(unittest.TestCase):
    def test_admin_token_is_needed(self):
        d = HttpDaemon(http_config(POLICIES + OBSERVE_ON, head="admin_token: %s\n" % ADMIN_TOKEN))
        try:
            d.resp.execute_command("SL.CHECK", "per_ip", "k")
            self.assertEqual(d.get("/v1/stats").status, 401)
            self.assertEqual(d.get("/v1/stats", {"Authorization": "Bearer wrong"}).status, 401)
            res = d.get("/v1/stats", {"Authorization": "Bearer " + ADMIN_TOKEN})
            self.assertEqual(res.status, 200)
            self.assertEqual(policy(json.loads(res.body), "per_ip")["heavy_hitters"]["hour"]["requests"]["top"][0]["key"], "k")
        finally:
            d.resp.connection_pool.disconnect()
            d.stop()


class Hello(upstream.Upstream):
    def answer(self, request, body):
        return 200, b"hello\n"


class StatsRoutes(unittest.TestCase):
    def test_gateway_routes_are_shown(self):
        up = Hello()
        config = """\
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0}
threads: 2
observe: {heavy_hitters: on}
gateway:
  listen: 127.0.0.1:0
  routes:
    - name: api
      match: {path_prefix: /api/}
      upstream: http://127.0.0.1:%d
      policies: [per_ip]
      concurrency: {limit: 4}
    - name: open
      match: {path_prefix: /open/}
      upstream: http://127.0.0.1:%d
policies:
  - name: per_ip
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1h}
""" % (up.port, up.port)
        d = HttpDaemon(config)
        try:
            gw = int(re.search(r" gateway_port=(\d+)", d.output()).group(1))
            for path in ["/api/x"] * 5 + ["/open/y"]:
                subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "10",
                                "http://127.0.0.1:%d%s" % (gw, path)], check=True)
            st = json.loads(d.get("/v1/stats").body)
            routes = {r["name"]: r for r in st["routes"]}
            self.assertEqual(set(routes), {"api", "open"})
            api = routes["api"]
            self.assertEqual(api["requests"], {"forwarded": 3, "delayed": 0, "rejected": 2, "busy": 0})
            self.assertEqual((api["inflight"], api["queue_depth"]), (0, 0))
            self.assertEqual(api["upstream"]["count"], 3)
            self.assertGreater(api["upstream"]["sum_seconds"], 0)
            self.assertEqual(api["upstream_errors"], {"502": 0, "504": 0})
            self.assertIsNone(routes["open"]["inflight"])  # no concurrency: limit
            self.assertEqual(routes["open"]["requests"]["forwarded"], 1)
            # the gateway's decisions are heavy hitters too, with what is left
            den = policy(st, "per_ip")["heavy_hitters"]["minute"]["denials"]["top"][0]
            self.assertEqual((den["key"], den["count"], den["remaining"]), ("ip=127.0.0.1", 2, 0))  # the key as built from key: [ip]
            self.assertGreater(den["retry_after"], 0)
        finally:
            d.resp.connection_pool.disconnect()
            d.stop()
            up.close()


if __name__ == "__main__":
    harness.main()
