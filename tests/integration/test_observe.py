"""test_observe.py -- what sluiced reports about itself (docs/operations.md
"Monitoring", docs/protocol.md "SL.STATS" and "INFO"), through its real
fronts:

  - a decision admitted over a limit (shadow mode, a soft tolerance, the
    elastic pool) counts as result="limited" in /metrics, in SL.STATS and in
    INFO's decisions_limited; the three results exclude each other and add
    up to every decision (a dry run in shadow mode can be watched);
  - SL.STATS answers the same counts as /metrics, for every policy or those
    named, and an error for a name never counted;
  - INFO and /metrics render one snapshot: the same decision totals;
  - the process_* metrics every Prometheus exporter has, present, well
    formed (the text-format checker of test_http.py) and plausible.

The daemon runs on the manual test clock; windows pass by SL.TESTCLOCK.
"""
import os
import time
import unittest

import harness
import test_http
from test_http import HttpDaemon, curl

CONFIG = """\
listen:
  resp: 127.0.0.1:0
threads: 2
policies:
  - name: dry
    mode: shadow
    limits:
      - {algorithm: fixed_window, limit: 2, period: 1m}
  - name: hard
    limits:
      - {algorithm: fixed_window, limit: 2, period: 1m}
  - name: tolerant
    mode: soft
    soft_percent: 50
    limits:
      - {algorithm: fixed_window, limit: 2, period: 1m}
  - name: stretchy
    mode: elastic
    pool: {algorithm: token_bucket, limit: 100, period: 1m}
    limits:
      - {algorithm: fixed_window, limit: 1, period: 1m}
"""

RESULTS = ("allowed", "denied", "limited")


