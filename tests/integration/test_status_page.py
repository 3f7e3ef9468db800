"""test_status_page.py -- GET /status in a real browser: headless Chromium
(Debian's chromium, chromium-driver, python3-selenium) on a real daemon
(docs/operations.md "The status page"):

  - while a load generator runs, the charts are drawn and redrawn, the
    heavy-hitter tables fill, and a key that starts hammering shows first
    among the top keys by requests and by denials within two polls (2 s)
    of the daemon's /v1/stats naming it first;
  - the page loads nothing but itself and /v1/stats from the daemon (the
    browser's performance entries), and the browser resolves no other
    host, so it works without a network;
  - on a phone-sized window it has no sideways scroll;
  - with admin_token configured the page asks for it, and shows the
    statistics once it is typed; the token is in no URL and not in the
    daemon's log.

A screenshot of the page under load is saved in the test's output
directory ($SL_TEST_OUTPUT, else ./test-output/status_page); with
SL_UPDATE_SCREENSHOT=1 it is also copied to docs/status.png (the README's).

The daemon runs on the real clock: the page charts seconds as they pass.
Skipped (not failed) when selenium or chromedriver is missing, naming what
to install.
"""
import json
import os
import shutil
import threading
import time
import unittest
import urllib.request

import harness
from test_http import ADMIN_TOKEN, http_config

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:  # reported by require_browser as a failure
    webdriver = None

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.environ.get("SL_TEST_OUTPUT") or os.path.join(os.getcwd(), "test-output", "status_page")

CONFIG = """\
observe: {heavy_hitters: on}
policies:
  - name: per_ip
    limits:
      - {algorithm: gcra, limit: 50, period: 1m}  # no window boundary to reset the hammered key
  - name: search
    limits:
      - {algorithm: gcra, limit: 20, period: 1s, burst: 5}
"""

ABUSER = "198.51.100.66"


