"""Section 1: the cost of moving N MiB of synthetic code, against one-copy floors."""
from .common import alt, fmt, ok, ratio, rfmt, verdict


def write(out, R):
    w = out.w
    w("## 1. Remap cost")
    w()
    w("Time to move N MiB of synthetic code (`bench/bigtext.S`) onto huge pages, measured inside a fresh "
      "process around `ht_remap_range()` (`bench-text remap`), against the **one-copy floor**: in a fresh "
      "process, with the code already resident, mmap a 2 MiB-aligned region, `MADV_HUGEPAGE`, one `memcpy()` "
      "(`bench-text floor`). Our figure includes everything the library does: reading the maps, the pagemap "
      "check, allocating and filling the copy, `MADV_COLLAPSE`, `mprotect`, the `mremap` swap and the smaps "
      "check. Milliseconds. The library fills large copies with two threads (a helper thread takes "
      "half the huge pages), so on these 2 cores its wall time can approach a single-threaded copy's "
      "while its CPU time (all threads of the process, shown as a ratio too) stays above it.")
    w()
    rc = R.get("remap", {})
    if not out.missing(rc):
        floors = against_floor(out, rc)
        w()
        if any(ok(v.get("floor-pread")) for _, v in floors):
            other_floors(out, floors)
        fills(out, rc)
    w()


def by_size(rc):
    return sorted(rc.items(), key=lambda kv: int(kv[0]))


def against_floor(out, rc):
    """The main table: hugetext against the resident floor, per size; the sizes' rows."""
    w = out.w
    w("| code | floor (one memcpy) | hugetext, THP (default fill) | ratio | ratio of CPU times | THP, fill=pread | THP, fill=memcpy | explicit pages | target |")
    w("|---|---|---|---|---|---|---|---|---|")
    floors = []
    for mib, v in by_size(rc):
        r = ratio(v.get("thp-auto"), v.get("floor"))
        rcpu = ratio(alt(v.get("thp-auto")), alt(v.get("floor")))
        w(f"| {mib} MiB | {fmt(v.get('floor'))} | {fmt(v.get('thp-auto'))} | **{rfmt(r)}** | {rfmt(rcpu)} | "
          f"{fmt(v.get('thp-pread'))} | {fmt(v.get('thp-memcpy'))} | {fmt(v.get('explicit-auto'))} | ≤ 2x, goal 1.3x: {verdict(r, 2.0, 1.3)} |")
        out.summary.append((f"remap cost / floor, {mib} MiB", rfmt(r), "≤ 2x (goal 1.3x)", verdict(r, 2.0, 1.3)))
        floors.append((mib, v))
    return floors


def other_floors(out, floors):
    """hugetext against floors that, like it, must first get the bytes from the page cache."""
    w = out.w
    w("The floor's source is resident and mapped; hugetext's is not (at start-up most of the code "
      "has never been touched), so it must first get the bytes out of the page cache. Two more "
      "single-copy references, in fresh processes too, show what that costs by itself: "
      "`floor populate` maps the code with `MADV_POPULATE_READ` and then does one memcpy (both "
      "timed), `floor pread` does one `pread()` from the file. Milliseconds, and hugetext against "
      "each:")
    w()
    w("| code | floor, resident | floor, populate + memcpy | floor, pread | hugetext / populate floor | hugetext / pread floor |")
    w("|---|---|---|---|---|---|")
    for mib, v in floors:
        w(f"| {mib} MiB | {fmt(v.get('floor'))} | {fmt(v.get('floor-populate'))} | {fmt(v.get('floor-pread'))} | "
          f"{rfmt(ratio(v.get('thp-auto'), v.get('floor-populate')))} | {rfmt(ratio(v.get('thp-auto'), v.get('floor-pread')))} |")
    w()


def fills(out, rc):
    """pread against memcpy as the way to fill the copy (HUGETEXT_FILL)."""
    w = out.w
    lines = []
    for mib, v in by_size(rc):
        rp = ratio(v.get("thp-pread"), v.get("thp-memcpy"))
        if rp is not None:
            lines.append(f"{mib} MiB: pread/memcpy = {rp:.2f}")
        # (the text below names the largest size's choice: the last one seen)
        used = v.get("fill_used", {}).get("thp-auto")
    faster = None
    rps = [ratio(v.get("thp-pread"), v.get("thp-memcpy")) for v in rc.values()]
    rps = [x for x in rps if x is not None]
    if rps:
        faster = "memcpy" if sum(rps) / len(rps) > 1.02 else "pread" if sum(rps) / len(rps) < 0.98 else "neither (within 2%)"
    w(f"**pread against memcpy** (`HUGETEXT_FILL`): {'; '.join(lines)} (below 1: pread faster). "
      f"Faster on this machine: **{faster}**. The default (`auto`) used `{used}` here, as the code's "
      "file pages were clean. Note the memcpy fill copies from the program's own 4 KiB mapping, which "
      "faults the not yet touched pages in first (the floor's source is resident), while pread copies "
      "from the page cache without touching the mapping.")
    out.summary.append(("faster fill (pread vs memcpy)", faster or "n/a", "report", "-"))