class Observe(unittest.TestCase):
    def setUp(self):
        self.d = HttpDaemon(CONFIG)
        self.base = "http://127.0.0.1:%d" % self.d.http_port
        self.r = self.d.resp

    def tearDown(self):
        self.r.connection_pool.disconnect()  # else the drain waits 5 s for it
        self.d.stop()

    # the well-formedness checker of test_http.py, on this daemon's /metrics
    metrics = test_http.Check.metrics

    def decisions(self, samples, policy):
        return tuple(int(samples.get(("sluice_decisions_total", '{policy="%s",result="%s"}' % (policy, r)), -1))
                     for r in RESULTS)

    def stats(self, *names):
        """SL.STATS as {policy: (allowed, denied, limited)}."""
        return {e[0].decode(): tuple(e[1:]) for e in self.r.execute_command("SL.STATS", *names)}

    def check_resp(self, policy, key):
        return self.r.execute_command("SL.CHECK", policy, key)

    def check_http(self, policy, key):
        return curl(self.base + "/v1/check?policy=%s&key=%s" % (policy, key))

    def test_shadow_over_limit_is_limited(self):
        # a dry run: 2 fit the window, 3 more are over it and let through
        for i in range(5):
            reply = self.check_resp("dry", "k") if i % 2 else self.check_http("dry", "k")
            if i % 2:
                self.assertEqual(reply[0], 1, reply)      # allowed
                self.assertEqual(reply[6], int(i >= 2), reply)  # limited once over
            else:
                self.assertEqual(reply.status, 200, reply)
        self.r.execute_command("SL.PEEK", "dry", "k")  # a peek decides nothing
        m = self.metrics()
        self.assertEqual(self.decisions(m, "dry"), (2, 0, 3))
        self.assertEqual(self.stats()["dry"], (2, 0, 3))
        info = self.r.info("stats")
        self.assertEqual((info["decisions_allowed"], info["decisions_denied"], info["decisions_limited"]),
                         (2, 0, 3))

        # the next window: within the limit again
        self.d.advance(60 * 1000000)
        self.check_resp("dry", "k")
        self.assertEqual(self.stats("dry"), {"dry": (3, 0, 3)})
        self.assertEqual(self.decisions(self.metrics(), "dry"), (3, 0, 3))

    def test_each_mode_counts_its_results(self):
        for _ in range(4):
            self.check_resp("hard", "k")       # 2 allowed, 2 denied
            self.check_resp("tolerant", "k")   # 2 allowed, 1 limited (+50 %), 1 denied
        for _ in range(3):
            self.check_http("stretchy", "k")   # 1 allowed, 2 borrowed from the pool
        want = {"hard": (2, 2, 0), "tolerant": (2, 1, 1), "stretchy": (1, 0, 2), "dry": (0, 0, 0)}
        stats = self.stats()
        m = self.metrics()
        for policy, counts in want.items():
            self.assertEqual(stats[policy], counts, (policy, stats))
            self.assertEqual(self.decisions(m, policy), counts, policy)
        # the results exclude each other: per policy they add up to its decisions
        self.assertEqual(sum(stats["hard"]), 4)
        self.assertEqual(sum(stats["tolerant"]), 4)
        self.assertEqual(sum(stats["stretchy"]), 3)
        # INFO's totals are the same counts summed (one snapshot for both)
        info = self.r.info()
        for i, r in enumerate(RESULTS):
            self.assertEqual(info["decisions_" + r], sum(c[i] for c in stats.values()), r)
            self.assertEqual(info["decisions_" + r],
                             sum(v for (name, labels), v in m.items()
                                 if name == "sluice_decisions_total" and 'result="%s"' % r in labels), r)

    def test_sl_stats_arguments(self):
        self.check_resp("hard", "k")
        everything = self.r.execute_command("SL.STATS")
        names = [e[0].decode() for e in everything]
        # every configured policy, then CL.THROTTLE's own
        self.assertEqual(names, ["dry", "hard", "tolerant", "stretchy", "CL.THROTTLE"])
        self.assertEqual(self.r.execute_command("SL.STATS", "hard", "dry"),
                         [[b"hard", 1, 0, 0], [b"dry", 0, 0, 0]])
        with self.assertRaises(harness.redis.ResponseError) as e:
            self.r.execute_command("SL.STATS", "hard", "nope")
        self.assertIn("no decisions counted for a policy named 'nope'", str(e.exception))
        self.assertIn("sl.stats", self.r.command())

    def test_process_metrics(self):
        m = self.metrics()
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                     "process_start_time_seconds"):
            self.assertIn((name, ""), m, name)
        self.assertGreater(m[("process_resident_memory_bytes", "")], 0)
        self.assertGreaterEqual(m[("process_virtual_memory_bytes", "")], m[("process_resident_memory_bytes", "")])
        fds = m[("process_open_fds", "")]
        self.assertGreater(fds, 2)  # listeners, the loops' descriptors, this scrape's connection
        self.assertLessEqual(fds, m[("process_max_fds", "")])
        self.assertGreaterEqual(m[("process_cpu_seconds_total", "")], 0)
        start = m[("process_start_time_seconds", "")]
        self.assertLessEqual(start, time.time() + 1)
        self.assertGreater(start, time.time() - 60)
        # the kernel's view of the same process
        with open("/proc/%d/stat" % self.d.proc.pid) as f:
            rss_pages = int(f.read().rsplit(")", 1)[1].split()[21])
        rss = rss_pages * os.sysconf("SC_PAGE_SIZE")
        self.assertLess(abs(m[("process_resident_memory_bytes", "")] - rss), 64 << 20)
        fds_now = len(os.listdir("/proc/%d/fd" % self.d.proc.pid))
        self.assertLess(abs(fds - fds_now), 16)

        text = curl(self.base + "/metrics").body.decode()
        self.assertIn("# HELP process_open_fds Number of open file descriptors.\n"
                      "# TYPE process_open_fds gauge\n", text)
        self.assertIn("# TYPE process_cpu_seconds_total counter\n", text)

        info = self.r.info("process")
        self.assertEqual(sorted(info), ["process_cpu_seconds", "process_max_fds", "process_open_fds",
                                        "process_resident_memory_bytes", "process_start_time_seconds",
                                        "process_virtual_memory_bytes"])
        self.assertAlmostEqual(info["process_start_time_seconds"], start, delta=0.01)


if __name__ == "__main__":
    harness.main()
