"""Section 7: clang 14 compiling LLVM's headers (issue 13's workload)."""
from .common import alt, fmt, ok, ratio, rfmt, verdict
from .paired import cell, paired as shared_paired, values

LABELS = {
    "plain": "plain, libraries in 4 KiB page-cache pages",
    "auto": "default settings, no set-up (cold page cache; the copy of what runs is deferred)",
    "first": "first start that copies (`HUGETEXT_COPY=now`; copies, reads back)",
    "steady": "default settings, steady state (keeps the kernel's 2 MiB pages)",
    "copy": "copy path (`HUGETEXT_COPY=now HUGETEXT_MODE=thp HUGETEXT_PAGE_CACHE=0`)",
    "explicit": "explicit pages (`HUGETEXT_COPY=now HUGETEXT_MODE=explicit HUGETEXT_PAGE_CACHE=0`)",
    "share": "shared cache on hugetlbfs, warm (`HUGETEXT_SHARE=1`)",
    "tmpfs": "shared cache on a huge tmpfs, warm (no pool; `HUGETEXT_SHARE=1`)",
    "late": "deferred copy after 1 s of CPU, whole spans (`HUGETEXT_COPY_AFTER_MS=1000 HUGETEXT_COPY_HOT=0`)",
    "late_hot": "deferred copy after 1 s of CPU, what runs (`HUGETEXT_COPY_AFTER_MS=1000 HUGETEXT_COPY_HOT=1`)",
    "zc_first": "zero configuration, first compile (the preload only, the text service running, empty cache)",
    "zc_second": "zero configuration, second compile (what the service did in between)",
}
# The hand set-up paths the zero-configuration row is held against.
HAND = ("steady", "tmpfs")


def write(out, R):
    w = out.w
    cl = R.get("clang", {})
    w("## 7. clang compiling LLVM's headers")
    w()
    if out.missing(cl):
        return
    rows = cl.get("rows", {})
    intro(out, cl, rows)
    table(out, cl, rows)
    zero_config(out, cl)
    reread(out, cl)
    w("The command of each run (`clang` from the row's tree):")
    w()
    w("```")
    w(" ".join(cl.get("cc1", [])))
    w("```")
    w()


def intro(out, cl, rows):
    n = max((v.get("n", 0) for v in rows.values() if ok(v)), default=0)
    out.w(f"Issue 13's workload, `bench/run.sh --only clang`: clang 14 `-cc1 ... -O2 -emit-obj` (the command "
          f"line `clang++-14 -###` gives) on one translation unit that includes {len(cl.get('headers', []))} of "
          f"LLVM 14's headers, preprocessed once ({cl.get('tu_bytes', 0) / 1e6:.1f} MB), with "
          f"`HUGETEXT_MATCH='{cl.get('match')}'` ({cl.get('code_mib')} MiB of code in the two libraries; the "
          "zero-configuration rows set nothing, and the preload takes the two as big libraries). "
          "clang runs from copies of its binary and libraries, one tree per page-cache state, so that one row's "
          "page cache cannot help another's: plain, the copy path, explicit pages and the shared caches run on "
          "libraries kept in 4 KiB page-cache pages; the default start with no set-up and the first start have "
          "their tree's page cache made small before each run; the steady state's tree was read back as 2 MiB "
          "pages by an untimed start before each run (what `hugetext setup`'s warm key does). The text service "
          "runs for the two zero-configuration rows only and is stopped before every other row (its warms would "
          "otherwise put the other trees in 2 MiB pages between a row's drop of the page cache and its run). "
          f"{n} interleaved rounds; seconds, median [min–max]; speed-up = plain's median / the row's (above 1: "
          "faster). Every run's report must show what its row claims (default with no set-up and zero "
          "configuration's first compile: deferred, no 2 MiB page-cache pages kept, nothing copied but by the deferred copy of what runs; first start: copied and read back; "
          "steady state: kept, nothing copied; copy and explicit: copied, in that mode; the deferred copies "
          "after 1 s: copied, the whole spans or what runs (less than the spans); shared caches: a hit), "
          "or the run does not count and the row says why. The zero-configuration second compile is held "
          "against the hand set-up (steady state or the huge tmpfs cache) with the lower median, and its CPU "
          "against plain's, round by round: the median of the ratios of runs of the same round (the ratio of "
          "the medians beside it; bench/notes.md says why). The paired column holds every row against plain "
          "the same way, with `hugetext measure`'s statistics: decided when its 99.5% interval excludes 1 "
          "(or lies within 2% of it), as measure's early stop decides.")
    out.w()


