"""test_resp.py -- sluiced speaks enough Redis for real clients: redis-py,
pipelines, inline commands as typed into nc, and the commands clients send
on their own (HELLO, CLIENT, COMMAND, CONFIG GET, SELECT, INFO)."""
import socket

import harness
from harness import Daemon, read_lines, read_reply
import redis
import unittest


class Resp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_ping_echo(self):
        self.assertTrue(self.r.ping())
        self.assertEqual(self.r.echo("a\x00b"), b"a\x00b")
        s = self.d.raw()  # redis-py turns PING replies into booleans
        s.sendall(b"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n")
        self.assertEqual(read_reply(s), b"$2\r\nhi\r\n")
        s.close()

    def test_unknown_and_arity(self):
        with self.assertRaisesRegex(redis.ResponseError, "unknown command 'NOPE'"):
            self.r.execute_command("NOPE", "x")
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments for 'ECHO'"):
            self.r.execute_command("ECHO")
        with self.assertRaises(redis.ResponseError):
            self.r.execute_command("SL.TESTCLOCKX")

    def test_command_names_in_any_case(self):
        # Names fold a-z only: a byte 0x20 away from '.' is not a dot.
        s = self.d.raw()
        s.sendall(b"*1\r\n$4\r\npInG\r\n"
                  b"*5\r\n$11\r\ncl.Throttle\r\n$2\r\nkc\r\n$1\r\n5\r\n$1\r\n5\r\n$1\r\n1\r\n"
                  b"*5\r\n$11\r\nCL\x0eTHROTTLE\r\n$2\r\nkc\r\n$1\r\n5\r\n$1\r\n5\r\n$1\r\n1\r\n"
                  b"*2\r\n$4\r\nPIN\xe7\r\n$1\r\nx\r\n")
        got = read_lines(s, 1 + 6 + 2)
        s.close()
        self.assertTrue(got.startswith(b"+PONG\r\n*5\r\n:0\r\n:6\r\n:5\r\n"), got)
        errors = got.split(b"\r\n")[-3:-1]
        self.assertTrue(errors[0].startswith(b"-ERR unknown command 'CL\x0eTHROTTLE'"), got)
        self.assertTrue(errors[1].startswith(b"-ERR unknown command 'PIN\xe7'"), got)

    def test_client_handshake_commands(self):
        self.assertTrue(self.r.execute_command("SELECT", 0))
        with self.assertRaisesRegex(redis.ResponseError, "out of range"):
            self.r.execute_command("SELECT", 1)
        hello = self.r.execute_command("HELLO")
        self.assertIn(b"sluice", hello)
        with self.assertRaisesRegex(redis.ResponseError, "NOPROTO"):
            self.r.execute_command("HELLO", 4)  # HELLO 3 is RESP3 now: test_resp3.py
        self.assertTrue(self.r.client_setname("tester"))
        self.assertEqual(self.r.client_getname(), "tester")
        self.assertGreater(self.r.client_id(), 0)
        self.assertEqual(self.r.execute_command("CONFIG", "GET", "save"), [])
        self.assertGreater(self.r.command_count(), 10)
        commands = self.r.command()  # redis-py parses the reply into a dict
        self.assertEqual(commands["cl.throttle"]["arity"], -5)
        self.assertEqual(commands["sl.check"]["first_key_pos"], 2)
        self.assertEqual(commands["sl.policies"]["first_key_pos"], 0)
        self.assertIn("sl.testclock", commands)  # this daemon runs on the test clock

    def test_info(self):
        info = self.r.info()
        self.assertIn("sluice_version", info)
        self.assertEqual(info["loading"], 0)
        self.assertEqual(info["tcp_port"], self.d.port)
        self.assertGreaterEqual(info["connected_clients"], 1)
        self.assertEqual(info["policies"], 4)
        self.r.execute_command("SL.CHECK", "per_user", "info-key")
        info = self.r.info()
        self.assertGreaterEqual(info["decisions_allowed"], 1)
        self.assertGreaterEqual(info["db0"]["keys"], 1)
        self.assertGreaterEqual(self.r.dbsize(), 1)
        only = self.r.info("memory")
        self.assertIn("used_memory", only)
        self.assertNotIn("total_commands_processed", only)

    def test_pipeline(self):
        p = self.r.pipeline(transaction=False)
        for i in range(500):
            p.execute_command("SL.CHECK", "per_user", "pipe-%d" % (i % 7))
        out = p.execute()
        self.assertEqual(len(out), 500)
        allowed = sum(1 for o in out if o[0] == 1)
        self.assertEqual(allowed, 7 * 5)  # 5 per key, 7 keys

    def test_inline_commands(self):
        s = self.d.raw()
        s.sendall(b"PING\r\nECHO hello\nSL.CHECK per_user inline-key\r\n\r\n  PING  \r\n")
        got = read_reply(s)
        self.assertTrue(got.startswith(b"+PONG\r\n$5\r\nhello\r\n*8\r\n:1\r\n"), got)
        self.assertTrue(got.endswith(b"+PONG\r\n"), got)
        s.sendall(b"QUIT\r\n")
        self.assertEqual(read_reply(s), b"+OK\r\n")
        s.close()

    def test_quit_closes(self):
        s = self.d.raw()
        s.sendall(b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n")
        self.assertEqual(read_reply(s), b"+OK\r\n")  # nothing after QUIT
        self.assertTrue(harness.closed_by_peer(s))
        s.close()

    def test_split_writes(self):
        s = self.d.raw()
        cmd = b"*3\r\n$8\r\nSL.CHECK\r\n$8\r\nper_user\r\n$5\r\nsplit\r\n"
        for b in cmd:  # one byte at a time
            s.sendall(bytes([b]))
        got = read_reply(s)
        self.assertTrue(got.startswith(b"*8\r\n:1\r\n"), got)
        s.close()


if __name__ == "__main__":
    harness.main()