class Load:
    """Decisions from a crowd of keys over RESP, on a thread, until stop();
    hammer(key) adds a thread deciding on one key as fast as it can."""

    def __init__(self, daemon):
        self.d = daemon
        self.stopping = threading.Event()
        self.threads = []
        self.errors = []
        self._start(self._crowd)

    def _start(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def _crowd(self):
        r = self.d.client()
        i = 0
        try:
            while not self.stopping.is_set():
                p = r.pipeline(transaction=False)
                for _ in range(20):
                    i += 1
                    p.execute_command("SL.CHECK", "per_ip", "10.1.%d.%d" % (i // 250 % 4, i % 250))
                    p.execute_command("SL.CHECK", "search", "user%d" % (i % 40))
                p.execute()
                time.sleep(0.02)
        except Exception as e:  # reported by stop()
            self.errors.append(e)
        finally:
            r.connection_pool.disconnect()

    def _hammer(self, key):
        r = self.d.client()
        try:
            while not self.stopping.is_set():
                p = r.pipeline(transaction=False)
                for _ in range(50):
                    p.execute_command("SL.CHECK", "per_ip", key)
                p.execute()
                time.sleep(0.01)
        except Exception as e:
            self.errors.append(e)
        finally:
            r.connection_pool.disconnect()

    def hammer(self, key):
        self._start(self._hammer, key)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=10)
        if self.errors:
            raise self.errors[0]


def browser(width=1280, height=1000):
    opts = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=%d,%d" % (width, height),
                 # no host but loopback resolves: an external load would fail
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--disable-default-apps"):
        opts.add_argument(flag)
    for path in ("/usr/bin/chromium", "/usr/lib/chromium/chromium"):
        if os.path.exists(path):
            opts.binary_location = path
            break
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def wait_for(fn, timeout, what, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("not within %.1f s: %s" % (timeout, what))
        time.sleep(step)


def first_key(drv, policy, table):
    """The first key of a heavy-hitter table of a policy's card, or None."""
    return drv.execute_script(
        "var c = document.querySelector('section.policy[data-name=\"' + arguments[0] + '\"]');"
        "var td = c && c.querySelector('table.' + arguments[1] + ' tbody td.key');"
        "return td ? td.textContent : null;", policy, table)


def daemon_names_first(origin, policy, key):
    """Whether the daemon's /v1/stats has key first among policy's heavy
    hitters of the last minute, by requests and by denials."""
    with urllib.request.urlopen(origin + "/v1/stats", timeout=10) as r:
        st = json.loads(r.read())
    hh = next(p for p in st["policies"] if p["name"] == policy)["heavy_hitters"]["minute"]
    return all(hh[t]["top"] and hh[t]["top"][0]["key"] == key for t in ("requests", "denials"))


def require_browser(test):
    """A failure, not a skip: `make test` passing must mean the browser ran."""
    test.assertIsNotNone(webdriver, "python3-selenium is not installed (scripts/deps.sh test installs it)")
    test.assertTrue(os.access(CHROMEDRIVER, os.X_OK), "chromedriver is not installed (Debian: chromium-driver)")


class StatusPage(unittest.TestCase):
    def setUp(self):
        require_browser(self)
        self.d = harness.Daemon(http_config(CONFIG), args=["--http", "127.0.0.1:0"], test_clock=None)
        import re
        self.http_port = int(re.search(r" ready: .*\bhttp_port=(\d+)", self.d.output()).group(1))
        self.origin = "http://127.0.0.1:%d" % self.http_port
        self.load = None
        self.drv = None

    def tearDown(self):
        if self.drv is not None:
            self.drv.quit()
        if self.load is not None:
            self.load.stop()
        self.d.stop()

    def test_live_page_under_load(self):
        self.load = Load(self.d)
        self.drv = browser()
        self.drv.get(self.origin + "/status")
        self.assertEqual(self.drv.title, "sluice status")
        drv = self.drv
        # the cards and charts appear once the first poll is in
        wait_for(lambda: drv.find_elements(By.CSS_SELECTOR, 'section.policy[data-name="per_ip"] canvas.chart'),
                 10, "the per_ip card and its chart")
        wait_for(lambda: first_key(drv, "per_ip", "hh-requests"), 10, "a heavy hitter of per_ip")
        chart = lambda: drv.execute_script(
            "return document.querySelector('section.policy[data-name=\"per_ip\"] canvas.chart').toDataURL();")
        polls = lambda: int(drv.find_element(By.ID, "updated").get_attribute("data-polls") or 0)
        before, drawn = polls(), chart()
        # new seconds come into the chart: it is redrawn differently
        wait_for(lambda: polls() >= before + 2 and chart() != drawn, 6, "the chart redrawn with new seconds")

        # A key that starts hammering is named first within two of the
        # page's polls (2 s: it polls once a second) of the daemon naming it
        # first in /v1/stats: the first poll to start after that shows it.
        # Counted in polls, not seconds: at load 20 the load generator took
        # more than 2 s to put the key first, and Chromium's timers ran late.
        page_first = lambda: (first_key(drv, "per_ip", "hh-requests") == ABUSER and
                              first_key(drv, "per_ip", "hh-denials") == ABUSER)
        started = time.monotonic()
        self.load.hammer(ABUSER)
        wait_for(lambda: daemon_names_first(self.origin, "per_ip", ABUSER), 30,
                 "/v1/stats naming %s first by requests and by denials" % ABUSER)
        named = polls()
        wait_for(lambda: page_first() or polls() >= named + 2, 30, "two more polls")
        self.assertTrue(page_first(), "%s not first on the page %d polls after /v1/stats named it"
                        % (ABUSER, polls() - named))
        took = time.monotonic() - started
        # its row says what it has left: nothing, and when it may try again
        row = drv.execute_script(
            "var tr = document.querySelector('section.policy[data-name=\"per_ip\"] table.hh-denials tbody tr');"
            "return Array.from(tr.children).map(function (td) { return td.textContent; });")
        self.assertEqual(row[0], ABUSER)
        self.assertEqual(row[2], "0")
        self.assertRegex(row[3], r"^\d+(\.\d)? s$|^\d+ ms$")

        # the store card is filled
        self.assertIn("memory", drv.find_element(By.ID, "store").text)

        # nothing but the page and /v1/stats was loaded, all from the daemon
        urls = drv.execute_script(
            "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
            ".map(function (e) { return e.name; });")
        self.assertTrue(urls)
        for u in urls:
            self.assertTrue(u.startswith(self.origin + "/"), u)
            self.assertIn(u.split("?")[0], (self.origin + "/status", self.origin + "/v1/stats"))

        # the chart's span: the last minute, redrawn at once
        drawn = chart()
        drv.find_element(By.CSS_SELECTOR, '#span button[data-seconds="60"]').click()
        self.assertEqual(drv.find_element(By.CSS_SELECTOR, '#span button[data-seconds="60"]')
                         .get_attribute("aria-pressed"), "true")
        wait_for(lambda: chart() != drawn, 2, "the chart redrawn over the last minute")

        os.makedirs(OUTPUT, exist_ok=True)
        shot = os.path.join(OUTPUT, "status.png")
        drv.set_window_size(1280, 1000)
        n = polls()
        wait_for(lambda: polls() > n, 3, "one more poll at this size, so the charts fill it")
        self.assertTrue(drv.save_screenshot(shot))
        if os.environ.get("SL_UPDATE_SCREENSHOT") == "1":
            shutil.copyfile(shot, os.path.join(HERE, "..", "..", "docs", "status.png"))
        print("screenshot: %s (%.2f s to name the new abuser)" % (shot, took))

        # a phone: no sideways scroll, the card fits
        drv.set_window_size(390, 844)
        wait_for(lambda: drv.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1;"), 3,
            "no horizontal overflow at phone width")
        # the charts are redrawn at the new size, not stretched
        wait_for(lambda: drv.execute_script(
            "return Array.from(document.querySelectorAll('canvas.chart')).every(function (c) {"
            " return c.width === Math.round(c.clientWidth * (window.devicePixelRatio || 1)); });"), 3,
            "the charts redrawn at phone width")
        drv.save_screenshot(os.path.join(OUTPUT, "status-phone.png"))


class StatusPageToken(unittest.TestCase):
    def test_token_is_asked_for_and_kept_out_of_urls(self):
        require_browser(self)
        d = harness.Daemon(http_config(CONFIG, head="admin_token: %s\n" % ADMIN_TOKEN),
                           args=["--http", "127.0.0.1:0"], test_clock=None)
        drv = None
        try:
            import re
            port = int(re.search(r" ready: .*\bhttp_port=(\d+)", d.output()).group(1))
            r = d.client()
            r.execute_command("SL.CHECK", "per_ip", "k1")
            r.connection_pool.disconnect()
            drv = browser(800, 800)
            drv.get("http://127.0.0.1:%d/status" % port)
            form = wait_for(lambda: [f for f in drv.find_elements(By.ID, "auth") if f.is_displayed()], 10,
                            "the token form")[0]
            self.assertFalse(drv.find_elements(By.CSS_SELECTOR, "section.policy"))
            drv.find_element(By.ID, "token").send_keys("wrong-token-wrong-token")
            form.submit()
            wait_for(lambda: "refused" in drv.find_element(By.ID, "message-text").text, 5, "a wrong token refused")
            field = drv.find_element(By.ID, "token")
            field.clear()
            field.send_keys(ADMIN_TOKEN)
            form.submit()
            wait_for(lambda: first_key(drv, "per_ip", "hh-requests") == "k1", 5, "the statistics with the token")
            self.assertFalse(drv.find_element(By.ID, "auth").is_displayed())
            urls = drv.execute_script("return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
            self.assertTrue(urls)
            for u in urls + [drv.current_url]:
                self.assertNotIn(ADMIN_TOKEN, u)
            # #token=... in the address works too, and is taken out of it
            drv.execute_script("sessionStorage.clear();")
            drv.get("http://127.0.0.1:%d/status#token=%s" % (port, ADMIN_TOKEN))
            wait_for(lambda: first_key(drv, "per_ip", "hh-requests") == "k1", 5, "the statistics with #token=")
            self.assertNotIn(ADMIN_TOKEN, drv.current_url)
        finally:
            if drv is not None:
                drv.quit()
            d.stop()
        self.assertNotIn(ADMIN_TOKEN, d.output())


if __name__ == "__main__":
    harness.main()
