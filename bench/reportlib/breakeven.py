"""Break-even, from this run's figures: what a copy costs and when it is repaid."""
from .common import alt, ok, ratio


def write(out, R):
    out.w("## Break-even, from this run's figures")
    out.w()
    be = copy_cost(R) + node_cost(R) + real_work(R)
    for b in be:
        out.w(f"- {b}")
    out.w()


def copy_cost(R):
    rc128 = (R.get("remap") or {}).get("128", {})
    if not ok(rc128.get("thp-auto")):
        return []
    per = rc128["thp-auto"]["median"] / 128
    return [f"Copy cost: {per:.2f} ms per MiB of code (median at 128 MiB; the maxima show the slow phases)."]


def node_cost(R):
    nd = (R.get("startup") or {}).get("node", {})
    if not (ok(nd.get("plain")) and ok(nd.get("thp"))):
        return []
    d = nd["thp"]["median"] - nd["plain"]["median"]
    return [f"`node -e 0`: the THP copy adds {d:.1f} ms to a {nd['plain']['median']:.0f} ms start"
            + (f"; the warm shared cache {nd['share-warm']['median'] - nd['plain']['median']:+.1f} ms"
               if ok(nd.get("share-warm")) else "")
            + (f"; with the default settings, after the first start, {nd['default']['median'] - nd['default-plain']['median']:+.1f} ms"
               " against a plain start of the same file" if ok(nd.get("default")) and ok(nd.get("default-plain")) else "") + "."]


def real_work(R):
    """For g++ and rustc in each mode: the gain, and the run time beyond which the copy pays."""
    be = []
    rw_ = R.get("real") or {}
    for key, label in (("gxx", "g++"), ("rustc", "rustc")):
        v = rw_.get(key, {})
        for mode in ("thp", "explicit"):
            if not (ok(v.get("plain")) and ok(v.get(mode))):
                continue
            mv = v.get("moved", {}).get(mode, {})
            cost = mv.get("ms")
            fw = 1 - v[mode]["median"] / v["plain"]["median"]
            rc_ = ratio(alt(v[mode]), alt(v["plain"]))
            fc = 1 - rc_ if rc_ is not None else 0
            txt = (f"{label}, {mode}: wall time {fw * 100:+.1f}%, CPU time {fc * 100:+.1f}% "
                   f"(positive = faster), for a copy of {mv.get('huge_mib')} MiB in {cost or 0:.0f} ms")
            f_ = fc  # CPU time: the wall time carries the other work on the machine
            if f_ > 0.005 and cost:
                txt += (f": at a {f_ * 100:.1f}% gain the copy is repaid by any run longer than "
                        f"{cost / 1000 / f_:.2f} s.")
            else:
                txt += ": no gain measurable above the noise in this run."
            be.append(txt)
    return be
