#!/usr/bin/env python3
"""waiters.py -- what a queued waiter costs sluiced in memory.

Starts one sluiced (one worker thread), opens N client connections to it
and measures its resident memory (VmRSS) three times:

  rss0  started, no client;
  rss1  N connections open, each having had one answered PING (so its
        read buffer and client state exist);
  rss2  every connection holding one waiter that will not be admitted
        during the measurement.

Printed as one JSON line per kind: bytes per idle connection
(rss1 - rss0) / N, bytes per waiter on top of its connection
(rss2 - rss1) / N, and all-in (rss2 - rss0) / N. Kinds:

  resp     SL.ACQUIRE wait <key> TIMEOUT 3600000 (RESP; a connection
           holds one, as with BLPOP)
  http     GET /v1/check?policy=wait&key=<key>&wait=1h (HTTP/1.1)
  gateway  GET /delay/ with X-Key: <key> on a gateway route with
           excess: delay, max_delay 1h (HTTP/1.1); the upstream is never
           reached during the measurement (a closed port)
  http2    the http kind's request over HTTP/2, STREAMS (100, libh2o's
           most per connection) on each of N / STREAMS connections, sent
           by h2load
  gateway2 the gateway kind's over HTTP/2 the same way (keyed by the path,
           /delay/<key>, since h2load sends the same headers on every
           request)

The HTTP/2 kinds are how 100,000 waiters fit under an open-file limit of
20,000 (a sandbox whose root cannot raise it): with one waiter per
connection (resp, http, gateway), N is cut to what the limit allows. For
them rss1 is taken with no connection yet (h2load opens them as it sends),
so only "all-in" is given, the connection's share included (1/STREAMS of
one); the script waits until /metrics shows every waiter (the route's
queue depth, or allowed decisions: a reservation is one) before reading
rss2, and "early" is the number of h2load processes that had ended (got
all their answers) by then: 0 when every waiter was still held. h2load
starts each connection at the top of its URI list, so the waiters come
from N / (STREAMS x 50) h2load processes of 50 connections, each with
STREAMS keys of its own: 50 waiters per key.

The waiters spread over KEYS keys of a gcra limit of 1 per 60 s, burst 0;
each key's one immediate place is taken first (SL.CHECK / a plain check),
so the first waiter of a key is admitted 60 s later, the last at
(N / KEYS) x 60 s (under the 1 h most a wait may last). The measurement
takes well under 60 s after the keys are taken; the script checks that no
waiter was answered before rss2 was read.

Each connection is one descriptor on both sides, so the script raises its
own open-file limit and sluiced's (limits.max_connections, which sluiced
turns into its RLIMIT_NOFILE), and spreads its connections over the source
addresses 127.0.0.2, 127.0.0.3, ... (about 20,000 each) so that loopback's
ephemeral ports do not run out. Only 127.0.0.1 is connected to.

    waiters.py [--kinds resp,http,gateway] [--n 100000] [--keys 2000]
               [--sluiced build/sluiced] [--port 18301] [--pin]

Not a test: it never fails on size. Kernel socket buffers are not in
sluiced's RSS; /proc/net/sockstat's TCP "mem" (pages, both ends) is
printed beside it.
"""
import argparse
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time

PER_SOURCE = 20000
W = 50  # HTTP/2 kinds: connections per h2load process, so waiters per key
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for %d" % pid)


def tcp_mem_pages():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                parts = line.split()
                return int(parts[parts.index("mem") + 1])
    return -1


def wait_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d did not open" % port)


def config(kind, port, n):
    listen = {"resp": "{resp: 127.0.0.1:%d}" % port,
              "http": "{resp: 127.0.0.1:0, http: 127.0.0.1:%d}" % port,
              "http2": "{resp: 127.0.0.1:0, http: 127.0.0.1:%d}" % port,
              "gateway": "{resp: 127.0.0.1:0}",
              "gateway2": "{resp: 127.0.0.1:0, http: 127.0.0.1:%d}" % (port + 2)}[kind]
    text = ("listen: %s\nlimits: {max_connections: %d, idle_timeout: 0}\n" % (listen, n + 1000))
    if kind.startswith("gateway"):
        # the upstream port is the gateway's own port + 1, where nothing listens
        text += ("gateway:\n  listen: 127.0.0.1:%d\n  routes:\n    - name: delay\n"
                 "      match: {path_prefix: /delay/}\n      upstream: http://127.0.0.1:%d\n"
                 "      policies: [wait]\n      excess: delay\n      max_delay: 1h\n"
                 "      queue: %d\n" % (port, port + 1, n + 1000))
        key = '["header:X-Key"]' if kind == "gateway" else "[endpoint]"
    else:
        key = "[key]"
    text += ("policies:\n  - name: wait\n    key: %s\n"
             "    limits: [{algorithm: gcra, limit: 1, period: 60s, burst: 0}]\n" % key)
    return text


