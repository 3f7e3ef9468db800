"""test_migrate_redis_cell.py -- docs/migrate/redis-cell.md, run.

- The guide's redis-py snippet, with only its port changed to a fresh
  sluiced's (built-in configuration, test clock at 0), prints what the guide
  says it prints. (Its redis-cli block is a "$ " block, run by
  test_docs_examples.py.)
- The guide's policy (gcra 30 per 60 s, burst 15) decides exactly as
  CL.THROTTLE <key> 15 30 60 over a trace on the test clock, and its
  SL.CHECK / SL.RESET lines work as the guide says: after SL.RESET the key
  is new again.
"""
import os
import subprocess
import sys
import unittest

import harness
import migrate_guides as guides
from harness import Daemon

GUIDE = "redis-cell.md"
S = 1_000_000
LISTEN = "listen:\n  resp: 127.0.0.1:0\n  http: \"\"\n"


class Snippet(unittest.TestCase):
    def test_redis_py_snippet_prints_what_the_guide_shows(self):
        code = guides.block(GUIDE, "redis-py")
        self.assertEqual(1, code.count("port=6390"))
        with Daemon(config=None, args=["--http", "off"], test_clock=0) as d:
            run = subprocess.run([sys.executable, "-c", code.replace("port=6390", "port=%d" % d.port)],
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertEqual(guides.block(GUIDE, "redis-py-output"), run.stdout)


class PolicyForResets(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(LISTEN + guides.block(GUIDE, "policy"), test_clock=0)
        self.addCleanup(self.d.stop)
        self.r = self.d.client()

    def test_policy_decides_as_cl_throttle(self):
        trace = [(0, 20), (1 * S, 1), (1 * S, 1), (7 * S, 5), (60 * S, 18), (500_000, 2)]
        for advance, count in trace:
            self.d.clock(self.r, "ADVANCE", advance)
            for i in range(count):
                cell = self.r.execute_command("CL.THROTTLE", "cell-key", 15, 30, 60)
                check = self.r.execute_command("SL.CHECK", "user_rate", "policy-key")
                what = "after advancing %d us, request %d: CL.THROTTLE %r, SL.CHECK %r" % (advance, i, cell, check)
                self.assertEqual(cell[0] == 0, check[0] == 1, what)     # allowed
                self.assertEqual(cell[1], check[1], what)               # limit: max_burst + 1
                self.assertEqual(cell[2], check[2], what)               # remaining

    def test_the_guides_commands_reset_a_key(self):
        check, reset = [l.split() for l in guides.block(GUIDE, "policy-commands").splitlines()]
        self.assertEqual(["SL.CHECK", "user_rate", "user123"], check)
        self.assertEqual(["SL.RESET", "user_rate", "user123"], reset)
        replies = [self.r.execute_command(*check) for _ in range(17)]
        self.assertEqual([1] * 16 + [0], [x[0] for x in replies])
        self.assertEqual(b"OK", self.r.execute_command(*reset))
        again = self.r.execute_command(*check)
        self.assertEqual([1, 16, 15], again[:3])   # new again: a full burst left after this one


class Guide(unittest.TestCase):
    def test_every_example_is_run(self):
        guides.assert_all_run(self, GUIDE, ["redis-py", "redis-py-output", "policy", "policy-commands"])


if __name__ == "__main__":
    harness.main()
