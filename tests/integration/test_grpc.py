"""test_grpc.py -- the gRPC front (docs/integrations/envoy-rls.md) with a real
gRPC client: Python's grpcio, messages generated from the in-tree .proto
files by protoc --python_out at build time (SL_PROTO_PY, set by CTest, is the
build tree's proto_py), calls made by method path with
grpc.Channel.unary_unary:

  - ShouldRateLimit: every field of the response (overall_code, one status
    per descriptor with code, current_limit {name, requests_per_unit, unit},
    limit_remaining, duration_until_reset, the RateLimit headers), over the
    limit, hits_addend (request-wide and per descriptor), shadow mode,
    a descriptor no policy decides, all or nothing (one descriptor over:
    none charged, as a later call shows);
  - the same counter as RESP's SL.CHECK for the same policy and key;
  - gRPC health: SERVING, NOT_FOUND for an unknown service;
  - an unknown method: UNIMPLEMENTED; bytes that are no RateLimitRequest, an
    empty domain, no descriptors: INVALID_ARGUMENT; a message over
    limits.max_request_bytes: RESOURCE_EXHAUSTED; each leaves the daemon
    answering;
  - with Envoy ratelimit's configuration directory (rls: config_dir, or
    --rls-config): a key-only default, a value's own limit and name,
    unlimited, shadow_mode, requests_per_unit 0 (over, nothing else
    charged), a request-supplied limit, an unknown domain;
  - Envoy ratelimit's per-rule stats in /metrics (within, near, over,
    shadow, detailed, override) and each rls.response_headers mode;
  - on the Redis store (decisions that come later): the same answers, all
    or nothing, and two daemons on one Redis admit exactly the limit;
  - SIGTERM stops it with exit status 0, also with a call whose client never
    ends its stream (cancelled after the grace period).

The daemon runs on the manual test clock (SL.TESTCLOCK on its RESP port), so
no test waits for a window; its gRPC port is chosen by the kernel and read
from the "ready" line (grpc_port=N).
"""
import importlib.util
import os
import re
import signal
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc

import harness
from harness import Daemon

PROTO_PY = os.environ.get("SL_PROTO_PY", os.path.join(os.path.dirname(__file__), "..", "..", "build", "proto_py"))
sys.path.insert(0, PROTO_PY)
from envoy.service.ratelimit.v3 import rls_pb2  # noqa: E402


def _load(name, path):
    # proto_py/grpc/ would be shadowed by grpcio's own package of that name
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


health_pb2 = _load("sluice_health_pb2", os.path.join(PROTO_PY, "grpc", "health", "v1", "health_pb2.py"))

RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
HEALTH = "/grpc.health.v1.Health/Check"

CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: ""
  grpc: 127.0.0.1:0
threads: 2
limits:
  max_request_bytes: 65536
policies:
  - name: edge
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1m}
  - name: other
    limits:
      - {algorithm: fixed_window, limit: 10, period: 1h}
  - name: watch
    mode: shadow
    limits:
      - {algorithm: fixed_window, limit: 1, period: 1s}
