"""The summary near the top: every figure with a target, beside the same
figures from earlier full runs kept on this machine (build-bench/bench/history/).
"""
import json
import os

from .clang import LABELS as CLANG_LABELS
from .common import ratio, rfmt
from .startup import LABELS as NODE_LABELS, TARGETS as NODE_TARGETS


def lines(out, R, results_path):
    """The summary section's lines, from out.summary and the history beside results_path."""
    hs = [summary_of(h) for h in history(R, results_path)]
    head = "| figure | measured | target | where we stand |"
    sep = "|---|---|---|---|"
    if hs:
        head += " earlier full runs here (oldest first) |"
        sep += "---|"
    S = ["## Summary", "", head, sep]
    for f, v, t, vd in out.summary:
        line = f"| {f} | {v} | {t} | {vd} |"
        if hs:
            line += " " + ", ".join(h.get(f, "n/a") for h in hs) + " |"
        S.append(line)
    S.append("")
    if hs:
        S.append(f"The last column repeats each figure from the {len(hs)} earlier full run(s) kept in "
                 "`build-bench/bench/history/`: how far a figure moves from run to run on this machine "
                 "is part of its spread.")
        S.append("")
    return S


def history(R, results_path):
    """The last few full runs kept beside the results, other than this one."""
    m = R.get("machine", {})
    hist = []
    hist_dir = os.path.join(os.path.dirname(os.path.abspath(results_path)), "history")
    if os.path.isdir(hist_dir):
        for fn in sorted(os.listdir(hist_dir))[-6:]:
            try:
                h = json.load(open(os.path.join(hist_dir, fn)))
            except (OSError, ValueError):
                continue
            # (this run may be kept there already: its date tells)
            if h.get("machine", {}).get("quick") or h.get("machine", {}).get("date") == m.get("date"):
                continue
            hist.append(h)
    return hist


def summary_of(res):
    """The summary's figures for another results file (same rules as the sections)."""
    out = {}
    for mib, v in (res.get("remap") or {}).items():
        if isinstance(v, dict):
            out[f"remap cost / floor, {mib} MiB"] = rfmt(ratio(v.get("thp-auto"), v.get("floor")))
    rps_ = [ratio(v.get("thp-pread"), v.get("thp-memcpy")) for v in (res.get("remap") or {}).values()
            if isinstance(v, dict)]
    rps_ = [x for x in rps_ if x is not None]
    if rps_:
        a_ = sum(rps_) / len(rps_)
        out["faster fill (pread vs memcpy)"] = "memcpy" if a_ > 1.02 else "pread" if a_ < 0.98 else "neither (within 2%)"
    nd_ = (res.get("startup") or {}).get("node") or {}
    # The same names as the start-up section's summary rows (startup.target).
    for k in list(NODE_TARGETS) + ["node-largepages"]:
        r = rfmt(ratio(nd_.get(k), nd_.get("default-plain" if k == "default" else "plain")))
        name = "node --use-largepages=on" if k == "node-largepages" else NODE_LABELS[k]
        out[f"node start-up, {name}"] = r
    for loop, data in ((res.get("itlb") or {}).get("loops") or {}).items():
        row = data.get("46", {})
        out[f"iTLB loop '{loop}', 46 MiB, hugetext THP"] = rfmt(ratio(row.get("4k"), row.get("thp")))
        out[f"iTLB loop '{loop}', 46 MiB, hugetext explicit"] = rfmt(ratio(row.get("4k"), row.get("explicit")))
    for key, label in (("gxx", "g++ -O2 -c"), ("rustc", "rustc")):
        v = (res.get("real") or {}).get(key) or {}
        out[f"{label}, hugetext THP / plain"] = rfmt(ratio(v.get("thp"), v.get("plain")), 3)
        out[f"{label}, hugetext explicit / plain"] = rfmt(ratio(v.get("explicit"), v.get("plain")), 3)
    for label, row in ((res.get("small") or {}).get("programs") or {}).items():
        for k, name in (("default", "default"), ("match-all", "MATCH=.")):
            gl = (row.get(k) or {}).get("goal") if isinstance(row, dict) else None
            if gl and "interval_ms" in gl:
                out[f"`{label}`, preload {name} − empty preload"] = f"{gl['diff_ms']:+.3f} ms"
            elif gl and "interval_ms" not in gl and "verdict" not in gl:
                out[f"`{label}`, preload {name} − plain"] = f"{gl['diff_ms']:+.3f} ms ({gl['ratio']:.3f}x)"
    rows_ = (res.get("clang") or {}).get("rows") or {}
    for k, lab in CLANG_LABELS.items():
        if k != "plain":
            out[f"clang -O2, {lab}, speed-up"] = rfmt(ratio(rows_.get("plain"), rows_.get(k)), 3)
    return out
