"""test_resp_batch.py -- pipelined decision commands of one read are decided
together (the engine's batch call, sl_check_batch for the memory store), and
the replies are byte for byte those of the same commands sent one at a time:
decisions, denials, peeks, costs, tiers, CL.THROTTLE and GCRA (their
parameter sets changing from one command to the next), errors in the
middle of a run (no such policy, a key too long, a bad cost, a wrong number
of arguments), other commands between them (PING, SL.RESET,
MULTI/EXEC), runs longer than a batch, RESP3, and a password that NOAUTH
guards until AUTH. Two daemons on the same test clock: one gets the whole
pipeline in one write, the other one command per round trip."""
import socket

import harness
from harness import BASE_CONFIG, Daemon
import unittest

PASSWORD = "batch-secret-of-twenty-four"


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Replies:
    """Reads whole RESP2/RESP3 replies, returning their exact bytes."""

    def __init__(self, sock):
        self.s, self.buf = sock, b""
        sock.settimeout(10)

    def _line(self, pos):
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i + 2
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError("closed by the server after %r" % self.buf[-200:])
            self.buf += chunk

    def _need(self, end):
        while len(self.buf) < end:
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError("closed by the server")
            self.buf += chunk

    def _skip(self, pos):
        end = self._line(pos)
        kind, head = self.buf[pos:pos + 1], self.buf[pos + 1:end - 2]
        if kind in b"$=!":
            n = int(head)
            if n < 0:
                return end
            self._need(end + n + 2)
            return end + n + 2
        if kind in b"*~>%|":
            n = int(head)
            for _ in range(max(n, 0) * (2 if kind in b"%|" else 1)):
                end = self._skip(end)
            return end
        return end  # + - : _ # , (

    def take(self, n=1):
        end = 0
        for _ in range(n):
            end = self._skip(end)
        got, self.buf = self.buf[:end], self.buf[end:]
        return got


def commands(prefix=()):
    long_key = "k" * 1100  # over max_key_bytes (1024)
    cmds = [list(c) for c in prefix]
    for i in range(8):  # one policy, a denial after five
        cmds.append(["SL.CHECK", "per_user", "u1"])
        cmds.append(["SL.CHECK", "per_user", "u%d" % (i % 3)])
    cmds += [
        ["SL.PEEK", "per_user", "u1"],
        ["SL.CHECK", "per_user", "u2", "2"],
        ["SL.CHECK", "two_limits", "x"],
        ["SL.CHECK", "tiered", "alice"],
        ["SL.CHECK", "tiered", "bob"],
        ["SL.CHECK", "nosuch", "k"],
        ["SL.CHECK", "per_user", long_key],
        ["SL.CHECK", "per_user", "u3", "-1"],
        ["SL.CHECK", "per_user"],
        ["SL.CHECK", "per_user", "u3", "0"],
        ["CL.THROTTLE", "t1", "1", "10", "60"],
        ["CL.THROTTLE", "t1", "1", "10", "60"],
        ["CL.THROTTLE", "t1", "1", "10", "60", "3"],
        ["CL.THROTTLE", "t1", "1", "10", "0"],
        ["GCRA", "g1", "1", "2", "60"],
        ["GCRA", "g1", "1", "2", "60", "TOKENS", "2"],
        ["PING"],
        ["SL.CHECK", "per_user", "u1"],
        ["SL.CHECK", "per_user", "u1"],
        ["SL.RESET", "per_user", "u1"],
        ["SL.CHECK", "per_user", "u1"],
        ["MULTI"],
        ["SL.CHECK", "per_user", "u1"],
        ["CL.THROTTLE", "t1", "1", "10", "60"],
        ["EXEC"],
        ["SL.CHECK", "strict", "s"],
        ["SL.CHECK", "strict", "s"],
    ]
    for i in range(150):  # longer than one batch (64), two policies interleaved in runs
        cmds.append(["SL.CHECK", "per_user" if (i // 10) % 2 else "two_limits", "r%d" % (i % 13)])
    for i in range(70):
        cmds.append(["CL.THROTTLE", "c%d" % (i % 5), "2", "5", "60"])
    for i in range(36):  # parameter sets changing command by command, on one key and on several
        cmds.append(["CL.THROTTLE", "m%d" % (i % 2), str(1 + i % 3), str(10 * (1 + i % 4)), "60"])
        cmds.append(["GCRA" if i % 2 else "CL.THROTTLE", "m9", "1", "10", "60"])
    cmds.append(["ECHO", "end"])
    return cmds


class PipelinedAsOneByOne(unittest.TestCase):
    def compare(self, config, prefix=()):
        cmds = commands(prefix)
        with Daemon(config) as one, Daemon(config) as all_:
            s1, s2 = one.raw(), all_.raw()
            r1, r2 = Replies(s1), Replies(s2)
            singly = []
            for c in cmds:
                s1.sendall(encode(c))
                singly.append(r1.take())
            s2.sendall(b"".join(encode(c) for c in cmds))
            together = [r2.take() for _ in cmds]
            for c, a, b in zip(cmds, singly, together):
                self.assertEqual(b, a, "reply to %r" % (c[:3],))
            self.assertIn(b":0\r\n", b"".join(singly))  # denials happened
            s1.close()
            s2.close()

    def test_resp2(self):
        self.compare(BASE_CONFIG)

    def test_resp3(self):
        self.compare(BASE_CONFIG, prefix=[["HELLO", "3"]])

    def test_noauth_then_auth(self):
        config = BASE_CONFIG.replace("threads: 2\n", "threads: 2\nrequirepass: %s\n" % PASSWORD)
        self.compare(config, prefix=[["SL.CHECK", "per_user", "u1"], ["CL.THROTTLE", "t1", "1", "10", "60"],
                                     ["AUTH", "wrong"], ["AUTH", PASSWORD]])


if __name__ == "__main__":
    harness.main()
