"""client_matrix.py -- one scenario, run by every client people point at
Redis (redis-cli, redis-py, ioredis, node-redis 6, hiredis), and the table of
the replies each step must give. test_client_matrix.py and
test_client_matrix_tx.py pick steps from it.

The scenario, on a daemon with the manual test clock (nothing moves time):
  ping           PING
  throttle       CL.THROTTLE k 1 1 60, three times: two pass, the third waits
  multi          MULTI, CL.THROTTLE t 5 1 60 twice, EXEC (a pipeline for
                 redis-py transaction=False): both replies
  after_multi    CL.THROTTLE t 5 1 60: the block charged two
  discard        MULTI, CL.THROTTLE d 5 1 60, DISCARD
  after_discard  CL.THROTTLE d 5 1 60: the discarded block charged nothing
  del            DEL k: it existed
  after_del      CL.THROTTLE k 1 1 60: as a new key
and on a daemon with requirepass:
  noauth         CL.THROTTLE without the password: NOAUTH
  authed         CL.THROTTLE with it (redis://default:<password>@ for the
                 URL clients)

Both test files run the scenario on the same two daemons (TwoDaemons).

Each runner returns {step: reply}, a reply being what the client gave,
made plain (lists of ints, strings) or {"error": text}. The clients come
from the system (redis-cli, redis-py, hiredis) and from
tests/integration/node/node_modules (scripts/deps.sh test); nothing is
installed here.
"""
import json
import os
import subprocess
import unittest

import redis

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "node")
PASSWORD = "matrix-password-0123456789"
T0 = 1_800_000_000 * 1_000_000
WITH_PASSWORD = harness.BASE_CONFIG.replace("threads: 2\n",
                                            "threads: 2\nrequirepass: %s\n" % PASSWORD)

EXPECTED = {
    "ping": "PONG",
    "throttle": [[0, 2, 1, -1, 60], [0, 2, 0, -1, 120], [1, 2, 0, 60, 120]],
    "multi": [[0, 6, 5, -1, 60], [0, 6, 4, -1, 120]],
    "after_multi": [0, 6, 3, -1, 180],
    "after_discard": [0, 6, 5, -1, 60],
    "del": 1,
    "after_del": [0, 2, 1, -1, 60],
    "authed": [0, 2, 1, -1, 60],
}


class TwoDaemons(unittest.TestCase):
    """A test class's daemons, on the manual test clock at T0: `open`, and
    `locked` with requirepass PASSWORD."""

    @classmethod
    def setUpClass(cls):
        cls.open = harness.Daemon(test_clock=T0)
        cls.locked = harness.Daemon(config=WITH_PASSWORD, test_clock=T0)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.open.stop()
        finally:
            cls.locked.stop()


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if v is True:  # redis-py's reading of +OK
        return "OK"
    return v


def guarded(fn):
    try:
        return fn()
    except redis.RedisError as e:
        return {"error": str(e)}


# ---- redis-py --------------------------------------------------------------------------------

def redis_py(port, prefix, mode, transaction=True, **kw):
    k = lambda name: "%s:%s" % (prefix, name)
    out = {}
    if mode == "auth":
        out["noauth"] = guarded(lambda: redis.Redis(port=port, **kw).execute_command(
            "CL.THROTTLE", k("a"), 1, 1, 60))
        out["authed"] = guarded(lambda: plain(redis.Redis(port=port, password=PASSWORD, **kw)
                                              .execute_command("CL.THROTTLE", k("a"), 1, 1, 60)))
        return out
    r = redis.Redis(port=port, socket_timeout=10, **kw)
    out["ping"] = guarded(lambda: "PONG" if r.ping() else "no")
    out["throttle"] = guarded(lambda: [plain(r.execute_command("CL.THROTTLE", k("k"), 1, 1, 60))
                                       for _ in range(3)])

    def multi():
        p = r.pipeline(transaction=transaction)
        p.execute_command("CL.THROTTLE", k("t"), 5, 1, 60)
        p.execute_command("CL.THROTTLE", k("t"), 5, 1, 60)
        return plain(p.execute())
    out["multi"] = guarded(multi)
    out["after_multi"] = guarded(lambda: plain(r.execute_command("CL.THROTTLE", k("t"), 5, 1, 60)))

    def discard():
        one = redis.Redis(port=port, socket_timeout=10, single_connection_client=True, **kw)
        one.execute_command("MULTI")
        one.execute_command("CL.THROTTLE", k("d"), 5, 1, 60)
        return plain(one.execute_command("DISCARD"))
    out["discard"] = guarded(discard)
    out["after_discard"] = guarded(lambda: plain(r.execute_command("CL.THROTTLE", k("d"), 5, 1, 60)))
    out["del"] = guarded(lambda: r.execute_command("DEL", k("k")))
    out["after_del"] = guarded(lambda: plain(r.execute_command("CL.THROTTLE", k("k"), 1, 1, 60)))
    return out


