"""test_keyspace.py -- redis-cell users' key commands on CL.THROTTLE keys
(DEL, UNLINK, EXISTS, TTL, PTTL) with the memory store and with a real
redis-server behind, SL.RESET with Redis, and the small commands clients
send at connect: SELECT, CLUSTER (a cluster-mode client connects), TIME,
CLIENT, COMMAND. Time moves with SL.TESTCLOCK, never by sleeping."""
import time
import unittest

import harness
from harness import BASE_CONFIG, Daemon
import redis
from redis.cluster import RedisCluster
from test_distributed import RedisServer

S = 1_000_000
T0 = 1_800_000_000 * S


def cl(r, key, burst=2, count=1, period=10):
    return r.execute_command("CL.THROTTLE", key, burst, count, period)


class KeyCommands:
    """The same cases on either store (self.d: the daemon, self.r: a client)."""

    def test_absent_key(self):
        r = self.r
        self.assertEqual(r.execute_command("EXISTS", "absent"), 0)
        self.assertEqual(r.execute_command("TTL", "absent"), -2)
        self.assertEqual(r.execute_command("PTTL", "absent"), -2)
        self.assertEqual(r.execute_command("DEL", "absent"), 0)

    def test_del_resets_a_throttled_key(self):
        r = self.r
        self.assertEqual([cl(r, "del")[0] for _ in range(4)], [0, 0, 0, 1])  # burst 2: 3 pass
        self.assertEqual(r.execute_command("EXISTS", "del"), 1)
        self.assertEqual(r.execute_command("DEL", "del"), 1)
        self.assertEqual(r.execute_command("EXISTS", "del"), 0)
        self.assertEqual(r.execute_command("DEL", "del"), 0)
        self.assertEqual(cl(r, "del"), [0, 3, 2, -1, 10])  # as a new key

    def test_unlink_and_many_keys(self):
        r = self.r
        cl(r, "u1")
        cl(r, "u2")
        self.assertEqual(r.execute_command("EXISTS", "u1", "u2", "u3", "u1"), 3)
        self.assertEqual(r.execute_command("UNLINK", "u1", "u2", "u3"), 2)
        self.assertEqual(r.execute_command("EXISTS", "u1", "u2"), 0)

    def test_del_forgets_every_parameter_set(self):
        r = self.r
        cl(r, "sets", 2, 1, 10)
        cl(r, "sets", 5, 1, 60)
        r.execute_command("GCRA", "sets", 3, 1, 30)
        self.assertEqual(r.execute_command("DEL", "sets"), 1)  # one key, whatever its sets
        self.assertEqual(cl(r, "sets", 2, 1, 10)[2], 2)
        self.assertEqual(cl(r, "sets", 5, 1, 60)[2], 5)

    def test_ttl_is_time_until_empty(self):
        r = self.r
        cl(r, "ttl", 2, 1, 10)   # one emission interval (10 s) of debt
        cl(r, "ttl", 2, 1, 10)   # two
        self.assertEqual(r.execute_command("PTTL", "ttl"), 20000)
        self.assertEqual(r.execute_command("TTL", "ttl"), 20)
        self.d.clock(r, "ADVANCE", 12_300_000)
        self.assertEqual(r.execute_command("PTTL", "ttl"), 7700)
        self.assertEqual(r.execute_command("TTL", "ttl"), 8)  # rounded as Redis does
        self.d.clock(r, "ADVANCE", 7_700_000)
        self.assertEqual(r.execute_command("EXISTS", "ttl"), 0)  # expired, as redis-cell's key
        self.assertEqual(r.execute_command("TTL", "ttl"), -2)

    def test_sl_reset(self):
        r = self.r
        self.assertEqual([r.execute_command("SL.CHECK", "strict", "rs")[0] for _ in range(2)], [1, 0])
        self.assertEqual(r.execute_command("SL.RESET", "strict", "rs"), b"OK")
        self.assertEqual(r.execute_command("SL.CHECK", "strict", "rs")[0], 1)
        with self.assertRaisesRegex(redis.ResponseError, "no such policy"):
            r.execute_command("SL.RESET", "nope", "rs")

    def test_pipelined_replies_stay_in_order(self):
        p = self.r.pipeline(transaction=False)
        p.execute_command("CL.THROTTLE", "pipe", 2, 1, 10)
        p.execute_command("EXISTS", "pipe")
        p.execute_command("DEL", "pipe")
        p.execute_command("PING")
        self.assertEqual(p.execute(), [[0, 3, 2, -1, 10], 1, 1, True])
        self.assertEqual(self.r.execute_command("EXISTS", "pipe"), 0)

    def test_bad_input(self):
        r = self.r
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments"):
            r.execute_command("DEL")
        with self.assertRaisesRegex(redis.ResponseError, "wrong number of arguments"):
            r.execute_command("TTL", "a", "b")
        with self.assertRaisesRegex(redis.ResponseError, "longer than max_key_bytes"):
            r.execute_command("DEL", "k", "x" * 2000)
        self.assertTrue(r.ping())


