"""test_gateway_tls.py -- the gateway's TLS and round robin (docs/gateway.md
"TLS" and "Several upstreams: round robin"): a real sluiced with a gateway:
section whose listen: has a plain listener and a TLS one, in front of small
Python upstreams (http.server in threads, one of them wrapped in TLS),
driven by curl:

  - HTTPS to the gateway with HTTP/1.1 and with HTTP/2 chosen by ALPN
    (curl --http2), verified with --cacert: forwarded with the rate limit
    headers, and the excess refused with 429 over TLS too; the plain
    listener beside it still serves;
  - an https:// upstream verified with the route's tls_ca; the same
    upstream refused (502, a body saying why) without it, since its
    certificate is not in the system's store; tls_verify: off takes it;
  - round robin over three upstreams: over one connection (one worker) the
    requests go to them in turn, exactly; over many connections (spread
    over the two workers, each with its own turn) each gets N/3 +- 1;
  - a bad certificate or key file, or a key that does not match its
    certificate: a configuration error naming its line (--check-config),
    never a crash.

The certificates are made at the start with the openssl command, into the
test's temporary directory: one self-signed certificate (CN and
subjectAltName localhost and 127.0.0.1) serves both the gateway's listener
and the TLS upstream. The daemon runs on the manual test clock; no test
waits for a window.
"""
import os
import re
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest

import harness
import upstream
from harness import Daemon

DIR = tempfile.mkdtemp(prefix="sluiced-tls-")
CERT = os.path.join(DIR, "cert.pem")
KEY = os.path.join(DIR, "key.pem")
OTHER_KEY = os.path.join(DIR, "other.pem")


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def setUpModule():
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", KEY, "-out", CERT, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", OTHER_KEY)


class Counting(upstream.Upstream):
    """Counts its requests by path prefix ("/rr1/a" counts as "rr1")."""

    def __init__(self, name):
        self.name = name
        self.seen = {}
        self.lock = threading.Lock()
        super().__init__()

    def answer(self, request, body):
        prefix = request.path.split("/")[1]
        with self.lock:
            self.seen[prefix] = self.seen.get(prefix, 0) + 1
        return 200, ("%s saw %s\n" % (self.name, request.path)).encode()

    def count(self, prefix):
        with self.lock:
            return self.seen.get(prefix, 0)


class TlsUpstream(Counting):
    """The same over TLS, with CERT. Also on ::1 when localhost names it
    there, since the gateway may connect to any address of localhost."""

    def __init__(self):
        super().__init__("tls")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(CERT, KEY)
        # no client knows the port yet: nothing is accepted before the wrap
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.extra = None
        families = {ai[0] for ai in socket.getaddrinfo("localhost", self.port, type=socket.SOCK_STREAM)}
        if socket.AF_INET6 in families:
            handler = self.server.RequestHandlerClass

            class Server6(type(self.server)):
                address_family = socket.AF_INET6

            self.extra = Server6(("::1", self.port), handler)
            self.extra.daemon_threads = True
            self.extra.socket = ctx.wrap_socket(self.extra.socket, server_side=True)
            threading.Thread(target=self.extra.serve_forever, daemon=True).start()

    def close(self):
        if self.extra:
            self.extra.shutdown()
            self.extra.server_close()
        super().close()


def gateway_config(tls_port, tls_up, rr):
    rr_list = ", ".join("http://127.0.0.1:%d" % u.port for u in rr)
    return """\
listen: {resp: 127.0.0.1:0, http: ""}
threads: 2
gateway:
  listen:
    - 127.0.0.1:0
    - address: 127.0.0.1:%(tls_port)d
      tls: {cert: %(cert)s, key: %(key)s}
  routes:
    - name: api
      match: {path_prefix: /api/}
      upstream: http://127.0.0.1:%(plain)d
      policies: [per_ip]
    - name: secure
      match: {path_prefix: /secure/}
      upstream: https://localhost:%(tls_up)d
      tls_ca: %(cert)s
    - name: unverified
      match: {path_prefix: /unverified/}
      upstream: https://localhost:%(tls_up)d
    - name: by_host
      match: {host: tls.example, path_prefix: /hosted/}
      upstream: https://localhost:%(tls_up)d/base
    - name: lab
      match: {path_prefix: /lab/}
      upstream: https://localhost:%(tls_up)d
      tls_verify: off
    - name: rr1
      match: {path_prefix: /rr1/}
      upstream: [%(rr)s]
    - name: rr2
      match: {path_prefix: /rr2/}
      upstream:
%(rr_lines)s
policies:
  - name: per_ip
    key: [ip]
    limits:
      - {algorithm: fixed_window, limit: 4, period: 1h}
""" % {"tls_port": tls_port, "cert": CERT, "key": KEY, "plain": rr[0].port, "tls_up": tls_up.port,
       "rr": rr_list, "rr_lines": "".join("        - http://127.0.0.1:%d\n" % u.port for u in rr)}


