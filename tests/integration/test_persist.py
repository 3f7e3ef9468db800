"""test_persist.py -- the state survives a restart by default (sluice.snap in
the working directory or $STATE_DIRECTORY), `off` turns that off, a file
that cannot be loaded is kept aside, a failed write names its cause and
keeps the previous snapshot, and a restart under load loses at most one
snapshot interval of charges (SIGKILL) or nothing (SIGTERM)."""
import datetime
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import BASE_CONFIG, Daemon
import redis

S = 1_000_000
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sluice.example.yaml")


def with_store(store):
    return BASE_CONFIG.replace("threads: 2\n", "threads: 2\nstore:\n" + store)


def example_daemon(workdir=None, test_clock=1000 * S, env=None, args=()):
    """sluiced --config sluice.example.yaml, as the issue ran it (free ports)."""
    return Daemon(config=None, args=["--config", EXAMPLE, "--http", "127.0.0.1:0"] + list(args),
                  test_clock=test_clock, workdir=workdir, env=env)


def throttle_remaining(r, key):
    return r.execute_command("CL.THROTTLE", key, 9, 10, 60)[2]


class Default(unittest.TestCase):
    def test_restart_keeps_remaining_with_the_example_config(self):
        # The reproduction: 6 charges leave 4; after a SIGTERM and a
        # start in the same directory the next charge must leave 3, not 9.
        d = example_daemon()
        r = d.client()
        self.assertEqual([throttle_remaining(r, "user123") for _ in range(6)], [9, 8, 7, 6, 5, 4])
        self.assertEqual(r.execute_command("SL.CHECK", "per_user", "bob")[2], 99)
        path = os.path.join(d.dir, "sluice.snap")
        self.assertRegex(d.output(), r"state: no snapshot at %s \(the working directory\) yet: "
                                     r"starting empty; writing it every 60s and at shutdown" % path)
        d.stop()
        self.assertTrue(os.path.isfile(path), "no sluice.snap in the working directory")

        d2 = example_daemon(workdir=d.dir)
        # said before anything else: where the state is and what was found
        first = d2.output().splitlines()[0]
        self.assertRegex(first, r"state: loaded [1-9]\d* states? from the snapshot %s "
                                r"\(the working directory\)" % path)
        r2 = d2.client()
        self.assertEqual(throttle_remaining(r2, "user123"), 3)
        self.assertEqual(r2.execute_command("SL.CHECK", "per_user", "bob")[2], 98)
        self.assertEqual(r2.info("persistence")["snapshot_path"], path)
        d2.stop()

    def test_state_directory(self):
        # systemd's StateDirectory=: $STATE_DIRECTORY, the first of its paths
        base = tempfile.mkdtemp(prefix="sluice-state-")
        try:
            state = os.path.join(base, "state")
            os.mkdir(state)
            env = {"STATE_DIRECTORY": state + ":" + os.path.join(base, "other")}
            d = example_daemon(env=env)
            self.assertEqual(throttle_remaining(d.client(), "k"), 9)
            self.assertIn("(%s)" % "$STATE_DIRECTORY", d.output())
            d.stop()
            self.assertTrue(os.path.isfile(os.path.join(state, "sluice.snap")))
            self.assertFalse(os.path.exists(os.path.join(d.dir, "sluice.snap")))
            d2 = example_daemon(env=env)  # another working directory: same state
            self.assertEqual(throttle_remaining(d2.client(), "k"), 8)
            d2.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)

    def test_check_config_says_where(self):
        base = tempfile.mkdtemp(prefix="sluice-state-")
        env = dict(os.environ, STATE_DIRECTORY=base)
        ok = subprocess.run([harness.SLUICED, "--config", EXAMPLE, "--check-config"], capture_output=True,
                            text=True, timeout=30, cwd=base, env=env)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("state: %s/sluice.snap ($STATE_DIRECTORY)" % base, ok.stdout)
        off = subprocess.run([harness.SLUICED, "--snapshot", "off", "--check-config"], capture_output=True,
                             text=True, timeout=30, cwd=base, env=env)
        self.assertIn("state: no snapshots (--snapshot off)", off.stdout)
        self.assertEqual(os.listdir(base), [])  # nothing written by a check
        os.rmdir(base)

    def test_off_in_the_file_and_on_the_command_line(self):
        for config, args, origin in [(with_store("  snapshot: off\n"), [], "store.snapshot: off"),
                                     (BASE_CONFIG, ["--snapshot", "off"], "--snapshot off")]:
            d = Daemon(config, args=args)
            self.assertIn("state: no snapshots (%s): a restart starts every key afresh" % origin,
                          d.output())
            d.client().execute_command("SL.CHECK", "per_user", "u")
            d.stop()
            self.assertEqual([n for n in os.listdir(d.dir) if "snap" in n], [])

    def test_snapshot_path_on_the_command_line(self):
        d = Daemon(with_store("  snapshot: off\n"), args=["--snapshot", "elsewhere.snap"])
        self.assertEqual(d.client().execute_command("SL.CHECK", "per_user", "u")[2], 4)
        d.stop()
        self.assertTrue(os.path.isfile(os.path.join(d.dir, "elsewhere.snap")))
        bad = subprocess.run([harness.SLUICED, "--snapshot", ""], capture_output=True, text=True,
                             timeout=30, cwd=d.dir)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--snapshot takes a file path or off", bad.stderr)