class MemoryStore(KeyCommands, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(test_clock=T0)
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()


class RedisStore(KeyCommands, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = RedisServer()
        store = "store:\n  type: redis\n  url: %s\n  clock: local\n" % cls.redis.url
        cls.d = Daemon(config=BASE_CONFIG.replace("threads: 2\n", "threads: 2\n" + store),
                       test_clock=T0)
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.stop()
        finally:
            cls.redis.stop()

    def test_del_reaches_redis(self):
        cl(self.r, "shared")
        before = self.redis.client().dbsize()
        self.assertGreater(before, 0)
        self.assertEqual(self.r.execute_command("DEL", "shared"), 1)
        self.assertEqual(self.redis.client().dbsize(), before - 1)


class ConnectCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_select(self):
        self.assertTrue(self.r.execute_command("SELECT", 0))
        with self.assertRaisesRegex(redis.ResponseError, "database 0 only"):
            self.r.execute_command("SELECT", 1)
        with self.assertRaisesRegex(redis.ResponseError, "not an integer"):
            self.r.execute_command("SELECT", "x")
        r = redis.Redis.from_url("redis://127.0.0.1:%d/0" % self.d.port)
        self.assertEqual(r.execute_command("CL.THROTTLE", "db0", 1, 1, 1)[0], 0)

    def test_time(self):
        sec, usec = self.r.time()
        self.assertLess(abs(sec - time.time()), 5)
        self.assertTrue(0 <= usec < 1_000_000)

    def test_client(self):
        r = self.d.client()
        self.assertIsInstance(r.client_id(), int)
        self.assertTrue(r.client_setname("matrix"))
        self.assertEqual(r.client_getname(), "matrix")
        info = r.client_info()
        self.assertEqual(info["name"], "matrix")
        self.assertEqual(int(info["id"]), r.client_id())
        self.assertEqual(len(r.client_list()), 1)
        self.assertTrue(r.execute_command("CLIENT", "SETINFO", "LIB-NAME", "redis-py"))
        self.assertTrue(r.execute_command("CLIENT", "SETINFO", "lib-ver", "4.3"))
        with self.assertRaisesRegex(redis.ResponseError, "Unrecognized option"):
            r.execute_command("CLIENT", "SETINFO", "colour", "blue")
        with self.assertRaisesRegex(redis.ResponseError, "cannot contain spaces"):
            r.execute_command("CLIENT", "SETNAME", "a b")
        with self.assertRaisesRegex(redis.ResponseError, "unknown subcommand"):
            r.execute_command("CLIENT", "KILL", "ID", "1")

    def test_command(self):
        r = self.r
        self.assertEqual(r.command_count(), len(r.command()))
        self.assertIn("cl.throttle", r.command())
        self.assertFalse(r.execute_command("COMMAND", "DOCS"))  # empty (redis-py makes it {})
        s = self.d.raw()  # redis-py's COMMAND parser cannot take the null
        s.sendall(b"COMMAND INFO del cl.throttle nosuch\r\n")
        self.assertEqual(harness.read_reply(s),
                         b"*3\r\n*6\r\n$3\r\ndel\r\n:-2\r\n*0\r\n:1\r\n:-1\r\n:1\r\n"
                         b"*6\r\n$11\r\ncl.throttle\r\n:-5\r\n*0\r\n:1\r\n:1\r\n:1\r\n$-1\r\n")
        s.close()

    def test_cluster_replies(self):
        r = self.r
        info = r.execute_command("CLUSTER", "INFO").decode()
        self.assertIn("cluster_state:ok\r\n", info)
        self.assertIn("cluster_slots_assigned:16384\r\n", info)
        slots = r.execute_command("CLUSTER", "SLOTS")
        self.assertEqual(slots[0][:2], [0, 16383])
        self.assertEqual(slots[0][2][:2], [b"127.0.0.1", self.d.port])
        shards = r.execute_command("CLUSTER", "SHARDS")
        self.assertEqual(shards[0][1], [0, 16383])
        node = dict(zip(shards[0][3][0][::2], shards[0][3][0][1::2]))
        self.assertEqual(node[b"port"], self.d.port)
        self.assertEqual(node[b"role"], b"master")
        self.assertIn(b"myself,master", r.execute_command("CLUSTER", "NODES"))
        with self.assertRaisesRegex(redis.ResponseError, "unknown subcommand"):
            r.execute_command("CLUSTER", "FAILOVER")

    def test_cluster_mode_client_connects(self):
        rc = RedisCluster(host="127.0.0.1", port=self.d.port)
        self.assertEqual(rc.execute_command("CL.THROTTLE", "cluster-key", 1, 1, 60)[0], 0)
        self.assertEqual(rc.execute_command("CL.THROTTLE", "cluster-key", 1, 1, 60)[0], 0)
        self.assertEqual(rc.execute_command("CL.THROTTLE", "cluster-key", 1, 1, 60)[0], 1)
        self.assertEqual(rc.execute_command("DEL", "cluster-key"), 1)
        rc.close()


if __name__ == "__main__":
    harness.main()
