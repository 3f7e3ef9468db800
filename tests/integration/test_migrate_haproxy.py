"""test_migrate_haproxy.py -- docs/migrate/haproxy.md, with a real HAProxy.

The guide ships docs/migrate/haproxy/haproxy.cfg and sluice.lua. The test
copies both into a temporary directory, changing only addresses (HAProxy's
bind :8000, the app at 127.0.0.1:8080, sluiced at 127.0.0.1:8090 in the Lua
file) to free loopback ports, checks the configuration with `haproxy -c` and
runs HAProxy in the foreground (-db). The app is a small HTTP server in this
process that counts what reaches it; sluiced runs the guide's configuration
on the manual test clock. Clients come from their own loopback addresses
(127.0.x.y), which is what HAProxy's src and sluiced's [ip] key see.

- Requests over the limit get 429 with Retry-After and never reach the app;
  the others reach it and carry sluiced's RateLimit headers; another client
  is unaffected; time moves on the test clock and the client passes again;
  with sluiced stopped, HAProxy answers 503 at once (fail closed), or
  lets the request through with the file's on_error set to 200.
- The stick table the guide starts from (http_req_rate, deny gt 20) and the
  guide's sluice policy, behind the Lua action, decide a burst alike.

HAProxy is required (/usr/sbin/haproxy, Debian's package haproxy, 2.6 in
Debian 12): without it the test fails rather than being skipped.
"""
import http.client
import http.server
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
import migrate_guides as guides
from test_http import HttpDaemon, S, T0, http_config

HAPROXY = os.environ.get("HAPROXY", "/usr/sbin/haproxy")
GUIDE = "haproxy.md"


class App:
    """The protected application: 200 "app <path>", counting requests."""

    def __init__(self):
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                seen.append((self.path, dict(self.headers)))
                out = ("app %s\n" % self.path).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def handle(self):
                try:
                    super().handle()
                except ConnectionResetError:   # HAProxy stopping with a keep-alive connection open
                    pass

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def replace_once(text, old, new, what):
    if text.count(old) != 1:
        raise AssertionError("%s: expected %r exactly once, found it %d times" % (what, old, text.count(old)))
    return text.replace(old, new)


