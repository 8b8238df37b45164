#!/usr/bin/python3
"""Turns bench/measure.py's results into docs/benchmarks.md and PNG plots.

    /usr/bin/python3 bench/report.py RESULTS.json docs/benchmarks.md docs/plots

Uses Debian's python3-matplotlib (call /usr/bin/python3: another python3
on the PATH may lack it).  Every figure is a median with its min and max;
targets stand beside the figures; nothing here fails on a missed target.

The sections live in bench/reportlib/, one module each; this file reads the
command line, runs them in page order and writes the page.
"""
import json
import os
import sys

from reportlib import (breakeven, clang, containers, counters, header, itlb, measure, memory, notes, real,
                       remap, reproduce, servers, small, startup, summary)
from reportlib.common import Report

# The page's sections after the summary, in order.
SECTIONS = [remap, startup, itlb, memory, real, small, clang, servers, containers, counters, measure, breakeven,
            notes, reproduce]


def main():
    results_path, md, plots = sys.argv[1:4]
    R = json.load(open(results_path))
    os.makedirs(plots, exist_ok=True)
    out = Report(plots, os.path.relpath(plots, os.path.dirname(md)))
    header.write(out, R)
    summary_at = len(out.lines)
    for section in SECTIONS:
        section.write(out, R)
    # The summary goes near the top, but its rows come from every section.
    out.lines[summary_at:summary_at] = summary.lines(out, R, results_path)
    os.makedirs(os.path.dirname(os.path.abspath(md)), exist_ok=True)
    with open(md, "w") as f:
        f.write("\n".join(out.lines).rstrip() + "\n")
    print(f"wrote {md} and {plots}/*.png")


if __name__ == "__main__":
    main()