def curl(url, *args):
    """(status, HTTP version, headers as a lower-case dict, body) of one request."""
    out = subprocess.run(["curl", "-s", "-i", "--max-time", "10", "-w", "\n%{http_version}"] + list(args) + [url],
                         stdout=subprocess.PIPE, check=True).stdout.decode("utf-8", "replace")
    out, _, version = out.rpartition("\n")
    head, _, body = out.replace("\r\n", "\n").partition("\n\n")
    lines = head.split("\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), version, headers, body


class GatewayTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tls_up = TlsUpstream()
        cls.rr = [Counting("up%d" % i) for i in range(3)]
        cls.tls_port = harness.free_port()
        cls.d = Daemon(gateway_config(cls.tls_port, cls.tls_up, cls.rr))
        cls.port = int(re.search(r" gateway_port=(\d+)", cls.d.output()).group(1))
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.d.stop()
        cls.tls_up.close()
        for u in cls.rr:
            u.close()

    def https(self, path, *args):
        return curl("https://127.0.0.1:%d%s" % (self.tls_port, path), "--cacert", CERT, *args)

    def test_https_http1_http2_and_429(self):
        before = self.rr[0].count("api")
        status, version, h, body = self.https("/api/one", "--http1.1")
        self.assertEqual((status, version, body), (200, "1.1", "up0 saw /api/one\n"))
        self.assertEqual(h["ratelimit-policy"], '"per_ip";q=4;w=3600')
        self.assertEqual(h["x-ratelimit-remaining"], "3")
        status, version, h, body = self.https("/api/two", "--http2")  # HTTP/2 by ALPN
        self.assertEqual((status, version), (200, "2"))
        self.assertEqual(h["x-ratelimit-remaining"], "2")
        # the plain listener beside it: the same gateway, the same counts
        status, version, h, _ = curl("http://127.0.0.1:%d/api/three" % self.port)
        self.assertEqual((status, h["x-ratelimit-remaining"]), (200, "1"))
        self.assertEqual(self.https("/api/four", "--http2")[0], 200)
        for args in (("--http1.1",), ("--http2",)):
            status, version, h, body = self.https("/api/five", *args)
            self.assertEqual((status, body), (429, "rate limit exceeded\n"))
            self.assertEqual(h["x-ratelimit-remaining"], "0")
            self.assertIn("retry-after", h)
            self.assertRegex(h["ratelimit"], r'^"per_ip";r=0;t=\d+$')
        self.assertEqual(self.rr[0].count("api") - before, 4)  # the excess never reached it

    def test_https_upstream_verified_with_tls_ca(self):
        before = self.tls_up.count("secure")
        status, _, _, body = self.https("/secure/x")
        self.assertEqual((status, body), (200, "tls saw /secure/x\n"))
        status, _, _, body = curl("http://127.0.0.1:%d/secure/y" % self.port, "--http2-prior-knowledge")
        self.assertEqual((status, body), (200, "tls saw /secure/y\n"))
        self.assertEqual(self.tls_up.count("secure") - before, 2)

    def test_https_upstream_refused_without_its_ca(self):
        # its certificate is in no store the route trusts: the handshake fails
        status, _, _, body = curl("http://127.0.0.1:%d/unverified/x" % self.port)
        self.assertEqual(status, 502)
        self.assertRegex(body, r"^bad gateway: TLS with the upstream failed \(.*certificate.*\)\n$")
        self.assertEqual(self.tls_up.count("unverified"), 0)
        # a route matched by its host, with a path on its upstream: told the
        # same (libh2o rewrote the request's host and path by then)
        status, _, _, body = curl("http://127.0.0.1:%d/hosted/x" % self.port, "-H", "Host: tls.example")
        self.assertEqual(status, 502)
        self.assertRegex(body, r"^bad gateway: TLS with the upstream failed \(.*certificate.*\)\n$")
        # tls_verify: off takes any certificate
        status, _, _, body = curl("http://127.0.0.1:%d/lab/x" % self.port)
        self.assertEqual((status, body), (200, "tls saw /lab/x\n"))

    def test_round_robin_in_turn_on_one_connection(self):
        # one keep-alive connection is served by one worker: its turn, exactly
        urls = ["http://127.0.0.1:%d/rr1/%d" % (self.port, i) for i in range(9)]
        out = subprocess.run(["curl", "-s", "--max-time", "10"] + urls, stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        names = re.findall(r"^(up\d) saw /rr1/(\d)$", out, re.M)
        self.assertEqual([int(i) for _, i in names], list(range(9)))
        order = [n for n, _ in names]
        self.assertEqual(sorted(order[:3]), ["up0", "up1", "up2"])
        self.assertEqual(order, order[:3] * 3)
        self.assertEqual([u.count("rr1") for u in self.rr], [3, 3, 3])

    def test_round_robin_spreads_connections(self):
        # 30 connections over two workers, each with its own turn from the
        # first upstream: each upstream gets 10 +- 1
        n = 30
        for i in range(n):
            self.assertEqual(curl("http://127.0.0.1:%d/rr2/%d" % (self.port, i))[0], 200)
        counts = [u.count("rr2") for u in self.rr]
        self.assertEqual(sum(counts), n)
        for c in counts:
            self.assertLessEqual(abs(c - n // 3), 1, counts)


POLICIES = "policies:\n  - name: per_ip\n    key: [ip]\n    limits: [{algorithm: gcra, limit: 1, period: 1s}]\n"


class Configuration(unittest.TestCase):
    def check(self, listen):
        workdir = tempfile.mkdtemp(prefix="sluiced-test-")
        path = os.path.join(workdir, "sluice.yaml")
        with open(path, "w") as f:
            f.write("gateway:\n  listen:\n%s  routes:\n    - name: a\n      upstream: http://127.0.0.1:1\n"
                    "%s" % (listen, POLICIES))
        proc = subprocess.run([harness.SLUICED, "--config", path, "--check-config"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=workdir)
        return proc.returncode, proc.stdout.decode()

    def tls(self, cert, key):
        return "    - 127.0.0.1:8080\n    - address: 127.0.0.1:8443\n      tls:\n        cert: %s\n" \
               "        key: %s\n" % (cert, key)

    def test_good_files(self):
        rc, out = self.check(self.tls(CERT, KEY))
        self.assertEqual(rc, 0, out)

    def test_bad_files_name_the_line(self):
        rc, out = self.check(self.tls(os.path.join(DIR, "missing.pem"), KEY))
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:6: gateway\.listen\[1\]\.tls\.cert: cannot open .*missing\.pem: "
                              r"No such file or directory")
        rc, out = self.check(self.tls(CERT, os.path.join(DIR, "missing.key")))
        self.assertRegex(out, r"sluice\.yaml:7: gateway\.listen\[1\]\.tls\.key: cannot open .*missing\.key")
        rc, out = self.check(self.tls(KEY, KEY))  # a key where the certificate should be
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:6: gateway\.listen\[1\]\.tls\.cert: no certificate \(PEM\) in ")
        rc, out = self.check(self.tls(CERT, CERT))  # a certificate where the key should be
        self.assertRegex(out, r"sluice\.yaml:7: gateway\.listen\[1\]\.tls\.key: no private key \(PEM\) in ")
        rc, out = self.check(self.tls(CERT, OTHER_KEY))
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:7: gateway\.listen\[1\]\.tls\.key: the key in .*other\.pem does not "
                              r"match the certificate in .*cert\.pem")

    def test_start_refused_with_bad_files(self):
        d = Daemon("gateway:\n  listen:\n" + self.tls(CERT, OTHER_KEY).replace("8080", "0").replace("8443", "0") +
                   "  routes:\n    - name: a\n      upstream: http://127.0.0.1:1\n" + POLICIES, expect_start=False)
        self.assertEqual(d.proc.wait(timeout=20), 1)
        d.log.close()
        self.assertIn("does not match the certificate", d.output())


if __name__ == "__main__":
    unittest.main()
