"""The floor in a container: programs with nothing to move (issue 37's goal).

A container's start costs Podman and runc a few hundred ms, far above the
floor, so the programs' own starts are timed inside three long-lived
containers of one image (the programs, their libraries, bench/time-runs and
bench/libempty-preload.so): a plain one, whose time-runs runs each program
plain and with LD_PRELOAD of the empty preload; a plain one with a file
naming the empty preload bound read-only over /etc/ld.so.preload (what the
hook does, with the least a preload can be); and an annotated one, where
the hook's /etc/ld.so.preload gives every program hugetext's preload (on
its defaults, and with HUGETEXT_MATCH=.).  Each container's main process
is `time-runs --serve`: it runs one timed start per line it is sent
(posix_spawn to wait4, inside the container), so the bench interleaves the
five variants round by round across the three containers, the order
shuffled each round, and neither Podman's relay nor Python is in a figure.
The goal, its paired differences and its verdict are the small section's
(sections/small.py: at most 0.02 ms or 1% over the empty preload, decided
by a 95% bootstrap interval of the median paired difference), against the
empty preload loaded the same way (/etc/ld.so.preload: the loader opens,
maps and reads that file too, which LD_PRELOAD does not), and also against
LD_PRELOAD's; a row claims it only where the preload's reports (extra,
untimed runs) show that it moved nothing.
"""
import json
import os
import random
import subprocess

from . import small
from .common import ARGS, log, read, stats
from .podman import ANNOTATION, PREFIX, Tree, wait_for

PROGRAMS = [("/bin/true", ["/bin/true"]), ("ls /", ["/bin/ls", "/"]), ("git --version", ["/usr/bin/git", "--version"])]
EMPTY = "/bench/libempty-preload.so"
# variant: (container, settings); the report runs are the annotated variants with HUGETEXT_REPORT.
KINDS = {"plain": ("plain", []), "empty-preload": ("plain", [f"LD_PRELOAD={EMPTY}"]),
         "empty-ld.so.preload": ("ldso", []),
         "default": ("annotated", []), "match-all": ("annotated", ["HUGETEXT_MATCH=."])}
REPORTED = ("default", "match-all")
# The goal's baselines: (the key of the goal in a row, the empty variant); the first is the verdict's.
BASELINES = (("goal", "empty-ld.so.preload"), ("goal_ld_preload", "empty-preload"))


