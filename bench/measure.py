#!/usr/bin/python3
"""Runs every measurement of the hugetext benchmark and writes one JSON file.

Called by bench/run.sh, which builds the programs, sizes the explicit page
pool and mounts hugetlbfs first.  Every variant is checked from hugetext's
own report (status ok, mode) or from smaps before it is timed; a variant
that does not work yet is recorded as n/a with the reason, never as a
failure of the benchmark.  Variants are interleaved (round robin, the order
shuffled each round), and figures are medians with min and max.
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = None
TMP = tempfile.mkdtemp(prefix="hugetext-bench-")
NOTES = []  # odd things seen while measuring, for the report


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def note(msg):
    if msg not in NOTES:
        NOTES.append(msg)
        log("note: " + msg)


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
        # Every variant copies unless it asks for the page cache (None: the default).
        e["HUGETEXT_PAGE_CACHE"] = "0"
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


# The preload's default settings: HUGETEXT_PAGE_CACHE unset.
DEFAULTS = {"HUGETEXT_PAGE_CACHE": None}


def node_text_kb(argv):
    """kB of node's code on huge pages by kind (anon, hugetlb, filepmd), from its own smaps."""
    v = run(argv + ["-e", NODE_TEXT_JS])
    try:
        return json.loads(v.out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"stderr": v.err.strip()[:200]}


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


def interleave(variants, reps, one, label):
    """variants: {name: thunk() -> (value or None, problem or None)}."""
    vals = {k: [] for k in variants}
    probs = {k: [] for k in variants}
    names = list(variants)
    for i in range(reps):
        random.shuffle(names)
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


# ---------------------------------------------------------------- machine

def machine():
    cpu, fam = "", {}
    for line in read("/proc/cpuinfo").splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "model name" and not cpu:
            cpu = v
        elif k in ("cpu family", "model", "stepping") and k not in fam:
            fam[k] = v
    if fam:
        cpu += f" (family {fam.get('cpu family')}, model {fam.get('model')}, stepping {fam.get('stepping')})"
    caches = sh("lscpu | grep -E '^(L1i|L2|L3) cache' | sed 's/  */ /g' | paste -sd ';'")
    thp = "/sys/kernel/mm/transparent_hugepage/"
    perf = sh("perf stat -e iTLB-load-misses,iTLB-loads -x, true 2>&1")
    perf_ok = bool(perf) and "not supported" not in perf and "<not" not in perf and \
        re.search(r"^\d+,", perf, re.M) is not None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "caches": caches,
        "mem_gib": round(meminfo().get("MemTotal", 0) / 1048576, 1),
        "kernel": os.uname().release,
        "hypervisor": sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'"),
        "os": sh(". /etc/os-release; echo $PRETTY_NAME"),
        "thp_enabled": read(thp + "enabled"),
        "thp_defrag": read(thp + "defrag"),
        "thp_khugepaged_defrag": read(thp + "khugepaged/defrag"),
        "thp_shmem": read(thp + "shmem_enabled"),
        "pool_pages": ARGS.pool_set,
        "perf_itlb": perf_ok,
        "perf_itlb_output": perf[-300:],
        "node": sh("node --version"),
        "gxx": sh("g++ --version | head -1"),
        "rustc": sh(f"{ARGS.rustc} --version") if ARGS.rustc else "",
        "commit": sh(f"git -C {ROOT} log -1 --format=%h -- lib"),
        "lib_dirty": bool(sh(f"git -C {ROOT} status --porcelain -- lib")),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "quick": ARGS.quick,
    }


# ---------------------------------------------------------------- 1. remap cost

def bt(mib, kind=""):
    return os.path.join(ARGS.bin, f"bt-{mib}{kind}")


