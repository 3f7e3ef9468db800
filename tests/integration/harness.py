"""harness.py -- start a real sluiced for integration tests.

Each daemon listens on a free port (--resp 127.0.0.1:0; the chosen port is
read from its "ready" log line), runs on the manual test clock unless told
otherwise (tests move time with SL.TESTCLOCK, so nothing waits for a window),
and is stopped with SIGTERM, which must end it with exit status 0.

Every daemon runs in a directory of its own (a fresh temporary one, or
`workdir` for a restart in the same place): by default sluiced keeps its
state in sluice.snap in its working directory, so daemons of different
tests must never share one. Tests that start sluiced by other means do the
same (start_sluiced.sh, test_lifecycle.Startup).

The path of the daemon comes from the SLUICED environment variable (CTest
sets it) or the first argument.
"""
import io
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import redis

SLUICED = os.environ.get("SLUICED", "")

BASE_CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: ""
threads: 2
policies:
  - name: per_user
    limits:
      - {algorithm: sliding_window, limit: 5, period: 60s}
  - name: strict
    limits:
      - {algorithm: gcra, limit: 1, period: 1s}
  - name: two_limits
    limits:
      - {algorithm: sliding_log, limit: 10, period: 1h}
      - {algorithm: fixed_window, limit: 3, period: 1m}
  - name: tiered
    limits:
      - {algorithm: token_bucket, limit: 2, period: 1m}
    tiers:
      - name: premium
        keys: [alice]
        limits:
          - {algorithm: token_bucket, limit: 10, period: 1m}
"""


class Daemon:
    """A running sluiced. Use as a context manager or call stop()."""

    def __init__(self, config=BASE_CONFIG, args=(), test_clock=0, workdir=None, expect_start=True,
                 env=None):
        self.dir = workdir or tempfile.mkdtemp(prefix="sluiced-test-")
        self.config_path = os.path.join(self.dir, "sluice.yaml")
        if config is not None:
            self.write_config(config)
        argv = [SLUICED, "--resp", "127.0.0.1:0"]
        if config is not None:
            argv += ["--config", self.config_path]
        if test_clock is not None:
            argv.append("--test-clock=%d" % test_clock)
        argv += list(args)
        self.log_path = os.path.join(self.dir, "sluiced.log")
        self.log = open(self.log_path, "wb")
        environ = dict(os.environ)
        environ.pop("STATE_DIRECTORY", None)  # the tests' own, never the caller's
        environ.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     env=environ)
        self.port = None
        if expect_start:
            self.port = self.wait_ready()

    def write_config(self, text):
        with open(self.config_path, "w") as f:
            f.write(text)

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_ready(self, timeout=20.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(r" ready: resp=\S+ port=(\d+)", self.output())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise AssertionError("sluiced exited with %s:\n%s" % (self.proc.returncode, self.output()))
            time.sleep(0.02)
        raise AssertionError("sluiced did not become ready:\n" + self.output())

    def wait_log(self, pattern, timeout=10.0, count=1):
        """Waits until `count` log lines match (a pattern seen before must
        be waited for by its next occurrence)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = list(re.finditer(pattern, self.output()))
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.02)
        raise AssertionError("no %d log lines matching %r:\n%s" % (count, pattern, self.output()))

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10, **kw)

    def raw(self):
        """A plain socket, for bytes no client library would send."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return s

    def clock(self, client, op, value=None):
        args = ["SL.TESTCLOCK", op] + ([str(value)] if value is not None else [])
        return client.execute_command(*args)

    def signal(self, signum):
        self.proc.send_signal(signum)

    def kill(self):
        """SIGKILL: a crash, no snapshot at exit."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self, expect=0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("sluiced did not stop on SIGTERM:\n" + self.output())
        self.log.close()
        if expect is not None and rc != expect:
            raise AssertionError("sluiced exited with %d, expected %d:\n%s" % (rc, expect, self.output()))
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        else:
            self.stop(expect=None)


def free_port():
    """A loopback port free now (for programs that cannot be told port 0)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(proc, port, what, log=lambda: "", timeout=10.0):
    """Waits until something accepts on 127.0.0.1:port; raises with `what`
    and the program's log if proc exits first or the time runs out."""
    deadline = time.time() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError("%s did not start:\n%s" % (what, log()))
            time.sleep(0.02)


