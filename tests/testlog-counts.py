#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts one meson test log (meson-logs/testlog.json).

Prints "passed failed skipped" on one line; with --notes, then one line per
skipped or failed test with its name (and a skip's own reason, its last
"SKIP:" line; a failure's last lines of output, indented with "| ", so that
a log from a machine that is gone still says why).  A log that cannot be read counts nothing.  Used by .ci/run
and tests/fresh/fresh.sh; import counts() for the same figures in Python.
"""
import json
import sys

# Lines of a failed test's output that --notes prints.
TAIL = 25


def counts(path):
    """(passed, failed, skipped, notes) of the log at @path."""
    p = f = s = 0
    notes = []
    try:
        for line in open(path):
            t = json.loads(line)
            r = t.get("result", "")
            if r in ("OK", "EXPECTEDFAIL"):
                p += 1
            elif r == "SKIP":
                s += 1
                why = [l for l in t.get("stdout", "").splitlines() if l.startswith("SKIP:")]
                notes.append("skipped %s: %s" % (t.get("name"), why[-1][5:].strip() if why else "(no reason given)"))
            else:
                f += 1
                notes.append("failed %s (%s)" % (t.get("name"), r))
                out = (t.get("stdout", "") or "").splitlines()[-TAIL:]
                notes.extend("| " + l for l in out)
    except OSError:
        pass
    return p, f, s, notes


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--notes"):
        sys.stderr.write("usage: testlog-counts.py TESTLOG.json [--notes]\n")
        return 2
    p, f, s, notes = counts(argv[1])
    print(p, f, s)
    if len(argv) == 3:
        for n in notes:
            print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
