"""test_transactions.py -- MULTI / EXEC / DISCARD on the RESP front, with
real clients: redis-py's default pipeline (a transaction), raw bytes for what
no client library sends, and the Redis store, whose replies come later but
must still land inside EXEC's array, in order.

What is charged is read back with a zero-quantity CL.THROTTLE or SL.PEEK,
which charge nothing; time never moves (the test clock)."""
import socket
import unittest

import harness
from harness import Daemon, read_lines, closed_by_peer
import redis

from test_distributed import RedisServer, config, one_policy

EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def throttle_remaining(r, key):
    """redis-cell's remaining for k 9 1 60 (limit 10), charging nothing."""
    return r.execute_command("CL.THROTTLE", key, 9, 1, 60, 0)[2]


def send(sock, *lines):
    sock.sendall(b"".join(l.encode() + b"\r\n" for l in lines))


class Transactions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.r = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_redis_py_pipeline_is_a_transaction_and_charges_each_command_once(self):
        p = self.r.pipeline()  # transaction=True: MULTI ... EXEC
        p.execute_command("CL.THROTTLE", "py1", 9, 1, 60)
        p.execute_command("CL.THROTTLE", "py1", 9, 1, 60)
        self.assertEqual(p.execute(), [[0, 10, 9, -1, 60], [0, 10, 8, -1, 120]])
        self.assertEqual(throttle_remaining(self.r, "py1"), 8)  # exactly two charged

    def test_native_commands_in_a_pipeline(self):
        p = self.r.pipeline()
        p.execute_command("SL.CHECK", "per_user", "py2")
        p.execute_command("SL.CHECK", "per_user", "py2", 3)
        p.execute_command("SL.PEEK", "per_user", "py2")
        allowed, charged, peek = p.execute()
        self.assertEqual(allowed[:3], [1, 5, 4])
        self.assertEqual(charged[:3], [1, 5, 1])
        self.assertEqual(peek[:3], [1, 5, 1])
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "py2")[2], 1)

    def test_pipeline_without_transaction_still_works(self):
        p = self.r.pipeline(transaction=False)
        for _ in range(3):
            p.execute_command("CL.THROTTLE", "py3", 9, 1, 60)
        self.assertEqual([x[2] for x in p.execute()], [9, 8, 7])

    def test_an_error_at_run_time_is_an_element_of_the_array(self):
        p = self.r.pipeline()
        p.execute_command("CL.THROTTLE", "py4", 9, 1, 60)
        p.execute_command("SELECT", 1)  # well-formed; refused when it runs
        p.execute_command("CL.THROTTLE", "py4", 9, 1, 60)
        res = p.execute(raise_on_error=False)
        self.assertEqual(res[0][2], 9)
        self.assertIsInstance(res[1], redis.ResponseError)
        self.assertEqual(res[2][2], 8)
        self.assertEqual(throttle_remaining(self.r, "py4"), 8)

    def test_discard_charges_nothing(self):
        s = self.d.raw()
        send(s, "MULTI", "CL.THROTTLE dk 9 1 60", "SL.CHECK per_user dk", "DISCARD")
        self.assertEqual(read_lines(s, 4), b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+OK\r\n")
        s.close()
        self.assertEqual(throttle_remaining(self.r, "dk"), 10)
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "dk")[2], 5)

    def test_a_connection_closed_inside_multi_charges_nothing(self):
        s = self.d.raw()
        send(s, "MULTI", "CL.THROTTLE ck 9 1 60", "CL.THROTTLE ck 9 1 60")
        self.assertEqual(read_lines(s, 3), b"+OK\r\n+QUEUED\r\n+QUEUED\r\n")
        s.close()
        s = self.d.raw()  # QUIT inside MULTI ends it too
        send(s, "MULTI", "CL.THROTTLE ck 9 1 60", "QUIT", "EXEC")
        self.assertEqual(read_lines(s, 3), b"+OK\r\n+QUEUED\r\n+OK\r\n")
        self.assertTrue(closed_by_peer(s))
        s.close()
        self.assertEqual(self.r.ping(), True)  # after both closes were handled
        self.assertEqual(throttle_remaining(self.r, "ck"), 10)

    def test_errors_while_queueing_abort_exec_and_charge_nothing(self):
        cases = [
            ("NOPE x", b"-ERR unknown command 'NOPE', with args beginning with: ...\r\n"),
            ("CL.THROTTLE qk", b"-ERR wrong number of arguments for 'CL.THROTTLE' command\r\n"),
            ("CL.THROTTLE qk x 1 60", b"-ERR max_burst must be an integer >= 0\r\n"),
            ("SL.CHECK nope qk", b"-ERR no policy named 'nope' (SL.POLICIES lists them)\r\n"),
            ("SL.CHECK per_user qk -1", b"-ERR cost must be an integer >= 0\r\n"),
            ("SL.RESET nope qk", b"-ERR no such policy\r\n"),
            ("HELLO 4", b"-NOPROTO unsupported protocol version\r\n"),
        ]
        for bad, error in cases:
            with self.subTest(bad=bad):
                s = self.d.raw()
                send(s, "MULTI", "CL.THROTTLE qk 9 1 60", bad, "SL.CHECK per_user qk", "EXEC", "PING")
                want = b"+OK\r\n+QUEUED\r\n" + error + b"+QUEUED\r\n" + EXECABORT + b"+PONG\r\n"
                self.assertEqual(read_lines(s, 6), want)
                s.close()
        self.assertEqual(throttle_remaining(self.r, "qk"), 10)
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "qk")[2], 5)
        # redis-py reads EXECABORT and raises the queueing error it explains
        with self.assertRaisesRegex(redis.ResponseError, "Command # 2 .* max_burst must be"):
            p = self.r.pipeline()
            p.execute_command("CL.THROTTLE", "qk", 9, 1, 60)
            p.execute_command("CL.THROTTLE", "qk", "x", 1, 60)
            p.execute()
        self.assertEqual(throttle_remaining(self.r, "qk"), 10)

    def test_redis_errors_for_misplaced_commands(self):
        s = self.d.raw()
        send(s, "EXEC", "DISCARD", "MULTI", "MULTI", "WATCH k", "PING", "EXEC", "WATCH k", "UNWATCH")
        got = read_lines(s, 10)
        self.assertEqual(got.split(b"\r\n")[:8], [
            b"-ERR EXEC without MULTI", b"-ERR DISCARD without MULTI", b"+OK",
            b"-ERR MULTI calls can not be nested",  # as Redis: the transaction goes on
            b"-ERR WATCH is not supported: sluice has no keys to watch; MULTI/EXEC run their "
            b"commands together without it",
            b"+QUEUED", b"*1", b"+PONG"])
        self.assertIn(b"-ERR WATCH is not supported", got.split(b"\r\n")[8])
        self.assertIn(b"-ERR UNWATCH is not supported", got.split(b"\r\n")[9])
        s.close()

    def test_empty_transaction_and_inline_commands(self):
        s = self.d.raw()
        send(s, "MULTI", "EXEC", "multi", "cl.throttle ik 9 1 60", "exec")
        self.assertEqual(read_lines(s, 11),
                         b"+OK\r\n*0\r\n+OK\r\n+QUEUED\r\n*1\r\n*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n")
        s.close()

    def test_hello_inside_multi_switches_at_exec(self):
        s = self.d.raw()
        send(s, "MULTI", "HELLO 3", "CLIENT GETNAME", "EXEC", "CLIENT GETNAME")
        got = read_lines(s, 2 + 1 + 15 + 2)
        self.assertTrue(got.startswith(b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n%7\r\n"), got)
        self.assertTrue(got.endswith(b"*0\r\n_\r\n_\r\n"), got)  # RESP3 nulls from HELLO on
        s.close()

    def test_the_queue_is_bounded(self):
        s = self.d.raw()
        s.sendall(b"MULTI\r\n" + b"CL.THROTTLE bk 9 1 60\r\n" * 1025 + b"EXEC\r\nPING\r\n")
        got = read_lines(s, 1 + 1025 + 2)
        lines = got.split(b"\r\n")
        self.assertEqual(lines[0], b"+OK")
        self.assertEqual(set(lines[1:1025]), {b"+QUEUED"})
        self.assertEqual(lines[1025], b"-ERR transaction too long: at most 1024 commands between MULTI "
                                      b"and EXEC (it is discarded)")
        self.assertEqual(lines[1026:1028], [EXECABORT.rstrip(), b"+PONG"])
        s.close()
        self.assertEqual(throttle_remaining(self.r, "bk"), 10)
        # bytes: max_request_bytes (the base configuration's 1 MiB) of arguments in all
        s = self.d.raw()
        arg = b"x" * 600000
        big = b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(arg), arg)
        s.sendall(b"MULTI\r\n" + big + big + b"EXEC\r\n")
        got = read_lines(s, 4).split(b"\r\n")
        self.assertEqual(got[:2], [b"+OK", b"+QUEUED"])
        self.assertTrue(got[2].startswith(b"-ERR transaction too large: at most max_request_bytes"), got[2])
        self.assertEqual(got[3], EXECABORT.rstrip())
        s.close()


class TransactionsOnRedis(unittest.TestCase):
    """The Redis store answers later: EXEC's array still holds every reply
    in order, answers now (PING) and later (decisions) mixed, and the
    commands pipelined after EXEC come after it."""

    def setUp(self):
        self.redis = RedisServer()
        store = "store:\n  type: redis\n  url: %s\n  clock: local\n" % self.redis.url
        self.d = Daemon(config=config(one_policy("per_user", "{algorithm: sliding_window, limit: 5, period: 60s}"),
                                      store=store))
        self.r = self.d.client()

    def tearDown(self):
        try:
            self.d.stop()
        finally:
            self.redis.stop()

    def test_late_replies_land_inside_the_array_in_order(self):
        p = self.r.pipeline()
        p.execute_command("CL.THROTTLE", "rk", 9, 1, 60)
        p.ping()
        p.execute_command("SL.CHECK", "per_user", "rk")
        p.execute_command("ECHO", "between")
        p.execute_command("CL.THROTTLE", "rk", 9, 1, 60)
        p.execute_command("SL.CHECK", "per_user", "rk", 2)
        res = p.execute()
        self.assertEqual(res[0][:3], [0, 10, 9])
        self.assertEqual(res[1], True)
        self.assertEqual(res[2][:3], [1, 5, 4])
        self.assertEqual(res[3], b"between")
        self.assertEqual(res[4][:3], [0, 10, 8])
        self.assertEqual(res[5][:3], [1, 5, 2])
        self.assertEqual(throttle_remaining(self.r, "rk"), 8)
        self.assertGreater(self.r.info("store")["store_calls"], 0)  # decided in Redis, later
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "rk")[2], 2)

    def test_raw_order_with_commands_around_exec(self):
        s = self.d.raw()
        send(s, "PING", "MULTI", "SL.CHECK per_user ro", "ECHO mid", "SL.CHECK per_user ro", "EXEC",
             "SL.PEEK per_user ro", "PING")
        got = read_lines(s, 1 + 1 + 3 + 1 + 9 + 2 + 9 + 9 + 1)
        lines = got.split(b"\r\n")
        self.assertEqual(lines[:6], [b"+PONG", b"+OK", b"+QUEUED", b"+QUEUED", b"+QUEUED", b"*3"])
        self.assertEqual(lines[6:10], [b"*8", b":1", b":5", b":4"])
        self.assertEqual(lines[15:18], [b"$3", b"mid", b"*8"])
        self.assertEqual(lines[18:21], [b":1", b":5", b":3"])
        self.assertEqual(lines[26:30], [b"*8", b":1", b":5", b":3"])  # SL.PEEK after EXEC
        self.assertEqual(lines[35], b"+PONG")
        s.close()

    def test_a_reset_in_a_block_lands_between_its_neighbours(self):
        # the reset (a DEL) used to overtake the decisions queued before it.
        # A first EVALSHA on a fresh Redis is answered NOSCRIPT and resent
        # after SCRIPT LOAD, which a DEL sent meanwhile still overtakes (the
        # script is loaded on first use, not at connect): load it first.
        self.r.execute_command("SL.PEEK", "per_user", "warm")
        p = self.r.pipeline()
        p.execute_command("SL.CHECK", "per_user", "rr")
        p.execute_command("SL.CHECK", "per_user", "rr")
        p.execute_command("SL.RESET", "per_user", "rr")
        p.execute_command("SL.CHECK", "per_user", "rr")
        res = p.execute()
        self.assertEqual([res[0][2], res[1][2], res[2], res[3][2]], [4, 3, b"OK", 4])
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "rr")[2], 4)

    def test_discard_charges_nothing_in_redis(self):
        s = self.d.raw()
        send(s, "MULTI", "SL.CHECK per_user rd", "DISCARD")
        self.assertEqual(read_lines(s, 3), b"+OK\r\n+QUEUED\r\n+OK\r\n")
        s.close()
        self.assertEqual(self.r.execute_command("SL.PEEK", "per_user", "rd")[2], 5)
        self.assertEqual(self.redis.client().dbsize(), 0)  # nothing ever reached Redis