"""

R = rls_pb2.RateLimitResponse


def descriptor(req, pairs, hits=None):
    d = req.descriptors.add()
    for k, v in pairs:
        e = d.entries.add()
        e.key, e.value = k, v
    if hits is not None:
        d.hits_addend.value = hits
    return d


class GrpcFront(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(CONFIG)
        cls.grpc_port = int(re.search(r"grpc_port=(\d+)", cls.d.output()).group(1))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.grpc_port)
        cls.rls = cls.channel.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                                          response_deserializer=R.FromString)
        cls.health = cls.channel.unary_unary(HEALTH,
                                             request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                             response_deserializer=health_pb2.HealthCheckResponse.FromString)
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.r.close()
        cls.d.stop()

    def setUp(self):
        # each test in a fresh window of its own
        self.d.clock(self.r, "ADVANCE", 3600 * 1000000)

    def ask(self, domain, *descriptors, hits=0):
        req = rls_pb2.RateLimitRequest(domain=domain, hits_addend=hits)
        for d in descriptors:
            if isinstance(d, tuple):
                descriptor(req, d[0], d[1])
            else:
                descriptor(req, d)
        return self.rls(req, timeout=10)

    def assert_status(self, st, code, remaining, name="edge", rpu=3, unit=R.RateLimit.MINUTE):
        self.assertEqual(st.code, code)
        self.assertEqual(st.current_limit.name, name)
        self.assertEqual(st.current_limit.requests_per_unit, rpu)
        self.assertEqual(st.current_limit.unit, unit)
        self.assertEqual(st.limit_remaining, remaining)

    def test_every_field_then_over_limit(self):
        key = [("user", "u1"), ("path", "/a")]
        for left in (2, 1, 0):
            resp = self.ask("edge", key)
            self.assertEqual(resp.overall_code, R.OK)
            self.assertEqual(len(resp.statuses), 1)
            self.assert_status(resp.statuses[0], R.OK, left)
            # the fixed window of a minute: at most 60 s to its end
            until = resp.statuses[0].duration_until_reset
            self.assertGreater(until.seconds * 10**9 + until.nanos, 0)
            self.assertLessEqual(until.seconds, 60)
            headers = {h.key: h.value for h in resp.response_headers_to_add}
            self.assertEqual(headers["RateLimit-Policy"], '"edge";q=3;w=60')
            self.assertRegex(headers["RateLimit"], r'^"edge";r=%d;t=\d+$' % left)
            self.assertEqual(headers["X-RateLimit-Remaining"], str(left))
            self.assertNotIn("Retry-After", headers)
            self.assertEqual(len(resp.request_headers_to_add), 0)
        resp = self.ask("edge", key)
        self.assertEqual(resp.overall_code, R.OVER_LIMIT)
        self.assert_status(resp.statuses[0], R.OVER_LIMIT, 0)
        headers = {h.key: h.value for h in resp.response_headers_to_add}
        self.assertIn("Retry-After", headers)
        # another key has its own counter
        self.assertEqual(self.ask("edge", [("user", "u2"), ("path", "/a")]).overall_code, R.OK)

    def test_same_counter_as_resp(self):
        self.assertEqual(self.ask("edge", [("user", "shared")]).statuses[0].limit_remaining, 2)
        reply = self.r.execute_command("SL.CHECK", "edge", "user=shared")
        self.assertEqual(reply[0], 1)  # allowed
        self.assertEqual(self.ask("edge", [("user", "shared")]).statuses[0].limit_remaining, 0)

    def test_hits_addend(self):
        resp = self.ask("edge", [("user", "h1")], hits=2)
        self.assertEqual(resp.statuses[0].limit_remaining, 1)
        resp = self.ask("edge", [("user", "h1")], hits=2)
        self.assertEqual(resp.overall_code, R.OVER_LIMIT)
        # a descriptor's own hits_addend replaces the request's; 0 counts as 1
        resp = self.ask("edge", ([("user", "h2")], 3), hits=1)
        self.assertEqual(resp.statuses[0].limit_remaining, 0)
        resp = self.ask("edge", ([("user", "h3")], 0), hits=2)
        self.assertEqual(resp.statuses[0].limit_remaining, 2)

    def test_shadow_answers_ok(self):
        for _ in range(3):
            resp = self.ask("watch", [("ip", "10.0.0.1")])
            self.assertEqual(resp.overall_code, R.OK)
            self.assert_status(resp.statuses[0], R.OK, 0, name="watch", rpu=1, unit=R.RateLimit.SECOND)

    def test_descriptor_without_policy(self):
        resp = self.ask("nobody", [("user", "x")])
        self.assertEqual(resp.overall_code, R.OK)
        self.assertEqual(resp.statuses[0].code, R.OK)
        self.assertFalse(resp.statuses[0].HasField("current_limit"))
        self.assertEqual(len(resp.response_headers_to_add), 0)

    def test_all_or_nothing(self):
        # "b" is at its limit; a call with "a" and "b" charges neither
        for _ in range(3):
            self.assertEqual(self.ask("edge", [("k", "b")]).overall_code, R.OK)
        resp = self.ask("edge", [("k", "a")], [("k", "b")])
        self.assertEqual(resp.overall_code, R.OVER_LIMIT)
        self.assertEqual(len(resp.statuses), 2)
        # "a" was only asked: all three still pass
        self.assert_status(resp.statuses[0], R.OK, 3)
        self.assert_status(resp.statuses[1], R.OVER_LIMIT, 0)
        self.assertEqual(self.ask("edge", [("k", "a")]).statuses[0].limit_remaining, 2)
        # both pass: both are charged
        resp = self.ask("edge", [("k", "c")], [("k", "d")])
        self.assertEqual(resp.overall_code, R.OK)
        self.assertEqual([s.limit_remaining for s in resp.statuses], [2, 2])
        self.assertEqual(self.ask("edge", [("k", "c")]).statuses[0].limit_remaining, 1)

    def test_health(self):
        resp = self.health(health_pb2.HealthCheckRequest(), timeout=10)
        self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
        resp = self.health(health_pb2.HealthCheckRequest(service="envoy.service.ratelimit.v3.RateLimitService"),
                           timeout=10)
        self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
        with self.assertRaises(grpc.RpcError) as e:
            self.health(health_pb2.HealthCheckRequest(service="nope"), timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)

    def raw_call(self, method, payload):
        call = self.channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError) as e:
            call(payload, timeout=10)
        return e.exception

    def test_every_status_on_one_connection(self):
        # an answer's grpc-status 0 goes into the client's HPACK table with
        # the connection's first answer and is one indexed byte after; the
        # errors' statuses stay literals: grpcio reads each right, in any order
        options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
        with grpc.insecure_channel("127.0.0.1:%d" % self.grpc_port, options=options) as ch:
            health = ch.unary_unary(HEALTH, request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                    response_deserializer=health_pb2.HealthCheckResponse.FromString)
            raw = ch.unary_unary(RLS, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            nope = ch.unary_unary("/envoy.service.ratelimit.v3.RateLimitService/Nope",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
            ok = health_pb2.HealthCheckRequest()
            calls = [
                (lambda: health(ok, timeout=10), None),
                (lambda: health(health_pb2.HealthCheckRequest(service="nope"), timeout=10),
                 grpc.StatusCode.NOT_FOUND),
                (lambda: health(ok, timeout=10), None),
                (lambda: raw(b"\xff\xff\xff\xff", timeout=10), grpc.StatusCode.INVALID_ARGUMENT),
                (lambda: nope(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED),
                (lambda: health(ok, timeout=10), None),
                (lambda: health(ok, timeout=10), None),
            ]
            for _ in range(5):
                for call, code in calls:
                    if code is None:
                        self.assertEqual(call().status, health_pb2.HealthCheckResponse.SERVING)
                    else:
                        with self.assertRaises(grpc.RpcError) as e:
                            call()
                        self.assertEqual(e.exception.code(), code)

    def test_unknown_method(self):
        e = self.raw_call("/envoy.service.ratelimit.v3.RateLimitService/Nope", b"")
        self.assertEqual(e.code(), grpc.StatusCode.UNIMPLEMENTED)
        e = self.raw_call("/grpc.health.v1.Health/Watch", b"")
        self.assertEqual(e.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.test_health()

    def test_malformed(self):
        e = self.raw_call(RLS, b"\xff\xff\xff\xff")
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("malformed", e.details())
        # a length running past the end
        e = self.raw_call(RLS, b"\x0a\x10ab")
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        e = self.raw_call(RLS, rls_pb2.RateLimitRequest(domain="edge").SerializeToString())
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("no descriptors", e.details())
        req = rls_pb2.RateLimitRequest()
        descriptor(req, [("user", "x")])
        e = self.raw_call(RLS, req.SerializeToString())
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("domain", e.details())
        e = self.raw_call(HEALTH, b"\xff\xff")
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # unknown fields are skipped, as protobuf wants
        req = rls_pb2.RateLimitRequest(domain="edge")
        descriptor(req, [("user", "unknown-fields")])
        raw = req.SerializeToString() + b"\xf8\x07\x01"  # field 127, varint 1
        call = self.channel.unary_unary(RLS, request_serializer=lambda b: b, response_deserializer=R.FromString)
        self.assertEqual(call(raw, timeout=10).statuses[0].limit_remaining, 2)

    def test_oversized(self):
        req = rls_pb2.RateLimitRequest(domain="x" * 70000)
        descriptor(req, [("user", "big")])
        e = self.raw_call(RLS, req.SerializeToString())
        self.assertEqual(e.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(self.ask("edge", [("user", "after-big")]).overall_code, R.OK)


def connect(d):
    port = int(re.search(r"grpc_port=(\d+)", d.output()).group(1))
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    return channel, channel.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                                        response_deserializer=R.FromString)


def request(domain, *keys):
    req = rls_pb2.RateLimitRequest(domain=domain)
    for k in keys:
        descriptor(req, [("user", k)])
    return req


RLS_RULES = """\
domain: envoy
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: remote_address
    value: 10.0.0.9
    rate_limit: {unit: minute, requests_per_unit: 4, name: vip}
  - key: path
    value: /free
    rate_limit: {unlimited: true}
  - key: path
    value: /shadow
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: /closed
    rate_limit: {unit: second, requests_per_unit: 0}
