"""test_migrate_nginx.py -- docs/migrate/nginx.md: nginx limit_req and the
sluice policy the guide maps it to decide the same request trace alike.

For each example pair of the guide, a real nginx runs the guide's
limit_req lines (limit_req_zone in http, the rest in a location serving a
small file, on a free loopback port, with its own prefix directory), and a
sluiced runs the guide's YAML on the manual test clock. The test sends nginx
a timed trace (groups of requests at planned offsets, from one loopback
source address, which is $binary_remote_addr), then replays the same trace
through sluiced's forward-auth from the same address, setting the test
clock to the time each group was really sent. The admitted/denied
sequences must be equal, and both must equal the GCRA of the guide's
formula (computed here).

nginx has a real millisecond clock. Each group of the trace is pipelined on
one connection, and nginx's access log says when it read each request, on
its own clock. sluiced replays those times on its test clock, so both get
the same trace even when the machine made the sends, or the client's view
of the answers, late. A run counts when no decision lies within the timing
uncertainty (half the widest group, plus nginx's millisecond) of its
boundary; the traces are designed with every decision at least MARGIN from
it (checked below), so that is the rule, and a run that missed it (a group
that nginx itself read over more than 2 x MARGIN) is repeated from a fresh
source address, at most five times.

nginx is required (/usr/sbin/nginx, Debian's package nginx): without it the
test fails rather than being skipped.
"""
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import harness
import migrate_guides as guides
from test_http import HttpDaemon, S, T0, http_config

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
GUIDE = "nginx.md"
MS = 1000                 # µs
MARGIN = 50 * MS          # nearest a planned decision is to its boundary (the design of the traces)

# (offset in ms, requests sent at once)
TRACE_BURST = [(0, 25), (250, 4), (1050, 10), (3200, 25), (3500, 2)]
TRACE_SPACED = [(0, 2), (150, 2), (300, 1), (350, 1), (450, 1), (600, 3), (1000, 1), (1050, 1)]
TRACE_TWO = [(0, 5), (400, 3), (1250, 2), (1650, 2), (2500, 1), (3550, 2)]


def gcra(groups, limits, margin):
    """The guide's rule: groups [(time in µs, requests at that time)] and
    limits [(limit, period in µs, burst)] -> [(allowed, certain)] per
    request. A request passes if every limit passes, and then charges them
    all (several limit_req in a location, a policy's limits). certain:
    moving every group's time by up to `margin` (in any direction, each its
    own way) cannot change the decision. Moving times moves each theoretical
    arrival time (TAT) by no more than the largest move, so a limit's
    verdict is certain when it is at least 2 x margin from its boundary; and
    a request a limit allows in a group that starts on a key that limit has
    forgotten stays allowed at any distance, since later members of a group
    only ever come later."""
    tats = [None] * len(limits)
    out = []
    for t, count in groups:
        recovered = [tat is None or tat <= t - 2 * margin for tat in tats]
        for _ in range(count):
            verdicts = []
            for i, (limit, period_us, burst) in enumerate(limits):
                T = period_us // limit
                base = t if tats[i] is None else max(tats[i], t)
                d = (base - t) - T * burst            # allowed iff d <= 0 (tau - T = T x burst)
                verdicts.append((d <= 0, abs(d) >= 2 * margin or (d <= 0 and recovered[i]), base + T))
            allowed = all(v[0] for v in verdicts)
            out.append((allowed, all(v[1] for v in verdicts)))
            if allowed:
                tats = [v[2] for v in verdicts]
    return out


