"""The README's and docs' examples, run against the daemon `make run` starts.

A newcomer types what the README and docs show and compares what comes back;
an example that drifted from the shipped configuration (a policy renamed, a
limit changed, a message reworded) is a broken promise. Each example block
gets a fresh sluiced on its embedded default configuration (what `make run`
starts), on free ports instead of 6390/8090, and on the test clock at 0, the
start of every window, so times in the documented replies are reproducible.

Two kinds of examples are checked:
- a fenced block whose lines start with "$ ": the commands run in one shell,
  in order, and their output (stdout and stderr) must equal the other lines;
- the README's "Then, in another terminal" block: each command must succeed,
  and a comment such as "# 1) 0 (allowed) 2) 16 ..." or "# 200, or 429" is the
  expected reply.
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import Daemon

SOURCE = os.environ.get("SLUICE_SOURCE_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC_PATHS = ["README.md"] + sorted(
    os.path.relpath(p, SOURCE) for p in glob.glob(os.path.join(SOURCE, "docs", "**", "*.md"), recursive=True))

# Commands an example may use; anything else fails the test, so a new example
# is either runnable here or written without "$ ".
RUNNABLE = re.compile(r"^(redis-cli -p 6390 |curl |sluiced |sluice |echo )")


def fenced_blocks(text):
    """(first line number, lines) of every ``` block."""
    blocks, current, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, start = [], n + 1
            else:
                blocks.append((start, current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def shell_examples():
    """(doc, line, commands, expected output) for every block with "$ " lines."""
    found = []
    for doc in DOC_PATHS:
        with open(os.path.join(SOURCE, doc)) as f:
            for start, lines in fenced_blocks(f.read()):
                if lines and lines[0].startswith("$ "):
                    commands = [l[2:] for l in lines if l.startswith("$ ")]
                    expected = [l for l in lines if not l.startswith("$ ")]
                    found.append((doc, start, commands, expected))
    return found


def readme_terminal_block():
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    at = text.index("Then, in another terminal")
    start = text.index("```", at)
    body = text[text.index("\n", start) + 1:text.index("```", start + 3)]
    return [l for l in body.splitlines() if l.strip()]


class DocDaemon(Daemon):
    """sluiced as `make run` starts it: no --config, both fronts."""

    def __init__(self):
        super().__init__(config=None, args=["--http", "127.0.0.1:0"], test_clock=0)
        m = re.search(r" http_port=(\d+)", self.output())
        self.http_port = int(m.group(1))

    def localize(self, command, workdir, tty_format=True):
        """The documented command, aimed at this daemon and this tree. The
        docs show redis-cli's terminal format; --no-raw keeps it in a pipe."""
        command = command.replace("redis-cli -p 6390", "redis-cli %s-p %d" % ("--no-raw " if tty_format else "",
                                                                               self.port))
        command = re.sub(r"localhost:8090\b", "127.0.0.1:%d" % self.http_port, command)
        command = command.replace("/etc/sluice/sluice.yaml", os.path.join(workdir, "sluice.yaml"))
        command = re.sub(r"^sluiced ", harness.SLUICED + " ", command)
        command = re.sub(r"^sluice ", os.path.join(os.path.dirname(harness.SLUICED), "sluice") + " ", command)
        return command


def example_files(workdir):
    """Files the examples name: the shipped example as /etc/sluice/sluice.yaml,
    and broken.yaml, the same file with one period mistyped."""
    with open(os.path.join(SOURCE, "sluice.example.yaml")) as f:
        example = f.read()
    with open(os.path.join(workdir, "sluice.yaml"), "w") as f:
        f.write(example)
    lines = example.splitlines(True)
    seen_policies = 0
    for i, line in enumerate(lines):
        if line.lstrip().startswith("- name:") and line.startswith("  - "):
            seen_policies += 1
        if seen_policies == 2 and re.match(r"^\s+period: 1s\b", line):
            lines[i] = line.replace("period: 1s", "period: 1 minute", 1)
            break
    else:
        raise AssertionError("sluice.example.yaml's second policy has no 'period: 1s' to break")
    with open(os.path.join(workdir, "broken.yaml"), "w") as f:
        f.write("".join(lines))


class ShellExamples(unittest.TestCase):
    def test_examples_exist(self):
        self.assertGreaterEqual(len(shell_examples()), 2)

    def test_every_example_prints_what_the_docs_show(self):
        for doc, line, commands, expected in shell_examples():
            with self.subTest(doc="%s:%d" % (doc, line)):
                for c in commands:
                    self.assertRegex(c, RUNNABLE, "%s:%d: an example must be runnable here" % (doc, line))
                workdir = tempfile.mkdtemp(prefix="sluice-docs-")
                self.addCleanup(shutil.rmtree, workdir, True)
                example_files(workdir)
                with DocDaemon() as d:
                    script = "\n".join("%s 2>&1" % d.localize(c, workdir) for c in commands)
                    # as the packaged systemd unit runs it (StateDirectory=sluice)
                    env = dict(os.environ, STATE_DIRECTORY="/var/lib/sluice")
                    out = subprocess.run(["bash", "-c", script], cwd=workdir, capture_output=True,
                                         text=True, timeout=60, env=env).stdout
                out = out.replace(os.path.join(workdir, "sluice.yaml"), "/etc/sluice/sluice.yaml")
                out = out.replace(harness.SLUICED, "sluiced")
                self.assertEqual(expected, out.rstrip("\n").splitlines(),
                                 "%s:%d: the output differs from the docs" % (doc, line))


class ReadmeCommands(unittest.TestCase):
    def test_the_readme_commands_answer_as_commented(self):
        lines = readme_terminal_block()
        self.assertGreaterEqual(len(lines), 5)
        with DocDaemon() as d:
            for line in lines:
                command, _, comment = line.partition("#")
                command = command.strip()
                with self.subTest(command=command):
                    self.assertRegex(command, RUNNABLE)
                    run = subprocess.run(["bash", "-c", d.localize(command, d.dir, tty_format=False)], capture_output=True,
                                         text=True, timeout=30)
                    self.assertEqual(0, run.returncode, run.stderr)
                    self.assertNotIn("(error)", run.stdout)
                    self.assertNotIn("ERR", run.stdout)
                    pairs = re.findall(r"(\d+)\) (-?\d+)", comment)
                    if pairs:
                        got = [int(v) for v in run.stdout.split()]
                        self.assertEqual([int(v) for _, v in pairs], got, line)
                    statuses = re.findall(r"\b([1-5]\d\d)\b", comment)
                    if command.startswith("curl -i"):
                        status = int(run.stdout.split()[1])
                        self.assertIn(status, [int(s) for s in statuses] or [200], line)
                    elif command.startswith("curl"):
                        self.assertTrue(run.stdout, line)


if __name__ == "__main__":
    harness.main()