"""


class GrpcEnvoyRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rules = tempfile.mkdtemp(prefix="sluice-rls-")
        with open(os.path.join(cls.rules, "envoy.yaml"), "w") as f:
            f.write(RLS_RULES)
        cls.d = Daemon(CONFIG + "rls:\n  config_dir: %s\n" % cls.rules)
        cls.channel, cls.rls = connect(cls.d)
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.r.close()
        cls.d.stop()

    def setUp(self):
        self.d.clock(self.r, "ADVANCE", 3600 * 1000000)

    def ask(self, *descriptors, domain="envoy", override=None):
        req = rls_pb2.RateLimitRequest(domain=domain)
        for pairs in descriptors:
            d = descriptor(req, pairs)
            if override:
                d.limit.requests_per_unit, d.limit.unit = override
        return self.rls(req, timeout=10)

    def test_key_default_and_value_limit(self):
        for left in (1, 0):
            st = self.ask([("remote_address", "1.2.3.4")]).statuses[0]
            self.assertEqual((st.code, st.limit_remaining), (R.OK, left))
            self.assertEqual(st.current_limit.name, "envoy.remote_address")
            self.assertEqual((st.current_limit.requests_per_unit, st.current_limit.unit), (2, R.RateLimit.MINUTE))
        resp = self.ask([("remote_address", "1.2.3.4")])
        self.assertEqual(resp.overall_code, R.OVER_LIMIT)
        # each value counts apart under the key's default
        self.assertEqual(self.ask([("remote_address", "1.2.3.5")]).overall_code, R.OK)
        st = self.ask([("remote_address", "10.0.0.9")]).statuses[0]
        self.assertEqual(st.current_limit.name, "vip")
        self.assertEqual((st.current_limit.requests_per_unit, st.limit_remaining), (4, 3))
        headers = {h.key: h.value for h in self.ask([("remote_address", "10.0.0.9")]).response_headers_to_add}
        self.assertEqual(headers["RateLimit-Policy"], '"vip";q=4;w=60')

    def test_unlimited_unknown_and_unmatched(self):
        for resp in (self.ask([("path", "/free")]), self.ask([("remote_address", "x")], domain="elsewhere"),
                     self.ask([("nothing", "here")])):
            self.assertEqual(resp.overall_code, R.OK)
            self.assertFalse(resp.statuses[0].HasField("current_limit"))

    def test_shadow_mode(self):
        for _ in range(3):
            resp = self.ask([("path", "/shadow")])
            self.assertEqual(resp.overall_code, R.OK)
            self.assertEqual(resp.statuses[0].current_limit.requests_per_unit, 1)

    def test_zero_is_over_and_charges_nothing(self):
        resp = self.ask([("remote_address", "9.9.9.9")], [("path", "/closed")])
        self.assertEqual(resp.overall_code, R.OVER_LIMIT)
        self.assertEqual([s.code for s in resp.statuses], [R.OK, R.OVER_LIMIT])
        self.assertEqual(resp.statuses[1].current_limit.requests_per_unit, 0)
        self.assertEqual(self.ask([("remote_address", "9.9.9.9")]).statuses[0].limit_remaining, 1)

    def test_request_supplied_limit(self):
        resp = self.ask([("anything", "a1")], override=(1, R.RateLimit.HOUR))
        self.assertEqual(resp.overall_code, R.OK)
        st = resp.statuses[0]
        self.assertEqual((st.current_limit.requests_per_unit, st.current_limit.unit), (1, R.RateLimit.HOUR))
        self.assertEqual(self.ask([("anything", "a1")], override=(1, R.RateLimit.HOUR)).overall_code,
                         R.OVER_LIMIT)
        # not in an unknown domain
        self.assertFalse(self.ask([("anything", "a1")], domain="elsewhere", override=(1, R.RateLimit.HOUR))
                         .statuses[0].HasField("current_limit"))

    def test_command_line_directory(self):
        with Daemon(CONFIG, args=["--rls-config", self.rules]) as d:
            channel, rls = connect(d)
            with channel:
                req = rls_pb2.RateLimitRequest(domain="envoy")
                descriptor(req, [("remote_address", "10.0.0.9")])
                self.assertEqual(rls(req, timeout=10).statuses[0].current_limit.name, "vip")


class GrpcReloadWithoutFile(unittest.TestCase):
    def test_rls_config_on_the_default_reloads(self):
        # no --config: the built-in default, and the rules directory reloaded on SIGHUP
        rules = tempfile.mkdtemp(prefix="sluice-rls-")
        path = os.path.join(rules, "envoy.yaml")
        with open(path, "w") as f:
            f.write(RLS_RULES)
        with Daemon(None, args=["--http", "off", "--grpc", "127.0.0.1:0", "--snapshot", "off",
                                "--rls-config", rules]) as d:
            channel, rls = connect(d)
            with channel:
                req = rls_pb2.RateLimitRequest(domain="envoy")
                descriptor(req, [("remote_address", "10.1.1.1")])
                st = rls(req, timeout=10).statuses[0]
                self.assertEqual((st.current_limit.requests_per_unit, st.limit_remaining), (2, 1))
                with open(path, "w") as f:
                    f.write(RLS_RULES.replace("requests_per_unit: 2}", "requests_per_unit: 7}"))
                d.signal(signal.SIGHUP)
                d.wait_log(r"reloaded %s on the built-in default: .*generation 2" % re.escape(rules))
                st = rls(req, timeout=10).statuses[0]
                # a changed rate starts a new counter
                self.assertEqual((st.current_limit.requests_per_unit, st.limit_remaining), (7, 6))
                # a broken directory: refused, the running rules stay
                with open(os.path.join(rules, "bad.yaml"), "w") as f:
                    f.write("domain: envoy\n")
                d.signal(signal.SIGHUP)
                d.wait_log(r"reload failed.*envoy\.yaml:1: duplicate domain 'envoy' .*bad\.yaml")
                self.assertEqual(rls(req, timeout=10).statuses[0].limit_remaining, 5)


STATS_RULES = """\
domain: stats
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: watch
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: detail
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: free
    rate_limit: {unlimited: true}
