"""test_grpc_hostile.py -- the gRPC front (docs/integrations/envoy-rls.md)
under clients that press on it, with real grpcio and, where grpcio will not
misbehave, a raw HTTP/2 client built from frames in this file:

  - gRPC connections count against limits.max_connections like the other
    fronts': one past it is refused (the client's calls fail UNAVAILABLE),
    INFO counts it rejected, and a closed connection's place comes back;
  - 500 concurrent ShouldRateLimit calls multiplexed on one channel (HTTP/2
    streams and flow control): every one answered, exactly the limit OK;
    1,000 on one channel whose client reads through a 1 KiB window, among
    them requests of nearly limits.max_request_bytes (padded with an unknown
    field) and one just over it: each answered correctly;
  - a call whose client sends part of its message and never ends its stream
    is answered DEADLINE_EXCEEDED after limits.idle_timeout, while a normal
    client on another connection keeps being served, and so are other calls
    on its own connection; one that sends its whole message without ending
    its stream is answered;
  - a connection with no call open (or that never sends its preface) is let
    go (GOAWAY, closed, its place released) after limits.idle_timeout; so is
    one whose client never gives a window to answer its calls in (they end
    UNAVAILABLE), while other clients are served;
  - a client still sending when the daemon stops gets its call's answer
    (UNAVAILABLE), a GOAWAY and then the end of the connection, not a reset
    (the lingering close).

The daemon runs on the manual test clock, so no rate window is waited out;
the one real wait is limits.idle_timeout (1 s here) in the last two.
"""
import os
import re
import socket
import signal
import struct
import sys
import threading
import time
import unittest

import grpc

import harness
from harness import Daemon

PROTO_PY = os.environ.get("SL_PROTO_PY", os.path.join(os.path.dirname(__file__), "..", "..", "build", "proto_py"))
sys.path.insert(0, PROTO_PY)
from envoy.service.ratelimit.v3 import rls_pb2  # noqa: E402

RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
R = rls_pb2.RateLimitResponse

CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: ""
  grpc: 127.0.0.1:0
threads: 2
limits:
  max_connections: %d
  idle_timeout: %s
policies:
  - name: edge
    limits:
      - {algorithm: fixed_window, limit: 300, period: 1h}
