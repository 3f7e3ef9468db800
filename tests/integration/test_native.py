"""test_native.py -- the native commands on configured policies:
SL.CHECK, SL.PEEK, SL.RESET, SL.POLICIES, tiers, and their errors."""
import harness
from harness import Daemon
import redis
import unittest

S = 1_000_000
# reply: allowed, limit, remaining, retry_after_ms, reset_after_ms, delay_ms, limited, limit_index


class Native(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(test_clock=5000 * S)
        self.r = self.d.client()

    def tearDown(self):
        self.d.stop()

    def check(self, *args):
        return self.r.execute_command("SL.CHECK", *args)

    def test_check_until_denied(self):
        for i in range(5):
            self.assertEqual(self.check("per_user", "u")[:3], [1, 5, 4 - i])
        deny = self.check("per_user", "u")
        self.assertEqual(deny[:3], [0, 5, 0])
        self.assertGreater(deny[3], 0)
        self.assertEqual(deny[6], 1)  # limited
        # after retry_after (ms, rounded up) it passes
        self.d.clock(self.r, "ADVANCE", deny[3] * 1000)
        self.assertEqual(self.check("per_user", "u")[0], 1)

    def test_peek_charges_nothing(self):
        self.check("strict", "p")
        peek = self.r.execute_command("SL.PEEK", "strict", "p")
        self.assertEqual(peek[0], 0)
        self.assertEqual(peek[3], 1000)
        self.assertEqual(self.r.execute_command("SL.PEEK", "strict", "p"), peek)
        self.d.clock(self.r, "ADVANCE", S)
        self.assertEqual(self.r.execute_command("SL.PEEK", "strict", "p")[0], 1)
        self.assertEqual(self.check("strict", "p")[0], 1)

    def test_cost(self):
        self.assertEqual(self.check("per_user", "c", 4)[:3], [1, 5, 1])
        self.assertEqual(self.check("per_user", "c", 2)[0], 0)
        self.assertEqual(self.check("per_user", "c", 6)[3], -1)  # never
        self.assertEqual(self.check("per_user", "c", 0)[:3], [1, 5, 1])

    def test_two_limits(self):
        for i in range(3):
            self.assertEqual(self.check("two_limits", "t")[0], 1)
        deny = self.check("two_limits", "t")
        self.assertEqual(deny[0], 0)
        self.assertEqual(deny[7], 1)  # the minute window decided
        self.assertEqual(deny[1], 3)

    def test_reset(self):
        for _ in range(5):
            self.check("per_user", "r")
        self.assertEqual(self.check("per_user", "r")[0], 0)
        self.assertEqual(self.r.execute_command("SL.RESET", "per_user", "r"), b"OK")
        self.assertEqual(self.check("per_user", "r")[:3], [1, 5, 4])

    def test_tiers(self):
        self.assertEqual(self.check("tiered", "bob")[1], 2)
        self.assertEqual(self.check("tiered", "alice")[1], 10)
        for _ in range(9):
            self.assertEqual(self.check("tiered", "alice")[0], 1)
        self.assertEqual(self.check("tiered", "alice")[0], 0)

    def test_policies(self):
        pols = self.r.execute_command("SL.POLICIES")
        names = [p[0] for p in pols]
        self.assertEqual(names, [b"per_user", b"strict", b"two_limits", b"tiered"])
        per_user = pols[0]
        self.assertEqual(per_user[1], b"hard")
        self.assertEqual(per_user[2], [[b"sliding_window", 5, 60000, 0, 0, 0, 0]])
        self.assertEqual(pols[3][3], [b"premium"])

    def test_errors(self):
        with self.assertRaisesRegex(redis.ResponseError, "no policy named 'nope'"):
            self.check("nope", "k")
        with self.assertRaisesRegex(redis.ResponseError, "cost"):
            self.check("per_user", "k", -1)
        with self.assertRaisesRegex(redis.ResponseError, "cost"):
            self.check("per_user", "k", "x")
        with self.assertRaisesRegex(redis.ResponseError, "max_key_bytes"):
            self.check("per_user", "k" * 5000)
        with self.assertRaisesRegex(redis.ResponseError, "wrong number"):
            self.r.execute_command("SL.RESET", "per_user")
        with self.assertRaisesRegex(redis.ResponseError, "no such policy"):
            self.r.execute_command("SL.RESET", "nope", "k")
        with self.assertRaisesRegex(redis.ResponseError, "usage"):
            self.r.execute_command("SL.TESTCLOCK", "JUMP", 5)

    def test_binary_keys(self):
        self.assertEqual(self.check("per_user", b"\x00\xff\r\n")[0], 1)
        self.assertEqual(self.check("per_user", b"")[0], 1)


class WithoutTestClock(unittest.TestCase):
    def test_no_testclock_command(self):
        with Daemon(test_clock=None) as d:
            r = d.client()
            with self.assertRaisesRegex(redis.ResponseError, "unknown command"):
                r.execute_command("SL.TESTCLOCK", "GET")
            self.assertEqual(r.execute_command("SL.CHECK", "per_user", "x")[0], 1)


if __name__ == "__main__":
    harness.main()