def table(out, cl, rows):
    w = out.w
    w("| variant | wall s | speed-up | time / plain's, paired (95%) | CPU s (user+sys) | CPU speed-up | goal | "
      "what the last run's report showed |")
    w("|---|---|---|---|---|---|---|---|")
    plain = rows.get("plain")
    for k in cl.get("order", list(rows)):
        v = rows.get(k, {"na": "not measured"})
        r, rc = ratio(plain, v), ratio(alt(plain), alt(v))
        goal = row_goal(k, v, r, rows)
        if k != "plain":
            out.summary.append((f"clang -O2, {LABELS.get(k, k)}, speed-up", rfmt(r, 3),
                                goal.split(":")[0], goal.split(": ")[-1] if goal else "-"))
        pc = "" if k == "plain" else cell(shared_paired(v, plain))
        w(f"| {LABELS.get(k, k)} | {fmt(v, nd=2)} | **{rfmt(r, 3)}** | {pc} | {fmt(alt(v), nd=2)} | {rfmt(rc, 3)} | "
          f"{goal} | {claimed(k, (cl.get('last_report') or {}).get(k))} |")
        pr = v.get("problems") if isinstance(v, dict) else None
        if pr:
            w(f"| | {v.get('failed_runs', 0)} run(s) did not count: {pr[0]} | | | | | | |")
    w()


def row_goal(k, v, r, rows):
    """Row k's goal cell: 'goal: verdict'; r: its speed-up."""
    plain = rows.get("plain")
    if k == "zc_second":
        return zc_second_goal(v, rows)
    if k == "late_hot":
        late = rows.get("late")
        if not (ok(v) and ok(late) and ok(alt(v)) and ok(alt(late))):
            return "CPU ≤ the whole copy's: n/a"
        return ("CPU ≤ the whole copy's: " + ("met" if alt(v)["median"] <= alt(late)["median"] else
                                              f"**missed** ({alt(v)['median'] / alt(late)['median']:.3f}x)"))
    if k == "zc_first":
        return ("no slower than plain beyond its spread: " +
                ("n/a" if not (ok(v) and ok(plain)) else "met" if v["median"] <= plain["max"] else "**missed**"))
    if k == "steady":
        return f"≥ 1.05x: {verdict(r, 1.0, 1.05, higher_better=True)}"
    if k == "first":
        cp = rows.get("copy")
        return ("no more wall time than the copy path: " +
                ("n/a" if not (ok(v) and ok(cp)) else "met" if v["median"] <= cp["median"] else "**missed**"))
    if k != "plain":
        return "never below 1.00x: " + ("n/a" if r is None else "met" if r >= 1.0 else "**missed**")
    return ""


def paired(a, b, key=None):
    """(ratio, interval, the sorted ratios) of a's values / b's, round by round; None when the rounds do
    not pair (a run that did not count leaves no value, so the lists would shift).

    The ratio and its 95% interval are `hugetext measure`'s (reportlib/paired.py): the Hodges-Lehmann
    estimate of the paired log-ratios and the exact Wilcoxon signed-rank interval.
    """
    p = shared_paired(a, b, key)
    if not p:
        return None
    av, bv = values(a, key), values(b, key)
    return p["ratio"], ((p["lo"], p["hi"]) if p.get("lo") else None), sorted(x / y for x, y in zip(av, bv))


def ci(iv):
    """' (95%: lo–hi)' or ''."""
    return f" (95%: {iv[0]:.3f}–{iv[1]:.3f})" if iv else ""


def zc_second_goal(v, rows):
    """The zero-configuration second compile against the best hand set-up, and its CPU against plain.

    Both are read round by round (the rows run interleaved, one of each per
    round): the machine drifts by more than the 1% asked between rounds, and
    the lower of two medians is itself biased low. The ratios of the medians
    are shown beside them; with rounds that do not pair, they decide.
    """
    plain = rows.get("plain")
    hand = [h for h in HAND if ok(rows.get(h))]
    if not ok(v) or not hand or not ok(alt(plain)) or not ok(alt(v)):
        return "within 1% of the best hand set-up, CPU ≤ plain: n/a"
    best = min(hand, key=lambda h: rows[h]["median"])
    by_medians = (v["median"] / rows[best]["median"], alt(v)["median"] / alt(plain)["median"])
    pt, pc = paired(v, rows[best]), paired(v, plain, "cpu")
    by_round = (pt[0], pc[0]) if pt and pc else None
    used = by_round or by_medians
    met = used[0] <= 1.01 and used[1] <= 1.0
    # No ": " inside: the summary splits the cell at its last one.
    how = "round by round" if by_round else "ratio of medians, the rounds do not pair"
    shown = f"{how}, {used[0]:.3f}x its time and CPU {used[1]:.3f}x plain's"
    if by_round:
        shown = (f"{how}, {pt[0]:.3f}x its time{ci(pt[1]).replace(':', '')} and CPU {pc[0]:.3f}x plain's"
                 f"{ci(pc[1]).replace(':', '')}; ratio of medians {by_medians[0]:.3f}x and {by_medians[1]:.3f}x")
    return (f"within 1% of the best hand set-up ({best}, {rows[best]['median']:.2f} s), CPU ≤ plain: " +
            zc_verdict(met, (pt[1], pc[1]) if by_round else None) + f" ({shown})")


