"""test_client_matrix.py -- redis-cli, redis-py (default pipeline and
transaction=False), ioredis, node-redis 6 and hiredis run one scenario
(client_matrix.py) against the real daemon: connect with and without a
password, throttle, reset with DEL.

Transactions (MULTI/EXEC/DISCARD) and node-redis's RESP3 connection
(HELLO 3) are checked by test_client_matrix_tx.py. Here node-redis is only
asked to connect without the password to a daemon that needs one, which it
must refuse with NOAUTH whatever protocol it speaks. redis-py with
protocol=3 is not run: the installed redis-py (4.3) has no such option.
"""
import client_matrix as m
import harness

# Steps each client must pass here (the scenario's others: test_client_matrix_tx.py).
STEPS = ["ping", "throttle", "del", "after_del"]
AUTH_STEPS = ["noauth", "authed"]
RESP2_CLIENTS = ["redis-cli", "redis-py", "redis-py transaction=False", "ioredis", "hiredis"]


class ClientMatrix(m.TwoDaemons):
    def check(self, client, got, steps):
        for step in steps:
            with self.subTest(client=client, step=step):
                if step == "noauth":
                    self.assertTrue(m.is_noauth(got.get(step)), got.get(step))
                else:
                    self.assertEqual(got.get(step), m.EXPECTED[step])

    def test_scenario(self):
        for i, client in enumerate(RESP2_CLIENTS):
            got = m.CLIENTS[client](self.open.port, "c%d" % i, "scenario")
            self.check(client, got, STEPS)

    def test_pipeline_without_transaction_charges_each(self):
        got = m.CLIENTS["redis-py transaction=False"](self.open.port, "pipe", "scenario")
        self.check("redis-py transaction=False", got, ["multi", "after_multi"])

    def test_password(self):
        for i, client in enumerate(RESP2_CLIENTS):
            got = m.CLIENTS[client](self.locked.port, "a%d" % i, "auth")
            self.check(client, got, AUTH_STEPS)

    def test_node_redis_without_password_is_refused(self):
        got = m.CLIENTS["node-redis"](self.locked.port, "nr", "auth")
        self.check("node-redis", got, ["noauth"])


if __name__ == "__main__":
    harness.main()