def request(kind, key):
    if kind == "resp":
        args = [b"SL.ACQUIRE", b"wait", key.encode(), b"TIMEOUT", b"3600000"]
        return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    if kind == "http":
        return ("GET /v1/check?policy=wait&key=%s&wait=1h HTTP/1.1\r\nHost: b\r\n\r\n" % key).encode()
    return ("GET /delay/ HTTP/1.1\r\nHost: b\r\nX-Key: %s\r\n\r\n" % key).encode()


def ping(kind):
    if kind == "resp":
        return b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n"
    # an HTTP request every kind answers without deciding anything: 404
    return b"GET /nowhere HTTP/1.1\r\nHost: b\r\n\r\n", None


def read_answer(sock, want):
    sock.settimeout(10)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed while reading an answer")
        data += chunk
        if want is not None and data.startswith(want):
            return
        if want is None and b"\r\n\r\n" in data:
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if len(body) >= length:
                return


def metric(port, name, label=""):
    """The sum of a /metrics series' samples (with `label` in their labels)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    total = 0.0
    for line in data.decode(errors="replace").split("\n"):
        if line.startswith(name) and (line[len(name)] in "{ ") and label in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def take_keys(kind, port, keys):
    """Each key's one immediate place, so the waiters after it wait."""
    s = socket.create_connection(("127.0.0.1", port))
    for k in range(keys):
        key = "k%d" % k
        if kind == "gateway2":
            s.sendall(("GET /delay/%s HTTP/1.1\r\nHost: b\r\n\r\n" % key).encode())
            read_answer(s, None)
        elif kind == "resp":
            s.sendall(b"*3\r\n$8\r\nSL.CHECK\r\n$4\r\nwait\r\n$%d\r\n%s\r\n" % (len(key), key.encode()))
            read_answer(s, b"*")
        elif kind in ("http", "http2"):
            s.sendall(("GET /v1/check?policy=wait&key=%s HTTP/1.1\r\nHost: b\r\n\r\n" % key).encode())
            read_answer(s, None)
        else:
            # the first request of a key passes at once and goes to the (closed)
            # upstream, which answers 502 quickly: it spends the key's place
            s.sendall(("GET /delay/ HTTP/1.1\r\nHost: b\r\nX-Key: %s\r\n\r\n" % key).encode())
            read_answer(s, None)
    s.close()


