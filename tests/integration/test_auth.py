"""test_auth.py -- requirepass on the RESP front: NOAUTH before AUTH (but
PING, QUIT, AUTH and HELLO ... AUTH), WRONGPASS, both AUTH forms, the
failure counter, env:NAME, a reload that sets the password, and Redis 6+'s
answer to AUTH when no password is set."""
import os
import re
import signal
import subprocess
import tempfile
import unittest

import harness
from harness import BASE_CONFIG, Daemon
import redis

PASSWORD = "correct-horse-battery-staple"
WITH_PASSWORD = BASE_CONFIG.replace("threads: 2\n", "threads: 2\nrequirepass: %s\n" % PASSWORD)


def error_of(r, *cmd):
    try:
        r.execute_command(*cmd)
    except (redis.ResponseError, redis.AuthenticationError) as e:
        return str(e)
    raise AssertionError("%r did not fail" % (cmd,))


class NoPassword(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_auth_default_any_is_ok(self):
        r = self.d.client()
        self.assertTrue(r.execute_command("AUTH", "default", "anything"))
        self.assertTrue(r.execute_command("AUTH", "anything"))
        self.assertEqual(r.execute_command("SL.CHECK", "per_user", "k")[0], 1)

    def test_url_with_default_user_connects(self):
        r = redis.Redis.from_url("redis://default:x@127.0.0.1:%d/0" % self.d.port)
        self.assertEqual(r.execute_command("CL.THROTTLE", "url", 1, 1, 1)[0], 0)

    def test_other_user_is_wrongpass(self):
        r = self.d.client()
        self.assertTrue(error_of(r, "AUTH", "bob", "x").startswith("WRONGPASS"))


class WithPassword(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(config=WITH_PASSWORD)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_commands_before_auth_get_noauth(self):
        r = self.d.client()
        for cmd in (("SL.CHECK", "per_user", "k"), ("CL.THROTTLE", "k", 1, 1, 1), ("INFO",),
                    ("NOSUCHCOMMAND",), ("SELECT", 0), ("HELLO", 2)):
            self.assertTrue(error_of(r, *cmd).startswith(
                "Authentication required" if cmd[0] != "HELLO" else "HELLO must be called"), cmd)
        self.assertTrue(r.ping())

    def test_raw_replies_are_redis_words(self):
        s = self.d.raw()
        s.sendall(b"SL.CHECK per_user k\r\nAUTH nope-nope-nope-nope\r\nAUTH " + PASSWORD.encode()
                  + b"\r\nPING\r\n")
        got = harness.read_lines(s, 4)
        self.assertEqual(got, b"-NOAUTH Authentication required.\r\n"
                              b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                              b"+OK\r\n+PONG\r\n")
        s.close()

    def test_wrong_password_is_counted(self):
        admin = self.d.client(password=PASSWORD)
        before = admin.info("stats")["auth_failures"]
        r = self.d.client()
        self.assertTrue(error_of(r, "AUTH", "wrong-wrong-wrong-wrong").startswith("WRONGPASS"))
        self.assertTrue(error_of(r, "AUTH", "default", "wrong").startswith("WRONGPASS"))
        self.assertTrue(error_of(r, "AUTH", "alice", PASSWORD).startswith("WRONGPASS"))
        self.assertTrue(error_of(r, "SL.CHECK", "per_user", "k").startswith("Authentication required"))
        self.assertEqual(admin.info("stats")["auth_failures"], before + 3)

    def test_both_auth_forms(self):
        for kw in ({"password": PASSWORD}, {"username": "default", "password": PASSWORD}):
            r = self.d.client(**kw)
            self.assertEqual(r.execute_command("SL.CHECK", "per_user", "forms")[0], 1, kw)

    def test_redis_py_wrong_password_raises(self):
        # redis-py 4.3 raises the server's WRONGPASS as a ResponseError at connect
        with self.assertRaisesRegex((redis.AuthenticationError, redis.ResponseError), "WRONGPASS"):
            self.d.client(password="not-the-password-at-all").ping()

    def test_quit_before_auth(self):
        s = self.d.raw()
        s.sendall(b"QUIT\r\n")
        self.assertEqual(harness.read_reply(s), b"+OK\r\n")
        s.close()

    def test_hello_auth_passes_the_gate(self):
        # HELLO ... AUTH is let through to HELLO, which checks the password
        s = self.d.raw()
        s.sendall(b"HELLO 2 AUTH default wrong-wrong\r\nPING\r\n")
        self.assertEqual(harness.read_lines(s, 2),
                         b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                         b"+PONG\r\n")
        s.sendall(b"HELLO 2 AUTH default " + PASSWORD.encode() + b"\r\n")
        self.assertTrue(harness.read_reply(s).startswith(b"*14\r\n$6\r\nserver\r\n"))
        s.sendall(b"SL.CHECK per_user hello\r\n")
        self.assertTrue(harness.read_reply(s).startswith(b"*8\r\n:1\r\n"))
        s.close()


class FromEnvironmentAndReload(unittest.TestCase):
    def test_env_password(self):
        cfg = WITH_PASSWORD.replace(PASSWORD, "env:SLUICE_TEST_REQUIREPASS")
        with Daemon(config=cfg, env={"SLUICE_TEST_REQUIREPASS": "from-the-environment-1"}) as d:
            self.assertTrue(error_of(d.client(), "INFO").startswith("Authentication required"))
            self.assertTrue(d.client(password="from-the-environment-1").ping())

    def test_unset_env_refuses_to_start(self):
        cfg = WITH_PASSWORD.replace(PASSWORD, "env:SLUICE_TEST_REQUIREPASS_UNSET")
        d = Daemon(config=cfg, expect_start=False)
        self.assertNotEqual(d.proc.wait(timeout=20), 0)
        d.log.close()
        self.assertIn("requirepass: environment variable SLUICE_TEST_REQUIREPASS_UNSET is not set",
                      d.output())

    def test_reload_sets_and_changes_the_password(self):
        with Daemon() as d:
            r = d.client()
            self.assertEqual(r.execute_command("SL.CHECK", "per_user", "k")[0], 1)
            d.write_config(WITH_PASSWORD)
            d.signal(signal.SIGHUP)
            d.wait_log(r"reloaded .*generation 2")
            # a connection that never authenticated must now
            self.assertTrue(error_of(r, "SL.CHECK", "per_user", "k").startswith("Authentication"))
            authed = d.client(password=PASSWORD)
            self.assertTrue(authed.ping())
            d.write_config(WITH_PASSWORD.replace(PASSWORD, PASSWORD + "-2"))
            d.signal(signal.SIGHUP)
            d.wait_log(r"reloaded .*generation 3")
            # one that did stays so; the old password no longer works
            self.assertEqual(authed.execute_command("SL.CHECK", "per_user", "k2")[0], 1)
            self.assertTrue(error_of(d.client(), "AUTH", PASSWORD).startswith("WRONGPASS"))
            self.assertTrue(d.client(password=PASSWORD + "-2").ping())


HAPROXY = os.environ.get("HAPROXY", "/usr/sbin/haproxy")
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "protocol.md")


class TlsInFront(unittest.TestCase):
    """docs/protocol.md's HAProxy block, as written, terminating TLS before
    a sluiced with a password: the password and the commands go through."""

    def test_haproxy_block_of_the_docs(self):
        if not os.path.exists(HAPROXY):
            raise AssertionError("HAProxy is not installed at %s (apt-get install haproxy)" % HAPROXY)
        with open(DOCS) as f:
            block = re.search(r"```\n(frontend sluice_tls\n.*?)```", f.read(), re.S).group(1)
        work = tempfile.mkdtemp(prefix="sluice-tls-")
        pem = os.path.join(work, "sluice.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-keyout", os.path.join(work, "key.pem"),
                        "-out", os.path.join(work, "cert.pem")], check=True, capture_output=True)
        with open(pem, "w") as out:
            for part in ("cert.pem", "key.pem"):
                with open(os.path.join(work, part)) as f:
                    out.write(f.read())
        with Daemon(config=WITH_PASSWORD) as d:
            port = harness.free_port()
            cfg = block.replace("10.0.0.5:6391", "127.0.0.1:%d" % port) \
                       .replace("/etc/haproxy/sluice.pem", pem) \
                       .replace("127.0.0.1:6390", "127.0.0.1:%d" % d.port)
            path = os.path.join(work, "haproxy.cfg")
            with open(path, "w") as f:
                f.write("defaults\n    timeout connect 5s\n    timeout client 30s\n"
                        "    timeout server 30s\n" + cfg)
            log = open(os.path.join(work, "haproxy.out"), "wb")
            proc = subprocess.Popen([HAPROXY, "-db", "-f", path], cwd=work, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                harness.wait_listening(proc, port, "haproxy",
                                       lambda: open(os.path.join(work, "haproxy.out")).read())
                r = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_cert_reqs=None,
                                password=PASSWORD, socket_timeout=10)
                self.assertEqual(r.execute_command("SL.CHECK", "per_user", "tls")[0], 1)
                plain = redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_cert_reqs=None,
                                    socket_timeout=10)
                self.assertTrue(error_of(plain, "INFO").startswith("Authentication required"))
                # the port speaks TLS only
                with self.assertRaises(redis.ConnectionError):
                    redis.Redis(host="127.0.0.1", port=port, password=PASSWORD,
                                socket_timeout=3).ping()
            finally:
                proc.terminate()
                proc.wait(timeout=10)
                log.close()


if __name__ == "__main__":
    harness.main()