# ---- redis-cli -------------------------------------------------------------------------------

def cli(port, *args, stdin=None, password=None):
    argv = ["redis-cli", "-p", str(port)]
    if password:
        argv += ["--user", "default", "--pass", password, "--no-auth-warning"]
    p = subprocess.run(argv + [str(a) for a in args], input=stdin, capture_output=True, text=True,
                       timeout=30)
    return [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]


def ints_or_error(lines, group=None):
    try:
        v = [int(x) for x in lines]
    except ValueError:
        return {"error": " ".join(lines)}
    if group:
        return [v[i:i + group] for i in range(0, len(v), group)]
    return v[0] if len(v) == 1 else v


def redis_cli(port, prefix, mode):
    k = lambda name: "%s:%s" % (prefix, name)
    if mode == "auth":
        return {"noauth": {"error": " ".join(cli(port, "CL.THROTTLE", k("a"), 1, 1, 60))},
                "authed": ints_or_error(cli(port, "CL.THROTTLE", k("a"), 1, 1, 60,
                                            password=PASSWORD))}
    out = {"ping": " ".join(cli(port, "PING"))}
    out["throttle"] = [ints_or_error(cli(port, "CL.THROTTLE", k("k"), 1, 1, 60)) for _ in range(3)]
    t = "CL.THROTTLE %s 5 1 60\n" % k("t")
    lines = cli(port, stdin="MULTI\n" + t + t + "EXEC\n")
    if lines[:3] == ["OK", "QUEUED", "QUEUED"]:
        out["multi"] = ints_or_error(lines[3:], group=5)
    else:
        out["multi"] = {"error": " ".join(lines)}
    out["after_multi"] = ints_or_error(cli(port, *t.split()))
    d = "CL.THROTTLE %s 5 1 60\n" % k("d")
    lines = cli(port, stdin="MULTI\n" + d + "DISCARD\n")
    out["discard"] = lines[-1] if lines[:2] == ["OK", "QUEUED"] else {"error": " ".join(lines)}
    out["after_discard"] = ints_or_error(cli(port, *d.split()))
    out["del"] = ints_or_error(cli(port, "DEL", k("k")))
    out["after_del"] = ints_or_error(cli(port, "CL.THROTTLE", k("k"), 1, 1, 60))
    return out


# ---- programs: hiredis (C), ioredis and node-redis (Node) ---------------------------------------

def program(argv, env=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (argv, p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout)


def hiredis(port, prefix, mode):
    exe = os.environ.get("SL_HIREDIS_CLIENT", "")
    if not os.path.exists(exe):
        raise AssertionError("the hiredis client (SL_HIREDIS_CLIENT=%r) is not built: ctest sets it" % exe)
    return program([exe, str(port), prefix, mode] + ([PASSWORD] if mode == "auth" else []))


def node(client, port, prefix, mode):
    if not os.path.exists(os.path.join(NODE_DIR, "node_modules", "ioredis", "package.json")):
        raise AssertionError("the Node clients are not installed in %s/node_modules: "
                             "run 'sh scripts/deps.sh test' first" % NODE_DIR)
    env = dict(os.environ, NODE_PATH=os.path.join(NODE_DIR, "node_modules"))
    return program(["node", os.path.join(HERE, "matrix", "node_client.js"), client, str(port),
                    prefix, mode] + ([PASSWORD] if mode == "auth" else []), env=env)


CLIENTS = {
    "redis-cli": redis_cli,
    "redis-py": redis_py,
    "redis-py transaction=False": lambda port, prefix, mode: redis_py(port, prefix, mode,
                                                                     transaction=False),
    "ioredis": lambda port, prefix, mode: node("ioredis", port, prefix, mode),
    "node-redis": lambda port, prefix, mode: node("node-redis", port, prefix, mode),
    "hiredis": hiredis,
}


def is_noauth(reply):
    """redis-py keeps only the text after the code; the others keep NOAUTH."""
    text = reply.get("error", "") if isinstance(reply, dict) else ""
    return "NOAUTH" in text or text.startswith("Authentication required")
