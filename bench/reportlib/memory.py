"""Section 4: memory of K concurrent processes of the synthetic program."""
from .common import na

LABELS = {"plain": "plain (page cache, 4 KiB)", "thp": "hugetext THP (private copies)",
          "explicit": "hugetext explicit (private copies)", "share": "hugetext shared cache",
          "libhugetlbfs": "libhugetlbfs (private)", "libhugetlbfs-share": "libhugetlbfs, HUGETLB_SHARE=1"}


def write(out, R):
    w = out.w
    mem = R.get("memory", {})
    w("## 4. Memory")
    w()
    if out.missing(mem):
        return
    w(f"K concurrent processes of the {mem.get('mib')} MiB synthetic program (all code touched, then "
      "waiting). Sums over the processes of `/proc/PID/smaps_rollup`: RSS (4 KiB and THP pages, "
      "not hugetlb), PSS (shared pages divided among their users), AnonHugePages; hugetlb: "
      "explicit pages in use, counted as each process's `Private_Hugetlb` plus, for the shared "
      "caches, the pages of the cache files in their hugetlbfs mount (they outlive the processes). "
      "MiB.")
    w()
    counts = mem.get("counts", [])
    w("| variant | " + " | ".join(f"{k} proc: RSS / PSS / THP / hugetlb" for k in counts) + " |")
    w("|---|" + "---|" * len(counts))
    for k in mem.get("order", []):
        v = mem["variants"].get(k, {"na": "not measured"})
        if "na" in v:
            w(f"| {LABELS.get(k, k)} | " + " | ".join([na(v)] + [""] * (len(counts) - 1)) + " |")
            continue
        w(f"| {LABELS.get(k, k)} | " + " | ".join(cell(v.get(str(c), v.get(c))) for c in counts) + " |")
    w()
    w("Private copies cost the code's size once per process (THP in RSS, explicit pages in the pool); "
      "plain 4 KiB code and shared caches cost it once in all.")
    w()


def cell(x):
    """One variant's sums for one process count, in MiB (hugetlb also in pages)."""
    if not x:
        return "n/a"
    return (f"{x['rss_kb'] / 1024:.0f} / {x['pss_kb'] / 1024:.0f} / {x['anon_huge_kb'] / 1024:.0f} / "
            f"{x['hugetlb_pages'] * 2} ({x['hugetlb_pages']} pages)")
