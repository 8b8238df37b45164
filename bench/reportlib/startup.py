"""Section 2: start-up of node (table, first start, plot) and of the 46 MiB synthetic program."""
import os

from .common import alt, fmt, na, ok, plt, ratio, rfmt, verdict
from .paired import cell, paired

LABELS = {"plain": "plain `node -e 0`", "preload-off": "preload loaded, HUGETEXT_MODE=off",
          "thp": "hugetext, THP copy", "thp-async": "hugetext, THP copy, HUGETEXT_ASYNC=1 (background)",
          "explicit": "hugetext, explicit pages copy",
          "share-warm": "hugetext, warm shared cache",
          "default": "hugetext, default settings, after its first start (page cache kept; / the same file plain)",
          "default-plain": "plain start of that copy of node, its code in 2 MiB page-cache pages",
          "default-cold": "hugetext, default settings, no set-up, node in 4 KiB page-cache pages (the copy is deferred)",
          "node-largepages": "node --use-largepages=on"}
# (target, goal) on wall time / plain
TARGETS = {"thp": (1.12, 1.05), "thp-async": (1.12, 1.05), "explicit": (1.12, 1.05), "share-warm": (1.03, None),
           "default": (1.02, None), "default-cold": (1.02, None)}
# the plot's x labels
SHORT = {"plain": "plain", "preload-off": "preload,\nmode off", "thp": "hugetext\nTHP",
         "thp-async": "hugetext\nTHP\nasync", "default": "hugetext\ndefault\n(page cache)",
         "default-plain": "plain,\n2 MiB page\ncache",
         "explicit": "hugetext\nexplicit", "share-warm": "hugetext\nwarm shared\ncache",
         "node-largepages": "node\nuse-largepages\n=on"}
SYNTHETIC_LABELS = {"plain": "plain (4 KiB pages)", "thp": "hugetext, THP", "explicit": "hugetext, explicit pages",
                    "libhugetlbfs": "libhugetlbfs (relinked, -lhugetlbfs, HUGETLB_ELFMAP=R)",
                    "relinked-plain": "relinked for 2 MiB, no tool"}


def write(out, R):
    out.w("## 2. Start-up")
    out.w()
    su = R.get("startup", {})
    node(out, su)
    synthetic(out, su)


def node(out, su):
    nd = su.get("node", {})
    order = su.get("node_order", list(nd))
    if not nd or "na" in nd:
        out.w("`node -e 0`: " + na(nd))
        return
    node_table(out, nd, order)
    first_start(out, su)
    largepages(out, su)
    node_plot(out, nd, order)


def node_table(out, nd, order):
    w = out.w
    n_runs = max((v.get("n", 0) for v in nd.values() if ok(v)), default=0)
    w(f"Wall time of `node -e 0` (fork+exec to exit), {n_runs} interleaved runs per variant. "
      "The preload's copy of node's ~26 MiB of code is made in every process; the shared cache "
      "maps a copy kept in a hugetlbfs file instead (warm: the file exists from an earlier run). "
      "With HUGETEXT_ASYNC=1 a background thread makes the copy while node starts; every run's "
      "report must still show node's code moved and on huge pages, or the run does not count. "
      "The copy rows run with HUGETEXT_PAGE_CACHE=0 on node's code in 4 KiB page-cache pages, as on a "
      "machine that has been up a while, and leave it so (they set HUGETEXT_COPY=now: the default "
      "defers a copy that a run this short cannot pay for, as the row on node itself shows). The steady "
      "default row uses a copy of node: a first start with HUGETEXT_COPY=now read the code back as 2 MiB "
      "page-cache pages, so the later starts, "
      "with or without the preload, have the kernel map it huge; the preload keeps those pages "
      "and copies nothing at start (its claim): the last, partial 2 MiB, which no read-back can put on "
      "a 2 MiB page, is left to the deferred copy. Its ratio is to the plain start of the same file.")
    w()
    w("| variant | wall ms | / plain | / plain, paired (95%) | CPU ms (user+sys) | / plain | target (on wall time) |")
    w("|---|---|---|---|---|---|---|")
    plain = nd.get("plain")
    nl = ratio(nd.get("node-largepages"), plain)
    for k in order:
        v = nd.get(k, {"na": "not measured"})
        base = nd.get("default-plain") if k == "default" else plain
        r = ratio(v, base)
        t = target(out, k, r, nl)
        pc = "" if k == "plain" else cell(paired(v, base))
        w(f"| {LABELS.get(k, k)} | {fmt(v)} | {rfmt(r)} | {pc} | {fmt(alt(v))} | "
          f"{rfmt(ratio(alt(v), alt(plain)))} | {t} |")
    w()
    w("The paired column: each row against plain round by round (the default row against the plain start of "
      "its own file), with `hugetext measure`'s statistics (tools/stats.c through `hugetext measure --stats`: "
      "the Hodges-Lehmann estimate of the paired log-ratios, the exact Wilcoxon signed-rank interval; decided "
      "when the 99.5% interval excludes 1, or lies within 2% of it).")
    w()


