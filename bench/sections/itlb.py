"""Section 3: the iTLB loops over synthetic code of several sizes."""
import os

from .common import ARGS, bt, check_report, ensure_pool, interleave, log, run


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
