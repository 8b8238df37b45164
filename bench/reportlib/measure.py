"""Section 9: `hugetext measure` on node and on clang's LLVM-headers compile."""
from .common import na
from .paired import cell as paired_cell


def write(out, R):
    m = R.get("measure")
    if m is None:
        return
    out.w("## 9. `hugetext measure`")
    out.w()
    if out.missing(m):
        return
    out.w("What a user gets from `hugetext measure --copy --runs N -- CMD` (docs/measure.md), run by the bench "
          "on the program the README shows and on the clang section's compile: plain, the preload's defaults "
          "(after a first start, measure's own text service answering) and a private copy at every start, "
          "interleaved, each on its own copies of the program's big objects. Time / plain's is round by "
          "round, the Hodges-Lehmann estimate with its 95% Wilcoxon interval; decided when the 99.5% interval "
          "excludes 1 or lies within 2% of it (measure stops there). The same statistics give the paired "
          "columns of sections 2 and 7.")
    out.w()
    one(out, "`node -e` (a 3e7-step loop)", m.get("node"))
    one(out, f"clang -cc1 -O2 on the LLVM-headers unit ({m.get('clang_tu_bytes', 0) / 1e6:.1f} MB)", m.get("clang"))


def human(b):
    return f"{b / 1048576:.0f} MiB"


def huge(c):
    if not c or not c.get("known"):
        return "not seen"
    parts = [f"{human(c[k])} {w}" for k, w in (("copy", "copied"), ("page_cache", "page cache"),
                                              ("shared", "shared cache")) if c.get(k)]
    return (", ".join(parts) or "none") + f" of {human(c.get('code', 0))}"


def one(out, title, j):
    w = out.w
    w(f"**{title}**: " + (na(j) if not j or "na" in j else
                          f"{j['rounds']} rounds{' (stopped: decided)' if j.get('stopped_early') else ''}"))
    w()
    if not j or "na" in j:
        return
    cal = j.get("calibration") or {}
    cnt = j.get("counters") or {}
    fp = j.get("footprint") or {}
    w(f"- calibration: {cal.get('verdict')}: {cal.get('why', '')}")
    w(f"- counters: {'counted' if cnt.get('counted') else cnt.get('why', '')}")
    if fp:
        w(f"- footprint: {fp.get('estimate', '')}")
    w()
    w("| variant | wall s (median) | CPU s (median) | code on huge pages at its exit | time / plain's (95%) | CPU / plain's (95%) |")
    w("|---|---|---|---|---|---|")
    for v in j.get("variants", []):
        if v.get("na"):
            w(f"| {v['name']} | n/a: {v['na']} | | | | |")
            continue
        runs = v.get("runs") or []
        walls = sorted(r["wall"] for r in runs)
        cpus = sorted(r["cpu"] for r in runs)
        mid = lambda xs: (xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2) if xs else 0
        t = v.get("time")
        c = v.get("cpu_time")
        cell = lambda p: paired_cell(p) if p else ""
        w(f"| {v['name']} | {mid(walls):.3f} | {mid(cpus):.3f} | {huge(v.get('check'))} | {cell(t)} | {cell(c)} |")
    w()
    for n in j.get("notes", []):
        w(f"- note: {n}")
    if j.get("notes"):
        w()
