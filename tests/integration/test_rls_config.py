#!/usr/bin/env python3
"""test_rls_config.py -- Envoy ratelimit's configuration directory in the
real sluiced (docs/integrations/envoy-rls.md, Configuration):

  - --check-config reads the directory named by rls.config_dir or
    --rls-config, and names the file and line of an error in it;
  - a directory with an error stops the start with that message;
  - SIGHUP reloads the directory with the file: a broken file fails the
    reload with its line and the daemon keeps running; once fixed, the next
    SIGHUP swaps the rules in;
  - --rls-config works on a file without an rls: section, on reloads too.

The rules themselves (matching, counting) are the unit tests' and the gRPC
front's; here the daemon must load, refuse and reload them.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness

GOOD = """\
domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: path
    value: /search*
    rate_limit: {unit: second, requests_per_unit: 5, algorithm: gcra, burst: 2}
"""

BROKEN = GOOD.replace("unit: minute", "unit: minutes")


def config(rls_dir=None):
    text = harness.BASE_CONFIG
    if rls_dir is not None:
        text += "rls:\n  config_dir: %s\n" % rls_dir
    return text


class RlsConfig(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluiced-rls-")
        self.rules = os.path.join(self.dir, "rules")
        os.mkdir(self.rules)
        self.write("api.yaml", GOOD)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        with open(os.path.join(self.rules, name), "w") as f:
            f.write(text)

    def check(self, *args):
        cfg = os.path.join(self.dir, "sluice.yaml")
        return subprocess.run([harness.SLUICED, "--check-config", "--config", cfg] + list(args),
                              capture_output=True, text=True, timeout=30, cwd=self.dir)

    def test_check_config_reads_the_directory(self):
        with open(os.path.join(self.dir, "sluice.yaml"), "w") as f:
            f.write(config(self.rules))
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.write("api.yaml", BROKEN)
        r = self.check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("rls.config_dir: %s/api.yaml:5: invalid rate limit unit 'minutes'" % self.rules,
                      r.stderr)
        # --rls-config on a file without the section, and over the file's directory
        with open(os.path.join(self.dir, "sluice.yaml"), "w") as f:
            f.write(config())
        self.assertEqual(self.check("--rls-config", self.rules).returncode, 1)
        other = os.path.join(self.dir, "other")
        os.mkdir(other)
        r = self.check("--rls-config", other)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.dir, "sluice.yaml"), "w") as f:
            f.write(config(self.rules))
        r = self.check("--rls-config", other)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_bad_directory_stops_the_start(self):
        self.write("z.yml", "domain: api\n")
        d = harness.Daemon(config(self.rules), expect_start=False)
        self.assertEqual(d.proc.wait(timeout=30), 1)
        d.log.close()
        self.assertIn("%s/z.yml:1: duplicate domain 'api' in config file (also in %s/api.yaml)"
                      % (self.rules, self.rules), d.output())

    def test_reload_keeps_the_running_rules_on_error(self):
        with harness.Daemon(config(self.rules)) as d:
            c = d.client()
            self.write("api.yaml", BROKEN)
            d.signal(signal.SIGHUP)
            d.wait_log(r"reload failed, the running configuration stays: .*api\.yaml:5: "
                       r"invalid rate limit unit 'minutes'")
            self.assertTrue(c.ping())
            self.write("api.yaml", GOOD)
            self.write("more.yaml", "domain: more\ndescriptors:\n  - key: k\n")
            d.signal(signal.SIGHUP)
            d.wait_log(r"reloaded .*generation 2")
            self.assertTrue(c.ping())

    def test_rls_config_option_reloads(self):
        with harness.Daemon(config(), args=["--rls-config", self.rules]) as d:
            self.write("bad.yaml", "domain: api\n")
            d.signal(signal.SIGHUP)
            d.wait_log(r"reload failed.*rls\.config_dir \(--rls-config\): .*bad\.yaml:1: "
                       r"duplicate domain 'api'")
            os.unlink(os.path.join(self.rules, "bad.yaml"))
            d.signal(signal.SIGHUP)
            d.wait_log(r"reloaded .*generation 2")


if __name__ == "__main__":
    harness.main()
