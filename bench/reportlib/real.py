"""Section 5: real work, g++ and rustc, plain against hugetext."""
from .common import alt, fmt, na, ratio, rfmt

JOBS = (("gxx", "g++ -O2 -c"), ("rustc", "rustc"))


def write(out, R):
    w = out.w
    rw = R.get("real", {})
    w("## 5. Real work")
    w()
    if out.missing(rw):
        return
    gi, ri = rw.get("gxx_info", {}), rw.get("rustc_info", {})
    w("Wall time in seconds, interleaved, median [min–max]. "
      f"g++: `g++ -O2 -std=c++17 -c` of a generated translation unit ({gi.get('lines', '?')} lines, "
      f"heavy on the standard library's templates and `<regex>`; cc1plus has {gi.get('cc1plus_text_mib', '?')} MiB of code). "
      f"rustc: a generated crate of {ri.get('lines', '?')} lines (enums, traits, generics, iterators; debug "
      "build), with `HUGETEXT_MATCH='librustc_driver|libLLVM'` so that the two big shared libraries are "
      "moved too.")
    w()
    w("| job | plain | hugetext THP | / plain (CPU) | hugetext explicit | / plain (CPU) | what moved |")
    w("|---|---|---|---|---|---|---|")
    for key, label in JOBS:
        job(out, label, rw.get(key, {}))
    w()


def job(out, label, v):
    if "na" in v:
        out.w(f"| {label} | {na(v)} | | | | | |")
        return
    mv = v.get("moved", {})
    what = "; ".join(f"{k}: {', '.join(x['objects'])} {x['huge_mib']} MiB in {x['ms']} ms" for k, x in mv.items())
    rt, re_ = ratio(v.get("thp"), v.get("plain")), ratio(v.get("explicit"), v.get("plain"))
    ct = ratio(alt(v.get("thp")), alt(v.get("plain")))
    ce = ratio(alt(v.get("explicit")), alt(v.get("plain")))
    out.w(f"| {label} | {fmt(v.get('plain'), nd=2)} | {fmt(v.get('thp'), nd=2)} | **{rfmt(rt, 3)}** ({rfmt(ct, 3)}) | "
          f"{fmt(v.get('explicit'), nd=2)} | **{rfmt(re_, 3)}** ({rfmt(ce, 3)}) | {what} |")
    out.summary.append((f"{label}, hugetext THP / plain", rfmt(rt, 3), "report (below 1 = faster)", "-"))
    out.summary.append((f"{label}, hugetext explicit / plain", rfmt(re_, 3), "report (below 1 = faster)", "-"))
