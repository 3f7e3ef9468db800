"""migrate_guides.py -- the examples of docs/migrate/*.md, for the
test_migrate_*.py tests. Not a test itself.

A guide marks every example a test runs with an HTML comment on the line
just before its fence (invisible when the page is rendered):

    <!-- test: nginx-burst -->
    ```nginx
    limit_req_zone ...
    ```

A fenced block without a tag must be a "$ " block, which
test_docs_examples.py runs against `make run`'s daemon. Each test file lists
the tags it runs and checks with assert_all_run() that the guide has no
other example: an example nobody runs is a promise nobody keeps.
"""
import os
import re
import socket

import harness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDES = os.path.join(REPO, "docs", "migrate")
TAG = re.compile(r"^<!-- test: ([A-Za-z0-9_.-]+) -->$")


def path(name):
    """docs/migrate/<name>, for a guide or a file the guides ship."""
    return os.path.join(GUIDES, name)


def read(name):
    with open(path(name)) as f:
        return f.read()


def parse(guide):
    """({tag: block text}, [(line, first line) of untagged blocks that are not "$ " blocks])."""
    tagged, untagged = {}, []
    lines = read(guide).splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = lines[i + 1:j]
            m = TAG.match(lines[start - 1]) if start > 0 else None
            if m:
                if m.group(1) in tagged:
                    raise AssertionError("%s: tag %s used twice" % (guide, m.group(1)))
                tagged[m.group(1)] = "\n".join(body) + "\n"
            elif not (body and body[0].startswith("$ ")):
                untagged.append((start + 1, body[0] if body else ""))
            i = j + 1
        else:
            i += 1
    return tagged, untagged


def block(guide, tag):
    tagged, _ = parse(guide)
    if tag not in tagged:
        raise AssertionError("docs/migrate/%s has no block tagged %r" % (guide, tag))
    return tagged[tag]


def assert_all_run(testcase, guide, tags_run):
    """Every fenced block of the guide is run: tagged and in tags_run, or a "$ " block."""
    tagged, untagged = parse(guide)
    testcase.assertEqual([], untagged, "docs/migrate/%s: blocks no test runs (tag them)" % guide)
    testcase.assertEqual(sorted(tagged), sorted(tags_run), "docs/migrate/%s: tagged blocks vs the ones run" % guide)


free_port = harness.free_port
