"""test_grpc_tls.py -- the gRPC front over TLS (grpc.tls: {cert, key};
docs/integrations/envoy-rls.md), with grpcio's ssl_channel_credentials and a
certificate made here by openssl:

  - ShouldRateLimit and health answered over TLS on listen.grpc (port 0:
    the port the front's listener took, in the ready line), exactly the
    limit admitted by calls on two connections;
  - a cleartext client on that port fails UNAVAILABLE, and the daemon goes
    on answering;
  - a connection that never starts its TLS handshake is closed after
    limits.idle_timeout;
  - a missing file, a file that is no PEM (--check-config: the file's line
    of grpc.tls.cert), and a PEM OpenSSL refuses (at start: a clear error,
    exit status 1).

The daemon runs on the manual test clock; the one real wait is
limits.idle_timeout (1 s) in the handshake test.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import harness
from harness import Daemon

PROTO_PY = os.environ.get("SL_PROTO_PY", os.path.join(os.path.dirname(__file__), "..", "..", "build", "proto_py"))
sys.path.insert(0, PROTO_PY)
from envoy.service.ratelimit.v3 import rls_pb2  # noqa: E402
from test_grpc import HEALTH, RLS, health_pb2, request  # noqa: E402

R = rls_pb2.RateLimitResponse

CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: ""
  grpc: 127.0.0.1:0
threads: 2
limits:
  idle_timeout: %s
policies:
  - name: edge
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1m}
grpc:
  tls:
    cert: %s
    key: %s
"""


def make_cert(directory):
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "2"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def grpc_port(d):
    return int(re.search(r"grpc_port=(\d+)", d.output()).group(1))


class GrpcTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise AssertionError("openssl is not installed; this test needs it")
        cls.dir = tempfile.mkdtemp(prefix="sluice-tls-")
        cls.cert, cls.key = make_cert(cls.dir)
        with open(cls.cert, "rb") as f:
            cls.root = f.read()

    def tls_channel(self, d):
        creds = grpc.ssl_channel_credentials(root_certificates=self.root)
        ch = grpc.secure_channel("127.0.0.1:%d" % grpc_port(d), creds,
                                 options=[("grpc.use_local_subchannel_pool", 1)])
        return ch, ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                                  response_deserializer=R.FromString)

    def test_served_over_tls(self):
        with Daemon(CONFIG % ("300s", self.cert, self.key)) as d:
            self.assertGreater(grpc_port(d), 0)
            self.assertIn("grpc: TLS on 127.0.0.1:0 (port %d)" % grpc_port(d), d.output())
            one, rls1 = self.tls_channel(d)
            two, rls2 = self.tls_channel(d)
            with one, two:
                resp = rls1(request("edge", "t1"), timeout=10)
                self.assertEqual(resp.overall_code, R.OK)
                st = resp.statuses[0]
                self.assertEqual((st.current_limit.name, st.current_limit.requests_per_unit, st.limit_remaining),
                                 ("edge", 3, 2))
                codes = [(rls1 if i % 2 else rls2)(request("edge", "t1"), timeout=10).overall_code
                         for i in range(4)]
                self.assertEqual(codes, [R.OK, R.OK, R.OVER_LIMIT, R.OVER_LIMIT])
                health = one.unary_unary(HEALTH, request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                         response_deserializer=health_pb2.HealthCheckResponse.FromString)
                self.assertEqual(health(health_pb2.HealthCheckRequest(), timeout=10).status,
                                 health_pb2.HealthCheckResponse.SERVING)
            # the same counter as RESP's, as over cleartext
            self.assertEqual(d.client().execute_command("SL.CHECK", "edge", "user=t1")[0], 0)

    def test_cleartext_client_refused(self):
        with Daemon(CONFIG % ("300s", self.cert, self.key)) as d:
            with grpc.insecure_channel("127.0.0.1:%d" % grpc_port(d)) as ch:
                rls = ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                                     response_deserializer=R.FromString)
                with self.assertRaises(grpc.RpcError) as e:
                    rls(request("edge", "plain"), timeout=10)
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            ch, rls = self.tls_channel(d)
            with ch:
                self.assertEqual(rls(request("edge", "plain"), timeout=10).statuses[0].limit_remaining, 2)

    def test_handshake_never_started_is_closed(self):
        with Daemon(CONFIG % ("1s", self.cert, self.key)) as d:
            sock = socket.create_connection(("127.0.0.1", grpc_port(d)))
            try:
                sock.settimeout(15)
                started = time.time()
                self.assertEqual(sock.recv(100), b"")  # closed, nothing sent
                self.assertLess(time.time() - started, 10)
            finally:
                sock.close()
            ch, rls = self.tls_channel(d)
            with ch:
                self.assertEqual(rls(request("edge", "after"), timeout=10).overall_code, R.OK)

    def check(self, cert, key):
        d = Daemon(CONFIG % ("300s", cert, key), args=["--check-config"], expect_start=False)
        rc = d.proc.wait(timeout=30)
        d.log.close()
        return rc, d.output()

    def test_bad_files(self):
        rc, out = self.check(os.path.join(self.dir, "missing.pem"), self.key)
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:14: grpc\.tls\.cert: cannot read '.*missing\.pem'")
        not_pem = os.path.join(self.dir, "not.pem")
        with open(not_pem, "w") as f:
            f.write("hello\n")
        rc, out = self.check(self.cert, not_pem)
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"sluice\.yaml:15: grpc\.tls\.key: '.*not\.pem' is not a PEM file")
        self.assertEqual(self.check(self.cert, self.key)[0], 0)
        # a PEM OpenSSL cannot use: refused at start, with the files named
        broken = os.path.join(self.dir, "broken.pem")
        with open(broken, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        d = Daemon(CONFIG % ("300s", broken, self.key), expect_start=False)
        self.assertEqual(d.proc.wait(timeout=30), 1)
        d.log.close()
        self.assertIn("grpc: cannot serve TLS on 127.0.0.1:0", d.output())
        self.assertIn("grpc.tls.cert '%s'" % broken, d.output())


if __name__ == "__main__":
    harness.main()