class RedisStore(unittest.TestCase):
    def test_off_by_default_with_redis(self):
        from test_distributed import RedisServer  # skips without redis-server
        server = RedisServer()
        try:
            d = Daemon(BASE_CONFIG, args=["--store", server.url])
            self.assertIn("state: kept in Redis; no snapshot of this daemon's memory", d.output())
            d.client().execute_command("SL.CHECK", "per_user", "u")
            d.stop()
            self.assertFalse(os.path.exists(os.path.join(d.dir, "sluice.snap")))
            # asked for, it writes the daemon's memory all the same
            d = Daemon(with_store("  snapshot: on\n"), args=["--store", server.url], workdir=d.dir)
            d.stop()
            self.assertTrue(os.path.exists(os.path.join(d.dir, "sluice.snap")))
        finally:
            server.stop()


class Unusable(unittest.TestCase):
    def test_unreadable_file_is_moved_aside_and_said_why(self):
        # A directory where the file should be: unreadable as a snapshot.
        work = tempfile.mkdtemp(prefix="sluiced-test-")
        os.mkdir(os.path.join(work, "sluice.snap"))
        d2 = Daemon(BASE_CONFIG, workdir=work)
        self.assertRegex(d2.output(), r"error state: cannot load the snapshot \S+/sluice\.snap: "
                                      r"Is a directory \(EISDIR\); STARTING EMPTY; the file was "
                                      r"moved to \S+/sluice\.snap\.bad-\d+")
        d2.client().execute_command("SL.CHECK", "per_user", "u")
        d2.stop()
        names = os.listdir(work)
        self.assertTrue(any(n.startswith("sluice.snap.bad-") for n in names), names)
        self.assertTrue(os.path.isfile(os.path.join(work, "sluice.snap")))


def mount_tmpfs(path, options):
    try:
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


