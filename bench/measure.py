#!/usr/bin/python3
"""Runs every measurement of the hugetext benchmark and writes one JSON file.

Called by bench/run.sh, which builds the programs, sizes the explicit page
pool and mounts hugetlbfs first.  Every variant is checked from hugetext's
own report (status ok, mode) or from smaps before it is timed; a variant
that does not work yet is recorded as n/a with the reason, never as a
failure of the benchmark.  Variants are interleaved (round robin, the order
shuffled each round), and figures are medians with min and max.

The sections live in bench/sections/, one module each; this file reads the
command line, runs the sections asked for and merges their results.
"""
import argparse
import json
import os
import random
import shutil
import time

from sections.common import ARGS, NOTES, TMP, guarded, log, pool_pages, read, sh
from sections.clang import clang
from sections.containers import containers
from sections.itlb import itlb
from sections.machine import machine
from sections.measure import measure
from sections.memory import memory
from sections.real import realwork
from sections.remap import remap_cost
from sections.servers import servers
from sections.small import small
from sections.startup import startup


# Steps that run only when --only names them.
ONLY_ASKED = ("servers", "containers")
# What each step records of the machine it ran on ("machines"): an --only run's may not be the page's.
MACHINE_KEYS = ("date", "quick", "commit", "cpu", "kernel", "pool_pages")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory with the bt-* programs")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--share-dir", default="")
    ap.add_argument("--htlb-dir", default="")
    ap.add_argument("--text-cache-dir", default="", help="a tmpfs mounted huge=within_size")
    ap.add_argument("--only", default="", help="comma list: remap,startup,itlb,memory,real,small,clang,measure,servers,containers")
    ap.parse_args(namespace=ARGS)
    ARGS.preload = os.path.abspath(ARGS.preload)
    ARGS.pool_set = pool_pages()
    ARGS.pool_changed_seen = False
    rustc = shutil.which("rustc")
    if rustc:
        sysroot = sh(f"{rustc} --print sysroot")
        real = os.path.join(sysroot, "bin", "rustc")
        ARGS.rustc = real if os.path.exists(real) else rustc  # past the rustup proxy
    else:
        ARGS.rustc = ""
    random.seed(1)
    results = {"machine": machine()}
    ARGS.perf_itlb = results["machine"]["perf_itlb"]
    only = set(filter(None, ARGS.only.split(",")))
    steps = [("remap", remap_cost), ("startup", startup), ("itlb", itlb), ("memory", memory),
             ("real", realwork), ("small", small), ("clang", clang), ("measure", measure), ("servers", servers),
             ("containers", containers)]
    if os.path.exists(ARGS.out) and only:
        with open(ARGS.out) as f:
            old = json.load(f)
        # The page's machine and run stay those of the run that measured the rest; each step
        # measured now records this machine beside its results (MACHINES, below).
        results = dict(old, machine=old.get("machine") or results["machine"], now=results["machine"])
    elif os.path.exists(ARGS.out):
        # A full run measures everything but the servers and the containers
        # (only with --only): their last results stay, with the run they came from.
        with open(ARGS.out) as f:
            old = json.load(f)
        for k in ONLY_ASKED:
            if k in old:
                results[k] = old[k]
                when = (old.get("measured") or {}).get(k, "an earlier run")
                results.setdefault("carried", {})[k] = when
                results.setdefault("measured", {})[k] = when
    t0 = time.time()
    for name, fn in steps:
        if only and name not in only:
            continue
        # The servers take half an hour, the containers a quarter: only when asked for (--only).
        if name in ONLY_ASKED and not only:
            continue
        t = time.time()
        (results.get("carried") or {}).pop(name, None)
        load0 = read("/proc/loadavg").split()[0]
        log(f"=== {name} (load average {load0})")
        results[name] = guarded(fn, "step")
        results.setdefault("seconds", {})[name] = round(time.time() - t, 1)
        results.setdefault("measured", {})[name] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))
        results.setdefault("load", {})[name] = [float(load0), float(read("/proc/loadavg").split()[0])]
        now = results.get("now") or results["machine"]
        results.setdefault("machines", {})[name] = {k: now.get(k) for k in MACHINE_KEYS}
        with open(ARGS.out, "w") as f:
            json.dump({k: v for k, v in dict(results, notes=NOTES).items() if k != "now"}, f, indent=1)
    results["notes"] = NOTES
    results.pop("now", None)
    if not only:  # an --only run's time is in "seconds"; the page's total stays the full run's
        results["total_seconds"] = round(time.time() - t0, 1)
    with open(ARGS.out, "w") as f:
        json.dump(results, f, indent=1)
    shutil.rmtree(TMP, ignore_errors=True)
    log(f"done in {round(time.time() - t0, 1)} s: {ARGS.out}")


if __name__ == "__main__":
    main()
