"""test_migrate_node.py -- docs/migrate/node.md and node/sluice-limit.js, run with node.

The shipped file and the guide's two examples are copied into a temporary
directory; only addresses change (sluiced's http://127.0.0.1:8090 and the
example server's port 3000, to free loopback ports). sluiced runs the
guide's policies on the manual test clock, at the start of a 15-minute
window. No npm module is used: the file needs only Node's built-in fetch.

- The example server: 100 requests pass with sluiced's headers, the 101st
  gets 429 with Retry-After and the JSON body, and never reaches the
  handler; the next window lets the client through again.
- The check() example prints what the guide shows.
- With a shaper policy the middleware holds a request delay_ms; with sluiced
  down it answers 503, or serves with failOpen.
"""
import http.client
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import harness
import migrate_guides as guides
from test_http import HttpDaemon, S, http_config

NODE = os.environ.get("NODE", "/usr/bin/node")
GUIDE = "node.md"
T0 = 10 * 900 * S            # a multiple of 15 min and of 1 min


def replace_once(text, old, new):
    if text.count(old) != 1:
        raise AssertionError("expected %r exactly once, found it %d times" % (old, text.count(old)))
    return text.replace(old, new)


class NodeCase(unittest.TestCase):
    def setUp(self):
        if not os.access(NODE, os.X_OK):
            raise AssertionError("node is not installed at %s; this test needs it" % NODE)
        self.d = HttpDaemon(http_config(guides.block(GUIDE, "sluice")), test_clock=T0)
        self.addCleanup(self.d.stop)
        self.dir = tempfile.mkdtemp(prefix="node-migrate-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        shutil.copy(guides.path("node/sluice-limit.js"), self.dir)
        self.url = "http://127.0.0.1:%d" % self.d.http_port

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def server(self, script):
        """Starts a node HTTP server script (listening on port 3000 in the guide) on a free port."""
        port = guides.free_port()
        self.write("server.js", replace_once(script, "listen(3000,", "listen(%d," % port))
        log = open(os.path.join(self.dir, "server.log"), "wb")
        proc = subprocess.Popen([NODE, "server.js"], cwd=self.dir, stdout=log, stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            proc.wait(10)
            log.close()
        self.addCleanup(stop)
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    with open(os.path.join(self.dir, "server.log")) as f:
                        raise AssertionError("node did not start:\n" + f.read())
                time.sleep(0.05)

    def get(self, port, path="/"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()


class Examples(NodeCase):
    def test_server_example(self):
        app = replace_once(guides.block(GUIDE, "node-app"), "http://127.0.0.1:8090", self.url)
        port = self.server(app)
        for i in range(100):
            status, headers, body = self.get(port)
            self.assertEqual((200, b"hello\n"), (status, body), i)
            self.assertEqual(str(99 - i), headers.get("x-ratelimit-remaining"))
            self.assertRegex(headers.get("ratelimit", ""), r'^"api";r=%d;t=\d+$' % (99 - i))
        status, headers, body = self.get(port)
        self.assertEqual(429, status)
        self.assertEqual("900", headers.get("retry-after"))
        self.assertEqual(b'{"error":"rate_limited","retry_after_ms":900000}\n', body)
        self.d.advance(900 * S)
        self.assertEqual((200, b"hello\n"), self.get(port)[::2])

    def test_check_example_prints_what_the_guide_shows(self):
        script = replace_once(guides.block(GUIDE, "node-consume"), "http://127.0.0.1:8090", self.url)
        # the default timeoutMs (1 s) covers the first call's loading of
        # Node's fetch too, which took longer at load 26 (TimeoutError): the
        # output is what is checked here, not the latency
        script = replace_once(script, "key: 'alice'}", "key: 'alice', timeoutMs: 20000}")
        self.write("consume.js", script)
        run = subprocess.run([NODE, "consume.js"], cwd=self.dir, capture_output=True, text=True, timeout=60)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertEqual(guides.block(GUIDE, "node-consume-output"), run.stdout)


class Middleware(NodeCase):
    SERVER = """\
const http = require('node:http');
const {sluiceLimit} = require('./sluice-limit');
const limit = sluiceLimit(%s);
http.createServer((req, res) => limit(req, res, () => res.end('served\\n'))).listen(3000, '127.0.0.1');
"""

    def test_shaper_policy_holds_the_request(self):
        script = self.SERVER % ("{url: '%s', policy: 'even'}" % self.url)
        script = replace_once(script, "res.end('served\\n')", "res.end(req.rateLimit.delay_ms + '\\n')")
        port = self.server(script)
        waited, delays = [], []
        for _ in range(3):     # sluice's clock stands still: delays 0, 200 and 400 ms
            start = time.monotonic()
            status, _, body = self.get(port)
            waited.append((time.monotonic() - start) * 1000)
            self.assertEqual(200, status)
            delays.append(int(body))
        self.assertEqual([0, 200, 400], delays)
        for want, got in zip(delays, waited):
            self.assertGreaterEqual(got, want - 5, (delays, waited))   # held at least delay_ms

    def test_sluiced_down_503_or_fail_open(self):
        closed = self.server(self.SERVER % ("{url: '%s', policy: 'api'}" % self.url))
        self.d.stop()
        self.assertEqual(503, self.get(closed)[0])
        opened = self.server(self.SERVER % ("{url: '%s', policy: 'api', failOpen: true}" % self.url))
        self.assertEqual((200, b"served\n"), self.get(opened)[::2])


class Guide(unittest.TestCase):
    def test_every_example_is_run(self):
        guides.assert_all_run(self, GUIDE, ["sluice", "node-app", "node-consume", "node-consume-output"])


if __name__ == "__main__":
    harness.main()