class SaveErrors(unittest.TestCase):
    """A failed write names the system's reason and the path, and leaves the
    previous snapshot as it was, with no temporary file."""

    def assert_named(self, d, path, words):
        self.assertRegex(d.output(), r"error state: cannot write the snapshot \(shutdown\) to %s: %s;"
                         % (path, words))
        self.assertNotIn("input/output error", d.output())

    def test_not_a_directory(self):
        work = tempfile.mkdtemp(prefix="sluiced-test-")
        with open(os.path.join(work, "file"), "w") as f:
            f.write("x")
        path = os.path.join(work, "file", "sluice.snap")
        d2 = Daemon(BASE_CONFIG, workdir=work, args=["--snapshot", path])
        # said at start already
        self.assertIn("warn state: cannot write in %s: " % os.path.dirname(path), d2.output())
        d2.client().execute_command("SL.CHECK", "per_user", "u")
        d2.stop()
        self.assert_named(d2, path, r"Not a directory \(ENOTDIR\)")
        self.assertEqual(d2.output().count("cannot write the snapshot"), 1)

    def test_full_disk_and_read_only(self):
        mnt = tempfile.mkdtemp(prefix="sluice-tmpfs-")
        if not mount_tmpfs(mnt, "size=64k"):
            os.rmdir(mnt)
            self.skipTest("cannot mount a tmpfs here (needs root)")
        try:
            path = os.path.join(mnt, "sluice.snap")
            config = with_store("  snapshot:\n    path: %s\n    interval: 0\n" % path)
            # the previous snapshot: a few keys
            d = Daemon(config)
            r = d.client()
            for i in range(3):
                r.execute_command("SL.CHECK", "per_user", "k%d" % i)
            d.stop()
            with open(path, "rb") as f:
                before = f.read()
            # more keys than 64 KiB can hold (28 bytes each)
            d = Daemon(config, workdir=d.dir)
            r = d.client()
            pipe = r.pipeline(transaction=False)
            for i in range(5000):
                pipe.execute_command("SL.CHECK", "per_user", "key-%d" % i)
            pipe.execute()
            d.stop()
            self.assert_named(d, path, r"No space left on device \(ENOSPC\)")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), before, "the previous snapshot changed")
            self.assertEqual([n for n in os.listdir(mnt) if ".tmp." in n], [])

            # read-only
            self.assertEqual(subprocess.run(["mount", "-o", "remount,ro", mnt]).returncode, 0)
            d = Daemon(config, workdir=d.dir)
            d.client().execute_command("SL.CHECK", "per_user", "ro")
            d.stop()
            self.assert_named(d, path, r"Read-only file system \(EROFS\)")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), before)
        finally:
            subprocess.run(["umount", mnt])
            os.rmdir(mnt)


POLICY = "  - name: load\n    limits:\n      - {algorithm: fixed_window, limit: 1000000000, period: 1h}\n"