"""


def grpc_port(d):
    return int(re.search(r"grpc_port=(\d+)", d.output()).group(1))


def channel(d):
    # a connection of its own: grpcio would otherwise share one between channels
    ch = grpc.insecure_channel("127.0.0.1:%d" % grpc_port(d), options=[("grpc.use_local_subchannel_pool", 1)])
    return ch, ch.unary_unary(RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString,
                              response_deserializer=R.FromString)


def request(key):
    req = rls_pb2.RateLimitRequest(domain="edge")
    e = req.descriptors.add().entries.add()
    e.key, e.value = "user", key
    return req


def until(cond, timeout=10.0):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


class MaxConnections(unittest.TestCase):
    def test_refused_past_the_bound_and_released_on_close(self):
        # the RESP client is one connection, the first channel the second
        with Daemon(CONFIG % (2, "300s")) as d:
            r = d.client()
            self.assertEqual(r.info()["connected_clients"], 1)
            first, rls1 = channel(d)
            self.assertEqual(rls1(request("a"), timeout=10).overall_code, R.OK)
            self.assertEqual(r.info()["connected_clients"], 2)
            second, rls2 = channel(d)
            with self.assertRaises(grpc.RpcError) as e:
                rls2(request("b"), timeout=10)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            second.close()
            self.assertGreaterEqual(r.info()["rejected_connections"], 1)
            self.assertEqual(r.info()["connected_clients"], 2)
            first.close()
            self.assertTrue(until(lambda: r.info()["connected_clients"] == 1), r.info()["connected_clients"])
            third, rls3 = channel(d)
            with third:
                self.assertEqual(rls3(request("c"), timeout=10).overall_code, R.OK)
                self.assertEqual(r.info()["connected_clients"], 2)
            self.assertTrue(until(lambda: r.info()["connected_clients"] == 1))


class ManyStreams(unittest.TestCase):
    def test_500_concurrent_calls_on_one_channel(self):
        with Daemon(CONFIG % (100, "300s")) as d:
            ch, rls = channel(d)
            with ch:
                calls = [rls.future(request("many"), timeout=60) for _ in range(500)]
                codes = [c.result().overall_code for c in calls]
                self.assertEqual(codes.count(R.OK), 300)
                self.assertEqual(codes.count(R.OVER_LIMIT), 200)

    def test_1000_calls_small_window_and_large_messages(self):
        # the default limits.max_request_bytes, 1 MiB: 16 requests 64 bytes
        # short of it and one a byte over, among 1,000 on one channel
        def padded(total):
            base = request("flow").SerializeToString()
            # field 100, length-delimited (tag 0xa2 0x06), an unknown field
            pad = total - len(base) - 2 - 3
            body = base + b"\xa2\x06" + bytes([0x80 | (pad & 0x7F), 0x80 | ((pad >> 7) & 0x7F), pad >> 14]) \
                + b"\x00" * pad
            self.assertEqual(len(body), total)
            return body

        near, over = padded(1048576 - 64), padded(1048577)
        with Daemon(CONFIG % (100, "300s")) as d:
            # the client takes the answers through a 1 KiB window (no probing to grow it)
            ch = grpc.insecure_channel("127.0.0.1:%d" % grpc_port(d),
                                       options=[("grpc.use_local_subchannel_pool", 1),
                                                ("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)])
            raw = ch.unary_unary(RLS, request_serializer=lambda b: b, response_deserializer=R.FromString)
            with ch:
                small = request("flow").SerializeToString()
                bodies = [near if i % 62 == 7 else small for i in range(999)] + [over]
                self.assertEqual(bodies.count(near), 16)
                calls = [raw.future(b, timeout=120) for b in bodies]
                codes = []
                for c in calls[:-1]:
                    resp = c.result()
                    self.assertEqual(len(resp.statuses), 1)
                    self.assertEqual(resp.statuses[0].current_limit.requests_per_unit, 300)
                    codes.append(resp.overall_code)
                self.assertEqual(codes.count(R.OK), 300)
                self.assertEqual(codes.count(R.OVER_LIMIT), 699)
                with self.assertRaises(grpc.RpcError) as e:
                    calls[-1].result()
                self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                # the large ones were decided as any other: over the limit by now
                self.assertEqual(raw(near, timeout=30).overall_code, R.OVER_LIMIT)
            self.assertTrue(d.client().ping())


# ---- a raw HTTP/2 client (RFC 9113), for what grpcio will not do -------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    # HPACK literal without indexing, new name, no Huffman (all short)
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def open_call(sock, stream, port):
    block = b"".join(literal(n, v) for n, v in [
        (b":method", b"POST"), (b":scheme", b"http"), (b":path", RLS.encode()),
        (b":authority", b"127.0.0.1:%d" % port), (b"content-type", b"application/grpc"), (b"te", b"trailers")])
    sock.sendall(frame(HEADERS, END_HEADERS, stream, block))


def read_frame(sock, buf):
    while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf.extend(chunk)
    n = int.from_bytes(buf[:3], "big")
    f = (buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, bytes(buf[9:9 + n]))
    del buf[:9 + n]
    return f


def wait_end(sock, stream, buf, timeout):
    """The frames of `stream` until it ends: ('trailers', block) or ('reset', code)."""
    sock.settimeout(timeout)
    while True:
        f = read_frame(sock, buf)
        if f is None:
            return ("closed", None)
        kind, flags, sid, payload = f
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            sock.sendall(frame(PING, ACK, 0, payload))
        elif sid == stream and kind == HEADERS and flags & END_STREAM:
            return ("trailers", payload)
        elif sid == stream and kind == RST_STREAM:
            return ("reset", int.from_bytes(payload, "big"))
        elif kind == GOAWAY:
            return ("goaway", payload)


def wait_streams(sock, streams, buf, timeout, goaway=False):
    """The ends of several streams: {stream: ('trailers', block, data) or
    ('reset', code, data)}, data being the stream's DATA bytes; in the order
    they ended (an insertion-ordered dict). A GOAWAY before they all ended
    fails, unless `goaway`."""
    sock.settimeout(timeout)
    data, ends = {s: b"" for s in streams}, {}
    while len(ends) < len(streams):
        f = read_frame(sock, buf)
        if f is None:
            raise AssertionError("closed with %s still open" % sorted(set(streams) - set(ends)))
        kind, flags, sid, payload = f
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            sock.sendall(frame(PING, ACK, 0, payload))
        elif kind == GOAWAY and not goaway:
            raise AssertionError("GOAWAY with %s still open" % sorted(set(streams) - set(ends)))
        elif sid in data and kind == DATA:
            data[sid] += payload
        elif sid in data and sid not in ends and kind == HEADERS and flags & END_STREAM:
            ends[sid] = ("trailers", payload, data[sid])
        elif sid in data and sid not in ends and kind == RST_STREAM:
            ends[sid] = ("reset", int.from_bytes(payload, "big"), data[sid])
    return ends


class NoWindow(unittest.TestCase):
    def test_client_that_never_opens_its_window_is_let_go(self):
        # SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE ever: no answer
        # can be sent on its 100 calls; the front gives up on them after
        # limits.idle_timeout, while other clients are served, and closes it
        with Daemon(CONFIG % (100, "1s")) as d:
            r = d.client()
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
                body = request("no-window").SerializeToString()
                message = b"\x00" + struct.pack(">I", len(body)) + body
                streams = list(range(1, 201, 2))
                for stream in streams:
                    open_call(sock, stream, port)
                    sock.sendall(frame(DATA, END_STREAM, stream, message))
                started = time.time()
                ch, rls = channel(d)
                with ch:
                    for _ in range(3):
                        self.assertEqual(rls(request("served"), timeout=10).overall_code, R.OK)
                ends = wait_streams(sock, streams, buf, 15, goaway=True)
                self.assertLess(time.time() - started, 10)
                # no DATA could go out: each ended by trailers without a message (UNAVAILABLE)
                self.assertEqual({(kind, data) for kind, _, data in ends.values()}, {("trailers", b"")})
                self.assertIn(b"grpc-status\x0214", ends[1][1])
                sock.settimeout(15)
                while read_frame(sock, buf) is not None:
                    pass  # until the daemon closes it
            finally:
                sock.close()
            self.assertTrue(until(lambda: r.info()["connected_clients"] == 1), r.info()["connected_clients"])


class NeverEnded(unittest.TestCase):
    def test_others_on_the_same_connection_are_served(self):
        with Daemon(CONFIG % (100, "1s")) as d:
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
                body = request("same-conn").SerializeToString()
                message = b"\x00" + struct.pack(">I", len(body)) + body
                open_call(sock, 1, port)  # part of its message, never ended
                sock.sendall(frame(DATA, 0, 1, message[:8]))
                started = time.time()
                for stream in (3, 5, 7):  # whole calls on the same connection
                    open_call(sock, stream, port)
                    sock.sendall(frame(DATA, END_STREAM, stream, message))
                ch, rls = channel(d)
                with ch:  # and on another connection
                    other = rls(request("same-conn"), timeout=10).statuses[0].limit_remaining
                ends = wait_streams(sock, [1, 3, 5, 7], buf, 15)
                self.assertEqual(list(ends)[-1], 1, "the never-ended call ends last")
                self.assertLess(time.time() - started, 10)
                for stream in (3, 5, 7):
                    kind, trailers, data = ends[stream]
                    self.assertEqual(kind, "trailers")
                    resp = R.FromString(data[5:])  # after the gRPC message's prefix
                    self.assertEqual(resp.overall_code, R.OK)
                    self.assertEqual(resp.statuses[0].current_limit.requests_per_unit, 300)
                self.assertEqual(sorted([R.FromString(ends[s][2][5:]).statuses[0].limit_remaining
                                         for s in (3, 5, 7)] + [other]), [296, 297, 298, 299])
                kind, trailers, data = ends[1]
                self.assertEqual((kind, data), ("trailers", b""))
                self.assertIn(b"no complete request within limits.idle_timeout", trailers)
            finally:
                sock.close()
            self.assertTrue(d.client().ping())


    def test_partial_message_answered_after_idle_timeout(self):
        with Daemon(CONFIG % (100, "1s")) as d:
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
                open_call(sock, 1, port)
                body = request("hung").SerializeToString()
                # a gRPC message announced whole but sent in part, stream left open
                sock.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", len(body)) + body[:3]))
                started = time.time()
                ch, rls = channel(d)
                with ch:  # served all along
                    for i in range(5):
                        self.assertEqual(rls(request("normal"), timeout=10).overall_code, R.OK)
                end = wait_end(sock, 1, buf, 15)
                self.assertLess(time.time() - started, 10)
                self.assertEqual(end[0], "trailers", end)
                # the front writes these trailers as HPACK literals: DEADLINE_EXCEEDED (4) and why
                self.assertIn(b"grpc-status\x014", end[1])
                self.assertIn(b"no complete request within limits.idle_timeout", end[1])
            finally:
                sock.close()
            ch, rls = channel(d)
            with ch:
                self.assertEqual(rls(request("after"), timeout=10).overall_code, R.OK)

    def test_whole_message_without_end_stream_is_answered(self):
        with Daemon(CONFIG % (100, "300s")) as d:
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
                open_call(sock, 1, port)
                body = request("whole").SerializeToString()
                sock.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", len(body)) + body))
                end = wait_end(sock, 1, buf, 10)
                self.assertEqual(end[0], "trailers", end)
                self.assertIn(b"grpc-status\x010", end[1])
            finally:
                sock.close()
            self.assertEqual(d.client().ping(), True)


class IdleConnection(unittest.TestCase):
    def test_connection_without_calls_let_go_after_idle_timeout(self):
        with Daemon(CONFIG % (100, "1s")) as d:
            r = d.client()
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
                started = time.time()
                end = wait_end(sock, 1, buf, 15)
                self.assertEqual(end[0], "goaway", end)
                self.assertLess(time.time() - started, 10)
                sock.settimeout(15)
                while read_frame(sock, buf) is not None:
                    pass  # until the daemon closes it
            finally:
                sock.close()
            self.assertTrue(until(lambda: r.info()["connected_clients"] == 1), r.info()["connected_clients"])

    def test_connection_that_sends_nothing_is_let_go(self):
        with Daemon(CONFIG % (100, "1s")) as d:
            r = d.client()
            sock = socket.create_connection(("127.0.0.1", grpc_port(d)))
            buf = bytearray()
            try:
                sock.settimeout(15)
                while read_frame(sock, buf) is not None:
                    pass  # its SETTINGS, a GOAWAY, until the daemon closes it
            finally:
                sock.close()
            self.assertTrue(until(lambda: r.info()["connected_clients"] == 1), r.info()["connected_clients"])


class StopWhileSending(unittest.TestCase):
    def test_client_sending_at_stop_gets_answer_goaway_and_no_reset(self):
        # The client keeps sending (frames of an unknown type, which HTTP/2
        # says to ignore) while the daemon stops: what it sent after the
        # daemon's last read is unread when the connection closes, and a
        # plain close() would answer it with a reset, which can destroy the
        # answer and GOAWAY on their way. The lingering close sends FIN and
        # drops what still comes until the client closes too.
        # (A plain close() often happens to find nothing unread and sends
        # FIN; the client's sends after it are what always get the reset.)
        with Daemon(CONFIG % (100, "300s")) as d:  # its exit: status 0 once stopped
            port = grpc_port(d)
            sock = socket.create_connection(("127.0.0.1", port))
            buf = bytearray()
            stop_sending, sending = threading.Event(), threading.Event()
            failed = []

            def send_noise():
                noise = frame(0xF0, 0, 0, b"x" * 1000) * 64
                try:
                    for n in range(1 << 30):
                        if stop_sending.is_set():
                            break
                        sock.sendall(noise)
                        if n == 3:  # the daemon is reading a stream of it
                            sending.set()
                except OSError as e:
                    failed.append(e)
                sending.set()

            sender = threading.Thread(target=send_noise)
            try:
                sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
                open_call(sock, 1, port)
                body = request("at-stop").SerializeToString()
                # stream 1: part of its message, so the call is open when the daemon stops
                sock.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", len(body)) + body[:3]))
                open_call(sock, 3, port)  # a whole call first: stream 1 is then in
                sock.sendall(frame(DATA, END_STREAM, 3, b"\x00" + struct.pack(">I", len(body)) + body))
                self.assertEqual(wait_end(sock, 3, buf, 10)[0], "trailers")
                sender.start()
                self.assertTrue(sending.wait(10))
                d.signal(signal.SIGTERM)
                sock.settimeout(20)
                trailers = goaway = None
                ended = "eof"
                try:
                    while True:
                        f = read_frame(sock, buf)
                        if f is None:
                            break
                        kind, flags, sid, payload = f
                        if sid == 1 and kind == HEADERS and flags & END_STREAM:
                            trailers = payload
                        elif kind == GOAWAY:
                            goaway = payload
                except ConnectionResetError:
                    ended = "reset"
                self.assertIsNotNone(trailers, "no answer to the open call")
                self.assertIn(b"grpc-status\x0214", trailers)
                self.assertIn(b"sluiced is stopping", trailers)
                self.assertIsNotNone(goaway, "no GOAWAY")
                self.assertEqual(int.from_bytes(goaway[4:8], "big"), 0)  # NO_ERROR
                self.assertEqual(ended, "eof")
                # and what the client sends after that is still taken (and
                # dropped) until it closes: after a plain close() it would
                # be answered with a reset
                stop_sending.set()
                sender.join()
                noise = frame(0xF0, 0, 0, b"x" * 1000) * 64
                try:
                    for _ in range(8):
                        sock.sendall(noise)
                except OSError as e:
                    failed.append(e)
                self.assertEqual(failed, [])
            finally:
                stop_sending.set()
                sock.close()
                if sender.is_alive():
                    sender.join()


if __name__ == "__main__":
    harness.main()
