"""Section 4: memory of K concurrent processes per variant."""
import json
import os
import re
import signal
import subprocess
import time

from .common import ARGS, TMP, Run, bt, check_report, ensure_pool, log, read


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
    COPY = {"HUGETEXT_COPY": "now", "HUGETEXT_PAGE_CACHE": "0"}
    share = {"HUGETEXT_SHARE": "1", "HUGETEXT_SHARE_DIR": ARGS.share_dir} if ARGS.share_dir else None
    variants = {
        "plain": (bt(mib), None, False, None),
        # These rows are about private copies: they ask for one, at once,
        # where the defaults would wait for it to pay (and keep the page cache).
        "thp": (bt(mib), dict(COPY, HUGETEXT_MODE="thp"), True, "thp"),
        "explicit": (bt(mib), dict(COPY, HUGETEXT_MODE="explicit"), True, "explicit"),
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
