"""The command lines a newcomer types: sluiced's options and the sluice tool.

What the YAML accepts, the command line accepts with the same words
(`--http off` as `listen.http: off`), and what the tools print is meant for
people (times as dates, no stale promises).
"""
import os
import re
import subprocess
import tempfile
import time
import unittest

import harness
from harness import Daemon

CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: 127.0.0.1:0
policies:
  - name: p
    limits:
      - {algorithm: gcra, limit: 10, period: 1s}
"""


def sluice_tool():
    return os.path.join(os.path.dirname(harness.SLUICED), "sluice")


class Options(unittest.TestCase):
    def test_http_off_on_the_command_line(self):
        with Daemon(config=CONFIG, args=["--http", "off"]) as d:
            self.assertRegex(d.output(), r" ready: .* http=off http_port=0 ")
            self.assertTrue(d.client().ping())

    def test_http_empty_on_the_command_line_is_off_too(self):
        with Daemon(config=CONFIG, args=["--http", ""]) as d:
            self.assertRegex(d.output(), r" http=off ")

    def http_only(self, d):
        m = d.wait_log(r" ready: resp=off port=0 http=\S+ http_port=(\d+) ")
        url = "http://127.0.0.1:%s/healthz" % m.group(1)
        run = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual("200", run.stdout)
        self.assertNotRegex(d.output(), r"6390")

    def test_resp_off_on_the_command_line(self):
        d = Daemon(config=CONFIG, args=["--resp", "off"], expect_start=False)
        try:
            self.http_only(d)
        finally:
            d.stop()

    def test_resp_off_in_the_file(self):
        # The harness always passes --resp; this daemon has only its file.
        workdir = tempfile.mkdtemp(prefix="sluice-cli-")
        path = os.path.join(workdir, "sluice.yaml")
        with open(path, "w") as f:
            f.write(CONFIG.replace("resp: 127.0.0.1:0", "resp: \"off\""))
        log_path = os.path.join(workdir, "sluiced.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([harness.SLUICED, "--config", path], stdout=log, stderr=subprocess.STDOUT,
                                    cwd=workdir)
        try:
            deadline = time.time() + 20
            while " ready: " not in open(log_path).read() and time.time() < deadline and proc.poll() is None:
                time.sleep(0.02)
            out = open(log_path).read()
            m = re.search(r" ready: resp=off port=0 http=\S+ http_port=(\d+) ", out)
            self.assertIsNotNone(m, out)
            run = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                  "http://127.0.0.1:%s/healthz" % m.group(1)], capture_output=True, text=True,
                                 timeout=30)
            self.assertEqual("200", run.stdout)
        finally:
            proc.terminate()
            self.assertEqual(0, proc.wait(timeout=30))

    def test_both_fronts_off_is_refused(self):
        d = Daemon(config=CONFIG, args=["--resp", "off", "--http", "off"], expect_start=False)
        self.assertEqual(1, d.proc.wait(timeout=30))
        d.log.close()
        self.assertIn("every front is off (resp, http and grpc)", d.output())
        both = CONFIG.replace("resp: 127.0.0.1:0", "resp: off").replace("http: 127.0.0.1:0", "http: off")
        with open(d.config_path, "w") as f:
            f.write(both)
        run = subprocess.run([harness.SLUICED, "--config", d.config_path, "--check-config"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(1, run.returncode)
        self.assertRegex(run.stderr, r"sluice.yaml:\d+: listen: turns off every front")

    def test_listen_options_take_addresses_not_names(self):
        # a name may stand for several addresses; listening on the first alone
        # (::1 for localhost on Debian) would leave 127.0.0.1 refused
        path = os.path.join(tempfile.mkdtemp(prefix="sluice-cli-"), "one.yaml")
        with open(path, "w") as f:
            f.write(CONFIG)
        for option, value, message in [
                ("--resp", "localhost:6390", '--resp: "localhost" is not an IPv4 address (host names are not'),
                ("--http", "localhost:8090", '--http: "localhost" is not an IPv4 address'),
                ("--resp", "::1:6390", "--resp: an IPv6 address needs brackets, like [::1]:6390"),
                ("--http", "127.0.0.1:65536", "--http: port must be a number from 0 to 65535")]:
            run = subprocess.run([harness.SLUICED, "--config", path, option, value, "--check-config"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(1, run.returncode, value)
            self.assertIn(message, run.stderr)
        run = subprocess.run([harness.SLUICED, "--config", path, "--resp", "[::1]:0", "--http", "127.0.0.1:0",
                              "--check-config"], capture_output=True, text=True, timeout=30)
        self.assertEqual(0, run.returncode, run.stderr)

    def test_check_config_counts_in_words(self):
        path = os.path.join(tempfile.mkdtemp(prefix="sluice-cli-"), "one.yaml")
        with open(path, "w") as f:
            f.write(CONFIG)
        run = subprocess.run([harness.SLUICED, "--config", path, "--check-config"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertIn(": valid (1 policy)\n", run.stdout)


class Tool(unittest.TestCase):
    def test_demo_does_not_promise_what_exists(self):
        run = subprocess.run([sluice_tool(), "demo"], capture_output=True, text=True, timeout=30)
        self.assertEqual(0, run.returncode)
        self.assertNotIn("comes next", run.stdout)
        self.assertIn("sluiced", run.stdout)

    def test_snapshot_shows_when_it_was_saved_as_a_date(self):
        config = CONFIG.replace("period: 1s", "period: 1h") + "store:\n  snapshot: {path: state.snap}\n"
        with Daemon(config=config, test_clock=None) as d:
            d.client().execute_command("SL.CHECK", "p", "k")
        path = os.path.join(d.dir, "state.snap")
        run = subprocess.run([sluice_tool(), "snapshot", path], capture_output=True, text=True, timeout=30)
        self.assertEqual(0, run.returncode, run.stderr)
        m = re.search(r"saved (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) \((\d+) s ago\)", run.stdout)
        self.assertIsNotNone(m, run.stdout)
        saved = time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S")
        self.assertLess(abs(time.mktime(saved) - time.mktime(time.gmtime())), 60)
        self.assertNotIn(" us,", run.stdout)
        self.assertIn("1 states", run.stdout)


if __name__ == "__main__":
    harness.main()
