"""test_migrate_envoy.py -- docs/migrate/envoy.md: an Envoy ratelimit
configuration and the sluice policies the guide maps it to.

Envoy is not installable here (Debian 12 has no envoy package), so the
test checks the sluice side of what the guide says:
- the guide's Envoy ratelimit config.yaml is valid YAML in that format
  (domain, descriptors with key, optional value, rate_limit with unit and
  requests_per_unit), and each of its rate limits has the policy (or tier)
  the guide's mapping table says, with limit = requests_per_unit and
  period = one unit;
- the guide's sluice YAML passes `sluiced --check-config`;
- run on the test clock, each policy decides as the descriptor would:
  requests_per_unit requests pass in one unit window, the next is denied,
  and at the next window boundary (Envoy ratelimit's windows are aligned to
  the unit, as sluice's fixed windows are) they pass again; asked the way
  Envoy's ext_authz asks (forward-auth, the original path appended,
  X-Forwarded-For from Envoy at 127.0.0.1) and through /v1/check.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

import harness
import migrate_guides as guides
from test_http import HttpDaemon, S, http_config

GUIDE = "envoy.md"
HEADERS = {"api_key": "X-API-Key", "to_number": "X-To-Number"}   # the guide's request_headers actions
UNITS = {"second": (1, "1s"), "minute": (60, "1m"), "hour": (3600, "1h"), "day": (86400, "1d")}
DAY = 86400 * S
T0 = 20000 * DAY          # midnight UTC: a boundary of every unit


def envoy_limits():
    """[(policy name, descriptor key, value or None, requests_per_unit, unit)] of the guide's config.yaml."""
    cfg = yaml.safe_load(guides.block(GUIDE, "ratelimit-config"))
    out = []
    for d in cfg["descriptors"]:
        rl = d.get("rate_limit")
        if rl:
            out.append((cfg["domain"] + "." + d["key"], d["key"], d.get("value"), rl["requests_per_unit"], rl["unit"]))
    return cfg, out


class Mapping(unittest.TestCase):
    def setUp(self):
        self.policies = {p["name"]: p for p in yaml.safe_load(guides.block(GUIDE, "sluice"))["policies"]}

    def test_every_rate_limit_has_its_policy(self):
        cfg, limits = envoy_limits()
        self.assertEqual({"domain", "descriptors"}, set(cfg))
        self.assertGreaterEqual(len(limits), 3)
        for name, key, value, n, unit in limits:
            with self.subTest(descriptor=(key, value)):
                self.assertIn(name, self.policies)
                p = self.policies[name]
                if value is None:
                    limits_ = p["limits"]
                else:
                    tier = [t for t in p.get("tiers", []) if "%s=%s" % (p["key"][0], value) in t["keys"]]
                    self.assertEqual(1, len(tier), "the value-specific descriptor is a tier with that key")
                    limits_ = tier[0]["limits"]
                self.assertEqual([{"algorithm": "fixed_window", "limit": n, "period": UNITS[unit][1]}], limits_)

    def test_sluice_yaml_passes_check_config(self):
        work = tempfile.mkdtemp(prefix="sluice-migrate-")
        self.addCleanup(shutil.rmtree, work, True)
        path = os.path.join(work, "sluice.yaml")
        with open(path, "w") as f:
            f.write(guides.block(GUIDE, "sluice"))
        r = subprocess.run([harness.SLUICED, "--config", path, "--check-config"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertRegex(r.stdout, r"valid \(%d polic" % len(self.policies))


class Decisions(unittest.TestCase):
    """Each descriptor's N per unit, on the test clock."""

    def setUp(self):
        self.d = HttpDaemon(http_config(guides.block(GUIDE, "sluice")), test_clock=T0)
        self.addCleanup(self.d.stop)

    def ask(self, name, key, value, n):
        """One request as Envoy's ext_authz would send it for this descriptor."""
        headers = {"X-Forwarded-For": "203.0.113.7"}      # Envoy (127.0.0.1, trusted) appends the client
        if key == "remote_address":
            headers["X-Forwarded-For"] = value or "203.0.113.%d" % (n % 250 + 1)
        else:
            headers[HEADERS[key]] = value or "caller-%d" % n
        return self.d.get("/v1/auth/%s/orders/42" % name, headers).status

    def test_n_per_unit_then_denied_until_the_next_window(self):
        _, limits = envoy_limits()
        for i, (name, key, value, n, unit) in enumerate(limits):
            with self.subTest(descriptor=(key, value, n, unit)):
                seconds = UNITS[unit][0]
                self.d.clock(self.d.resp, "SET", T0 + (i + 1) * 2 * DAY)   # a fresh midnight for each
                self.d.advance(seconds * S // 2)                           # half-way into a window
                statuses = [self.ask(name, key, value, i) for _ in range(n + 1)]
                self.assertEqual([200] * n + [429], statuses)
                self.d.advance(seconds * S // 2 - 1)                       # the last µs of the window
                self.assertEqual(429, self.ask(name, key, value, i))
                self.d.advance(1)                                          # the next window
                self.assertEqual(200, self.ask(name, key, value, i))

    def test_check_endpoint_decides_alike(self):
        """/v1/check with the same attributes (an application asking itself)."""
        r = [self.d.post_json("/v1/check", {"policy": "edge_proxy.remote_address",
                                            "attributes": {"ip": "198.51.100.9"}}).status for _ in range(11)]
        self.assertEqual([200] * 10 + [429], r)
        r = [self.d.post_json("/v1/check", {"policy": "edge_proxy.api_key",
                                            "attributes": {"header:X-API-Key": "partner-1"}}).json() for _ in range(2)]
        self.assertEqual(1000, r[0]["limit"])
        self.assertEqual("partner-1", r[0].get("tier"))


class Guide(unittest.TestCase):
    def test_every_example_is_run(self):
        guides.assert_all_run(self, GUIDE, ["ratelimit-config", "sluice"])


if __name__ == "__main__":
    harness.main()
