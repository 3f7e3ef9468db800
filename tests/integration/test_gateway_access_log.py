"""test_gateway_access_log.py -- the gateway's access log (docs/gateway.md,
"Access log"): a real sluiced with gateway.access_log set, in front of a
Python upstream:

  - every line parses as JSON, one per request, with the fields documented,
    over HTTP/1.1 and HTTP/2;
  - every decision kind is written: forwarded, delayed, rejected, shadow,
    busy, upstream_error, and none (no route);
  - a route with access_log: off writes nothing;
  - a hostile request (quotes, backslashes, bytes that are not UTF-8, a
    tab in X-Request-Id, a 2 KB path) is escaped and its path bounded;
  - after mv and SIGHUP (logrotate) the lines go to a new file, none lost;
  - access_log: stderr writes to the daemon's stderr;
  - a file that cannot be opened stops the start with a clear error, and a
    bad value names its line.

The clock is the manual test clock: the delayed request waits for its
moment on the policy's schedule (gcra 10/s: 100 ms), not for a window.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
import upstream
from harness import Daemon, gateway_port


class Upstream(upstream.Upstream):
    """/.../slow answers after 400 ms; the rest at once."""

    def answer(self, request, body):
        if request.path.endswith("/slow"):
            time.sleep(0.4)
        return 200, ("upstream saw %s\n" % request.path).encode()


def config(up, log, dead=1):
    return """\
listen: {resp: 127.0.0.1:0, http: ""}
threads: 2
gateway:
  listen: 127.0.0.1:0
  access_log: %(log)s
  routes:
    - name: fwd
      match: {path_prefix: /fwd/}
      upstream: http://127.0.0.1:%(up)d
    - name: rej
      match: {path_prefix: /rej/}
      upstream: http://127.0.0.1:%(up)d
      policies: [one]
    - name: shadow
      match: {path_prefix: /shadow/}
      upstream: http://127.0.0.1:%(up)d
      policies: [one]
      excess: shadow
    - name: delay
      match: {path_prefix: /delay/}
      upstream: http://127.0.0.1:%(up)d
      policies: [ten]
      excess: delay
    - name: busy
      match: {path_prefix: /busy/}
      upstream: http://127.0.0.1:%(up)d
      concurrency: {limit: 1}
    - name: dead
      match: {path_prefix: /dead/}
      upstream: http://127.0.0.1:%(dead)d
    - name: quiet
      match: {path_prefix: /quiet/}
      upstream: http://127.0.0.1:%(up)d
      access_log: off
