"""test_top.py -- `sluice top` in a real terminal: tmux (new -d,
send-keys, capture-pane) runs it against a real daemon (docs/operations.md
"sluice top"):

  - a key hammering a policy among a crowd shows first among the top keys
    by requests and by denials, with the policy's line, and the screen is
    redrawn in place (the clock in its first line moves, one screen, no
    scrolling);
  - `q` quits and gives the terminal back;
  - with admin_token configured it says it wants SLUICE_ADMIN_TOKEN, and
    shows the figures with it;
  - --once prints one frame, for scripts.

tmux runs on a socket of this test's own (-L), so nothing else's sessions
are touched. The sluice tool is beside sluiced in the build tree. Skipped
when tmux is missing.
"""
import os
import re
import shutil
import subprocess
import time
import unittest

import harness
from test_http import ADMIN_TOKEN, http_config

CONFIG = """\
observe: {heavy_hitters: on}
policies:
  - name: per_ip
    limits:
      - {algorithm: gcra, limit: 10, period: 1h}  # the hammered key waits minutes, whatever the moment
"""

ABUSER = "203.0.113.99"
TMUX = shutil.which("tmux")


def sluice_tool():
    return os.path.join(os.path.dirname(os.path.abspath(harness.SLUICED or os.environ["SLUICED"])), "sluice")


def wait_for(fn, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("not within %.1f s: %s" % (timeout, what))
        time.sleep(0.1)


class Top(unittest.TestCase):
    def setUp(self):
        # a failure, not a skip: `make test` passing must mean this ran
        self.assertIsNotNone(TMUX, "tmux is not installed (scripts/deps.sh test installs it)")
        self.socket = "sluice-top-test-%d" % os.getpid()
        self.d = None

    def tearDown(self):
        # this test's own tmux server only (its socket), never another's
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)
        if self.d is not None:
            self.d.stop()

    def start(self, head=""):
        self.d = harness.Daemon(http_config(CONFIG, head=head), args=["--http", "127.0.0.1:0"], test_clock=None)
        self.port = int(re.search(r" ready: .*\bhttp_port=(\d+)", self.d.output()).group(1))
        r = self.d.client()
        for i in range(30):
            r.execute_command("SL.CHECK", "per_ip", "10.9.0.%d" % i)
        for _ in range(300):
            r.execute_command("SL.CHECK", "per_ip", ABUSER)
        r.connection_pool.disconnect()

    def tmux(self, *args):
        return subprocess.run([TMUX, "-L", self.socket] + list(args), capture_output=True, text=True, timeout=10)

    def run_top(self, env=""):
        cmd = "%s%s top --http 127.0.0.1:%d" % (env, sluice_tool(), self.port)
        res = self.tmux("new-session", "-d", "-s", "top", "-x", "110", "-y", "40", cmd)
        self.assertEqual(res.returncode, 0, res.stderr)

    def screen(self):
        res = self.tmux("capture-pane", "-p", "-t", "top")
        return res.stdout if res.returncode == 0 else ""

    def alive(self):
        return self.tmux("has-session", "-t", "top").returncode == 0

    def test_heavy_hitter_shows_and_q_quits(self):
        self.start()
        self.run_top()
        wait_for(lambda: ABUSER in self.screen(), 5, "%s on the screen:\n%s" % (ABUSER, self.screen()))
        lines = self.screen().splitlines()
        self.assertTrue(lines[0].startswith("sluice top  127.0.0.1:%d" % self.port), lines[0])
        policy = [l for l in lines if l.startswith("per_ip ")]
        self.assertEqual(len(policy), 1, lines)
        # first under both tables: by requests and by denials
        for title in ("top by requests", "top by denials"):
            i = next(i for i, l in enumerate(lines) if title in l)
            self.assertIn(ABUSER, lines[i + 1], lines)
            self.assertRegex(lines[i + 1], r"\b0\s+\d+(\.\d)? s\s*$|\b0\s+\d+ min\s*$")
        # redrawn in place: the clock moves, the header stays on the first line
        stamp = lines[0]
        wait_for(lambda: self.screen().splitlines()[0] != stamp, 4, "the first line redrawn")
        self.assertEqual(sum(l.startswith("sluice top") for l in self.screen().splitlines()), 1)
        self.tmux("send-keys", "-t", "top", "q")
        wait_for(lambda: not self.alive(), 5, "sluice top gone after q")

    def test_admin_token_from_the_environment(self):
        self.start(head="admin_token: %s\n" % ADMIN_TOKEN)
        self.run_top()
        wait_for(lambda: "SLUICE_ADMIN_TOKEN" in self.screen(), 5, "the token asked for:\n" + self.screen())
        self.tmux("send-keys", "-t", "top", "q")
        wait_for(lambda: not self.alive(), 5, "sluice top gone after q")
        self.run_top(env="SLUICE_ADMIN_TOKEN=%s " % ADMIN_TOKEN)
        wait_for(lambda: ABUSER in self.screen(), 5, "%s with the token:\n%s" % (ABUSER, self.screen()))
        self.tmux("send-keys", "-t", "top", "q")
        wait_for(lambda: not self.alive(), 5, "sluice top gone after q")
        self.assertNotIn(ADMIN_TOKEN, self.d.output())

    def test_once_prints_one_frame(self):
        self.start()
        res = subprocess.run([sluice_tool(), "top", "--once", "--http", "127.0.0.1:%d" % self.port],
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotIn("\x1b", res.stdout)
        self.assertIn(ABUSER, res.stdout)
        bad = subprocess.run([sluice_tool(), "top", "--http", "nowhere"], capture_output=True, text=True, timeout=10)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("HOST:PORT", bad.stderr)


if __name__ == "__main__":
    harness.main()
