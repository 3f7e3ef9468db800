"""test_http_nginx.py -- nginx in front of an app, asking sluiced with
auth_request, configured exactly as docs/integrations/nginx.conf says.

The test runs that file itself: it changes only its three addresses (listen
80, sluiced at 127.0.0.1:8090, the app at 127.0.0.1:8080) to free loopback
ports, and includes it in a main configuration of its own (daemon off, pid,
error_log and every temp path in a temporary directory, so it never touches
/var/lib/nginx or /var/log/nginx). The app is a small HTTP server in this
process that counts what reaches it. sluiced runs on the manual test clock
with auth_deny_status: 403, and the client is the curl binary.

The client addresses come from curl's X-Forwarded-For: curl plays a load
balancer at 127.0.0.1 in front of nginx (also 127.0.0.1), both trusted
proxies when trusted_proxies is [127.0.0.1/32]; nginx appends the address it
sees ($proxy_add_x_forwarded_for), and sluiced takes the rightmost address
that is not a trusted proxy. With nginx not trusted, sluiced keys every
request by nginx's own address, whatever X-Forwarded-For says.

nginx is required: without /usr/sbin/nginx (Debian's package `nginx`) the
test fails rather than being skipped, so CTest shows it.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import harness
import upstream
from test_http import HttpDaemon, S, T0, curl, http_config

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC_CONF = os.path.join(REPO, "docs", "integrations", "nginx.conf")

SLUICED_CONFIG = """\
limits:
  max_request_bytes: 4KiB       # a body forwarded by mistake would be refused
auth_deny_status: 403
trusted_proxies: %s
user_header: X-API-Key
policies:
  - name: per_ip
    key: [ip]
    limits:
      - {algorithm: sliding_log, limit: 3, period: 1m}
  - name: per_user
    key: [user]
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1m}
  - name: per_endpoint
    key: [ip, endpoint]
    limits:
      - {algorithm: fixed_window, limit: 2, period: 1m}