COUNTER = one_policy("counter", "{algorithm: fixed_window, limit: 100000000, period: 1h}")
PLAIN_BATCH = 400  # commands per round trip of the plain clients


def hammer(d, key, block, blocks_each, tx_clients=3, plain_clients=3):
    """tx_clients (redis-py, default pipeline) run blocks_each transactions of
    `block` SL.CHECKs on key while plain_clients send SL.CHECKs on it as
    fast as they can (raw pipelines, no transaction) until the others are
    done, each on its own connection, so spread over both worker threads.
    Returns every block's remaining counts and any client's exception."""
    import threading
    blocks, errors = [], []
    done = threading.Event()

    def tx_client():
        try:
            r = d.client()
            for _ in range(blocks_each):
                p = r.pipeline()  # MULTI ... EXEC
                for _ in range(block):
                    p.execute_command("SL.CHECK", "counter", key)
                blocks.append([reply[2] for reply in p.execute()])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    def plain_client():
        try:
            s = d.raw()
            payload = ("SL.CHECK counter %s\r\n" % key).encode() * PLAIN_BATCH + b"PING\r\n"
            while not done.is_set():
                s.sendall(payload)
                got = b""
                while not got.endswith(b"+PONG\r\n"):
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        raise AssertionError("the daemon closed a plain client")
                    got += chunk
            s.close()
        except Exception as e:
            errors.append(e)

    plain = [threading.Thread(target=plain_client) for _ in range(plain_clients)]
    tx = [threading.Thread(target=tx_client) for _ in range(tx_clients)]
    for t in plain + tx:
        t.start()
    for t in tx:
        t.join()
    done.set()
    for t in plain:
        t.join()
    return blocks, errors