def measure(kind, args):
    work = tempfile.mkdtemp(prefix="waiters-")
    cfg = os.path.join(work, "sluice.yaml")
    with open(cfg, "w") as f:
        f.write(config(kind, args.port, args.n))
    cmd = [args.sluiced, "--snapshot", "off", "--config", cfg, "--threads", "1"]
    if args.pin:
        cmd = ["taskset", "-c", "0"] + cmd
    log = open(os.path.join(work, "sluiced.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    socks = []
    try:
        wait_port(args.port)
        time.sleep(0.5)
        rss0 = rss_kib(proc.pid)
        mem0 = tcp_mem_pages()
        out, want = ping(kind)
        t = time.monotonic()
        for i in range(args.n):
            src = "127.0.0.%d" % (2 + i // PER_SOURCE)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((src, 0))
            s.connect(("127.0.0.1", args.port))
            s.sendall(out)
            read_answer(s, want)
            socks.append(s)
        connect_s = time.monotonic() - t
        time.sleep(1.0)
        rss1 = rss_kib(proc.pid)
        take_keys(kind, args.port, args.keys)
        t = time.monotonic()
        for i, s in enumerate(socks):
            s.sendall(request(kind, "k%d" % (i % args.keys)))
        # let the daemon read and queue every request; then nothing may have
        # been answered yet (every waiter is at least 60 s away)
        time.sleep(max(2.0, args.n / 20000.0))
        queue_s = time.monotonic() - t
        rss2 = rss_kib(proc.pid)
        mem2 = tcp_mem_pages()
        sel = selectors.DefaultSelector()
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        answered = len(sel.select(timeout=0))
        sel.close()
        n = args.n
        line = {"bench": "waiters", "kind": kind, "waiters": n, "keys": args.keys,
                "rss0_kib": rss0, "rss1_kib": rss1, "rss2_kib": rss2,
                "bytes_per_connection": round((rss1 - rss0) * 1024.0 / n, 1),
                "bytes_per_waiter": round((rss2 - rss1) * 1024.0 / n, 1),
                "bytes_all_in": round((rss2 - rss0) * 1024.0 / n, 1),
                "answered_early": answered,
                "tcp_mem_pages_delta_both_ends": mem2 - mem0,
                "connect_s": round(connect_s, 1), "queue_s": round(queue_s, 1)}
        print(json.dumps(line), flush=True)
        return line
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def measure_h2(kind, args, n):
    work = tempfile.mkdtemp(prefix="waiters-")
    cfg = os.path.join(work, "sluice.yaml")
    with open(cfg, "w") as f:
        f.write(config(kind, args.port, n))
    cmd = [args.sluiced, "--snapshot", "off", "--config", cfg, "--threads", "1"]
    if args.pin:
        cmd = ["taskset", "-c", "0"] + cmd
    log = open(os.path.join(work, "sluiced.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    clients = []
    try:
        wait_port(args.port)
        mport = args.port + 2 if kind == "gateway2" else args.port
        wait_port(mport)
        time.sleep(0.5)
        rss0 = rss_kib(proc.pid)
        keys = (n + W * args.streams - 1) // (W * args.streams) * args.streams
        take_keys(kind, args.port, keys)
        time.sleep(0.5)
        rss1 = rss_kib(proc.pid)
        base = metric(mport, "sluice_decisions_total", 'result="allowed"')
        # h2load starts every connection at the top of its URI list, so one
        # h2load process with STREAMS keys and W connections puts W waiters
        # on each of its keys; PROCS processes cover N with their own keys
        per_proc = args.streams * W
        procs = (n + per_proc - 1) // per_proc
        clients = []
        for p in range(procs):
            uris = os.path.join(work, "uris%d" % p)
            with open(uris, "w") as f:
                for j in range(args.streams):
                    k = p * args.streams + j
                    if kind == "gateway2":
                        f.write("http://127.0.0.1:%d/delay/k%d\n" % (args.port, k))
                    else:
                        f.write("http://127.0.0.1:%d/v1/check?policy=wait&key=k%d&wait=1h\n" % (args.port, k))
            m = min(per_proc, n - p * per_proc)
            ccmd = ["h2load", "-t", "1", "-c", str(W), "-m", str(args.streams), "-n", str(m), "-i", uris]
            if args.pin:
                ccmd = ["taskset", "-c", "1"] + ccmd
            clients.append(subprocess.Popen(ccmd, stdout=open(os.path.join(work, "h2load%d.log" % p), "w"),
                                            stderr=subprocess.STDOUT))
        conns = procs * W
        t = time.monotonic()
        if kind == "gateway2":
            seen = lambda: metric(mport, "sluice_gateway_queue_depth", 'route="delay"')
            goal = n
        else:
            # each waiter is one allowed decision (its reservation) when queued
            seen = lambda: metric(mport, "sluice_decisions_total", 'result="allowed"') - base
            goal = n
        got = 0
        while time.monotonic() - t < 100:
            got = seen()
            if got >= goal:
                break
            time.sleep(1.0)
        queue_s = time.monotonic() - t
        time.sleep(1.0)
        rss2 = rss_kib(proc.pid)
        denied = metric(mport, "sluice_decisions_total", 'result="denied"')
        line = {"bench": "waiters", "kind": kind, "waiters": n, "seen": int(got), "denied": int(denied),
                "keys": keys,
                "connections": conns, "streams": args.streams,
                "rss0_kib": rss0, "rss1_kib": rss1, "rss2_kib": rss2,
                "bytes_all_in": round((rss2 - rss1) * 1024.0 / n, 1),
                "h2load_exited": sum(c.poll() is not None for c in clients),
                "queue_s": round(queue_s, 1)}
        print(json.dumps(line), flush=True)
        return line
    finally:
        for c in clients:
            c.terminate()
            c.wait()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="resp,http,gateway,http2,gateway2")
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--sluiced", default=os.path.join(ROOT, "build", "sluiced"))
    ap.add_argument("--port", type=int, default=18301)
    ap.add_argument("--pin", action="store_true", help="sluiced on CPU 0 (taskset)")
    args = ap.parse_args()
    if args.n // args.keys * 60 > 3600:
        sys.exit("n / keys x 60 s must stay within the 1 h a waiter may wait")
    want = args.n + 2000
    h2n = args.n
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            # not root: as many as the hard limit allows, and say so
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            args.n = max(100, (hard - 2000) // 1000 * 1000)
            print("the open-file limit cannot be raised to %d (hard limit %d; raising it needs CAP_SYS_RESOURCE): "
                  "measuring %d waiters on the kinds with one connection each" % (want, hard, args.n), file=sys.stderr)
    lines = [measure_h2(k, args, h2n) if k.endswith("2") else measure(k, args)
             for k in args.kinds.split(",")]
    print()
    print("%-8s %8s %7s %12s %12s %12s %8s" % ("kind", "waiters", "conns", "B/conn", "B/waiter",
                                              "B all-in", "early"))
    for l in lines:
        print("%-8s %8d %7d %12s %12s %12.1f %8d" % (
            l["kind"], l["waiters"], l.get("connections", l["waiters"]),
            l.get("bytes_per_connection", "-"), l.get("bytes_per_waiter", "-"), l["bytes_all_in"],
            l.get("answered_early", l.get("h2load_exited"))))
    print("# RSS of sluiced (one worker thread); B/conn: an idle connection after one answer; "
          "B/waiter: what holding one waiter adds; kernel socket buffers not included")


if __name__ == "__main__":
    main()