"""


def scrape(d):
    port = int(re.search(r"http_port=(\d+)", d.output()).group(1))
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as resp:
        text = resp.read().decode()
    stats = {}
    for m in re.finditer(r'^sluice_rls_hits_total\{domain="([^"]*)",rule="([^"]*)",stat="(\w+)"\} (\d+)$', text,
                         re.M):
        stats.setdefault((m.group(1), m.group(2)), {})[m.group(3)] = int(m.group(4))
    return stats


def rules_daemon(rules, extra=""):
    d = tempfile.mkdtemp(prefix="sluice-rls-")
    with open(os.path.join(d, "rules.yaml"), "w") as f:
        f.write(rules)
    config = CONFIG.replace('http: ""', "http: 127.0.0.1:0") + "rls:\n  config_dir: %s\n%s" % (d, extra)
    return Daemon(config)


class GrpcRlsStats(unittest.TestCase):
    """Envoy ratelimit's per-rule stats in /metrics (sluice_rls_hits_total)."""

    def test_within_near_over_shadow(self):
        with rules_daemon(STATS_RULES) as d:
            channel, rls = connect(d)
            with channel:
                def ask(key, value, hits=0, override=None):
                    req = rls_pb2.RateLimitRequest(domain="stats", hits_addend=hits)
                    desc = descriptor(req, [(key, value)])
                    if override:
                        desc.limit.requests_per_unit, desc.limit.unit = override
                    return rls(req, timeout=10)

                # 10 a minute: the 9th and 10th are past 80 % (near), the 11th over
                codes = [ask("user", "u1").overall_code for _ in range(11)]
                self.assertEqual(codes, [R.OK] * 10 + [R.OVER_LIMIT])
                ask("user", "u2", hits=3)  # 3 hits at once, all below 8
                for _ in range(3):  # shadow: 1 within, then over but answered OK
                    self.assertEqual(ask("watch", "w").overall_code, R.OK)
                ask("detail", "a")
                ask("detail", "b")
                ask("detail", "b")
                ask("free", "f")
                ask("anything", "x", override=(5, R.RateLimit.HOUR))
                ask("user", "u3", hits=0)
                stats = scrape(d)
        self.assertEqual(stats[("stats", "stats.user")],
                         {"total_hits": 15, "within_limit": 14, "near_limit": 2, "over_limit": 1, "shadow_mode": 0})
        self.assertEqual(stats[("stats", "stats.watch")],
                         {"total_hits": 3, "within_limit": 1, "near_limit": 1, "over_limit": 2, "shadow_mode": 2})
        self.assertEqual(stats[("stats", "stats.detail_a")]["total_hits"], 1)
        self.assertEqual(stats[("stats", "stats.detail_b")]["within_limit"], 2)
        self.assertNotIn(("stats", "stats.detail"), stats)
        self.assertEqual(stats[("stats", "override")]["within_limit"], 1)
        self.assertFalse([k for k in stats if "free" in k[1]])

    def test_near_limit_with_hits_addend(self):
        with rules_daemon(STATS_RULES) as d:
            channel, rls = connect(d)
            with channel:
                req = rls_pb2.RateLimitRequest(domain="stats", hits_addend=6)
                descriptor(req, [("user", "big")])
                self.assertEqual(rls(req, timeout=10).overall_code, R.OK)   # 0 -> 6: none near
                req.hits_addend = 3
                self.assertEqual(rls(req, timeout=10).overall_code, R.OK)   # 6 -> 9: 1 past 8
                self.assertEqual(rls(req, timeout=10).overall_code, R.OVER_LIMIT)  # 9 + 3 > 10
                stats = scrape(d)
        self.assertEqual(stats[("stats", "stats.user")],
                         {"total_hits": 12, "within_limit": 9, "near_limit": 1, "over_limit": 3, "shadow_mode": 0})


