"""test_http_wait_gone.py -- an HTTP/1 client that leaves while its wait=
answer is held (/v1/check?wait=, /v1/auth/<policy> with wait= or the
policy's max_wait) is dropped and gives its place back, as SL.ACQUIRE's
does (test_acquire.py::test_disconnected_waiter_gives_its_place_to_the_next):
the next waiter is admitted at the freed slot.

HTTP/1 reads nothing from a connection while its request is served: the
daemon notices a client gone by looking at the socket every 100 ms. The
daemon runs on the manual test clock, which stands still; places are read
with SL.PEEK (its retry_after_ms: where the next place is)."""
import time
import unittest

import test_http

S = 1_000_000
T0 = 5000 * S

CONFIG = """\
policies:
  - name: slow
    limits:
      - {algorithm: gcra, limit: 1, period: 60s}
  - name: slow_ip
    key: [ip]
    max_wait: 1h
    limits:
      - {algorithm: gcra, limit: 1, period: 60s}
  - name: second
    limits:
      - {algorithm: gcra, limit: 1, period: 1s}
"""


def held(d, target):
    """An HTTP/1 request left waiting on its own connection."""
    s = d.raw_http()
    s.sendall(b"GET " + target.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    return s


class HttpWaiterGone(unittest.TestCase):
    def setUp(self):
        self.d = test_http.HttpDaemon(test_http.http_config(CONFIG), test_clock=T0)

    def tearDown(self):
        self.d.stop()

    def peek(self, policy, key):
        return self.d.resp.execute_command("SL.PEEK", policy, key)[3]

    def until(self, policy, key, retry_ms):
        deadline = time.time() + 5
        while self.peek(policy, key) != retry_ms and time.time() < deadline:
            time.sleep(0.005)
        self.assertEqual(self.peek(policy, key), retry_ms)

    def still_waiting(self, s):
        s.settimeout(0.3)
        with self.assertRaises(TimeoutError):
            s.recv(1)

    def gives_its_place_to_the_next(self, policy, key, target):
        # gcra 1 per minute: the first now, then waiters at 60 s and 120 s.
        # The last leaves: its place goes back (the next place is 120 s away
        # again, not 180 s), and the next waiter takes its slot.
        self.assertEqual(self.d.get(target.replace("wait=1h", "wait=0s")).status, 200)
        first = held(self.d, target)
        self.until(policy, key, 120000)
        second = held(self.d, target)
        self.until(policy, key, 180000)
        second.close()
        self.until(policy, key, 120000)
        third = held(self.d, target)
        self.until(policy, key, 180000)  # at 120 s: the place the second left
        self.still_waiting(first)  # the one before it waits on
        self.still_waiting(third)
        first.close()
        third.close()

    def test_check_waiter_gone_gives_its_place_to_the_next(self):
        self.gives_its_place_to_the_next("slow", "g", "/v1/check?policy=slow&key=g&wait=1h")

    def test_forward_auth_waiter_gone_gives_its_place_to_the_next(self):
        self.gives_its_place_to_the_next("slow_ip", "ip=127.0.0.1", "/v1/auth/slow_ip?wait=1h")

    def test_forward_auth_max_wait_waiter_gone(self):
        # no wait=: the policy's max_wait holds it
        self.assertEqual(self.d.get("/v1/auth/slow_ip?wait=0s").status, 200)
        s = held(self.d, "/v1/auth/slow_ip")
        self.until("slow_ip", "ip=127.0.0.1", 120000)
        s.close()
        self.until("slow_ip", "ip=127.0.0.1", 60000)

    def test_next_waiter_is_admitted_at_the_freed_slot(self):
        # 1 per second: the first now, the second held a second; it leaves
        # at once, and the next is answered a second on (not two).
        self.assertEqual(self.d.get("/v1/check?policy=second&key=a").status, 200)
        s = held(self.d, "/v1/check?policy=second&key=a&wait=10s")
        self.until("second", "a", 2000)
        s.close()
        self.until("second", "a", 1000)
        start = time.monotonic()
        r = self.d.get("/v1/check?policy=second&key=a&wait=10s")
        took = time.monotonic() - start
        self.assertEqual(r.status, 200)
        # the daemon gave it the freed slot (its own account: the key is
        # now full for 2 s of the standing clock, its place at 1 s plus the
        # period; 3 s had it taken the slot after the left one), and held
        # it that long in real time; how much longer the answer took is the
        # machine's load (3.8 s seen at load 20, against a bound of 1.8 s)
        self.assertEqual(r.json()["reset_after_ms"], 2000)
        self.assertGreaterEqual(took, 0.9)

    def test_pipelined_request_is_not_taken_for_a_gone_client(self):
        # a request after the held one on the same connection is data, not
        # an end: the held one keeps its place
        self.assertEqual(self.d.get("/v1/check?policy=slow&key=p").status, 200)
        s = self.d.raw_http()
        s.sendall(b"GET /v1/check?policy=slow&key=p&wait=1h HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.until("slow", "p", 120000)
        time.sleep(0.3)  # three looks at the socket (not a rate window)
        self.assertEqual(self.peek("slow", "p"), 120000)
        self.still_waiting(s)
        s.close()
        self.until("slow", "p", 60000)


if __name__ == "__main__":
    unittest.main()