class Served:
    """A `time-runs --serve` as a container's main process: run(key, round) -> (wall ms, cpu ms, status)."""

    def __init__(self, eng, image, annotated, variants, log_path, volumes=()):
        self.eng, self.index = eng, {}
        argv = ["/bench/time-runs", "--serve"]
        for key, words in variants:
            self.index[key] = len(self.index)
            argv += ["--"] + words
        eng.count += 1
        self.name = f"{PREFIX}-{os.getpid()}-{eng.count}"
        args = ["podman", "--hooks-dir", eng.hooks, "run", "-i", "--rm", "--name", self.name, "--network", "none"]
        args += ["--annotation", ANNOTATION] if annotated else []
        for v in volumes:
            args += ["-v", v]
        self.err = open(log_path, "w")
        self.proc = subprocess.Popen(args + [image] + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, env=eng.env())
        self.pid = wait_for(lambda: self.proc.poll() is None and eng.pid(self.name), 60, 0.2)

    def run(self, key, rnd):
        self.proc.stdin.write(f"{self.index[key]} {rnd}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if len(line) != 5:
            raise RuntimeError(f"time-runs in {self.name} stopped: {read(self.err.name)[-300:]}")
        return int(line[2]) / 1e3, int(line[3]) / 1e3, int(line[4])

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def image(eng, work):
    t = Tree(os.path.join(work, "tree-floor"))
    for _, argv in PROGRAMS:
        t.with_libs(argv[0])
    t.with_libs(os.path.join(ARGS.bin, "time-runs"), "/bench/time-runs")
    t.file(os.path.join(ARGS.bin, "libempty-preload.so"), EMPTY)
    t.dir("/etc")
    t.dir("/tmp", 0o1777)
    tag = eng.image("floor", t)
    return tag


def json_lines(text):
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def report_path(i, k):
    return f"/tmp/hugetext-report-{i}-{k}.json"


def variants(which):
    """The variants of the plain or the annotated container: (key, NAME=VALUE... argv) for every program."""
    out = []
    for i, (_, argv) in enumerate(PROGRAMS):
        for k, (ctr, settings) in KINDS.items():
            if ctr == which:
                out.append(((i, k), settings + argv))
                if k in REPORTED:
                    out.append(((i, k, "report"), settings + [f"HUGETEXT_REPORT={report_path(i, k)}"] + argv))
    return out


def timed(ctrs, i, rounds):
    """rounds interleaved rounds of the four variants of program i: {variant: stats, with the pairs}."""
    wall = {k: {} for k in KINDS}
    cpu = {k: [] for k in KINDS}
    bad = dict.fromkeys(KINDS, 0)
    order = list(KINDS)
    for r in range(rounds):
        random.shuffle(order)
        for k in order:
            w, c, st = ctrs[KINDS[k][0]].run((i, k), r)
            if st != 0:
                bad[k] += 1
                continue
            wall[k][r] = w
            cpu[k].append(c)
    out = {}
    for k in KINDS:
        s = stats(list(wall[k].values()))
        if s is None:
            out[k] = {"na": "no successful run"}
            continue
        s.update(alt={"cpu": stats(cpu[k])}, failed_runs=bad[k])
        if k in REPORTED:
            s["paired"] = {e: [wall[k][r] - wall[e][r] for r in sorted(wall[k]) if r in wall[e]]
                           for _, e in BASELINES}
        out[k] = s
    return out


def what_it_did(ctr, i, k, checks):
    """checks more starts with a report (and the untimed one time-runs made first): what was moved."""
    for r in range(checks):
        ctr.run((i, k, "report"), r)
    lines = json_lines(read(f"/proc/{ctr.pid}/root{report_path(i, k)}")) if ctr.pid else []
    statuses, ms, moved = {}, [], 0
    for x in lines:
        key = x.get("status", "?") + (f" ({x['error']})" if x.get("error") else "")
        statuses[key] = statuses.get(key, 0) + 1
        if x.get("status") == "ok" and x.get("huge_bytes", 0) > 0:
            moved += 1
            ms.append(x.get("ms", 0.0))
    return {"runs": checks + 1, "moved_runs": moved, "move_ms": stats(ms), "statuses": statuses}


def program(ctrs, i, rounds, checks):
    label = PROGRAMS[i][0]
    log(f"floor in a container, '{label}': {rounds} interleaved rounds of {len(KINDS)} variants")
    row = timed(ctrs, i, rounds)
    row["did"] = {k: what_it_did(ctrs["annotated"], i, k, checks) for k in REPORTED}
    for k in REPORTED:
        for key, base in BASELINES:
            e = row.get(base, {})
            if "median" in row[k] and "median" in e:
                row[k][key] = small.goal(e, dict(row[k], paired=row[k]["paired"][base]), row["did"][k])
    for k in KINDS:
        row[k].pop("paired", None)
    row["argv"] = PROGRAMS[i][1]
    return row


def floor(eng, rounds):
    work = os.path.join(eng.work, "floor")
    os.makedirs(work, exist_ok=True)
    tag = image(eng, work)
    ctrs = {}
    try:
        ldso = os.path.join(work, "ld.so.preload")
        with open(ldso, "w") as f:
            f.write(EMPTY + "\n")
        os.chmod(ldso, 0o644)
        for which in ("plain", "ldso", "annotated"):
            ctrs[which] = Served(eng, tag, which == "annotated", variants(which),
                                 os.path.join(work, f"{which}.log"),
                                 [f"{ldso}:/etc/ld.so.preload:ro"] if which == "ldso" else ())
            if not ctrs[which].pid:
                return {"na": f"the {which} container did not start: {read(ctrs[which].err.name)[-300:]}"}
        res = {"rounds": rounds, "order": [p for p, _ in PROGRAMS], "variants": list(KINDS),
               "goal": {"ms": small.GOAL_MS, "ratio": small.GOAL_RATIO, "against": BASELINES[0][1],
                        "also": BASELINES[1][1]},
               "hook": eng.hook_said(ctrs["annotated"].name), "programs": {}}
        for i, (label, _) in enumerate(PROGRAMS):
            res["programs"][label] = program(ctrs, i, rounds, 5 if ARGS.quick else 20)
        return res
    finally:
        for c in ctrs.values():
            c.close()
