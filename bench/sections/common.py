"""What every section uses: running a program with or without the preload,
checking hugetext's report, interleaving variants, statistics, the pool.
"""
import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The command line, filled in by measure.py's main() (the same object all along).
ARGS = argparse.Namespace()
TMP = tempfile.mkdtemp(prefix="hugetext-bench-")
NOTES = []  # odd things seen while measuring, for the report


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def note(msg):
    if msg not in NOTES:
        NOTES.append(msg)
        log("note: " + msg)


def guarded(fn, what):
    """fn()'s result, or {"na": why} when it raised: one broken part must not lose the others."""
    try:
        return fn()
    except Exception as e:
        traceback.print_exc()
        return {"na": f"the {what} crashed: {e!r}"}


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception:
        return ""


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def meminfo():
    out = {}
    for line in read("/proc/meminfo").splitlines():
        k, v = line.split(":", 1)
        out[k] = int(v.split()[0])
    return out


# ---------------------------------------------------------------- running

class Run:
    """One process: wall and CPU time, stdout, the JSON line it printed, the report."""

    def __init__(self, wall_ms, rc, out, err, report, cpu_ms=0.0):
        self.wall_ms, self.rc, self.out, self.err, self.report = wall_ms, rc, out, err, report
        self.cpu_ms = cpu_ms

    def times(self):
        """Wall time first (what a user waits for), CPU time (user+sys) beside it."""
        return {"wall": self.wall_ms, "cpu": self.cpu_ms}

    def json(self):
        for line in reversed(self.out.splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    pass
        return None


def run(argv, env=None, preload=False, report=True, timeout=600, cwd=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("HUGETEXT_") or k.startswith("HUGETLB_") or k == "LD_PRELOAD":
            del e[k]
    rep = None
    if preload:
        e["LD_PRELOAD"] = ARGS.preload
        if report:
            rep = os.path.join(TMP, "report.json")
            if os.path.exists(rep):
                os.unlink(rep)
            e["HUGETEXT_REPORT"] = rep
        # Every variant copies, at once, unless it asks for the page cache or
        # the default copy policy (None: the default).
        e["HUGETEXT_PAGE_CACHE"] = "0"
        e["HUGETEXT_COPY"] = "now"
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    wall = (time.perf_counter() - t) * 1e3
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru2.ru_utime - ru.ru_utime + ru2.ru_stime - ru.ru_stime) * 1e3
    recs = []
    if rep and os.path.exists(rep):
        for line in read(rep).splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return Run(wall, p.returncode, p.stdout, p.stderr, recs, cpu)


# The preload's default settings: HUGETEXT_PAGE_CACHE and HUGETEXT_COPY unset.
DEFAULTS = {"HUGETEXT_PAGE_CACHE": None, "HUGETEXT_COPY": None}


def terminate(proc, grace):
    """Ends a child: SIGTERM, then SIGKILL after grace seconds; reaped either way."""
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def small_page_cache(path):
    """Leaves path's page cache in 4 KiB pages: dropped, then read 4 KiB at a time."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        while os.read(fd, 4096):
            pass
    finally:
        os.close(fd)


def check_report(r, obj_re, mode=None, need_cache=False, need_kept=False):
    """None when the report shows the object moved as asked, else the reason."""
    if r.rc != 0:
        return f"exit status {r.rc}: {r.err.strip()[-200:]}"
    mine = [x for x in r.report if re.search(obj_re, x.get("object", ""))]
    if not mine:
        return f"no report line for {obj_re}"
    ok = [x for x in mine if x.get("status") == "ok" and x.get("huge_bytes", 0) > 0]
    if not ok:
        bad = [x for x in mine if x.get("status") != "skipped"] or mine
        x = bad[0]
        why = x.get("error", "no huge pages")
        if x.get("strerror"):
            why += f" ({x['strerror']})"
        return f"{x.get('status')}: {why}"
    if need_kept and not all(x.get("kept_bytes", 0) > 0 for x in ok):
        return "the kernel's 2 MiB page-cache pages were not kept"
    if mode and not all(x.get("mode") == mode for x in ok):
        return f"asked for {mode}, got {ok[0].get('mode')}"
    if need_cache:
        c = [x.get("cache") for x in ok]
        if not all(c):
            return "no 'cache' key in the report: shared cache not implemented yet"
        if not all(v == "hit" for v in c):
            return f"shared cache answered {c[0]!r}, not hit"
    return None


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0], xs[0], xs[0]]
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "q1": q[0], "q3": q[2], "values": xs}


def interleave(variants, reps, one, label, follow=None):
    """variants: {name: thunk() -> (value or None, problem or None)}.

    follow: {b: a}: b runs right after a in every round (a second start).
    """
    vals = {k: [] for k in variants}
    probs = {k: [] for k in variants}
    names = list(variants)
    for i in range(reps):
        random.shuffle(names)
        for b, a in (follow or {}).items():
            if a in names and b in names:
                names.remove(b)
                names.insert(names.index(a) + 1, b)
        for k in names:
            v, prob = variants[k]()
            if prob:
                probs[k].append(prob)
            else:
                vals[k].append(v)
        if reps >= 5 and (i + 1) % max(1, reps // 3) == 0:
            log(f"  {label}: round {i + 1}/{reps}")
    out = {}
    for k in variants:
        alt = {}
        if vals[k] and isinstance(vals[k][0], dict):
            keys = list(vals[k][0])
            alt = {a: stats([v[a] for v in vals[k]]) for a in keys[1:]}
            vals[k] = [v[keys[0]] for v in vals[k]]
        s = stats(vals[k])
        if s is not None and alt:
            s["alt"] = alt
        if s is None:
            out[k] = {"na": probs[k][0] if probs[k] else "no value"}
        else:
            s["problems"] = probs[k][:3]
            s["failed_runs"] = len(probs[k])
            out[k] = s
    return out


# ---------------------------------------------------------------- pool

def pool_pages():
    return int(read("/proc/sys/vm/nr_hugepages", "0") or 0)


def ensure_pool(n):
    """Another process (a test suite) may reset the pool under us: put it back."""
    cur = pool_pages()
    if cur >= n:
        return True
    if ARGS.pool_changed_seen is False and cur != ARGS.pool_set:
        note(f"the explicit page pool changed under the benchmark (was {ARGS.pool_set}, "
             f"found {cur}): something else on the machine set vm.nr_hugepages; it was set again")
        ARGS.pool_changed_seen = True
    try:
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(max(n, ARGS.pool_set)))
    except OSError:
        return False
    return pool_pages() >= n




# ---------------------------------------------------------------- programs

def bt(mib, kind=""):
    return os.path.join(ARGS.bin, f"bt-{mib}{kind}")


def exec_bytes(path):
    """Size of an ELF file's executable segments, from readelf."""
    total = 0
    for line in sh(f"readelf -lW {path}").splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "LOAD" and "E" in f[6:-1]:
            total += int(f[5], 16)
    return total
