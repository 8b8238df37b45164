"""Section 3: the iTLB-bound loops, speed-up against text size (tables and plot)."""
from .common import na, ok, plt, ratio, rfmt, verdict

VARIANT_LABELS = {"4k": "4 KiB", "thp": "hugetext THP", "explicit": "hugetext explicit",
                  "libhugetlbfs": "libhugetlbfs", "relinked-plain": "relinked, no tool"}


def write(out, R):
    w = out.w
    it = R.get("itlb", {})
    w("## 3. iTLB-bound loops: speed-up against text size")
    w()
    if out.missing(it):
        return
    w("`bench/bigtext.S` holds one small function on every 4 KiB page of N MiB of code, each at a "
      "different 64-byte line offset (stride 4160 bytes) so that the touched lines do not all fall "
      "into the same few cache sets. The 4 KiB baseline program is linked the usual way; its code "
      "starts on a 2 MiB address but at a file offset that is not 2 MiB-congruent, so the kernel "
      "cannot map it with PMDs from the page cache (see the notes). Two loops, nanoseconds per call:")
    w()
    w("- **random**: indirect calls to all N MiB/4160 functions in random order (xorshift). Every call "
      "is a mispredicted indirect branch and touches a new line; beyond a few MiB the lines come from "
      "L3 or DRAM, so page walks are only part of the cost (like `examples/itlb-demo`).")
    w("- **chain**: direct jumps through about 2000 functions spread evenly over the N MiB, in a "
      "scattered but fixed order. The targets are predicted and the ~128 KiB of lines stay in L2, "
      "while 2000 pages overflow the 4 KiB TLBs at every size: the loop measures page walks.")
    w()
    sizes = it.get("sizes", [])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    # one panel per loop: a loop beyond the second has no panel, and no table either
    for ax, (loop, data) in zip(axes, it.get("loops", {}).items()):
        curves = loop_table(out, loop, data, sizes)
        loop_panel(ax, loop, curves, sizes)
        summary_at_46(out, loop, data)
    out.plot(fig, "itlb-speedup.png", "speed-up against text size")
    w("\"relinked, no tool\" is the 2 MiB-relinked program run plainly: on this kernel the page cache "
      "holds large folios for freshly written files and maps them with PMDs where the file offset "
      "allows, so part of its code (the percentage shown, median over the runs) is on huge pages with no tool "
      "at all; the share changes from run to run with the state of the page cache.")
    w()
    perf(out, it)


def loop_table(out, loop, data, sizes):
    """One loop's table; its speed-up curves: {variant: (sizes, ratios, below, above)}."""
    w = out.w
    w(f"**{loop}** (ns per call, from the loop thread's CPU time, so time the scheduler gave to "
      "other processes does not count; speed-up against 4 KiB in parentheses)")
    w()
    # the columns are the variants of the first size's row
    vs = list(next(iter(data.values())).keys()) if data else []
    w("| code | " + " | ".join(VARIANT_LABELS.get(v, v) for v in vs) + " |")
    w("|---|" + "---|" * len(vs))
    curves = {v: ([], [], [], []) for v in vs if v != "4k"}
    for mib in sizes:
        row = data.get(str(mib), data.get(mib, {}))
        base = row.get("4k")
        cells = [cell(row.get(v, {}), v, base, mib, curves) for v in vs]
        w(f"| {mib} MiB | " + " | ".join(cells) + " |")
    w()
    return curves


def cell(x, v, base, mib, curves):
    """Variant v's figure at mib MiB, its speed-up against base (4 KiB); adds the point to curves."""
    if not ok(x):
        return na(x)
    c = f"{x['median']:.1f} [{x['min']:.1f}–{x['max']:.1f}]"
    if v != "4k":
        r = ratio(base, x)
        c += f" (**{rfmt(r)}**)"
        if r is not None:
            curves[v][0].append(mib)
            curves[v][1].append(r)
            # spread: the 4 KiB median against this variant's quartiles
            curves[v][2].append(r - base["median"] / x.get("q3", x["median"]))
            curves[v][3].append(base["median"] / x.get("q1", x["median"]) - r)
    cov = x.get("coverage") or []
    if v != "4k" and cov and min(cov) < 0.99:
        cov = sorted(cov)
        c += f", {cov[len(cov) // 2] * 100:.0f}% on huge pages"
    return c


def loop_panel(ax, loop, curves, sizes):
    for i, (v, (xs, ys, lo, hi)) in enumerate(curves.items()):
        if xs:
            sh = 1 + (i - 1.5) * 0.025  # spread the markers a little
            ax.errorbar([x_ * sh for x_ in xs], ys, yerr=[lo, hi], marker="o", capsize=3, lw=1.2,
                        label=VARIANT_LABELS.get(v, v))
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.axhline(1.15, color="orange", ls="--", lw=1, label="target 1.15x at 46 MiB")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("code size (MiB)")
    ax.set_ylabel("speed-up against 4 KiB pages\n(median; bars: quartiles)")
    ax.set_title(f"loop: {loop}")
    ax.legend(fontsize=7)


def summary_at_46(out, loop, data):
    row46 = data.get("46", data.get(46, {}))
    r46 = ratio(row46.get("4k"), row46.get("thp"))
    out.summary.append((f"iTLB loop '{loop}', 46 MiB, hugetext THP", rfmt(r46), "≥ 1.15x", verdict(r46, 1.15, None, True)))
    r46e = ratio(row46.get("4k"), row46.get("explicit"))
    out.summary.append((f"iTLB loop '{loop}', 46 MiB, hugetext explicit", rfmt(r46e), "≥ 1.15x", verdict(r46e, 1.15, None, True)))


def perf(out, it):
    """perf stat's iTLB miss counts, where the machine has the counters."""
    if not it.get("perf"):
        return
    w = out.w
    w("iTLB misses (`perf stat`):")
    w()
    w("```")
    for k, v in it["perf"].items():
        w(f"{k}: {v}")
    w("```")
    w()