def read_reply(sock, timeout=10.0):
    """Everything the server sends until it stops talking for a moment or closes."""
    sock.settimeout(0.5)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            if data:
                return data
            continue
        if not chunk:
            return data
        data += chunk
    return data


def read_lines(sock, lines, timeout=10.0):
    """Reads until `lines` CRLF-terminated lines have arrived (a reply of
    known shape), without waiting for silence."""
    sock.settimeout(timeout)
    data = b""
    while data.count(b"\r\n") < lines:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def closed_by_peer(sock, timeout=5.0):
    sock.settimeout(timeout)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def gateway_port(daemon):
    """The gateway's port, from the daemon's ready line."""
    m = re.search(r" gateway_port=(\d+)", daemon.output())
    assert m, daemon.output()
    return int(m.group(1))


def metric(http_port, name, **labels):
    """One series of the daemon's /metrics, by name and labels in the order
    the daemon writes them; AssertionError naming it when it is absent."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    want = name + "{" + ",".join('%s="%s"' % kv for kv in labels.items()) + "} "
    for line in text.splitlines():
        if line.startswith(want):
            return float(line[len(want):])
    raise AssertionError("no %s in /metrics:\n%s" % (want, text))


def wait_metric(http_port, name, want, timeout=5.0, **labels):
    """Waits (bounded) until a series of /metrics reads `want`, and returns
    what it reads then. For the server's own state after a request the
    client has seen end: the gateway gives a request's concurrency slot
    back when libh2o disposes of the request, a moment after the client
    read the last byte of its answer."""
    deadline = time.monotonic() + timeout
    while True:
        value = metric(http_port, name, **labels)
        if value == want or time.monotonic() > deadline:
            return value
        time.sleep(0.01)


def get_at_once(port, paths, timeout=30):
    """GETs `paths` at once: every connection made first, then the requests
    written back to back, then the answers read. Returns ({path: (status,
    body)}, the monotonic time just before the first was written, which no
    decision on them precedes). A thread per request, each opening its own
    connection, spread the arrivals over tens of ms on a loaded machine
    (more under ASan), and a request arriving late is given a later place
    (or one within max_delay it would not have had at once)."""
    import http.client
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=timeout) for _ in paths]
    try:
        for c in conns:
            c.connect()
        sent_at = time.monotonic()
        for c, path in zip(conns, paths):
            c.request("GET", path)
        results = {}
        for c, path in zip(conns, paths):
            resp = c.getresponse()
            results[path] = (resp.status, resp.read().decode())
        return results, sent_at
    finally:
        for c in conns:
            c.close()


def access_log(path, count, path_prefix="", timeout=10.0):
    """The entries of the gateway's access log whose path starts with
    `path_prefix`, once there are `count` of them, parsed (a line is
    written when libh2o disposes of the request, a moment after its client
    read the answer)."""
    import json
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path, "rb") as f:
                entries = [json.loads(line) for line in f.read().split(b"\n") if line]
        except FileNotFoundError:
            entries = []
        entries = [e for e in entries if e["path"].startswith(path_prefix)]
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.02)


# SO_TIMESTAMPNS (Linux, x86-64 and arm64; the socket module does not name it)
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class _StampedReads(io.RawIOBase):
    """A connection's reads, noting when the kernel received the bytes of
    the first read since `first` was cleared (SO_TIMESTAMPNS on the socket:
    its receive time, CLOCK_REALTIME, told here in time.monotonic())."""

    def __init__(self, sock):
        super().__init__()
        self.sock = sock
        self.first = None

    def readable(self):
        return True

    def readinto(self, b):
        n, ancillary, _, _ = self.sock.recvmsg_into([b], socket.CMSG_SPACE(16))
        for level, kind, data in ancillary:
            if self.first is None and level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", data[:16])
                self.first = sec + nsec / 1e9 - (time.time() - time.monotonic())
        return n


def stamp_arrivals(up):
    """Makes upstream.Upstream `up` note when each request reached its
    socket, for arrival(request): the kernel's receive time of the request's
    first bytes. time.monotonic() in answer() is when a Python thread got
    to parse it, which on a loaded machine came up to 72 ms later (the
    thread waits for a CPU and the GIL), and as much as 7 % of a 100 ms
    schedule's slope was that wait, not the gateway's. Call it before
    anything connects (accepted sockets inherit the option)."""
    up.server.socket.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    base = up.server.RequestHandlerClass

    class Stamped(base):
        def setup(self):
            super().setup()
            self.rfile.close()  # unbuffered reads of the socket, with their stamps
            self.stamps = _StampedReads(self.connection)
            self.rfile = io.BufferedReader(self.stamps)

        def handle_one_request(self):
            self.stamps.first = None  # a request's bytes come in reads of their own (no pipelining)
            super().handle_one_request()

    up.server.RequestHandlerClass = Stamped


def arrival(request):
    """When request (an upstream's handler) reached the upstream's socket,
    in time.monotonic(): its kernel stamp where stamp_arrivals() set one
    up, else now."""
    stamps = getattr(request, "stamps", None)
    return stamps.first if stamps is not None and stamps.first is not None else time.monotonic()


def cpu_wait(pid):
    """Seconds the threads of process pid have spent waiting for a CPU
    (runnable, not running: /proc/PID/task/*/schedstat, its second field),
    summed; 0.0 where the kernel keeps no such count."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread gone meanwhile, or no schedstat
    return total / 1e9


def assert_burst_then_schedule(case, log, arrivals, sent_at, at_once, period, note=None):
    """A burst on one key through a route with excess: delay: `at_once`
    forwarded at once, the rest held one `period` apart, checked against
    the gateway's own account and the upstream's arrival times.

    `log`: the route's access-log entries (the gateway says which request
    it held); `arrivals`: {path: monotonic time the request reached the
    upstream's socket} (stamp_arrivals(): not when a Python thread got to
    it); `sent_at`: the client's clock just before it sent them, which no
    decision precedes; `note`: added to a failure's message (what the
    machine did meanwhile, e.g. cpu_wait()). Which requests were held is taken from the log, not
    from the order of arrivals: under ASan on a loaded machine a request
    forwarded at once opened a new upstream connection and arrived up to
    230 ms after the sending, behind the first held ones.

    - the gateway held none of the burst (its own clock: under 100 ms from
      handler to upstream). Its figure for the held ones is not compared:
      it runs from the handler, while a hold runs from the loop's time,
      read when the loop woke, which under ASan came 7 ms before the
      handler of a request late in a busy turn;
    - never early at the upstream: the k-th held arrival is no sooner than
      sent_at + k periods, less 10 ms (libuv's loop time is whole ms, read
      when the loop woke; its timers fire on it). The origin is the
      client's, not an arrival: the first held arrival may itself be late;
    - spaced one period apart: the Theil-Sen slope of the held arrivals
      (the median of all pairwise slopes) within 8 % of the period. A late
      arrival bends only the pairs it is in, by its lateness over their
      distance; the median of neighbouring gaps carried whole the few ms by
      which the two workers' loops read their clocks apart (3.6 ms off at
      load 8). Measured under ASan at load 13, 20 bursts (the test and 12
      busy loops at nice 19): the kernel-stamped slope stayed within 4 %,
      the slope of the times Python took within 7.2 %. A held request that
      left late had its worker's thread off the CPU, not busy: 0.0-0.4 ms
      of CPU in a loop turn of 68-140 ms (its timer set from the fresh
      loop time, the upstream written 0.1 ms after it fired); a machine
      that keeps the daemon from a CPU for longer still fails it, and
      `note` then says how long its threads waited for one."""
    burst = [e for e in log if e["decision"] == "forwarded"]
    held = [e for e in log if e["decision"] == "delayed"]
    case.assertEqual(len(burst), at_once, log)
    for e in burst:
        case.assertLess(e["delay_ms"], 100, e)
    times = sorted(arrivals[e["path"]] for e in held)
    for k, t in enumerate(times, 1):
        case.assertGreater(t - (sent_at + period * k), -0.01, (k, sent_at, times, note))
    slopes = sorted((times[j] - times[i]) / (j - i) for i in range(len(times)) for j in range(i + 1, len(times)))
    slope = slopes[len(slopes) // 2]
    case.assertLess(abs(slope - period), 0.08 * period, ("slope", slope, times, note))


def main():
    global SLUICED
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]) and os.access(sys.argv[1], os.X_OK):
        SLUICED = sys.argv.pop(1)
    if not SLUICED or not os.access(SLUICED, os.X_OK):
        sys.exit("set SLUICED or pass the path of the sluiced binary")
    os.environ["SLUICED"] = SLUICED
    unittest.main(verbosity=2)