class GrpcHeaderModes(unittest.TestCase):
    """rls.response_headers: which headers response_headers_to_add carries."""

    def headers(self, mode):
        extra = "  response_headers: %s\n" % mode if mode else ""
        with rules_daemon(STATS_RULES, extra) as d:
            channel, rls = connect(d)
            with channel:
                req = rls_pb2.RateLimitRequest(domain="stats")
                descriptor(req, [("user", "h")])
                first = {h.key: h.value for h in rls(req, timeout=10).response_headers_to_add}
                req.hits_addend = 10
                over = {h.key: h.value for h in rls(req, timeout=10).response_headers_to_add}
                return first, over

    def test_modes(self):
        ietf = {"RateLimit-Policy", "RateLimit"}
        x = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
        for mode, names in ((None, ietf | x), ("both", ietf | x), ("ietf", ietf), ("x-ratelimit", x), ("off", set())):
            with self.subTest(mode=mode):
                first, over = self.headers(mode)
                self.assertEqual(set(first), names)
                self.assertEqual(set(over), names | ({"Retry-After"} if names else set()))
                if "X-RateLimit-Limit" in names:
                    # as envoyproxy/ratelimit writes them: plain numbers
                    self.assertEqual(first["X-RateLimit-Limit"], "10")
                    self.assertEqual(first["X-RateLimit-Remaining"], "9")
                    self.assertRegex(first["X-RateLimit-Reset"], r"^\d+$")
                    self.assertLessEqual(int(first["X-RateLimit-Reset"]), 60)

    def test_bad_mode_is_refused(self):
        d = tempfile.mkdtemp(prefix="sluice-rls-")
        with open(os.path.join(d, "rules.yaml"), "w") as f:
            f.write(STATS_RULES)
        daemon = Daemon(CONFIG + "rls:\n  config_dir: %s\n  response_headers: x-rate\n" % d, expect_start=False)
        self.assertNotEqual(daemon.proc.wait(timeout=20), 0)
        self.assertIn("rls.response_headers", daemon.output())
        self.assertIn("'x-rate' is not one of ietf, x-ratelimit, both, off", daemon.output())
        daemon.log.close()


