#!/usr/bin/env python3
"""refactor_load.py -- a fixed, deterministic workload for bench/refactor_cost.sh.

  refactor_load.py resp-throttle PORT N [DEPTH]   CL.THROTTLE k<i> 15 30 60
  refactor_load.py resp-check    PORT N [DEPTH]   SL.CHECK bench k<i>
  refactor_load.py http-check    PORT N [DEPTH]   GET /v1/check?policy=bench&key=k<i>

One connection, DEPTH requests in flight (pipelined, default 16), every reply
read before the next batch. Keys k0..k(N-1): the same bytes for every build,
so instruction counts compare like with like. Prints the replies counted.
Loopback only.
"""
import socket
import sys


def resp_cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Reader:
    def __init__(self, sock):
        self.s, self.buf, self.pos = sock, b"", 0

    def _fill(self):
        chunk = self.s.recv(1 << 16)
        if not chunk:
            raise SystemExit("connection closed by the server")
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                ln = self.buf[self.pos:i]
                self.pos = i + 2
                return ln
            self._fill()

    def take(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def resp(self):
        ln = self.line()
        t = ln[:1]
        if t == b"*":
            for _ in range(int(ln[1:])):
                self.resp()
        elif t == b"$":
            n = int(ln[1:])
            if n >= 0:
                self.take(n + 2)
        elif t == b"-":
            raise SystemExit("error reply: %r" % ln)

    def http(self):
        status = self.line()
        if not status.startswith(b"HTTP/1.1 "):
            raise SystemExit("bad status line %r" % status)
        clen = 0
        while True:
            h = self.line()
            if not h:
                break
            k, _, v = h.partition(b":")
            if k.strip().lower() == b"content-length":
                clen = int(v)
        self.take(clen)


def main():
    mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    r = Reader(s)
    if mode == "resp-throttle":
        make = lambda i: resp_cmd("CL.THROTTLE", "k%d" % i, "15", "30", "60")
        read = r.resp
    elif mode == "resp-check":
        make = lambda i: resp_cmd("SL.CHECK", "bench", "k%d" % i)
        read = r.resp
    elif mode == "http-check":
        make = lambda i: (b"GET /v1/check?policy=bench&key=k%d HTTP/1.1\r\n"
                          b"Host: 127.0.0.1\r\n\r\n" % i)
        read = r.http
    else:
        raise SystemExit(__doc__)
    done = 0
    while done < n:
        k = min(depth, n - done)
        s.sendall(b"".join(make(done + j) for j in range(k)))
        for _ in range(k):
            read()
        done += k
    s.close()
    print(done)


if __name__ == "__main__":
    main()