class Nginx:
    """nginx with an http-context snippet and a location snippet."""

    def __init__(self, http_lines, location_lines, server_lines=""):
        if not (os.path.isfile(NGINX) and os.access(NGINX, os.X_OK)):
            raise AssertionError("nginx is not installed at %s (apt-get install nginx); this test needs it" % NGINX)
        self.dir = d = tempfile.mkdtemp(prefix="nginx-migrate-")
        os.chmod(d, 0o755)  # started as root, the workers run as nobody
        with open(os.path.join(d, "ok.txt"), "w") as f:
            f.write("ok\n")
        os.chmod(os.path.join(d, "ok.txt"), 0o644)
        self.port = guides.free_port()
        self.conf = os.path.join(d, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write("""\
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    log_format timing '$msec $request_time $status';   # when nginx answered, how long it held
    access_log {d}/access.log timing;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{http}
    server {{
        listen 127.0.0.1:{port};
{server}
        location / {{
{location}
            default_type text/plain;
            root {d};
            try_files /ok.txt =404;   # content after the access phases, where limit_req runs
        }}
    }}
}}
""".format(d=d, port=self.port, http=http_lines, server=server_lines, location=location_lines))
        argv = [NGINX, "-p", d + "/", "-c", self.conf, "-e", os.path.join(d, "error.log")]
        t = subprocess.run(argv + ["-t"], capture_output=True, text=True, timeout=30)
        if t.returncode != 0:
            raise AssertionError("nginx -t refused the guide's lines:\n" + t.stderr + "\n" + open(self.conf).read())
        self.out = open(os.path.join(d, "nginx.out"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT)
        try:
            harness.wait_listening(self.proc, self.port, "nginx")
        except AssertionError:
            self.stop()
            raise

    def timings(self, count=0):
        """[(read, answered, status)] of every request, ms on nginx's clock,
        once at least `count` are logged (nginx logs a request after
        sending its answer)."""
        deadline = time.monotonic() + 10
        while True:
            out = []
            with open(os.path.join(self.dir, "access.log")) as f:
                for line in f:
                    if not line.endswith("\n"):
                        break
                    done, took, status = line.split()
                    done_ms, took_ms = round(float(done) * 1000), round(float(took) * 1000)
                    out.append((done_ms - took_ms, done_ms, int(status)))
            if len(out) >= count or time.monotonic() > deadline:
                return out
            time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def split_nginx(block):
    """The guide's nginx block: (http, location, server) lines. limit_req_zone
    goes to http { }, the other limit_req directives to the location, the
    rest (real_ip) to the server."""
    parts = ([], [], [])
    for line in block.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        where = 0 if line.startswith("limit_req_zone") else 1 if line.startswith("limit_req") else 2
        parts[where].append("    " + line)
    return tuple("\n".join(p) for p in parts)


def get(port, path="/", source=None, headers=None, host="127.0.0.1"):
    conn = http.client.HTTPConnection(host, port, timeout=10, source_address=(source, 0) if source else None)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


class Pipeline:
    """One keep-alive connection from a chosen loopback source address. A
    group of requests is written in one send (HTTP/1.1 pipelining), so nginx
    reads them together and decides them at (nearly) one instant of its
    clock, however loaded the machine is."""

    def __init__(self, port, source):
        self.sock = socket.socket()
        self.sock.bind((source, 0))
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""

    def group(self, count):
        self.sock.sendall(b"GET / HTTP/1.1\r\nHost: nginx\r\n\r\n" * count)
        return [self.response() for _ in range(count)]

    def response(self):
        while b"\r\n\r\n" not in self.buf:
            self.read()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
            if name.strip().lower() == "transfer-encoding":
                raise AssertionError("nginx answered chunked; expected a Content-Length: " + head.decode())
        while len(self.buf) < length:
            self.read()
        self.buf = self.buf[length:]
        return int(lines[0].split()[1])

    def read(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise AssertionError("nginx closed the connection")
        self.buf += chunk

    def close(self):
        self.sock.close()


class Sources:
    """Fresh loopback addresses (127.0.x.y): each run is a new nginx key and a new sluice key."""

    def __init__(self, third):
        self.third, self.n = third, 0

    def next(self):
        self.n += 1
        return "127.0.%d.%d" % (self.third, self.n)


class SameTrace(unittest.TestCase):
    def run_nginx(self, nginx, trace, source):
        """Sends the trace on its schedule, each group pipelined: (allowed
        list, [(first, last)] per group: when nginx read the group's first
        and last request, in µs on nginx's clock from its first request)."""
        logged = len(nginx.timings())
        c = Pipeline(nginx.port, source)
        try:
            out = []
            start = time.monotonic()
            for offset, count in trace:
                while True:
                    wait = start + offset / 1000.0 - time.monotonic()
                    if wait <= 0:
                        break
                    time.sleep(min(wait, 0.05))
                statuses = c.group(count)
                for status in statuses:
                    self.assertIn(status, (200, 429))
                    out.append(status == 200)
        finally:
            c.close()
        # a group's requests are logged in order, each when answered
        timings = nginx.timings(logged + len(out))[logged:]
        self.assertEqual([st == 200 for _, _, st in timings], out, timings)
        when, at = [], 0
        for _, count in trace:
            read = [r - timings[0][0] for r, _, _ in timings[at:at + count]]
            when.append((min(read) * MS, max(read) * MS))
            at += count
        return out, when

    def run_sluice(self, d, policy, groups, source, t0):
        out = []
        for t, count in groups:
            d.clock(d.resp, "SET", t0 + t)
            for _ in range(count):
                status, _ = get(d.http_port, "/v1/auth/" + policy, source=source)
                self.assertIn(status, (200, 429))
                out.append(status == 200)
        return out

    def same_trace(self, tag, policy, trace, limits, third):
        """nginx runs the trace on its real clock; sluiced replays the times
        nginx read each group (the middle of its first and last request, by
        nginx's log) on its test clock. A run counts when no decision is within reach of
        that uncertainty (half the widest group, plus nginx's millisecond);
        else it is run again from a fresh address, at most five times."""
        planned = [(offset * MS, count) for offset, count in trace]
        design = gcra(planned, limits, MARGIN // 2)
        self.assertTrue(all(ok for _, ok in design), "the trace itself has a decision within %d ms of a "
                        "boundary: %r" % (MARGIN // MS, design))
        http_lines, location, server = split_nginx(guides.block(GUIDE, "nginx-" + tag))
        nginx = Nginx(http_lines, location, server)
        self.addCleanup(nginx.stop)
        d = HttpDaemon(http_config(guides.block(GUIDE, "sluice-" + tag)), test_clock=T0)
        self.addCleanup(d.stop)
        sources = Sources(third)
        widths = []
        for attempt in range(5):
            source = sources.next()
            got_nginx, when = self.run_nginx(nginx, trace, source)
            groups = [((a + b) // 2, count) for (a, b), (_, count) in zip(when, trace)]
            width = max(b - a for a, b in when)
            widths.append(width // MS)
            model = gcra(groups, limits, width // 2 + 1 * MS)
            if all(ok for _, ok in model):
                break
        else:
            self.fail("nginx: in five runs some decision fell within reach of the timing uncertainty (widest "
                      "groups %r ms); the machine is too loaded to compare with a real clock" % widths)
        got_sluice = self.run_sluice(d, policy, groups, source, T0 + 100 * S * (attempt + 1))
        self.assertEqual(got_nginx, got_sluice, "nginx vs sluice, same trace %r" % groups)
        self.assertEqual([a for a, _ in model], got_sluice, "sluice vs the guide's formula")
        return got_sluice

    def test_burst_nodelay(self):
        got = self.same_trace("burst", "per_ip", TRACE_BURST, [(10, S, 20)], 11)
        self.assertEqual(got[:25], [True] * 21 + [False] * 4)   # "21 requests at once pass"

    def test_spaced(self):
        got = self.same_trace("spaced", "spaced", TRACE_SPACED, [(10, S, 0)], 12)
        self.assertEqual(got[:2], [True, False])

    def test_two_zones(self):
        got = self.same_trace("two", "two", TRACE_TWO, [(10, S, 2), (60, 60 * S, 4)], 13)
        self.assertEqual(got[:8], [True] * 3 + [False] * 2 + [True] * 2 + [False])  # 3 at once, 5 in a second


class Delay(unittest.TestCase):
    """rate=5r/s burst=3 delay=1: six requests at once; nginx holds the
    admitted ones, sluice's shaper says for how long (minus delay x 1000 / rate)."""

    def test_delays(self):
        http_lines, location, server = split_nginx(guides.block(GUIDE, "nginx-delay"))
        nginx = Nginx(http_lines, location, server)
        self.addCleanup(nginx.stop)
        d = HttpDaemon(http_config(guides.block(GUIDE, "sluice-delay")), test_clock=T0)
        self.addCleanup(d.stop)
        # six connections first, then the six requests in one loop: they
        # reach nginx together however slow thread starts and connects are
        socks = [socket.create_connection(("127.0.0.1", nginx.port), timeout=10,
                                          source_address=("127.0.14.1", 0)) for _ in range(6)]
        for s in socks:
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        for s in socks:
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            self.assertTrue(data.startswith(b"HTTP/1.1 "), data[:100])
        # what nginx did, on its own clock: when it read each request and
        # when it answered, so that how late the client saw the answers
        # (a loaded machine) does not count
        timings = sorted(nginx.timings(6))
        statuses = sorted(st for _, _, st in timings)
        self.assertEqual([200] * 4 + [429] * 2, statuses, timings)
        first = timings[0][0]
        waited = sorted(done - first for _, done, st in timings if st == 200)

        sluice = []
        for _ in range(6):
            r = d.post_json("/v1/check", {"policy": "queued", "attributes": {"ip": "127.0.14.1"}})
            sluice.append((r.status, r.json().get("delay_ms")))
        self.assertEqual([(200, 0), (200, 200), (200, 400), (200, 600), (429, None), (429, None)],
                         [(s, ms if s == 200 else None) for s, ms in sluice])
        hold = [max(0, ms - 1 * 1000 // 5) for s, ms in sluice if s == 200]
        self.assertEqual([0, 0, 200, 400], hold)
        for want, got in zip(hold, waited):
            # from nginx reading the first request to its answer, in whole
            # milliseconds; the upper bound allows nginx itself to run late
            self.assertGreaterEqual(got, want - 5, (hold, waited))
            self.assertLess(got, want + 150, (hold, waited))


class RealIp(unittest.TestCase):
    """set_real_ip_from / real_ip_recursive on and trusted_proxies pick the
    same client address (the guide's 10.0.0.0/8 balancer becomes 127.0.0.0/8
    here, the only addresses a test can connect from), and ipv6_prefix: 128
    counts IPv6 addresses apart as $binary_remote_addr does."""

    def test_same_keys(self):
        block = guides.block(GUIDE, "nginx-realip").replace("10.0.0.0/8", "127.0.0.0/8")
        nginx = Nginx(*split_nginx(block))
        self.addCleanup(nginx.stop)
        config = guides.block(GUIDE, "sluice-realip").replace("10.0.0.0/8", "127.0.0.0/8")
        d = HttpDaemon(http_config(config), test_clock=T0)
        self.addCleanup(d.stop)
        forwarded = ["198.51.100.1, 203.0.113.7, 127.1.2.3", "203.0.113.7", "203.0.113.8, 127.9.9.9",
                     "203.0.113.7, 127.0.0.9", "203.0.113.8", "2001:db8::1", "2001:db8::2", "2001:db8::1",
                     "198.51.100.1"]
        got_nginx = [get(nginx.port, "/", source="127.0.0.5", headers={"X-Forwarded-For": f})[0] == 200
                     for f in forwarded]
        got_sluice = [get(d.http_port, "/v1/auth/per_ip", source="127.0.0.5", headers={"X-Forwarded-For": f})[0]
                      == 200 for f in forwarded]
        # one a minute: each address is allowed once, then denied
        self.assertEqual([True, False, True, False, False, True, True, False, True], got_sluice)
        self.assertEqual(got_sluice, got_nginx)


class Guide(unittest.TestCase):
    def test_every_example_is_run(self):
        guides.assert_all_run(self, GUIDE, ["nginx-burst", "sluice-burst", "nginx-spaced", "sluice-spaced",
                                            "nginx-two", "sluice-two", "nginx-delay", "sluice-delay",
                                            "nginx-realip", "sluice-realip"])

    def test_sluice_blocks_pass_check_config(self):
        for tag in ("sluice-burst", "sluice-spaced", "sluice-two", "sluice-delay", "sluice-realip"):
            with self.subTest(tag=tag):
                work = tempfile.mkdtemp(prefix="sluice-migrate-")
                self.addCleanup(shutil.rmtree, work, True)
                path = os.path.join(work, "sluice.yaml")
                with open(path, "w") as f:
                    f.write(guides.block(GUIDE, tag))
                r = subprocess.run([harness.SLUICED, "--config", path, "--check-config"], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(0, r.returncode, r.stderr)
                self.assertIn("valid", r.stdout)


if __name__ == "__main__":
    harness.main()