"""

RL_HEADERS = ("RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining",
              "X-RateLimit-Reset")


free_port = harness.free_port


def replace_once(text, old, new):
    if text.count(old) != 1:
        raise AssertionError("%s: expected %r exactly once, found it %d times" % (DOC_CONF, old, text.count(old)))
    return text.replace(old, new)


class App(upstream.Upstream):
    """The protected application: answers 200 "app <path>" and remembers
    every request that reached it."""

    def __init__(self):
        self.seen = []
        super().__init__()

    def answer(self, request, body):
        self.seen.append((request.command, request.path, dict(request.headers), len(body)))
        return 200, ("app %s\n" % request.path).encode()


class Nginx:
    """nginx with docs/integrations/nginx.conf, in a temporary directory."""

    def __init__(self, sluiced_port, app_port):
        if not (os.path.isfile(NGINX) and os.access(NGINX, os.X_OK)):
            raise AssertionError("nginx is not installed at %s (apt-get install nginx); this test needs it" % NGINX)
        self.dir = tempfile.mkdtemp(prefix="nginx-test-")
        os.chmod(self.dir, 0o755)  # started as root, the workers run as nobody and need to get in
        self.port = free_port()
        with open(DOC_CONF) as f:
            site = f.read()
        site = replace_once(site, "listen 80;", "listen 127.0.0.1:%d;" % self.port)
        site = replace_once(site, "server 127.0.0.1:8090;", "server 127.0.0.1:%d;" % sluiced_port)
        site = replace_once(site, "server 127.0.0.1:8080;", "server 127.0.0.1:%d;" % app_port)
        with open(os.path.join(self.dir, "sluice-site.conf"), "w") as f:
            f.write(site)
        self.error_log = os.path.join(self.dir, "error.log")
        self.conf = os.path.join(self.dir, "nginx.conf")
        d = self.dir
        with open(self.conf, "w") as f:
            f.write("""\
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    include {d}/sluice-site.conf;
}}
""".format(d=d))
        argv = [NGINX, "-p", d + "/", "-c", self.conf, "-e", self.error_log]
        t = subprocess.run(argv + ["-t"], capture_output=True, text=True, timeout=30)
        if t.returncode != 0:
            raise AssertionError("nginx -t refused the configuration:\n" + t.stderr + "\n" + site)
        self.out = open(os.path.join(d, "nginx.out"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT)
        try:
            harness.wait_listening(self.proc, self.port, "nginx", self.log)
        except AssertionError:
            self.stop()
            raise

    def log(self):
        text = ""
        for name in ("nginx.out", "error.log"):
            p = os.path.join(self.dir, name)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text += "--- %s\n%s" % (name, f.read())
        return text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful; the master stops its workers
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.out.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class NginxAuthRequest(unittest.TestCase):
    trusted = "[127.0.0.1/32]"

    @classmethod
    def setUpClass(cls):
        cls.app = App()

    @classmethod
    def tearDownClass(cls):
        cls.app.close()

    def setUp(self):
        self.d = HttpDaemon(http_config(SLUICED_CONFIG % self.trusted), test_clock=T0)
        try:
            self.nginx = Nginx(self.d.http_port, self.app.port)
        except BaseException:
            self.d.stop(expect=None)
            raise
        del self.app.seen[:]

    def tearDown(self):
        self.nginx.stop()
        self.d.stop()

    def get(self, path, xff=None, *args):
        h = ["-H", "X-Forwarded-For: " + xff] if xff else []
        return curl("http://127.0.0.1:%d%s" % (self.nginx.port, path), *(h + list(args)))

    def statuses(self, *calls):
        return [self.get(*c).status for c in calls]

    def assert_passed(self, r, path):
        self.assertEqual(r.status, 200, (r, self.nginx.log()))
        self.assertEqual(r.body, ("app %s\n" % path).encode())

    def assert_limited(self, r):
        self.assertEqual(r.status, 429, (r, self.nginx.log()))
        self.assertEqual(r.body, b'{"error": "rate_limited"}\n')
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertIsNotNone(r.header("Retry-After"), r)


class Trusted(NginxAuthRequest):
    """nginx (and curl before it) are trusted proxies: clients are told
    apart by X-Forwarded-For."""

    def test_pass_until_the_limit_then_429_with_sluiced_headers(self):
        ip = "203.0.113.7"
        r = self.get("/page?x=1", ip)
        self.assert_passed(r, "/page?x=1")
        self.assertEqual(r.header("RateLimit-Policy"), '"per_ip";q=3;w=60')
        self.assertEqual(r.header("RateLimit"), '"per_ip";r=2;t=60')
        self.assertEqual((r.header("X-RateLimit-Limit"), r.header("X-RateLimit-Remaining"),
                          r.header("X-RateLimit-Reset")), ("3", "2", "60"))
        self.assertIsNone(r.header("Retry-After"))
        self.d.advance(10 * S)
        r = self.get("/page", ip)
        self.assert_passed(r, "/page")
        self.assertEqual(r.header("RateLimit"), '"per_ip";r=1;t=60')
        self.d.advance(10 * S)
        self.assertEqual(self.get("/other", ip).header("RateLimit"), '"per_ip";r=0;t=60')
        # now = T0 + 20 s: the first request leaves the log at T0 + 60 s
        r = self.get("/page", ip)
        self.assert_limited(r)
        self.assertEqual(r.header("Retry-After"), "40")
        self.assertEqual(r.header("RateLimit"), '"per_ip";r=0;t=60')
        self.assertEqual(r.header("RateLimit-Policy"), '"per_ip";q=3;w=60')
        self.assertEqual((r.header("X-RateLimit-Limit"), r.header("X-RateLimit-Remaining"),
                          r.header("X-RateLimit-Reset")), ("3", "0", "60"))
        self.assertEqual([s[1] for s in self.app.seen], ["/page?x=1", "/page", "/other"])
        # what nginx gave the client is what sluiced said (asked directly, as
        # the same client behind a trusted proxy; a deny charges nothing)
        direct = curl("http://127.0.0.1:%d/v1/auth/per_ip" % self.d.http_port, "-H", "X-Forwarded-For: " + ip)
        self.assertEqual(direct.status, 403)
        self.assertEqual({h: r.header(h) for h in RL_HEADERS}, {h: direct.header(h) for h in RL_HEADERS})
        # and it passes again once Retry-After has gone by
        self.d.advance(39 * S)
        self.assert_limited(self.get("/page", ip))
        self.d.advance(1 * S)
        self.assert_passed(self.get("/page", ip), "/page")

    def test_clients_have_separate_limits(self):
        a, b = "198.51.100.1", "198.51.100.2"
        self.assertEqual(self.statuses(("/", a), ("/", a), ("/", a), ("/", a), ("/", b)), [200, 200, 200, 429, 200])
        # an address the client writes itself, on the left, is not believed
        self.assert_limited(self.get("/", "192.0.2.99, " + a))
        self.assertEqual(len(self.app.seen), 4)

    def test_ipv6_clients_grouped_by_64(self):
        self.assertEqual(self.statuses(("/", "2001:db8:a:b::1"), ("/", "2001:db8:a:b::2"),
                                       ("/", "2001:db8:a:b:1:2:3:4"), ("/", "2001:db8:a:b::99"),
                                       ("/", "2001:db8:a:c::1")),
                         [200, 200, 200, 429, 200])

    def test_keyed_by_user(self):
        alice = ("-H", "X-API-Key: alice")
        codes = [self.get("/api/items", None, *alice).status for _ in range(3)]
        self.assertEqual(codes, [200, 200, 200])
        r = self.get("/api/items", None, *alice)
        self.assert_limited(r)
        self.assertEqual(r.header("Retry-After"), "60")  # the minute window began at T0
        self.assertEqual(r.header("RateLimit-Policy"), '"per_user";q=3;w=60')
        self.assertEqual(self.get("/api/items", None, "-H", "X-API-Key: bob").status, 200)
        # no key: sluiced's 401, passed on by auth_request
        r = self.get("/api/items")
        self.assertEqual(r.status, 401, r)
        self.assertEqual(len(self.app.seen), 4)
        self.assertTrue(all(s[2].get("X-API-Key") in ("alice", "bob") for s in self.app.seen))

    def test_keyed_by_endpoint(self):
        ip, other = "203.0.113.9", "203.0.113.10"
        self.assertEqual(self.statuses(("/search/a?q=1", ip), ("/search/a?q=2", ip), ("/search/a?q=3", ip),
                                       ("/search/b", ip), ("/search/a", other)),
                         [200, 200, 429, 200, 200])

    def test_body_is_not_sent_to_sluiced(self):
        # 100 kB, far over sluiced's max_request_bytes (4 KiB): the
        # subrequest carries no body, the app gets all of it
        body = os.path.join(self.nginx.dir, "body.bin")
        with open(body, "wb") as f:
            f.write(b"x" * 100000)
        r = self.get("/upload", "203.0.113.20", "-X", "POST", "--data-binary", "@" + body)
        self.assert_passed(r, "/upload")
        self.assertEqual(self.app.seen[-1][0], "POST")
        self.assertEqual(self.app.seen[-1][3], 100000)

    def test_sluiced_down_fails_closed(self):
        self.assertEqual(self.get("/", "203.0.113.30").status, 200)
        self.d.stop()
        r = self.get("/", "203.0.113.30")
        self.assertEqual(r.status, 500, r)
        self.assertEqual(len(self.app.seen), 1)


class Untrusted(NginxAuthRequest):
    """nginx is not a trusted proxy: every request is keyed by nginx's own
    address (127.0.0.1), so a made-up X-Forwarded-For escapes nothing."""
    trusted = "[10.0.0.0/8]"

    def test_spoofed_forwarded_for_does_not_escape(self):
        self.assertEqual(self.statuses(("/", "203.0.113.1"), ("/", "203.0.113.2"), ("/", "203.0.113.3"),
                                       ("/", "203.0.113.4"), ("/", None), ("/", "10.0.0.1")),
                         [200, 200, 200, 429, 429, 429])
        self.assertEqual(len(self.app.seen), 3)


if __name__ == "__main__":
    harness.main()
