"""test_resp3.py -- HELLO and RESP3 on the RESP front: the map HELLO
answers, a protocol per connection, and every command's reply in both
protocols (the same values; RESP3's own types only where Redis 7 uses them:
null, maps, sets, verbatim INFO). Clients: raw bytes, redis-cli -3, and
node-redis 6 with its default options (RESP3), from tests/integration/node
(installed by `sh scripts/deps.sh test`, never by this test)."""
import os
import shutil
import subprocess
import unittest

import harness
from harness import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "node", "node_modules")


class Reader:
    """A RESP2/RESP3 reply reader over a socket, keeping each value's type."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""
        sock.settimeout(10)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed mid-reply")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed mid-reply")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self.line()
        kind, rest = chr(line[0]), line[1:]
        if kind in "+-":
            return (kind, rest)
        if kind == ":":
            return (kind, int(rest))
        if kind == "_":
            return ("_", None)
        if kind in "$=":
            n = int(rest)
            return (kind, None) if n < 0 else (kind, self.exact(n))
        if kind in "*~":
            n = int(rest)
            return (kind, None) if n < 0 else (kind, [self.read() for _ in range(n)])
        if kind == "%":
            return (kind, [(self.read(), self.read()) for _ in range(int(rest))])
        raise AssertionError("unknown RESP type %r" % line)


def as_resp2(value):
    """What the same reply is in RESP2, as Redis falls back."""
    kind, v = value
    if kind == "_":
        return ("$", None)
    if kind == "=":
        assert v[3:4] == b":", v
        return ("$", v[4:])
    if kind == "~":
        return ("*", [as_resp2(x) for x in v])
    if kind == "%":
        return ("*", [as_resp2(x) for pair in v for x in pair])
    if kind == "*" and v is not None:
        return ("*", [as_resp2(x) for x in v])
    return value


class Connection:
    def __init__(self, d, proto):
        self.sock = d.raw()
        self.reader = Reader(self.sock)
        if proto == 3:
            assert self.command("HELLO", "3")[0] == "%"

    def command(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(parts))
        return self.reader.read()

    def close(self):
        self.sock.close()


class Resp3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_hello_3_is_the_map_redis_gives(self):
        s = self.d.raw()
        s.sendall(b"HELLO 3\r\n")
        reply = Reader(s).read()
        self.assertEqual(reply[0], "%")
        fields = {k[1]: v for k, v in reply[1]}
        self.assertEqual(list(fields), [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"])
        self.assertEqual(fields[b"server"], ("$", b"sluice"))
        self.assertEqual(fields[b"proto"], (":", 3))
        self.assertEqual(fields[b"mode"], ("$", b"standalone"))
        self.assertEqual(fields[b"role"], ("$", b"master"))
        self.assertEqual(fields[b"modules"], ("*", []))
        self.assertGreater(fields[b"id"][1], 0)
        s.close()

    def test_the_protocol_is_the_connections_and_can_go_back(self):
        c3, c2 = Connection(self.d, 3), Connection(self.d, 2)
        self.assertEqual(c3.command("CLIENT", "GETNAME"), ("_", None))
        self.assertEqual(c2.command("CLIENT", "GETNAME"), ("$", None))  # the other connection stays RESP2
        self.assertEqual(c3.command("HELLO", "4"), ("-", b"NOPROTO unsupported protocol version"))
        self.assertEqual(c3.command("CLIENT", "GETNAME"), ("_", None))  # a refused HELLO changes nothing
        hello2 = c3.command("HELLO", "2")
        self.assertEqual(hello2[0], "*")
        self.assertEqual(hello2[1][4:6], [("$", b"proto"), (":", 2)])
        self.assertEqual(c3.command("CLIENT", "GETNAME"), ("$", None))
        self.assertEqual(c2.command("HELLO")[1][5], (":", 2))  # HELLO alone: no change
        c3.close()
        c2.close()

    def test_hello_auth_and_setname(self):
        c = Connection(self.d, 2)
        reply = c.command("HELLO", "3", "AUTH", "default", "anything", "SETNAME", "tester")
        self.assertEqual(reply[0], "%")  # no password configured: any is accepted, as Redis 6+
        self.assertEqual(c.command("CLIENT", "GETNAME"), ("$", b"tester"))
        self.assertEqual(c.command("HELLO", "3", "SETNAME", "a b"),
                         ("-", b"ERR Client names cannot contain spaces, newlines or special characters."))
        self.assertEqual(c.command("HELLO", "3", "AUTH", "default"), ("-", b"ERR Syntax error in HELLO option 'AUTH'"))
        self.assertEqual(c.command("HELLO", "x"), ("-", b"ERR Protocol version is not an integer or out of range"))
        c.close()

    def test_every_command_answers_alike_in_both_protocols(self):
        commands = [
            ("PING",), ("PING", "hi"), ("ECHO", "a\x00b"), ("SELECT", "0"), ("SELECT", "1"),
            ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", "n"), ("CLIENT", "GETNAME"), ("CLIENT", "SETINFO", "lib-name", "x"),
            ("CLIENT", "NOPE"), ("COMMAND", "COUNT"), ("COMMAND", "INFO"), ("COMMAND", "DOCS"), ("COMMAND", "LIST"),
            ("CONFIG", "GET", "maxmemory"), ("CONFIG", "SET", "a", "b"), ("AUTH", "x"),
            ("CL.THROTTLE", "{p}k", "9", "1", "60"), ("GCRA", "{p}g", "9", "1", "60"),
            ("SL.CHECK", "per_user", "{p}u"), ("SL.PEEK", "two_limits", "{p}u", "2"), ("SL.RESET", "per_user", "{p}u"),
            ("SL.CHECK", "nope", "k"), ("SL.POLICIES",), ("SL.TESTCLOCK", "GET"),
            ("MULTI",), ("CL.THROTTLE", "{p}m", "9", "1", "60"), ("SL.CHECK", "per_user", "{p}m"), ("EXEC",),
            ("EXEC",), ("WATCH", "k"), ("NOPE",), ("ECHO",),
        ]
        replies = {}
        for proto in (2, 3):
            c = Connection(self.d, proto)
            got = []
            for cmd in commands:
                cmd = tuple(a.replace("{p}", "p%d" % proto) for a in cmd)
                got.append(c.command(*cmd))
            replies[proto] = got
            c.close()
        for cmd, two, three in zip(commands, replies[2], replies[3]):
            with self.subTest(command=" ".join(cmd)):
                self.assertEqual(as_resp2(three), two)
                self.assertNotIn(two[0], "_%~=")  # RESP2 never sees RESP3 types
        by = dict(zip([" ".join(c) for c in commands], replies[3]))
        self.assertEqual(by["CLIENT GETNAME"][0], "$")  # the last one: the name was set
        self.assertEqual(replies[3][5], ("_", None))  # the first, before SETNAME
        self.assertEqual(by["CONFIG GET maxmemory"], ("%", []))
        self.assertEqual(by["COMMAND DOCS"], ("%", []))
        self.assertEqual(by["COMMAND INFO"][1][0][1][2], ("~", []))  # flags: a set, as Redis 7

    def test_info_is_a_verbatim_string(self):
        c3, c2 = Connection(self.d, 3), Connection(self.d, 2)
        info3, info2 = c3.command("INFO", "server"), c2.command("INFO", "server")
        self.assertEqual(info3[0], "=")
        self.assertTrue(info3[1].startswith(b"txt:# Server\r\nredis_version:"), info3[1][:40])
        self.assertEqual(info2[0], "$")
        self.assertTrue(info2[1].startswith(b"# Server\r\n"))
        c3.close()
        c2.close()

    def test_redis_cli_3_shows_the_map(self):
        cli = shutil.which("redis-cli")
        if cli is None:
            self.skipTest("redis-cli is not installed (make test installs it)")
        out = subprocess.run([cli, "-3", "--no-raw", "-p", str(self.d.port), "HELLO", "3"],
                             capture_output=True, text=True, timeout=30).stdout
        self.assertIn('1# "server" => "sluice"', out)
        self.assertIn('3# "proto" => (integer) 3', out)
        self.assertIn('7# "modules" => (empty array)', out)

    def test_node_redis_6_default_options(self):
        node = shutil.which("node")
        if node is None or not os.path.isfile(os.path.join(NODE_DIR, "redis", "package.json")):
            self.fail("node-redis is not installed in %s: run 'sh scripts/deps.sh test' first" % NODE_DIR)
        run = subprocess.run([node, os.path.join(HERE, "node_redis_check.js"), str(self.d.port)],
                             capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, NODE_PATH=NODE_DIR))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("node-redis 6:", run.stdout)


if __name__ == "__main__":
    harness.main()
