"""test_gateway_reload.py -- SIGHUP under load loses nothing
(docs/gateway.md, "Reload"): a real sluiced (real clock: the delay route
shapes while the load runs) in front of a Python upstream that counts its
own requests in flight, with concurrent clients on a `delay` route and a
`concurrency` route, while the test sends SIGHUP five times: the same file,
a changed limit, a changed route list, an invalid file (refused, the old
configuration stays) and the good file again, then ten back to back. Then:

  - every request got an answer: no reset, no connection error, and no
    status but 200 and the configured ones (the delay route's 429);
  - every request the gateway let through (200) reached the upstream once:
    those queued across a reload were forwarded;
  - the concurrency limit was never exceeded at the upstream;
  - the gateway's /metrics counters never went backwards, scrape after
    scrape, and the queue and in-flight gauges are back to 0 at the end;
  - a changed route list applies (an added route, removed again: its
    series go with it, every other counter still never goes backwards),
    and the log says so at each of those two reloads; a reload through the
    admin API (POST /v1/admin/reload) applies a route too
    (test_gateway_reload_routes.py tests the routes' reload itself).

The load is a few seconds of real requests; nothing waits for a rate
window.
"""
import http.client
import re
import signal
import threading
import time
import unittest

import harness
import upstream
from harness import Daemon


class Upstream(upstream.Upstream):
    """Counts requests per route prefix and those in flight on /conc/ (now
    and the most seen); /conc/ takes 20 ms."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}
        self.inflight = 0
        self.most = 0
        super().__init__()

    def answer(self, request, body):
        prefix = "/" + request.path.split("/")[1] + "/"
        with self.lock:
            self.seen[prefix] = self.seen.get(prefix, 0) + 1
            if prefix == "/conc/":
                self.inflight += 1
                self.most = max(self.most, self.inflight)
        try:
            if prefix == "/conc/":
                time.sleep(0.02)
            return 200, b"ok\n"
        finally:
            if prefix == "/conc/":
                with self.lock:
                    self.inflight -= 1

ADMIN_TOKEN = "test-admin-token-0123456789abcdef"


def config(up, rate=50, extra_route=""):
    return """\
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:0}
threads: 2
admin_token: %(token)s
gateway:
  listen: 127.0.0.1:0
  routes:
    - name: delay
      match: {path_prefix: /delay/}
      upstream: http://127.0.0.1:%(up)d
      policies: [shaped]
      excess: delay
      max_delay: 500ms
      queue: 1000
    - name: conc
      match: {path_prefix: /conc/}
      upstream: http://127.0.0.1:%(up)d
      concurrency: {limit: 2, max_wait: 20s}
%(extra)spolicies:
  - name: shaped
    key: [ip]
    limits:
      - {algorithm: gcra, limit: %(rate)d, period: 1s, burst: 5}
""" % {"up": up, "rate": rate, "extra": extra_route, "token": ADMIN_TOKEN}


EXTRA = """\
    - name: added
      match: {path_prefix: /added/}
      upstream: http://127.0.0.1:%d
"""

ALLOWED = {"/delay/": {200, 429}, "/conc/": {200}}


class Client(threading.Thread):
    """Sends requests on one keep-alive connection (a new one when the
    gateway closes it) until told to stop; any error is kept."""

    def __init__(self, port, prefix, results):
        super().__init__(daemon=True)
        self.port, self.prefix, self.results = port, prefix, results
        self.stop = threading.Event()
        self.errors = []

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                conn.request("GET", "%s%d" % (self.prefix, i))
                r = conn.getresponse()
                r.read()
                self.results.append((self.prefix, r.status))
                if r.getheader("connection", "").lower() == "close":
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            except Exception as e:  # a reset, a timeout: what must not happen
                self.errors.append("%s%d: %r" % (self.prefix, i, e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.close()


def scrape(http_port):
    """{(route, series): value} of the gateway's counters and gauges."""
    c = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for m in re.finditer(r'^(sluice_gateway_\w+)\{([^}]*)\} (\S+)$', text, re.M):
        out[(m.group(1), m.group(2))] = float(m.group(3))
    return out


