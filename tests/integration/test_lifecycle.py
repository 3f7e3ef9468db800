"""test_lifecycle.py -- reload on SIGHUP (good and bad files), restart keeps
counters through the snapshot, a damaged snapshot is set aside,
--check-config, --version, the embedded default configuration."""
import os
import signal
import subprocess
import tempfile
import time

import harness
from harness import BASE_CONFIG, Daemon
import redis
import unittest

S = 1_000_000
SNAPSHOT_CONFIG = BASE_CONFIG.replace("threads: 2\n", "threads: 2\nstore:\n  snapshot:\n    path: state.snap\n    interval: 0\n")


def allowed(r, policy, key, n=1):
    return [r.execute_command("SL.CHECK", policy, key)[0] for _ in range(n)]


class Reload(unittest.TestCase):
    def test_good_reload_keeps_unchanged_counters(self):
        with Daemon(test_clock=100 * S) as d:
            r = d.client()
            self.assertEqual(allowed(r, "per_user", "u", 3), [1, 1, 1])
            self.assertEqual(allowed(r, "strict", "s"), [1])
            # per_user unchanged; strict changed (2 per second now); a new policy
            d.write_config(BASE_CONFIG.replace("{algorithm: gcra, limit: 1, period: 1s}",
                                               "{algorithm: gcra, limit: 2, period: 1s, burst: 1}")
                           + "  - name: added\n    limits:\n      - {algorithm: fixed_window, limit: 1, period: 1m}\n")
            d.signal(signal.SIGHUP)
            d.wait_log(r"reloaded .*: 5 policies, generation 2")
            self.assertEqual(r.info()["config_generation"], 2)
            # the unchanged limit kept its count: 2 left of 5
            self.assertEqual(allowed(r, "per_user", "u", 3), [1, 1, 0])
            # the changed limit starts afresh under its new parameters
            self.assertEqual(allowed(r, "strict", "s", 3), [1, 1, 0])
            self.assertEqual(allowed(r, "added", "a", 2), [1, 0])
            self.assertEqual(r.info()["config_reloads"], 1)

    def test_bad_reload_keeps_running_config(self):
        with Daemon(test_clock=100 * S) as d:
            r = d.client()
            self.assertEqual(allowed(r, "per_user", "u", 2), [1, 1])
            for n, bad in enumerate(["policies: [\n", BASE_CONFIG.replace("limit: 5", "limit: -5"),
                                     BASE_CONFIG.replace("sliding_window", "sliding_windw"), "threads: 2\n"]):
                d.write_config(bad)
                d.signal(signal.SIGHUP)
                d.wait_log(r"reload failed.*sluice\.yaml", count=n + 1)
            info = r.info()
            self.assertEqual(info["config_reload_failures"], 4)
            self.assertEqual(info["config_generation"], 1)
            self.assertEqual(allowed(r, "per_user", "u", 4), [1, 1, 1, 0])
            self.assertTrue(r.ping())


class Restart(unittest.TestCase):
    def test_restart_keeps_counters(self):
        d = Daemon(SNAPSHOT_CONFIG, test_clock=200 * S)
        r = d.client()
        self.assertEqual(allowed(r, "per_user", "k", 4), [1, 1, 1, 1])
        self.assertEqual(r.execute_command("CL.THROTTLE", "t", 0, 1, 60)[0], 0)
        d.stop()
        self.assertTrue(os.path.exists(os.path.join(d.dir, "state.snap")))
        d2 = Daemon(SNAPSHOT_CONFIG, test_clock=201 * S, workdir=d.dir)
        r2 = d2.client()
        self.assertRegex(d2.output(), r"loaded \d+ states from the snapshot")
        self.assertEqual(allowed(r2, "per_user", "k", 2), [1, 0])
        self.assertEqual(r2.execute_command("CL.THROTTLE", "t", 0, 1, 60)[0], 1)
        d2.stop()

    def test_damaged_snapshot_is_set_aside(self):
        d = Daemon(SNAPSHOT_CONFIG, test_clock=200 * S)
        allowed(d.client(), "per_user", "k", 5)
        d.stop()
        path = os.path.join(d.dir, "state.snap")
        with open(path, "r+b") as f:
            f.seek(50)
            f.write(b"\xff\xff\xff")
        d2 = Daemon(SNAPSHOT_CONFIG, test_clock=200 * S, workdir=d.dir)
        self.assertRegex(d2.output(), r"cannot load the snapshot .*corrupted.*moved to .*state\.snap\.bad-")
        self.assertEqual(allowed(d2.client(), "per_user", "k", 1), [1])  # fresh state
        d2.stop()
        self.assertTrue(any(n.startswith("state.snap.bad-") for n in os.listdir(d.dir)))


class Startup(unittest.TestCase):
    def run_sluiced(self, *args, cwd=None):
        # in a directory of its own: a daemon reads and writes its state
        # file (sluice.snap) in its working directory by default
        with tempfile.TemporaryDirectory(prefix="sluiced-run-") as tmp:
            return subprocess.run([harness.SLUICED] + list(args), capture_output=True, text=True,
                                  timeout=30, cwd=cwd or tmp)

    def test_check_config(self):
        d = Daemon(expect_start=False, test_clock=None)
        d.proc.kill()
        d.proc.wait()
        ok = self.run_sluiced("--config", d.config_path, "--check-config")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("valid (4 policies)", ok.stdout)
        d.write_config(BASE_CONFIG.replace("period: 60s", "period: sixty"))
        bad = self.run_sluiced("--config", d.config_path, "--check-config")
        self.assertNotEqual(bad.returncode, 0)
        self.assertRegex(bad.stderr, r"sluice\.yaml:\d+: ")
        missing = self.run_sluiced("--config", "/nonexistent/x.yaml", "--check-config")
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("/nonexistent/x.yaml", missing.stderr)

    def test_embedded_default_and_version(self):
        ok = self.run_sluiced("--check-config")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("(embedded default)", ok.stdout)
        v = self.run_sluiced("--version")
        self.assertRegex(v.stdout, r"^sluiced \d+\.\d+\.\d+")
        bad = self.run_sluiced("--threads", "x")
        self.assertEqual(bad.returncode, 2)
        bad = self.run_sluiced("--bogus")
        self.assertEqual(bad.returncode, 2)

    def test_port_in_use(self):
        # A second daemon must not quietly share the port (SO_REUSEPORT would
        # let it) and split the traffic and the limits.
        with Daemon() as d:
            clash = self.run_sluiced("--resp", "127.0.0.1:%d" % d.port, "--config", d.config_path)
            self.assertEqual(clash.returncode, 1)
            self.assertIn("Address already in use", clash.stderr)

    def test_sigint_stops_gracefully(self):
        d = Daemon()
        r = d.client()
        self.assertTrue(r.ping())
        d.signal(signal.SIGINT)
        self.assertEqual(d.proc.wait(timeout=20), 0)
        self.assertIn("SIGINT: stopping", d.output())
        d.log.close()


if __name__ == "__main__":
    harness.main()