def zc_verdict(met, intervals):
    """met or missed at the median, and whether the 95% intervals decide it.

    A median 0.5% from the line says little when the runs spread by 3-5%:
    the verdict names which of the two the run shows.
    """
    word = "met" if met else "**missed**"
    if not intervals or None in intervals:
        return word
    (tlo, thi), (clo, chi) = intervals
    if thi <= 1.01 and chi <= 1.0:
        return "met, shown at 95%"
    if tlo > 1.01 or clo > 1.0:
        return "**missed**, shown at 95%"
    return f"{word} at the median, not decided at 95%"


def claimed(k, rep):
    """What the last timed run's report showed, per library, in MiB."""
    if k == "plain" or not rep:
        return ""
    parts = []
    for lib, d in sorted(rep.items()):
        mib = 1048576
        t = f"{lib.split('.so')[0]}: {d['huge'] / mib:.0f} MiB huge"
        if d.get("kept"):
            t += f", kept {d['kept'] / mib:.0f}"
        t += f", copied {d['copied'] / mib:.0f}"
        if d.get("hot"):
            t += f" ({d['hot'] / mib:.0f} hot)"
        if d.get("warmed"):
            t += f", read back {d['warmed'] / mib:.0f}"
        if d.get("cache"):
            t += f", cache {'/'.join(d['cache'])}"
        if d.get("mode"):
            t += f" ({'/'.join(d['mode'])})"
        parts.append(t + f", {d.get('ms', 0):.0f} ms")
    return "; ".join(parts)


def reread(out, cl):
    """How much of the steady state's 2 MiB page-cache pages had to be read back before each run."""
    rr = cl.get("steady_reread_mib") or []
    if not rr:
        return
    out.w(f"The 2 MiB page-cache pages of the steady state's libraries did not last between its runs on this "
          f"machine: before each steady-state run an untimed `clang --version` start with the preload read back "
          f"what was lost, {sorted(rr)[len(rr) // 2]} MiB (median; each time: {', '.join(map(str, rr))}) of "
          f"{cl.get('code_mib')} MiB. The timed run itself must then keep everything and copy nothing.")
    out.w()


def paired_with_steady(out, rows):
    """The second compile against the steady state's run of the same round (both keep warmed pages)."""
    z, s = rows.get("zc_second") or {}, rows.get("steady") or {}
    p = paired(z, s)
    if p is None:
        return
    rs = p[2]
    out.w(f"The second compile against the steady state's run of the same round (the same state: the libraries "
          f"in warmed 2 MiB page-cache pages, nothing copied), round by round: median {p[0]:.3f}x its time "
          f"[{rs[0]:.3f}–{rs[-1]:.3f}] over {len(rs)} rounds{ci(p[1])}. Pairing removes the machine's drift "
          "between rounds; the spread left is the runs' own noise (here most of it: bench/notes.md). The ratio and "
          "its interval are `hugetext measure`'s (the Hodges-Lehmann estimate of the paired log-ratios, the exact "
          "Wilcoxon signed-rank interval, 95%): a goal inside it is neither shown met nor shown missed by this run.")
    out.w()


def zero_config(out, cl):
    """What the text service did between the first and second compiles, and its cache's memory."""
    served = cl.get("zc_served") or []
    if not served:
        return
    warmed = sum(1 for s in served for _ in s.get("warmed", []))
    filled = sum(1 for s in served for _ in s.get("filled", []))
    refused = sum(1 for s in served for _ in s.get("refused", []))
    offered = sum(s.get("offered", 0) for s in served)
    mib = 1048576
    out.w(f"Zero configuration: each round restarted the text service (`hugetext serve`, as its unit starts it, "
          f"in the bench's own mount namespace) with an empty cache and made the tree's page cache small; the "
          f"first compile offered its libraries ({offered} offers in {len(served)} rounds), and before the "
          f"second the service had warmed {warmed} files (2 MiB page-cache pages: the kernel maps them huge, no "
          f"copy), filled {filled} cache entries and refused {refused}.")
    for line in sorted({x for s in served for x in s.get("filled", []) + s.get("refused", [])})[:4]:
        out.w(f"- {line}")
    out.w()
    paired_with_steady(out, cl.get("rows") or {})
    m = cl.get("zc_memory") or {}
    if m:
        out.w(f"The shared cache's default limit on this machine: {m.get('limit', 0) / mib:.0f} MiB "
              f"(1/16 of memory, within 256 MiB-4 GiB); after the run it held {m.get('entries', 0)} entries in "
              f"{m.get('used', 0) / mib:.0f} MiB; evictions: {m.get('evicted_total', 0)}. Warmed files cost no "
              "memory of the cache: they are the page cache the kernel keeps anyway.")
        out.w()