class ReloadUnderLoad(unittest.TestCase):
    def test_sighup_under_load_loses_nothing(self):
        up = Upstream()
        text = config(up.port)
        try:
            with Daemon(text, test_clock=None) as d:
                port = int(re.search(r" gateway_port=(\d+)", d.output()).group(1))
                http_port = int(re.search(r" http_port=(\d+)", d.output()).group(1))
                results = []
                clients = [Client(port, "/delay/", results) for _ in range(6)] + \
                          [Client(port, "/conc/", results) for _ in range(6)]
                scrapes = []
                scraping = threading.Event()

                def scraper():
                    while not scraping.is_set():
                        scrapes.append(scrape(http_port))
                        time.sleep(0.05)
                sc = threading.Thread(target=scraper, daemon=True)
                for c in clients:
                    c.start()
                sc.start()

                def reload(new_text, expect, count):
                    d.write_config(new_text)
                    d.signal(signal.SIGHUP)
                    d.wait_log(expect, count=count)
                    time.sleep(0.4)  # load runs under the new configuration a while
                time.sleep(0.4)
                reload(text, r"reloaded .*generation 2", 1)
                reload(config(up.port, rate=40), r"reloaded .*generation 3", 1)
                reload(config(up.port, rate=40, extra_route=EXTRA % up.port),
                       r"reloaded .*generation 4", 1)
                reload(config(up.port, rate=40).replace("excess: delay", "excess: later"),
                       r"reload failed, the running configuration stays: .*sluice\.yaml:\d+: "
                       r"gateway\.routes\[0\]\.excess", 1)
                reload(config(up.port, rate=40), r"reloaded .*generation 5", 1)
                for _ in range(10):  # back to back, while requests are held
                    d.signal(signal.SIGHUP)
                    time.sleep(0.02)
                # signals sent while one is handled may merge into one: at least one more reload
                d.wait_log(r"reloaded .*generation 6")
                time.sleep(0.3)
                for c in clients:
                    c.stop.set()
                for c in clients:
                    c.join(60)
                    self.assertFalse(c.is_alive())
                scraping.set()
                sc.join(10)
                errors = [e for c in clients for e in c.errors]
                print("requests: %d, %s; scrapes: %d" % (len(results), {p: sum(1 for q, _ in results if q == p)
                                                                          for p in ALLOWED}, len(scrapes)))
                self.assertEqual(errors, [])
                for prefix, status in results:
                    self.assertIn(status, ALLOWED[prefix], (prefix, status))
                passed = {p: sum(1 for q, s in results if q == p and s == 200) for p in ALLOWED}
                self.assertGreater(passed["/delay/"], 20)
                self.assertGreater(passed["/conc/"], 20)
                with up.lock:
                    self.assertEqual({p: up.seen.get(p, 0) for p in ALLOWED}, passed)
                    self.assertLessEqual(up.most, 2)
                    self.assertEqual(up.seen.get("/added/", 0), 0)
                # delayed requests were held and forwarded across the reloads;
                # the last requests' slots are back once libh2o disposed of them
                harness.wait_metric(http_port, "sluice_gateway_inflight", 0, route="conc")
                final = scrape(http_port)
                scrapes.append(final)
                self.assertGreater(final[("sluice_gateway_requests_total", 'route="delay",result="delayed"')], 0)
                for before, after in zip(scrapes, scrapes[1:]):
                    for key, value in before.items():
                        if 'route="added"' in key[1] and key not in after:
                            continue  # the route was removed again: its series with it
                        if key[0].endswith("_total") or key[0].endswith("_count") or \
                                key[0].endswith("_bucket") or key[0].endswith("_sum"):
                            self.assertGreaterEqual(after.get(key, -1), value, key)
                self.assertEqual(final[("sluice_gateway_requests_total", 'route="conc",result="forwarded"')],
                                 passed["/conc/"])
                self.assertEqual(final[("sluice_gateway_queue_depth", 'route="delay"')], 0)
                self.assertEqual(final[("sluice_gateway_inflight", 'route="conc"')], 0)
                # the route added at generation 4 was removed at generation 5, said both times
                self.assertEqual(harness_get(port, "/added/x"), 404)
                self.assertEqual(len(re.findall(r"gateway: 3 routes \(added: added\) apply", d.output())), 1,
                                 d.output())
                self.assertEqual(len(re.findall(r"gateway: 2 routes \(removed: added\) apply", d.output())), 1,
                                 d.output())
                # the admin API's reload applies routes as SIGHUP's does
                d.write_config(config(up.port, rate=40, extra_route=EXTRA % up.port))
                c = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
                c.request("POST", "/v1/admin/reload", headers={"Authorization": "Bearer " + ADMIN_TOKEN})
                r = c.getresponse()
                self.assertEqual(r.status, 200, r.read())
                r.read()
                c.close()
                self.assertEqual(harness_get(port, "/added/x"), 200)
                with up.lock:
                    self.assertEqual(up.seen.get("/added/", 0), 1)
        finally:
            up.close()


def harness_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    status = c.getresponse().status
    c.close()
    return status


if __name__ == "__main__":
    unittest.main()
