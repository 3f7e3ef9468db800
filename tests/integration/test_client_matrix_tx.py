"""test_client_matrix_tx.py -- the client matrix's transactions and RESP3
(issue 14, items 1, 2 and 6): every client's MULTI ... EXEC returns both
replies and charges two (redis-py's default pipeline() is such a block),
MULTI ... DISCARD charges nothing, and node-redis 6, which opens with
HELLO 3 (RESP3), connects, throttles, resets, and authenticates with
HELLO 3 AUTH default <password>.

redis-py with protocol=3 is named but skipped while the installed redis-py
(4.3) has no protocol option. The scenario and the expected replies are in
client_matrix.py; test_client_matrix.py checks the rest.
"""
import inspect

import client_matrix as m
import harness
import redis

TX_STEPS = ["multi", "after_multi", "discard", "after_discard"]
CLIENTS = ["redis-cli", "redis-py", "ioredis", "node-redis", "hiredis"]


class Transactions(m.TwoDaemons):
    def test_every_client_multi_exec_discard(self):
        for i, client in enumerate(CLIENTS):
            got = m.CLIENTS[client](self.open.port, "tx%d" % i, "scenario")
            for step in TX_STEPS:
                with self.subTest(client=client, step=step):
                    if step == "discard":
                        self.assertEqual(got.get(step), "OK")
                    else:
                        self.assertEqual(got.get(step), m.EXPECTED[step])

    def test_node_redis_resp3(self):
        got = m.CLIENTS["node-redis"](self.open.port, "nr", "scenario")
        for step in ["ping", "throttle", "del", "after_del"]:
            with self.subTest(step=step):
                self.assertEqual(got.get(step), m.EXPECTED[step])
        got = m.CLIENTS["node-redis"](self.locked.port, "nra", "auth")
        with self.subTest(step="noauth"):
            self.assertTrue(m.is_noauth(got.get("noauth")), got.get("noauth"))
        with self.subTest(step="authed"):  # HELLO 3 AUTH default <password>
            self.assertEqual(got.get("authed"), m.EXPECTED["authed"])

    def test_redis_py_protocol_3(self):
        if "protocol" not in inspect.signature(redis.Redis.__init__).parameters:
            self.skipTest("redis-py %s has no protocol=3 option" % redis.__version__)
        got = m.redis_py(self.open.port, "p3", "scenario", protocol=3)
        for step in ["ping", "throttle"] + TX_STEPS + ["del", "after_del"]:
            with self.subTest(step=step):
                want = "OK" if step == "discard" else m.EXPECTED[step]
                self.assertEqual(got.get(step), want)


if __name__ == "__main__":
    harness.main()