class GrpcRedis(unittest.TestCase):
    def setUp(self):
        from test_distributed import RedisServer
        self.redis = RedisServer()

    def tearDown(self):
        self.redis.stop()

    def daemon(self):
        return Daemon(CONFIG, args=["--store", self.redis.url], test_clock=None)

    def test_decisions_that_come_later(self):
        with self.daemon() as d:
            channel, rls = connect(d)
            with channel:
                self.assertEqual([rls(request("edge", "r1"), timeout=10).statuses[0].limit_remaining
                                  for _ in range(3)], [2, 1, 0])
                self.assertEqual(rls(request("edge", "r1"), timeout=10).overall_code, R.OVER_LIMIT)
                resp = rls(request("edge", "r2", "r1"), timeout=10)
                self.assertEqual(resp.overall_code, R.OVER_LIMIT)
                self.assertEqual([s.code for s in resp.statuses], [R.OK, R.OVER_LIMIT])
                self.assertEqual(rls(request("edge", "r2"), timeout=10).statuses[0].limit_remaining, 2)

    def test_two_daemons_admit_exactly_the_limit(self):
        with self.daemon() as a, self.daemon() as b:
            ca, rls_a = connect(a)
            cb, rls_b = connect(b)
            with ca, cb:
                codes = [(rls_a if i % 2 else rls_b)(request("edge", "shared"), timeout=10).overall_code
                         for i in range(8)]
                self.assertEqual(codes.count(R.OK), 3)

    def test_three_daemons_hammered_admit_exactly_the_limit(self):
        # Envoy ratelimit's rule, 50 an hour; the daemons' manual clocks agree
        # (store.clock: local), so no window turns during the test
        rules = tempfile.mkdtemp(prefix="sluice-rls-")
        with open(os.path.join(rules, "hammer.yaml"), "w") as f:
            f.write("domain: hammer\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 50}\n")
        config = (CONFIG + "store:\n  type: redis\n  url: %s\n  clock: local\nrls:\n  config_dir: %s\n"
                  % (self.redis.url, rules))
        daemons = [Daemon(config, test_clock=1_800_000_000 * 10 ** 6) for _ in range(3)]
        try:
            channels = [connect(d) for d in daemons]
            codes, errors, lock = [], [], threading.Lock()

            def hammer(rls):
                try:
                    got = [rls(request("hammer", "shared"), timeout=30).overall_code for _ in range(20)]
                except grpc.RpcError as e:
                    got = []
                    errors.append(e)
                with lock:
                    codes.extend(got)

            # 4 threads on each daemon's channel, 240 calls for 50 places
            threads = [threading.Thread(target=hammer, args=(rls,)) for _, rls in channels for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            self.assertEqual(errors, [])
            self.assertEqual(len(codes), 240)
            self.assertEqual(codes.count(R.OK), 50)
            self.assertEqual(codes.count(R.OVER_LIMIT), 190)
            for channel, _ in channels:
                channel.close()
        finally:
            for d in daemons:
                d.stop()


class GrpcStop(unittest.TestCase):
    def test_sigterm_with_a_stream_never_ended(self):
        d = Daemon(CONFIG)
        channel, _ = connect(d)
        stream = channel.stream_unary(RLS, request_serializer=lambda b: b, response_deserializer=R.FromString)
        never = threading.Event()

        def requests():
            never.wait(30)
            return
            yield  # a generator that sends nothing

        future = stream.future(requests(), timeout=30)
        time.sleep(0.2)  # the call reaches the daemon (not a rate window)
        started = time.time()
        d.signal(signal.SIGTERM)
        self.assertEqual(d.stop(), 0)
        self.assertLess(time.time() - started, 20)
        with self.assertRaises(grpc.RpcError):
            future.result(timeout=10)
        never.set()
        channel.close()


class GrpcOff(unittest.TestCase):
    def test_off_unless_asked(self):
        with Daemon(harness.BASE_CONFIG) as d:
            self.assertRegex(d.output(), r"grpc=off grpc_port=0")

    def test_command_line(self):
        with Daemon(harness.BASE_CONFIG, args=["--grpc", "127.0.0.1:0"]) as d:
            port = int(re.search(r"grpc_port=(\d+)", d.output()).group(1))
            self.assertGreater(port, 0)
            with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
                check = ch.unary_unary(HEALTH, request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                       response_deserializer=health_pb2.HealthCheckResponse.FromString)
                self.assertEqual(check(health_pb2.HealthCheckRequest(), timeout=10).status,
                                 health_pb2.HealthCheckResponse.SERVING)


if __name__ == "__main__":
    harness.main()
