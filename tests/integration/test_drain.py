"""test_drain.py -- SIGTERM under load: sluiced drains (issue 12, item 5).

Several RESP and HTTP clients pipeline charges on one key while SIGTERM
arrives. sluiced stops accepting, answers what it has read, closes each
connection cleanly after its last reply, writes its snapshot and exits 0.
Every reply a client received as "allowed" is counted; after a restart from
the snapshot the key has been charged at least that many times (no admitted
charge lost), and no client saw a reset: each connection ends with a clean
end of stream after whole replies.
"""
import os
import re
import signal
import socket
import threading
import time
import unittest

import harness
from test_http import HttpDaemon, http_config

LIMIT = 1_000_000
DRAIN_CONFIG = http_config("""\
store:
  snapshot:
    path: state.snap
    interval: 0
policies:
  - name: drain
    limits:
      - {algorithm: fixed_window, limit: %d, period: 1h}
""" % LIMIT)

RESP_CHECK = b"*3\r\n$8\r\nSL.CHECK\r\n$5\r\ndrain\r\n$3\r\nkey\r\n"
HTTP_CHECK = b"GET /v1/check?policy=drain&key=key HTTP/1.1\r\nHost: x\r\n\r\n"
BATCH = 32        # requests per write
AHEAD = 256       # requests sent and not yet answered, at most


class Client(threading.Thread):
    """Pipelines checks until the daemon closes the connection."""

    def __init__(self, port, http):
        super().__init__(daemon=True)
        self.port, self.http = port, http
        self.sent = self.answered = self.allowed = 0
        self.error = None        # what ended the connection, if not a clean end of stream
        self.leftover = b""      # bytes of an incomplete reply at the end
        self.started = threading.Event()

    def replies(self, buf):
        """Takes whole replies off buf: (count, allowed, rest)."""
        n = ok = 0
        while True:
            if self.http:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", buf[:end])
                size = end + 4 + int(m.group(1))
                if len(buf) < size:
                    break
                ok += buf.startswith(b"HTTP/1.1 200") and b'"allowed":true' in buf[end:size]
                buf = buf[size:]
            else:
                if buf.startswith(b"-"):
                    end = buf.find(b"\r\n")
                    if end < 0:
                        break
                    buf = buf[end + 2:]
                    n += 1
                    continue
                parts = buf.split(b"\r\n", 9)
                if len(parts) < 10:
                    break
                ok += parts[1] == b":1"
                buf = parts[9]
            n += 1
        return n, ok, buf

    def run(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        one = HTTP_CHECK if self.http else RESP_CHECK
        buf = b""
        try:
            while True:
                if self.sent - self.answered < AHEAD:
                    s.sendall(one * BATCH)
                    self.sent += BATCH
                data = s.recv(65536)
                if not data:
                    break
                n, ok, buf = self.replies(buf + data)
                self.answered += n
                self.allowed += ok
                if self.answered:
                    self.started.set()
        except OSError as e:
            self.error = e
        finally:
            self.leftover = buf
            self.started.set()
            s.close()


class Drain(unittest.TestCase):
    def test_sigterm_under_load_loses_no_admitted_charge(self):
        d = HttpDaemon(DRAIN_CONFIG)
        clients = [Client(d.port, False) for _ in range(3)] + [Client(d.http_port, True) for _ in range(3)]
        for c in clients:
            c.start()
        for c in clients:
            self.assertTrue(c.started.wait(20))
        time.sleep(0.3)  # let them pipeline (real load, not a rate window)
        d.signal(signal.SIGTERM)
        for c in clients:
            c.join(30)
            self.assertFalse(c.is_alive(), "a client was never closed")
        self.assertEqual(d.proc.wait(timeout=30), 0, d.output())
        d.log.close()
        admitted = sum(c.allowed for c in clients)
        report = ["%s sent %d answered %d allowed %d%s" % ("http" if c.http else "resp", c.sent, c.answered,
                                                            c.allowed, " error %r" % c.error if c.error else "")
                  for c in clients]
        print("\n" + "\n".join(report))
        self.assertGreater(admitted, 0)
        for c in clients:
            self.assertIsNone(c.error, "a client saw %r instead of a clean close:\n%s" % (c.error, "\n".join(report)))
            self.assertEqual(c.leftover, b"", "a reply was cut short")
        self.assertTrue(os.path.exists(os.path.join(d.dir, "state.snap")), d.output())
        # restart from the snapshot: every admitted charge is in it
        d2 = HttpDaemon(DRAIN_CONFIG, workdir=d.dir)
        try:
            r = d2.resp.execute_command("SL.PEEK", "drain", "key")
            charged = LIMIT - r[2]
            print("admitted %d, charged after the restart %d" % (admitted, charged))
            self.assertGreaterEqual(charged, admitted)
            self.assertLessEqual(charged, sum(c.sent for c in clients))
        finally:
            d2.stop()


if __name__ == "__main__":
    harness.main()
