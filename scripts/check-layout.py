#!/usr/bin/env python3
"""check-layout.py -- the architecture rules of src/, checked by `make test`.

DESIGN.md section 3: dependencies point one way (fronts -> engine -> store
-> core), no two modules include each other in a loop, no front includes
hiredis, and no file is over ~800 lines. A module is a .c and its .h; module
A depends on B when A's .c or .h includes B's .h.

Known breaches are listed below with their size today: each is a debt of
issue 13 that may shrink and must not grow, and a new breach fails. When one
is paid, remove it from the list (the script says so, without failing).

Usage: scripts/check-layout.py [SOURCE_DIR]   (exit 0 = clean, 1 = a breach)
"""
import os
import re
import sys

MAX_LINES = 800

# path -> the most lines it may have until it is split
KNOWN_LONG = {}

# modules that are in an include loop today: none (a loop through any
# module fails)
KNOWN_IN_LOOPS = set()

# files outside the Redis store that include hiredis today: none
KNOWN_HIREDIS = set()

# Folders from the bottom up: a file may include headers of its own folder
# and of folders before it, never after. The daemon (src/server/) is built
# as rooms: shared basics, configuration, keys, statistics, the decision
# engine, the state every part shares (state/: sld_daemon_t), the network,
# the fronts, and the daemon that wires them (and sluiced.c, its main, at
# the top); cli/ is a user of the library.
LAYERS = ["core", "store", "store/redis", "server/base", "server/config", "server/keys", "server/rls",
          "server/observe", "server/engine", "server/state", "server/net", "server/resp",
          "server/http",
          "server/gateway", "server/grpc", "server/daemon", "server", "cli"]

# includes that point up today (file, header): none (an include of a room
# above fails)
KNOWN_UPWARD = set()

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def layer_of(rel):
    folder = os.path.dirname(rel)[len("src/"):]
    best = None
    for i, name in enumerate(LAYERS):
        if folder == name or folder.startswith(name + "/"):
            best = i if best is None or len(name) > len(LAYERS[best]) else best
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = {}
    for folder, _, names in os.walk(os.path.join(root, "src")):
        for n in names:
            if n.endswith((".c", ".h")):
                full = os.path.join(folder, n)
                files[os.path.relpath(full, root)] = open(full, encoding="utf-8", errors="replace").read()
    problems, paid = [], []

    for rel, text in sorted(files.items()):
        lines = text.count("\n")
        limit = KNOWN_LONG.get(rel, MAX_LINES)
        if lines > limit:
            problems.append("%s: %d lines (at most %d%s)" % (rel, lines, limit,
                            ", its known size" if rel in KNOWN_LONG else ""))
        elif rel in KNOWN_LONG and lines <= MAX_LINES:
            paid.append("%s is %d lines now: remove it from KNOWN_LONG" % (rel, lines))

    def resolve(rel, inc):
        for base in (os.path.dirname(rel), "src"):
            cand = os.path.normpath(os.path.join(base, inc))
            if cand in files:
                return cand
        return None

    deps = {}
    hiredis = set()
    upward = set()
    for rel, text in files.items():
        module = rel[:-2]
        for inc in INCLUDE.findall(text):
            if inc.startswith("hiredis/"):
                hiredis.add(rel)
            target = resolve(rel, inc)
            if target is None:
                continue
            lo, hi = layer_of(target), layer_of(rel)
            if lo is not None and hi is not None and lo > hi:
                upward.add((rel, target))
                if (rel, target) not in KNOWN_UPWARD:
                    problems.append("%s includes %s: a lower folder may not include a higher one" % (rel, target))
            if target[:-2] != module:
                deps.setdefault(module, set()).add(target[:-2])

    for rel, target in sorted(KNOWN_UPWARD - upward):
        paid.append("%s no longer includes %s: remove it from KNOWN_UPWARD" % (rel, target))
    for rel in sorted(hiredis):
        if not rel.startswith("src/store/redis/") and rel not in KNOWN_HIREDIS:
            problems.append("%s includes hiredis: only src/store/redis/ may" % rel)
    for rel in sorted(KNOWN_HIREDIS - hiredis):
        paid.append("%s no longer includes hiredis: remove it from KNOWN_HIREDIS" % rel)

    # Tarjan's strongly connected components: a component of two or more
    # modules is a loop of includes.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in deps.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(tuple(sorted(comp)))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    in_loops = set()
    for comp in sorted(comps):
        in_loops.update(comp)
        if not set(comp) <= KNOWN_IN_LOOPS:
            problems.append("modules include each other in a loop: %s" % " <-> ".join(comp))
    for module in sorted(KNOWN_IN_LOOPS - in_loops):
        paid.append("%s is in no loop now: remove it from KNOWN_IN_LOOPS" % module)

    for p in problems:
        print("layout: " + p)
    for p in paid:
        print("layout: paid: " + p)
    print("layout: %d files, %d modules, %d problem(s), %d known debt(s) left" %
          (len(files), len(deps), len(problems), len(KNOWN_LONG) + len(KNOWN_IN_LOOPS) + len(KNOWN_HIREDIS) + len(KNOWN_UPWARD)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