def target(out, k, r, nl):
    """Variant k's target cell (its summary row too), for its ratio r; nl: node's own ratio."""
    t = ""
    if k in TARGETS:
        tg, goal = TARGETS[k]
        t = f"≤ {tg}x" + (f", goal {goal}x" if goal else "") + ", and below node's own: "
        vd = verdict(r, tg, goal)
        if r is not None and nl is not None and r >= nl:
            vd += "; NOT below node's own"
        t += vd
        out.summary.append((f"node start-up, {LABELS[k]}", rfmt(r), t.split(", and")[0], vd))
    elif k == "node-largepages":
        t = "1.25-1.29x expected here"
        out.summary.append(("node start-up, node --use-largepages=on", rfmt(r), "reference (1.25-1.29x)", "-"))
    return t


def first_start(out, su):
    """The one start with the default settings that pays for the read-back."""
    fs_ = [x for x in su.get("first_start") or [] if x.get("rc") == 0]
    if not fs_:
        return
    walls = sorted(x["wall_ms"] for x in fs_)
    mss = sorted(x["ms"] for x in fs_ if x.get("ms") is not None)
    wb = max(x.get("warmed_bytes", 0) for x in fs_)
    fk = (su.get("default_plain_text_kb") or {}).get("filepmd", 0)
    out.w(f"The first preloaded start with the default settings, its page cache made small before each "
          f"of {len(fs_)} runs: median {walls[len(walls) // 2]:.0f} ms wall"
          + (f", of which {mss[len(mss) // 2]:.0f} ms in hugetext (the copy, and {wb >> 20} MiB read back "
             "from the disk as 2 MiB page-cache pages)" if mss else "")
          + f"; paid once. Afterwards a plain start of that file ran with {fk // 1024} MiB of its code "
          "mapped huge by the kernel (FilePmdMapped, from its smaps after `-e` ran).")
    out.w()


def largepages(out, su):
    """What node's own --use-largepages=on achieved, beside hugetext's report."""
    kb = su.get("node_largepages_text_kb")
    if kb is None:
        return
    out.w(f"Node's own `--use-largepages=on` put {kb.get('anon', 0) // 1024} MiB of its code on huge pages "
          "(read from its smaps). hugetext's report for the THP run: " +
          "; ".join(f"{os.path.basename(x['object'])} {x['bytes'] >> 20} MiB {x['status']} in {x['ms']:.1f} ms"
                    for x in su.get("thp_report", []) if x.get("status") == "ok") + ".")
    out.w()


def node_plot(out, nd, order):
    ks = [k for k in order if ok(nd.get(k))]
    plain = nd.get("plain")
    if not (ks and ok(plain)):
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    meds = [nd[k]["median"] / plain["median"] for k in ks]
    lo = [m_ - nd[k].get("q1", nd[k]["min"]) / plain["median"] for k, m_ in zip(ks, meds)]
    hi = [nd[k].get("q3", nd[k]["max"]) / plain["median"] - m_ for k, m_ in zip(ks, meds)]
    colors = ["#888888" if k in ("plain", "preload-off") else "#c0504d" if k == "node-largepages" else "#4f81bd" for k in ks]
    ax.bar(range(len(ks)), meds, color=colors, yerr=[lo, hi], capsize=4)
    ax.axhline(1.12, ls="--", color="orange", lw=1, label="target 1.12x")
    ax.axhline(1.05, ls=":", color="green", lw=1, label="goal 1.05x")
    ax.set_xticks(range(len(ks)))
    ax.set_xticklabels([SHORT.get(k, k) for k in ks], fontsize=8)
    for i, m_ in enumerate(meds):
        ax.text(i, 0.82, f"{m_:.2f}x", ha="center", fontsize=8, color="white")
    ax.set_ylabel("wall time / plain (median; bars: quartiles)")
    ax.set_ylim(0.8, max(1.45, max(m_ + h for m_, h in zip(meds, hi)) + 0.05))
    ax.set_title("node -e 0: start-up overhead by method")
    ax.legend(fontsize=8, loc="upper left")
    out.plot(fig, "startup.png", "start-up overhead by method")


def synthetic(out, su):
    """hugetext against libhugetlbfs on the synthetic program."""
    sy = su.get("synthetic", {})
    if not sy or "na" in sy:
        return
    w = out.w
    w("Start-up of the synthetic 46 MiB program (`bench-text start`: exits at once), "
      "hugetext against libhugetlbfs, which needs the program relinked "
      "(`-Wl,-zmax-page-size=0x200000 -Wl,-zcommon-page-size=0x200000`, linked with `-lhugetlbfs`) "
      "and explicit pages; run with `HUGETLB_ELFMAP=R` (what `hugectl --text` sets).")
    w()
    w("| variant | wall ms | / plain | CPU ms | / plain |")
    w("|---|---|---|---|---|")
    for k in su.get("synthetic_order", list(sy)):
        v = sy.get(k, {"na": "not measured"})
        w(f"| {SYNTHETIC_LABELS.get(k, k)} | {fmt(v, nd=2)} | {rfmt(ratio(v, sy.get('plain')))} | "
          f"{fmt(alt(v), nd=2)} | {rfmt(ratio(alt(v), alt(sy.get('plain'))))} |")
    w()
