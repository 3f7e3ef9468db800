"""test_throttle.py -- CL.THROTTLE answers as redis-cell does, GCRA as
Redis's GCRA command; sequences on the manual clock, and every error."""
import harness
from harness import Daemon
import redis
import unittest

S = 1_000_000  # microseconds per second


class Throttle(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(test_clock=1000 * S)
        self.r = self.d.client()

    def tearDown(self):
        self.d.stop()

    def throttle(self, *args):
        return self.r.execute_command("CL.THROTTLE", *args)

    def test_readme_example(self):
        # redis-cell's README: a fresh key with 15 burst, 30 per 60 s.
        self.assertEqual(self.throttle("user123", 15, 30, 60), [0, 16, 15, -1, 2])

    def test_sequence(self):
        # 1 per second, burst 4: five at once, then one per second.
        for i in range(5):
            self.assertEqual(self.throttle("k", 4, 1, 1), [0, 5, 4 - i, -1, i + 1])
        self.assertEqual(self.throttle("k", 4, 1, 1), [1, 5, 0, 1, 5])
        self.d.clock(self.r, "ADVANCE", S)
        self.assertEqual(self.throttle("k", 4, 1, 1), [0, 5, 0, -1, 5])
        self.assertEqual(self.throttle("k", 4, 1, 1)[0], 1)
        # quantity 0 peeks: no charge
        self.d.clock(self.r, "ADVANCE", 3 * S)
        self.assertEqual(self.throttle("k", 4, 1, 1, 0), [0, 5, 3, -1, 2])
        self.assertEqual(self.throttle("k", 4, 1, 1, 0), [0, 5, 3, -1, 2])
        # a quantity over the burst can never pass: retry -1
        self.assertEqual(self.throttle("k", 4, 1, 1, 6), [1, 5, 3, -1, 2])
        # a quantity that fits later
        self.assertEqual(self.throttle("k", 4, 1, 1, 5), [1, 5, 3, 2, 2])

    def test_rounding_of_seconds(self):
        # 3 per 2 s: T = 666,666,666 ns. reset_after = 666.667 ms rounds to 1 s
        # (at least a millisecond over a whole second counts as one more).
        self.assertEqual(self.throttle("r", 0, 3, 2), [0, 1, 0, -1, 1])
        self.d.clock(self.r, "ADVANCE", 666_000)
        # 0.667 ms left: less than a millisecond over 0 s
        self.assertEqual(self.throttle("r", 0, 3, 2)[3:], [0, 0])

    def test_keys_are_independent(self):
        self.assertEqual(self.throttle("a", 0, 1, 10)[0], 0)
        self.assertEqual(self.throttle("a", 0, 1, 10)[0], 1)
        self.assertEqual(self.throttle("b", 0, 1, 10)[0], 0)

    def test_gcra_syntax(self):
        # GCRA key max_burst tokens_per_period period [TOKENS n]
        self.assertEqual(self.r.execute_command("GCRA", "g", 15, 30, 60), [0, 16, 15, -1, 2])
        # a fractional period: 10 per 0.5 s, burst 0: T = 50 ms (50 ms >= 1 ms: 1 s)
        self.assertEqual(self.r.execute_command("GCRA", "h", 0, 10, "0.5"), [0, 1, 0, -1, 1])
        self.assertEqual(self.r.execute_command("GCRA", "h", 0, 10, "0.5")[0], 1)
        self.d.clock(self.r, "ADVANCE", 50_000)
        self.assertEqual(self.r.execute_command("GCRA", "h", 0, 10, "0.5")[0], 0)
        self.assertEqual(self.r.execute_command("GCRA", "t", 9, 10, 1, "TOKENS", 10), [0, 10, 0, -1, 1])
        self.assertEqual(self.r.execute_command("GCRA", "t", 9, 10, 1, "tokens", 1)[0], 1)
        # the same limit through either command is the same state
        self.assertEqual(self.throttle("g", 15, 30, 60)[2], 14)

    def test_errors(self):
        bad = [
            ("CL.THROTTLE", "k", 1, 2),
            ("CL.THROTTLE", "k", 1, 2, 3, 4, 5),
            ("CL.THROTTLE", "k", "x", 2, 3),
            ("CL.THROTTLE", "k", -1, 2, 3),
            ("CL.THROTTLE", "k", 1, 0, 3),
            ("CL.THROTTLE", "k", 1, 2, 0),
            ("CL.THROTTLE", "k", 1, 2, "1.5"),
            ("CL.THROTTLE", "k", 1, 2, 3, -1),
            ("CL.THROTTLE", "k", 1, 2_000_000_000_000, 1),   # faster than 1 per ns
            ("CL.THROTTLE", "k", 9_000_000_000_000_000_000, 1, 1),
            ("GCRA", "k", 1, 2),
            ("GCRA", "k", 1, 2, "abc"),
            ("GCRA", "k", 1, 2, "0"),
            ("GCRA", "k", 1, 2, "1.1234567891"),
            ("GCRA", "k", 1, 2, 3, "COST", 1),
            ("GCRA", "k", 1, 0, 3),
        ]
        for args in bad:
            with self.assertRaises(redis.ResponseError, msg=repr(args)):
                self.r.execute_command(*args)
        self.assertTrue(self.r.ping())

    def test_many_parameter_sets(self):
        for n in range(1, 300):
            self.assertEqual(self.throttle("p%d" % n, 0, n, 1)[0], 0)


if __name__ == "__main__":
    harness.main()