policies:
  - name: one
    key: [ip, route]
    limits:
      - {algorithm: fixed_window, limit: 1, period: 1h}
  - name: ten
    key: [ip]
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
""" % {"up": up, "log": log, "dead": dead}



def get(port, path, headers=()):
    """The status of one HTTP/1.1 request on a connection of its own."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        extra = "".join("%s: %s\r\n" % h for h in headers)
        s.sendall(("GET %s HTTP/1.1\r\nHost: gw.test\r\n%sConnection: close\r\n\r\n" % (path, extra)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return int(data.split(b" ", 2)[1])
    finally:
        s.close()


def read_lines(path, count, timeout=5.0):
    """The lines of the log once it has `count` of them (each parsed)."""
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
        if len(lines) >= count:
            break
        time.sleep(0.02)
    return [json.loads(line) for line in lines]


FIELDS = {"time", "route", "method", "path", "host", "client", "status", "decision", "delay_ms", "upstream_ms",
          "bytes", "request_id"}


class AccessLog(unittest.TestCase):
    def setUp(self):
        self.up = Upstream()
        self.dir = tempfile.mkdtemp(prefix="sluiced-alog-")
        self.log = os.path.join(self.dir, "gateway.log")
        self.d = Daemon(config(self.up.port, self.log))
        self.port = gateway_port(self.d)
        self.client = self.d.client()

    def tearDown(self):
        self.d.stop()
        self.up.close()

    def test_every_decision_kind(self):
        statuses = [get(self.port, "/fwd/a", [("X-Request-Id", "req-1")]),
                    get(self.port, "/rej/a"), get(self.port, "/rej/b"),
                    get(self.port, "/shadow/a"), get(self.port, "/shadow/b"),
                    get(self.port, "/delay/a"), get(self.port, "/delay/b"),
                    get(self.port, "/dead/a"), get(self.port, "/nowhere"),
                    get(self.port, "/quiet/a")]
        self.assertEqual(statuses, [200, 200, 429, 200, 200, 200, 200, 502, 404, 200])
        # busy: a second request while the first holds the route's only slot
        first = []
        th = threading.Thread(target=lambda: first.append(get(self.port, "/busy/slow")))
        th.start()
        deadline = time.time() + 5
        busy, probes = 200, 0
        while busy == 200 and time.time() < deadline:  # until the first holds the slot
            time.sleep(0.05)
            probes += 1
            busy = get(self.port, "/busy/again-%d" % probes)
        th.join()
        self.assertEqual((first, busy), ([200], 503))
        sent = 9 + 1 + probes  # all but the quiet route's
        lines = read_lines(self.log, sent)
        self.assertEqual(len(lines), sent, lines)
        by_path = {}
        for line in lines:
            self.assertEqual(set(line) - {"path_truncated"}, FIELDS, line)
            self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertEqual(line["method"], "GET")
            self.assertEqual(line["host"], "gw.test")
            self.assertEqual(line["client"], "127.0.0.1")
            by_path.setdefault(line["path"], []).append(line)
        self.assertNotIn("/quiet/a", by_path)  # access_log: off
        self.assertTrue(all(len(v) == 1 for v in by_path.values()), by_path)  # one line per request
        want = {"/fwd/a": ("fwd", 200, "forwarded"), "/rej/a": ("rej", 200, "forwarded"),
                "/rej/b": ("rej", 429, "rejected"), "/shadow/a": ("shadow", 200, "forwarded"),
                "/shadow/b": ("shadow", 200, "shadow"), "/delay/a": ("delay", 200, "forwarded"),
                "/delay/b": ("delay", 200, "delayed"), "/dead/a": ("dead", 502, "upstream_error"),
                "/nowhere": (None, 404, "none"), "/busy/slow": ("busy", 200, "forwarded"),
                "/busy/again-%d" % probes: ("busy", 503, "busy")}
        for path, (route, status, decision) in want.items():
            line = by_path[path][0]
            self.assertEqual((line["route"], line["status"], line["decision"]), (route, status, decision), line)
        fwd = by_path["/fwd/a"][0]
        self.assertEqual(fwd["request_id"], "req-1")
        self.assertEqual(fwd["bytes"], len("upstream saw /fwd/a\n"))
        self.assertIsInstance(fwd["upstream_ms"], float)
        self.assertIsNone(by_path["/rej/b"][0]["upstream_ms"])
        self.assertIsNone(by_path["/rej/b"][0]["request_id"])
        self.assertIsNone(by_path["/dead/a"][0]["upstream_ms"])
        self.assertGreater(by_path["/busy/slow"][0]["upstream_ms"], 300)
        # gcra 10/s on the test clock: the second waits its 100 ms
        self.assertGreater(by_path["/delay/b"][0]["delay_ms"], 80)
        self.assertLess(by_path["/delay/a"][0]["delay_ms"], 80)
        self.assertGreater(by_path["/rej/b"][0]["bytes"], 0)

    def test_http2(self):
        out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}",
                              "-H", "X-Request-Id: h2", "http://127.0.0.1:%d/fwd/h2?q=1" % self.port],
                             stdout=subprocess.PIPE, check=True).stdout
        self.assertEqual(out, b"200")
        line = read_lines(self.log, 1)[0]
        self.assertEqual((line["path"], line["host"], line["decision"], line["request_id"], line["status"]),
                         ("/fwd/h2?q=1", "127.0.0.1:%d" % self.port, "forwarded", "h2", 200))

    def test_hostile_request_escaped_and_bounded(self):
        path = b'/fwd/"q\\\xff\xc3\xa9' + b"a" * 2048
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: gw.test\r\nX-Request-Id: a\"b\\c\td\xfe" + b"i" * 300 +
                  b"\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:200])
        with open(self.log, "rb") as f:
            raw = f.read()
        deadline = time.time() + 5
        while raw.count(b"\n") < 1 and time.time() < deadline:
            time.sleep(0.02)
            with open(self.log, "rb") as f:
                raw = f.read()
        self.assertEqual(raw.count(b"\n"), 1, raw)
        raw.decode("utf-8")  # valid UTF-8, whatever the client sent
        self.assertNotIn(b"\t", raw)
        line = json.loads(raw)
        self.assertTrue(line["path"].startswith('/fwd/"q\\\ufffd\u00e9aaa'), line["path"][:20])
        self.assertEqual(len(line["path"].encode("utf-8")), 1024 + 2)  # 1024 bytes, U+FFFD is 3
        self.assertIs(line["path_truncated"], True)
        self.assertTrue(line["request_id"].startswith('a"b\\c\td\ufffdiii'), line["request_id"][:20])
        self.assertLessEqual(len(line["request_id"]), 128)

    def test_sighup_after_mv_opens_a_new_file(self):
        for i in range(3):
            self.assertEqual(get(self.port, "/fwd/before-%d" % i), 200)
        read_lines(self.log, 3)
        os.rename(self.log, self.log + ".1")
        self.assertEqual(get(self.port, "/fwd/between"), 200)  # still into the renamed file
        self.d.signal(signal.SIGHUP)
        self.d.wait_log(r"reloaded .*generation 2")
        for i in range(3):
            self.assertEqual(get(self.port, "/fwd/after-%d" % i), 200)
        new = read_lines(self.log, 3)
        old = read_lines(self.log + ".1", 4)
        self.assertEqual([x["path"] for x in old], ["/fwd/before-0", "/fwd/before-1", "/fwd/before-2",
                                                    "/fwd/between"])
        self.assertEqual(sorted(x["path"] for x in new), ["/fwd/after-0", "/fwd/after-1", "/fwd/after-2"])