def remap_cost():
    sizes = [16, 46, 128]
    reps = 3 if ARGS.quick else 15
    res = {}
    for mib in sizes:
        log(f"remap cost, {mib} MiB: {reps} rounds")
        prog = bt(mib)
        run([prog, "start"])  # page cache warm

        def ours(mode, fill):
            def f():
                if mode == "explicit" and not ensure_pool(mib // 2 + 8):
                    return None, "cannot size the explicit pool"
                j = run([prog, "remap", mode, fill]).json()
                if not j:
                    return None, "no output"
                if j.get("status") != "ok":
                    return None, f"{j.get('status')}: {j.get('error')} (errno {j.get('errno')})"
                if j.get("mode") != mode:
                    return None, f"asked for {mode}, got {j.get('mode')}"
                return {"wall": j["ms"], "cpu": j.get("cpu_ms", 0.0)}, None
            return f

        def floor(how="resident"):
            j = run([prog, "floor", how]).json()
            if not j or "ms" not in j:
                return None, "no output"
            if j.get("huge_bytes", 0) < j.get("bytes", 1):
                return None, f"floor copy only {j.get('huge_bytes', 0) >> 20} MiB on huge pages"
            return {"wall": j["ms"], "cpu": j.get("cpu_ms", 0.0)}, None

        def floor_how(how):
            return lambda: floor(how)

        fills = {}

        def which_fill(mode, fill):
            j = run([prog, "remap", mode, fill]).json() or {}
            fills[f"{mode}-{fill}"] = j.get("fill", "")

        for m, fl in (("thp", "auto"), ("thp", "pread"), ("thp", "memcpy")):
            which_fill(m, fl)
        res[mib] = interleave({
            "floor": floor,
            "floor-populate": floor_how("populate"),
            "floor-pread": floor_how("pread"),
            "thp-auto": ours("thp", "auto"),
            "thp-pread": ours("thp", "pread"),
            "thp-memcpy": ours("thp", "memcpy"),
            "explicit-auto": ours("explicit", "auto"),
        }, reps, lambda: None, f"remap {mib} MiB")
        res[mib]["fill_used"] = fills
    return res


# ---------------------------------------------------------------- 2. start-up

NODE_TEXT_JS = r"""
const fs = require('fs');
let cur = '', kb = {anon: 0, hugetlb: 0, filepmd: 0};
for (const l of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
  if (/^[0-9a-f]+-[0-9a-f]+ /.test(l)) { cur = l; continue; }
  const m = /^(AnonHugePages|Private_Hugetlb|Shared_Hugetlb|FilePmdMapped):\s+(\d+)/.exec(l);
  if (!m || !/ r-xp /.test(cur) && !/\/node$/.test(cur) && !/^\S+ r-xp/.test(cur)) continue;
  const k = m[1] === 'AnonHugePages' ? 'anon' : m[1] === 'FilePmdMapped' ? 'filepmd' : 'hugetlb';
  kb[k] += +m[2];
}
console.log(JSON.stringify(kb));
"""


def startup():
    res = {"node": {}, "synthetic": {}}
    node = shutil.which("node")
    reps = 9 if ARGS.quick else 31
    # node's start-up is short and this VM noisy: more rounds for its medians.
    node_reps = 15 if ARGS.quick else 61
    share = {"HUGETEXT_SHARE": "1", "HUGETEXT_SHARE_DIR": ARGS.share_dir} if ARGS.share_dir else None
    if not node:
        res["node"] = {"na": "node is not installed"}
    else:
        node = os.path.realpath(node)
        obj = re.escape(node) + "$"
        # The copying variants start from node's code in 4 KiB page-cache
        # pages (as on a machine up for a while) and, with
        # HUGETEXT_PAGE_CACHE=0, leave it so.
        small_page_cache(node)
        copy_only = {"HUGETEXT_PAGE_CACHE": "0"}
        variants = {
            "plain": ([node, "-e", "0"], None, False),
            "preload-off": ([node, "-e", "0"], {"HUGETEXT_MODE": "off"}, True),
            "thp": ([node, "-e", "0"], {"HUGETEXT_MODE": "thp", **copy_only}, True),
            # The copy in a background thread while node starts; the report
            # line (written when the move is done) must still say ok.
            "thp-async": ([node, "-e", "0"], {"HUGETEXT_MODE": "thp", "HUGETEXT_ASYNC": "1", **copy_only}, True),
            "explicit": ([node, "-e", "0"], {"HUGETEXT_MODE": "explicit", **copy_only}, True),
            "share-warm": ([node, "-e", "0"], {**share, **copy_only} if share else None, True),
            "node-largepages": ([node, "--use-largepages=on", "-e", "0"], None, False),
        }
        # The default settings, on a copy of node (so that node itself keeps
        # its small pages for the rows above): the first preloaded start
        # copies and reads the code back as 2 MiB page-cache pages; the
        # starts after it keep those and copy only the last, partial 2 MiB.
        # The first start is timed on its own, cold each time.
        copy = os.path.join(ARGS.bin, "node-copy")
        shutil.copyfile(node, copy)
        os.chmod(copy, 0o755)
        firsts = []
        for _ in range(3 if ARGS.quick else 7):
            small_page_cache(copy)
            r = run([copy, "-e", "0"], DEFAULTS, preload=True)
            line = next((x for x in r.report if x.get("status") == "ok"), {})
            firsts.append({"wall_ms": r.wall_ms, "ms": line.get("ms"),
                           "warmed_bytes": line.get("warmed_bytes", 0), "rc": r.rc})
        res["first_start"] = firsts
        variants["default"] = ([copy, "-e", "0"], DEFAULTS, True)
        variants["default-plain"] = ([copy, "-e", "0"], None, False)

        def report_problem(k, r):
            """None when run r of variant k did what the variant is for, else the reason."""
            if r.rc != 0:
                return f"exit status {r.rc}"
            if k in ("thp", "explicit", "thp-async"):
                return check_report(r, obj, k.split("-")[0])
            if k == "default":
                return check_report(r, re.escape(copy) + "$", need_kept=True)
            if k == "share-warm":
                return check_report(r, obj, None, need_cache=True)
            return None

        checks = {}
        for k, (argv, env, pre) in variants.items():
            if checks.get(k):
                continue
            if k == "share-warm" and not share:
                checks[k] = "no hugetlbfs mount for the shared cache"
                continue
            if k == "explicit":
                ensure_pool(32)
            r = run(argv, env, preload=pre)
            if k == "share-warm":
                r = run(argv, env, preload=pre)  # second run: the cache is warm now
            checks[k] = report_problem(k, r)
            if k == "default-plain":
                kb = res["default_plain_text_kb"] = node_text_kb([copy])
                checks[k] = checks[k] or (None if kb.get("filepmd", 0) > 0 else
                                          f"the kernel mapped none of the copy's code huge ({kb.get('stderr', '')})")
            elif k == "node-largepages":
                kb = res["node_largepages_text_kb"] = node_text_kb([node, "--use-largepages=on"])
                checks[k] = checks[k] or (None if kb.get("anon", 0) > 0 else
                                          f"node --use-largepages=on left no code on huge pages ({kb.get('stderr', '')})")
        res["plain_text_kb"] = node_text_kb([node])
        r = run([node, "-e", "0"], {"HUGETEXT_MODE": "thp", **copy_only}, preload=True)
        res["thp_report"] = r.report
        log(f"node start-up: {node_reps} interleaved rounds of {len(variants)} variants")

        def thunk(k):
            argv, env, pre = variants[k]

            def f():
                if k == "explicit":
                    ensure_pool(32)
                r = run(argv, env, preload=pre)
                p = report_problem(k, r)
                if p:
                    return None, p
                return r.times(), None
            return f
        ok = {k: thunk(k) for k in variants if not checks.get(k)}
        res["node"] = interleave(ok, node_reps, None, "node")
        for k, why in checks.items():
            if why:
                res["node"][k] = {"na": why}
        res["node_order"] = list(variants)

    # The synthetic program (46 MiB): ours against libhugetlbfs and the kernel.
    mib = 46
    variants = {
        "plain": ([bt(mib), "start"], None, False),
        "thp": ([bt(mib), "start"], {"HUGETEXT_MODE": "thp"}, True),
        "explicit": ([bt(mib), "start"], {"HUGETEXT_MODE": "explicit"}, True),
        "libhugetlbfs": ([bt(mib, "-lh"), "start"], {"HUGETLB_ELFMAP": "R"}, False),
        "relinked-plain": ([bt(mib, "-2m"), "start"], None, False),
    }
    if ARGS.htlb_dir:
        variants["libhugetlbfs"][1]["HUGETLB_PATH"] = ARGS.htlb_dir
    checks = {}
    for k, (argv, env, pre) in variants.items():
        if not os.path.exists(argv[0]):
            checks[k] = "not built (libhugetlbfs is not installed)"
            continue
        ensure_pool(64)
        if k in ("thp", "explicit"):
            checks[k] = check_report(run(argv, env, preload=pre), "bt-46$", k)
        elif k == "libhugetlbfs":
            j = run([bt(mib, "-lh"), "chain", "10"], env).json() or {}
            checks[k] = None if j.get("hugetlb_kb", 0) > 0 else \
                "libhugetlbfs left the code on small pages"
        else:
            checks[k] = None
    log(f"synthetic start-up ({mib} MiB): {reps} interleaved rounds")

    def sthunk(k):
        argv, env, pre = variants[k]

        def f():
            if k in ("explicit", "libhugetlbfs"):
                ensure_pool(64)
            r = run(argv, env, preload=pre)
            if r.rc != 0:
                return None, f"exit status {r.rc}"
            if k in ("thp", "explicit"):
                p = check_report(r, "bt-46$", k)
                if p:
                    return None, p
            return r.times(), None
        return f
    res["synthetic"] = interleave({k: sthunk(k) for k in variants if not checks.get(k)},
                                  reps, None, "synthetic")
    for k, why in checks.items():
        if why:
            res["synthetic"][k] = {"na": why}
    res["synthetic_order"] = list(variants)
    return res


# ---------------------------------------------------------------- 3. iTLB loop

def itlb():
    sizes = [8, 16, 32, 46, 64, 128]
    reps = 2 if ARGS.quick else 9
    loops = {"random": ["loop", "3000000" if ARGS.quick else "5000000"],
             "chain": ["chain", "6000000" if ARGS.quick else "10000000"]}
    res = {"sizes": sizes, "loops": {}}
    lh_env = {"HUGETLB_ELFMAP": "R"}
    if ARGS.htlb_dir:
        lh_env["HUGETLB_PATH"] = ARGS.htlb_dir
    expect = {  # which smaps field shows the variant worked
        "4k": None, "thp": "anon_huge_kb", "explicit": "hugetlb_kb",
        "libhugetlbfs": "hugetlb_kb", "relinked-plain": "file_pmd_kb"}
    for loop, args in loops.items():
        res["loops"][loop] = {}
        for mib in sizes:
            log(f"iTLB loop '{loop}', {mib} MiB: {reps} rounds")
            variants = {
                "4k": ([bt(mib)] + args, None, False),
                "thp": ([bt(mib)] + args, {"HUGETEXT_MODE": "thp"}, True),
                "explicit": ([bt(mib)] + args, {"HUGETEXT_MODE": "explicit"}, True),
                "libhugetlbfs": ([bt(mib, "-lh")] + args, lh_env, False),
                "relinked-plain": ([bt(mib, "-2m")] + args, None, False),
            }
            cover = {}

            def thunk(k):
                argv, env, pre = variants[k]

                def f():
                    if not os.path.exists(argv[0]):
                        return None, "not built (libhugetlbfs is not installed)"
                    if k in ("explicit", "libhugetlbfs"):
                        ensure_pool(mib // 2 + 16)
                    r = run(argv, env, preload=pre)
                    j = r.json()
                    if r.rc != 0 or not j:
                        return None, f"exit status {r.rc}: {r.err.strip()[-200:]}"
                    if pre:
                        p = check_report(r, f"bt-{mib}$", k)
                        if p:
                            return None, p
                    field = expect[k]
                    frac = j.get(field, 0) / j["text_kb"] if field else \
                        (j["anon_huge_kb"] + j["hugetlb_kb"] + j["file_pmd_kb"]) / j["text_kb"]
                    cover.setdefault(k, []).append(round(min(frac, 1.0), 3))
                    if field and frac <= 0 and k != "relinked-plain":
                        # (the relinked program gets what the page cache gives: any share counts)
                        return None, f"the code is not on huge pages ({field} = 0)"
                    if not field and frac > 0:
                        return None, "the 4 KiB baseline was on huge pages"
                    return {"cpu": j["ns_per_call"], "wall": j.get("wall_ns_per_call", 0.0)}, None
                return f
            r = interleave({k: thunk(k) for k in variants}, reps, None, f"{loop} {mib}")
            for k in variants:
                if "na" not in r[k]:
                    r[k]["coverage"] = cover.get(k, [])
            res["loops"][loop][mib] = r
    if ARGS.perf_itlb:
        res["perf"] = perf_itlb()
    return res


def perf_itlb():
    """iTLB misses with perf stat, where the hardware counters exist."""
    out = {}
    for mib in (46,):
        for k, argv, env, pre in (("4k", [bt(mib), "chain", "10000000"], None, False),
                                  ("thp", [bt(mib), "chain", "10000000"], {"HUGETEXT_MODE": "thp"}, True)):
            r = run(["perf", "stat", "-x,", "-e", "iTLB-load-misses,iTLB-loads"] + argv, env, preload=pre)
            out[f"{k}-{mib}"] = r.err.strip()[-400:]
    return out


# ---------------------------------------------------------------- 4. memory

def rollup(pid):
    out = {}
    for line in read(f"/proc/{pid}/smaps_rollup").splitlines():
        m = re.match(r"(\w+):\s+(\d+) kB", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def hugetlb_outside(pid, cache_dir):
    """kB of hugetlb pages a process maps, leaving out files under cache_dir."""
    total, skip = 0, False
    for line in read(f"/proc/{pid}/smaps").splitlines():
        f = line.split()
        if f and re.match(r"^[0-9a-f]+-[0-9a-f]+$", f[0]):
            path = f[5] if len(f) > 5 else ""
            skip = bool(cache_dir) and path.startswith(cache_dir.rstrip("/") + "/")
        elif not skip and f and f[0] in ("Private_Hugetlb:", "Shared_Hugetlb:"):
            total += int(f[1])
    return total


def dir_kb(d):
    """kB held by the files under a directory (a hugetlbfs mount: whole pages)."""
    total = 0
    for root, _dirs, files in os.walk(d):
        for fn in files:
            try:
                total += os.stat(os.path.join(root, fn)).st_blocks // 2
            except OSError:
                pass
    return total


def memory():
    mib = 46
    counts = [1, 4, 8]
    res = {"mib": mib, "counts": counts, "variants": {}}
    # Empty the shared caches (our own mounts), so the first process fills them.
    for d in (ARGS.share_dir, ARGS.htlb_dir):
        if d:
            for root, _dirs, files in os.walk(d):
                for fn in files:
                    try:
                        os.unlink(os.path.join(root, fn))
                    except OSError:
                        pass
    lh_env = {"HUGETLB_ELFMAP": "R"}
    if ARGS.htlb_dir:
        lh_env["HUGETLB_PATH"] = ARGS.htlb_dir
    share = {"HUGETEXT_SHARE": "1", "HUGETEXT_SHARE_DIR": ARGS.share_dir} if ARGS.share_dir else None
    variants = {
        "plain": (bt(mib), None, False, None),
        "thp": (bt(mib), {"HUGETEXT_MODE": "thp"}, True, "thp"),
        "explicit": (bt(mib), {"HUGETEXT_MODE": "explicit"}, True, "explicit"),
        "share": (bt(mib), share, True, "share"),
        "libhugetlbfs": (bt(mib, "-lh"), lh_env, False, None),
        "libhugetlbfs-share": (bt(mib, "-lh"), dict(lh_env, HUGETLB_SHARE="1"), False, None),
    }
    for name, (prog, env, pre, mode) in variants.items():
        if name == "share" and not share:
            res["variants"][name] = {"na": "no hugetlbfs mount for the shared cache"}
            continue
        if not os.path.exists(prog):
            res["variants"][name] = {"na": "not built (libhugetlbfs is not installed)"}
            continue
        rows = {}
        for n in counts:
            log(f"memory: {name}, {n} processes")
            ensure_pool(n * (mib // 2 + 4) + 8)
            procs, reports = [], []
            e = dict(os.environ)
            for k in list(e):
                if k.startswith(("HUGETEXT_", "HUGETLB_")) or k == "LD_PRELOAD":
                    del e[k]
            if pre:
                e["LD_PRELOAD"] = ARGS.preload
            e.update(env or {})
            problem = None
            for i in range(n):
                rep = os.path.join(TMP, f"mem-{i}.json")
                if os.path.exists(rep):
                    os.unlink(rep)
                if pre:
                    e["HUGETEXT_REPORT"] = rep
                reports.append(rep)
                procs.append(subprocess.Popen([prog, "hold"], env=dict(e), stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL, text=True))
            ready = []
            for p in procs:
                line = p.stdout.readline()
                try:
                    ready.append(json.loads(line))
                except ValueError:
                    problem = problem or f"a process did not start (exit {p.poll()})"
            time.sleep(0.3)
            per = [rollup(p.pid) for p in procs]
            cache_dir0 = ARGS.share_dir if name == "share" else \
                ARGS.htlb_dir if name == "libhugetlbfs-share" else ""
            own = [hugetlb_outside(p.pid, cache_dir0) for p in procs]
            # Pages of the shared caches: the files in our own hugetlbfs mount.
            cache_dir = ARGS.share_dir if name == "share" else \
                ARGS.htlb_dir if name == "libhugetlbfs-share" else ""
            cache_kb = dir_kb(cache_dir) if cache_dir else 0
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if pre and not problem:
                for rep in reports:
                    recs = []
                    for line in read(rep).splitlines():
                        try:
                            recs.append(json.loads(line))
                        except ValueError:
                            pass
                    p = check_report(Run(0, 0, "", "", recs), f"bt-{mib}$",
                                     None if mode == "share" else mode, need_cache=False)
                    if mode == "share" and not p and not all("cache" in x for x in recs
                                                             if x.get("status") == "ok"):
                        p = "no 'cache' key in the report: shared cache not implemented yet"
                    if p:
                        problem = p
                        break
            if name.startswith("libhugetlbfs") and not problem and \
                    not all(r.get("hugetlb_kb", 0) > 0 for r in ready):
                problem = "libhugetlbfs left the code on small pages"
            if problem:
                rows = {"na": problem}
                break
            rows[n] = {
                "rss_kb": sum(x.get("Rss", 0) for x in per),
                "pss_kb": sum(x.get("Pss", 0) for x in per),
                "anon_huge_kb": sum(x.get("AnonHugePages", 0) for x in per),
                "hugetlb_rollup_kb": sum(x.get("Private_Hugetlb", 0) + x.get("Shared_Hugetlb", 0)
                                         for x in per),
                "private_hugetlb_kb": sum(x.get("Private_Hugetlb", 0) for x in per),
                "cache_kb": cache_kb,
                # Counted per process and per cache file, not from /proc/meminfo: other
                # work on the machine may take and give back pool pages meanwhile.
                # (a cache page mapped by one process shows as Private_Hugetlb: those
                # mappings are left to cache_kb, so no page counts twice)
                "hugetlb_pages": (sum(own) + cache_kb) // 2048,
            }
        res["variants"][name] = rows
    res["order"] = list(variants)
    return res


# ---------------------------------------------------------------- 5. real work

def gen_cpp(path):
    """A large C++ translation unit: many template instantiations at -O2."""
    parts = ["#include <algorithm>", "#include <map>", "#include <unordered_map>",
             "#include <set>", "#include <string>", "#include <vector>", "#include <sstream>",
             "#include <functional>", "#include <memory>", "#include <numeric>", "#include <regex>",
             "#include <tuple>", "#include <variant>", "#include <optional>", ""]
    n = 5 if ARGS.quick else 8
    for i in range(n):
        parts.append(f"""
struct Rec{i} {{ int id; std::string name; double w; std::vector<int> tags; }};
template <class T> static T fold{i}(const std::vector<T>& v) {{
  return std::accumulate(v.begin(), v.end(), T{{}}, [](T a, const T& b) {{ return a + b * {i % 7 + 1}; }});
}}
std::string work{i}(const std::vector<Rec{i}>& in, const std::string& pat) {{
  std::map<std::string, std::vector<Rec{i}>> by;
  std::unordered_map<int, std::set<std::string>> tags;
  for (const auto& r : in) {{ by[r.name].push_back(r); for (int t : r.tags) tags[t].insert(r.name); }}
  std::vector<std::tuple<double, int, std::string>> rank;
  for (auto& [k, v] : by) {{
    std::sort(v.begin(), v.end(), [](const Rec{i}& a, const Rec{i}& b) {{ return a.w < b.w || (a.w == b.w && a.id < b.id); }});
    std::vector<double> ws; for (auto& r : v) ws.push_back(r.w);
    rank.emplace_back(fold{i}(ws), (int)v.size(), k);
  }}
  std::stable_sort(rank.begin(), rank.end());
  std::regex re(pat + "{i}");
  std::ostringstream os;
  for (auto& [w, c, k] : rank) if (std::regex_search(k, re)) os << k << ':' << c << ':' << w << '\\n';
  std::variant<int, std::string> var = (int)tags.size();
  if (auto* p = std::get_if<int>(&var)) os << *p;
  std::optional<std::string> best; for (auto& [t, s] : tags) if (!s.empty()) best = *s.begin();
  auto f = std::function<std::string(std::string)>([&](std::string s) {{ return s + best.value_or(""); }});
  return f(os.str());
}}""")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def gen_rust(path):
    """A crate of a few thousand lines: generics, traits, iterators, matches."""
    n = 60 if ARGS.quick else 100
    out = ["#![allow(dead_code)]", "use std::collections::{HashMap, BTreeMap, HashSet};",
           "use std::fmt;", ""]
    for i in range(n):
        out.append(f"""
#[derive(Debug, Clone, PartialEq)]
pub enum Shape{i} {{ Circle(f64), Rect {{ w: f64, h: f64 }}, Poly(Vec<(f64, f64)>), Empty }}
pub trait Area{i} {{ fn area(&self) -> f64; fn name(&self) -> String {{ format!("shape{i}") }} }}
impl Area{i} for Shape{i} {{
    fn area(&self) -> f64 {{
        match self {{
            Shape{i}::Circle(r) => 3.14159 * r * r,
            Shape{i}::Rect {{ w, h }} => w * h,
            Shape{i}::Poly(p) => p.windows(2).map(|w| w[0].0 * w[1].1 - w[1].0 * w[0].1).sum::<f64>().abs() / 2.0,
            Shape{i}::Empty => 0.0,
        }}
    }}
}}
impl fmt::Display for Shape{i} {{
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {{ write!(f, "{{}}={{:.3}}", self.name(), self.area()) }}
}}
pub struct Store{i}<K: std::hash::Hash + Eq + Clone + Ord, V: Clone> {{ map: HashMap<K, Vec<V>>, order: BTreeMap<K, usize> }}
impl<K: std::hash::Hash + Eq + Clone + Ord + fmt::Debug, V: Clone + Area{i}> Store{i}<K, V> {{
    pub fn new() -> Self {{ Store{i} {{ map: HashMap::new(), order: BTreeMap::new() }} }}
    pub fn add(&mut self, k: K, v: V) {{ let n = self.order.len(); self.order.entry(k.clone()).or_insert(n); self.map.entry(k).or_default().push(v); }}
    pub fn total(&self) -> f64 {{ self.map.values().flat_map(|v| v.iter()).map(|s| s.area()).sum() }}
    pub fn biggest(&self) -> Option<(K, f64)> {{
        self.map.iter().map(|(k, v)| (k.clone(), v.iter().map(|s| s.area()).fold(0.0, f64::max)))
            .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
    }}
    pub fn keys_sorted(&self) -> Vec<String> {{ let mut v: Vec<String> = self.order.keys().map(|k| format!("{{:?}}", k)).collect(); v.sort(); v.dedup(); v }}
}}
pub fn run{i}(n: usize) -> (f64, usize, String) {{
    let mut s: Store{i}<String, Shape{i}> = Store{i}::new();
    let mut seen = HashSet::new();
    for j in 0..n {{
        let sh = match j % 4 {{ 0 => Shape{i}::Circle(j as f64), 1 => Shape{i}::Rect {{ w: j as f64, h: {i} as f64 }},
            2 => Shape{i}::Poly((0..j % 7).map(|k| (k as f64, (k * k) as f64)).collect()), _ => Shape{i}::Empty }};
        seen.insert(j % 13);
        s.add(format!("k{{}}", j % 17), sh);
    }}
    let txt: Vec<String> = s.map.values().flat_map(|v| v.iter().map(|x| x.to_string())).collect();
    (s.total(), seen.len(), txt.join(",") + &s.keys_sorted().concat() + &format!("{{:?}}", s.biggest()))
}}""")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return sum(x.count("\n") + 1 for x in out)


def exec_bytes(path):
    """Size of an ELF file's executable segments, from readelf."""
    total = 0
    for line in sh(f"readelf -lW {path}").splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "LOAD" and "E" in f[6:-1]:
            total += int(f[5], 16)
    return total


def realwork():
    res = {}
    reps = 3 if ARGS.quick else 7
    work = os.path.join(TMP, "work")
    os.makedirs(work, exist_ok=True)
    # g++
    gxx = shutil.which("g++")
    if not gxx:
        res["gxx"] = {"na": "g++ is not installed"}
    else:
        src = os.path.join(work, "big.cpp")
        gen_cpp(src)
        argv = [gxx, "-O2", "-std=c++17", "-c", src, "-o", os.path.join(work, "big.o")]
        cc1 = sh("g++ -print-prog-name=cc1plus")
        res["gxx_info"] = {"lines": sum(1 for _ in open(src)), "cc1plus": cc1,
                           "cc1plus_text_mib": round(exec_bytes(cc1) / 1048576, 1)}
        log(f"g++ -O2 -c of {res['gxx_info']['lines']} lines: {reps} interleaved rounds")
        variants = {"plain": (None, False, None), "thp": ({"HUGETEXT_MODE": "thp"}, True, "thp"),
                    "explicit": ({"HUGETEXT_MODE": "explicit"}, True, "explicit")}
        res["gxx"] = timed_real(argv, variants, "cc1plus$", reps, "g++", pool=40)
    # rustc
    if not ARGS.rustc:
        res["rustc"] = {"na": "rustc is not installed"}
    else:
        src = os.path.join(work, "lib.rs")
        lines = gen_rust(src)
        argv = [ARGS.rustc, "--edition", "2021", "--crate-type", "lib", "--crate-name", "bench",
                "--emit", "link", "-o", os.path.join(work, "libbench.rlib"), src]
        res["rustc_info"] = {"lines": lines, "rustc": ARGS.rustc}
        log(f"rustc (debug) of {lines} lines: {reps} interleaved rounds")
        m = {"HUGETEXT_MATCH": "librustc_driver|libLLVM"}
        variants = {"plain": (None, False, None),
                    "thp": (dict(m, HUGETEXT_MODE="thp"), True, "thp"),
                    "explicit": (dict(m, HUGETEXT_MODE="explicit"), True, "explicit")}
        res["rustc"] = timed_real(argv, variants, "librustc_driver|libLLVM", reps, "rustc", pool=200,
                                  cwd=work)
    return res


def timed_real(argv, variants, obj, reps, label, pool, cwd=None):
    checks, moved = {}, {}
    for k, (env, pre, mode) in variants.items():
        if mode == "explicit":
            ensure_pool(pool)
        r = run(argv, env, preload=pre, cwd=cwd)
        if r.rc != 0:
            checks[k] = f"exit status {r.rc}: {r.err.strip()[-200:]}"
        elif pre:
            checks[k] = check_report(r, obj, mode)
            ok = [x for x in r.report if x.get("status") == "ok" and re.search(obj, x.get("object", ""))]
            moved[k] = {"objects": sorted({os.path.basename(x["object"]) for x in ok}),
                        "huge_mib": round(sum(x["huge_bytes"] for x in ok) / 1048576, 1),
                        "ms": round(sum(x["ms"] for x in ok), 2),
                        "not_ok": [{"object": os.path.basename(x.get("object", "")), "status": x.get("status"),
                                    "error": x.get("error", "")} for x in r.report
                                   if re.search(obj, x.get("object", "")) and x.get("status") != "ok"][:4]}

    def thunk(k):
        env, pre, mode = variants[k]

        def f():
            if mode == "explicit":
                ensure_pool(pool)
            r = run(argv, env, preload=pre, cwd=cwd)
            if r.rc != 0:
                return None, f"exit status {r.rc}"
            if pre:
                p = check_report(r, obj, mode)
                if p:
                    return None, p
            return {"wall": r.wall_ms / 1e3, "cpu": r.cpu_ms / 1e3}, None
        return f
    out = interleave({k: thunk(k) for k in variants if not checks.get(k)}, reps, None, label)
    for k, why in checks.items():
        if why:
            out[k] = {"na": why}
    out["moved"] = moved
    return out


# ---------------------------------------------------------------- main

def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory with the bt-* programs")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--share-dir", default="")
    ap.add_argument("--htlb-dir", default="")
    ap.add_argument("--only", default="", help="comma list: remap,startup,itlb,memory,real")
    ARGS = ap.parse_args()
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
             ("real", realwork)]
    if os.path.exists(ARGS.out) and only:
        with open(ARGS.out) as f:
            old = json.load(f)
        results = dict(old, machine=results["machine"])
    t0 = time.time()
    for name, fn in steps:
        if only and name not in only:
            continue
        t = time.time()
        load0 = read("/proc/loadavg").split()[0]
        log(f"=== {name} (load average {load0})")
        try:
            results[name] = fn()
        except Exception as e:  # one broken step must not lose the others
            import traceback
            traceback.print_exc()
            results[name] = {"na": f"the step crashed: {e!r}"}
        results.setdefault("seconds", {})[name] = round(time.time() - t, 1)
        results.setdefault("load", {})[name] = [float(load0), float(read("/proc/loadavg").split()[0])]
        with open(ARGS.out, "w") as f:
            json.dump(dict(results, notes=NOTES), f, indent=1)
    results["notes"] = NOTES
    results["total_seconds"] = round(time.time() - t0, 1)
    with open(ARGS.out, "w") as f:
        json.dump(results, f, indent=1)
    shutil.rmtree(TMP, ignore_errors=True)
    log(f"done in {results['total_seconds']} s: {ARGS.out}")


if __name__ == "__main__":
    main()
