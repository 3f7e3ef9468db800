"""test_grpc_js.py -- the gRPC front (docs/integrations/envoy-rls.md) with
Node's @grpc/grpc-js, the messages loaded by @grpc/proto-loader from the
in-tree proto/: grpc_js_check.js checks every field of the answer, over the
limit, all or nothing, shadow mode, concurrency and the error statuses.

The Node packages are installed by `scripts/deps.sh test` (npm ci from
tests/integration/node/package-lock.json); a test never downloads them. The
daemon runs on the manual test clock, 15 s past a minute, so the answer's
durations are exact.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "node", "node_modules")
PROTO_DIR = os.path.join(HERE, "..", "..", "proto")

CONFIG = """\
listen:
  resp: 127.0.0.1:0
  http: ""
  grpc: 127.0.0.1:0
threads: 2
limits:
  max_request_bytes: 65536
policies:
  - name: unused
    limits:
      - {algorithm: fixed_window, limit: 3, period: 1m}
rls:
  config_dir: %s
"""

JS_RULES = """\
domain: js
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3, name: per-user}
  - key: path
    value: /shadow
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
"""


class GrpcJs(unittest.TestCase):
    def test_grpc_js_client(self):
        node = shutil.which("node")
        if node is None or not os.path.isfile(os.path.join(NODE_DIR, "@grpc", "grpc-js", "package.json")):
            self.fail("@grpc/grpc-js is not installed in %s: run 'sh scripts/deps.sh test' first" % NODE_DIR)
        rules = tempfile.mkdtemp(prefix="sluice-rls-")
        with open(os.path.join(rules, "js.yaml"), "w") as f:
            f.write(JS_RULES)
        # 15 s past a minute: windows of a minute end in 45 s
        with Daemon(CONFIG % rules, test_clock=(10 ** 9 * 60 + 15) * 10 ** 6) as d:
            port = int(re.search(r"grpc_port=(\d+)", d.output()).group(1))
            run = subprocess.run([node, os.path.join(HERE, "grpc_js_check.js"), str(port), PROTO_DIR],
                                 capture_output=True, text=True, timeout=120,
                                 env=dict(os.environ, NODE_PATH=NODE_DIR))
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("grpc-js: ", run.stdout)
            self.assertTrue(d.client().ping())


if __name__ == "__main__":
    harness.main()