class Targets(unittest.TestCase):
    def test_stderr(self):
        up = Upstream()
        try:
            with Daemon(config(up.port, "stderr")) as d:
                self.assertEqual(get(gateway_port(d), "/fwd/to-stderr"), 200)
                m = d.wait_log(r'\{"time":"[^"]+","route":"fwd","method":"GET","path":"/fwd/to-stderr".*\}\n')
                self.assertEqual(json.loads(m.group(0))["decision"], "forwarded")
        finally:
            up.close()

    def test_unopenable_file_stops_the_start(self):
        d = Daemon(config(1, "/nonexistent-dir/gateway.log"), expect_start=False)
        rc = d.proc.wait(timeout=20)
        d.log.close()
        self.assertNotEqual(rc, 0)
        self.assertIn("gateway.access_log: cannot open /nonexistent-dir/gateway.log", d.output())

    def check(self, text):
        workdir = tempfile.mkdtemp(prefix="sluiced-test-")
        path = os.path.join(workdir, "sluice.yaml")
        with open(path, "w") as f:
            f.write(text)
        proc = subprocess.run([harness.SLUICED, "--config", path, "--check-config"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=workdir)
        return proc.returncode, proc.stdout.decode()

    def test_config_errors_name_the_line(self):
        text = config(1, "off")
        self.assertEqual(self.check(text)[0], 0, self.check(text)[1])
        rc, out = self.check(text.replace("      access_log: off", "      access_log: on"))
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:34: gateway\.routes\[6\]\.access_log: access_log: on needs "
                              r"gateway\.access_log")
        rc, out = self.check(text.replace("      access_log: off", "      access_log: maybe"))
        self.assertRegex(out, r"sluice\.yaml:34: gateway\.routes\[6\]\.access_log: expected on or off")
        rc, out = self.check(text.replace("  access_log: off", '  access_log: ""', 1))
        self.assertRegex(out, r"sluice\.yaml:5: gateway\.access_log: expected a file's path, stderr or off")


if __name__ == "__main__":
    unittest.main()