class HAProxy:
    def __init__(self, cfg, files=()):
        if not (os.path.isfile(HAPROXY) and os.access(HAPROXY, os.X_OK)):
            raise AssertionError("HAProxy is not installed at %s (apt-get install haproxy); this test needs it" % HAPROXY)
        self.dir = tempfile.mkdtemp(prefix="haproxy-migrate-")
        for name, text in files:
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        self.port = guides.free_port()
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        with open(self.cfg, "w") as f:
            f.write(replace_once(cfg, "bind :8000", "bind 127.0.0.1:%d" % self.port, "haproxy.cfg"))
        t = subprocess.run([HAPROXY, "-c", "-f", self.cfg], cwd=self.dir, capture_output=True, text=True, timeout=30)
        if t.returncode != 0:
            raise AssertionError("haproxy -c refused the configuration:\n%s%s" % (t.stdout, t.stderr))
        self.out = open(os.path.join(self.dir, "haproxy.out"), "wb")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", self.cfg], cwd=self.dir, stdout=self.out,
                                     stderr=subprocess.STDOUT)
        try:
            harness.wait_listening(self.proc, self.port, "HAProxy", self.log)
        except AssertionError:
            self.stop()
            raise

    def log(self):
        with open(os.path.join(self.dir, "haproxy.out"), errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def get(self, path="/", source="127.0.0.1"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10, source_address=(source, 0))
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body
        finally:
            conn.close()


def shipped(app_port, sluiced_port):
    """The guide's haproxy.cfg and sluice.lua, aimed at this test's app and sluiced."""
    cfg = replace_once(guides.read("haproxy/haproxy.cfg"), "server app1 127.0.0.1:8080",
                       "server app1 127.0.0.1:%d" % app_port, "haproxy.cfg")
    lua = replace_once(guides.read("haproxy/sluice.lua"), 'local host, port = "127.0.0.1", 8090',
                       'local host, port = "127.0.0.1", %d' % sluiced_port, "sluice.lua")
    return cfg, [("sluice.lua", lua)]


class LuaAction(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.app = App()

    @classmethod
    def tearDownClass(cls):
        cls.app.stop()

    def setUp(self):
        del self.app.seen[:]
        self.d = HttpDaemon(http_config(guides.block(GUIDE, "sluice")), test_clock=T0)
        self.addCleanup(self.d.stop)
        cfg, files = shipped(self.app.port, self.d.http_port)
        self.haproxy = HAProxy(cfg, files)
        self.addCleanup(self.haproxy.stop)

    def test_over_the_limit_429_with_retry_after_others_reach_the_app(self):
        a, b = "127.0.21.1", "127.0.21.2"
        for i in range(20):
            status, headers, body = self.haproxy.get("/page/%d" % i, source=a)
            self.assertEqual(200, status, (i, headers, body, self.haproxy.log()))
            self.assertEqual(("app /page/%d\n" % i).encode(), body)
            # sluiced's headers, passed on by http-response (their t= and w= are sluiced's business)
            self.assertRegex(headers.get("ratelimit", ""), r'^"per_ip";r=%d;t=\d+$' % (19 - i))
            self.assertRegex(headers.get("ratelimit-policy", ""), r'^"per_ip";q=20;w=\d+$')
        self.assertEqual(20, len(self.app.seen))
        for i in range(5):
            status, headers, body = self.haproxy.get("/page/more", source=a)
            self.assertEqual(429, status, (headers, body))
            self.assertTrue(headers.get("retry-after", "").isdigit(), headers)
            self.assertGreater(int(headers["retry-after"]), 0)
        self.assertEqual(20, len(self.app.seen), "a denied request reached the app")
        status, _, body = self.haproxy.get("/other", source=b)
        self.assertEqual((200, b"app /other\n"), (status, body))
        self.d.advance(20 * S)   # two windows later the estimate has forgotten a
        status, _, body = self.haproxy.get("/again", source=a)
        self.assertEqual((200, b"app /again\n"), (status, body))
        self.assertEqual(22, len(self.app.seen))

    def test_sluiced_down_is_a_503_at_once(self):
        self.d.stop()
        start = time.monotonic()
        status, _, _ = self.haproxy.get("/", source="127.0.21.3")
        self.assertEqual(503, status)
        self.assertLess(time.monotonic() - start, 2.0)
        self.assertEqual(0, len(self.app.seen))


    def test_on_error_200_fails_open(self):
        cfg, files = shipped(self.app.port, self.d.http_port)
        files = [(n, replace_once(t, "local on_error = 503", "local on_error = 200", n)) for n, t in files]
        fail_open = HAProxy(cfg, files)
        self.addCleanup(fail_open.stop)
        self.d.stop()
        status, _, body = fail_open.get("/open", source="127.0.21.4")
        self.assertEqual((200, b"app /open\n"), (status, body))


class StickTable(unittest.TestCase):
    """The guide's "before" (a stick table) and "after" (the Lua action and
    the policy) on the same burst: the same 20 pass, the same 5 are denied,
    and 5 more at once stay denied in both (denied requests count)."""

    def test_same_decisions(self):
        app = App()
        self.addCleanup(app.stop)
        d = HttpDaemon(http_config(guides.block(GUIDE, "sluice")), test_clock=T0)
        self.addCleanup(d.stop)
        cfg, files = shipped(app.port, d.http_port)
        after = HAProxy(cfg, files)
        self.addCleanup(after.stop)
        before_cfg = cfg.replace("    http-request lua.sluice per_ip\n",
                                 "".join("    %s\n" % l for l in guides.block(GUIDE, "haproxy-stick-table").splitlines()
                                         if l.strip() and not l.startswith("#")))
        self.assertNotIn("lua.sluice", before_cfg)
        before = HAProxy(before_cfg, files)
        self.addCleanup(before.stop)
        got_before = [before.get("/", source="127.0.22.1")[0] for _ in range(30)]
        got_after = [after.get("/", source="127.0.22.2")[0] for _ in range(30)]
        self.assertEqual([200] * 20 + [429] * 10, got_before, before.log())
        self.assertEqual(got_before, got_after)


class Guide(unittest.TestCase):
    def test_every_example_is_run(self):
        guides.assert_all_run(self, GUIDE, ["sluice", "haproxy-stick-table"])


if __name__ == "__main__":
    harness.main()