class Isolation(unittest.TestCase):
    """EXEC's commands see their key as if they ran alone, though other
    connections, served by the other worker thread (threads: 2) or in Redis
    by another daemon, decide on it all the while: a window of 10^8 counts
    every admission, so a block's remaining counts must be strictly
    consecutive; any decision between two of them would show as a gap."""

    def check_blocks(self, blocks, errors, count):
        self.assertEqual(errors, [])
        self.assertEqual(len(blocks), 3 * count)
        gaps = [b for b in blocks if any(b[i] != b[0] - i for i in range(len(b)))]
        self.assertEqual(gaps[:1], [], "%d of %d blocks saw other decisions between theirs"
                         % (len(gaps), len(blocks)))

    def test_memory_store_with_two_worker_threads(self):
        with Daemon(config=config(COUNTER)) as d:
            self.check_blocks(*hammer(d, "hot", 400, 60), 60)

    def test_redis_store_with_two_daemons(self):
        redis_server = RedisServer()
        # a loaded machine must not turn a slow answer into a fallback
        store = ("store:\n  type: redis\n  url: %s\n  clock: local\n  timeout: 20s\n"
                 "  on_store_failure: closed\n" % redis_server.url)
        daemons = []
        try:
            daemons = [Daemon(config=config(COUNTER, store=store)) for _ in range(2)]
            import threading
            results = [None, None]

            def run(i):
                # what one script call holds (store/redis/script.h)
                results[i] = hammer(daemons[i], "shared", 64, 120)

            threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for d in daemons:  # every decision was Redis's
                self.assertEqual(d.client().info("store")["store_failures"], 0)
            for blocks, errors in results:
                self.check_blocks(blocks, errors, 120)
        finally:
            try:
                for d in daemons:
                    d.stop()
            finally:
                redis_server.stop()


if __name__ == "__main__":
    harness.main()