class RestartUnderLoad(unittest.TestCase):
    """Clients charge many keys while the daemon is stopped. The manual clock
    stands still, so nothing recovers and every charge the store kept shows
    as `limit - remaining` after the restart."""
    INTERVAL_MS = 200
    CLIENTS = 4
    KEYS = 500

    def config(self):
        return ("listen:\n  resp: 127.0.0.1:0\n  http: \"\"\nthreads: 2\nstore:\n  snapshot:\n"
                "    path: state.snap\n    interval: %dms\npolicies:\n" % self.INTERVAL_MS + POLICY)

    def hammer(self, d, stop_after, how):
        """Runs the clients, stops the daemon with `how` after `stop_after`
        seconds; returns (admitted per key, times of admissions, stop time)."""
        admitted = [dict() for _ in range(self.CLIENTS)]
        times = [[] for _ in range(self.CLIENTS)]
        go = threading.Event()

        def client(n):
            r = redis.Redis(host="127.0.0.1", port=d.port, socket_timeout=5)
            i = n
            go.wait()
            while True:
                key = "k%d" % (i % self.KEYS)
                try:
                    reply = r.execute_command("SL.CHECK", "load", key)
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
                    return
                if reply[0] == 1:
                    admitted[n][key] = admitted[n].get(key, 0) + 1
                    times[n].append(time.time())
                i += self.CLIENTS

        threads = [threading.Thread(target=client, args=(n,)) for n in range(self.CLIENTS)]
        for t in threads:
            t.start()
        go.set()
        time.sleep(stop_after)
        stopped_at = time.time()
        how(d)
        for t in threads:
            t.join(30)
        per_key = {}
        for a in admitted:
            for k, v in a.items():
                per_key[k] = per_key.get(k, 0) + v
        return per_key, sorted(t for ts in times for t in ts), stopped_at

    def recovered(self, d2):
        r = d2.client()
        pipe = r.pipeline(transaction=False)
        for i in range(self.KEYS):
            pipe.execute_command("SL.PEEK", "load", "k%d" % i)
        return {"k%d" % i: 1_000_000_000 - reply[2] for i, reply in enumerate(pipe.execute())}

    def last_periodic_save(self, d):
        """Wall-clock time the last periodic snapshot began to be written
        (the debug line's time less the write's duration it gives)."""
        found = re.findall(r"^(\S+)Z debug state: snapshot written to \S+ \(periodic\) in ([0-9.]+) ms$",
                           d.output(), re.M)
        self.assertTrue(found, "no periodic snapshot was written:\n" + d.output()[-2000:])
        at = datetime.datetime.strptime(found[-1][0], "%Y-%m-%dT%H:%M:%S.%f")
        began = at.replace(tzinfo=datetime.timezone.utc).timestamp() - float(found[-1][1]) / 1000.0
        return began, len(found)

    def test_sigkill_loses_at_most_one_interval(self):
        d = Daemon(self.config(), test_clock=1000 * S, args=["--log-level", "debug"])
        per_key, times, stopped_at = self.hammer(d, 2.0, lambda d: d.kill())
        saved_at, saves = self.last_periodic_save(d)
        d2 = Daemon(self.config(), test_clock=1000 * S, workdir=d.dir)
        got = self.recovered(d2)
        d2.stop()
        admitted = sum(per_key.values())
        kept = sum(min(got[k], per_key.get(k, 0)) for k in got)
        extra = sum(max(0, got[k] - per_key.get(k, 0)) for k in got)  # charged, reply lost in the kill
        lost = admitted - kept
        # Lost: at most what was admitted since the last snapshot began (the
        # daemon logs when and how long, so a slow write on a busy machine is
        # no false failure; 5 ms for the log clock's granularity and the
        # reply's way back), and that snapshot is at most one interval old
        # (plus the timer's and the kill's own latency on a busy machine).
        since_save = sum(1 for t in times if t >= saved_at - 0.005)
        last_interval = sum(1 for t in times if t >= stopped_at - self.INTERVAL_MS / 1000.0)
        rate = len(times) / max(1e-9, times[-1] - times[0]) if len(times) > 1 else 0
        print("\nSIGKILL under load: %d charges admitted (%.0f/s over %d keys), %d kept by the snapshot, "
              "%d lost, %d charged without a reply; the last of %d periodic snapshots ended %.0f ms "
              "before the kill; %d admitted since, %d in the last interval (%d ms)"
              % (admitted, rate, self.KEYS, kept, lost, extra, saves, 1000 * (stopped_at - saved_at),
                 since_save, last_interval, self.INTERVAL_MS))
        self.assertGreater(admitted, 1000, "too little load to measure anything")
        self.assertGreater(kept, 0, "nothing was kept: no periodic snapshot?")
        self.assertLessEqual(lost, since_save)
        self.assertLessEqual(stopped_at - saved_at, self.INTERVAL_MS / 1000.0 + 0.5)
        self.assertLessEqual(extra, self.CLIENTS)

    def test_sigterm_loses_nothing(self):
        d = Daemon(self.config(), test_clock=1000 * S)

        def term(d):
            d.signal(15)
            d.proc.wait(30)
            d.log.close()
        per_key, times, _ = self.hammer(d, 1.0, term)
        self.assertEqual(d.proc.returncode, 0, d.output())
        d2 = Daemon(self.config(), test_clock=1000 * S, workdir=d.dir)
        got = self.recovered(d2)
        d2.stop()
        admitted = sum(per_key.values())
        lost = sum(max(0, per_key.get(k, 0) - got[k]) for k in got)
        extra = sum(max(0, got[k] - per_key.get(k, 0)) for k in got)
        print("\nSIGTERM under load: %d charges admitted over %d keys, %d lost, %d charged whose reply "
              "did not arrive" % (admitted, self.KEYS, lost, extra))
        self.assertGreater(admitted, 500)
        self.assertEqual(lost, 0)
        self.assertLessEqual(extra, self.CLIENTS)


if __name__ == "__main__":
    harness.main()
