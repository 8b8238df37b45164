"""Section 6: what the preload costs programs with nothing to move."""
from .common import alt, na, ok


def write(out, R):
    w = out.w
    sm = R.get("small", {})
    w("## 6. Programs with nothing to move")
    w()
    if out.missing(sm):
        return
    g = sm.get("goal", {})
    w(f"What the preload costs programs that have no code worth moving (issues 14 and 37). `bench/run.sh --only small` "
      f"times each program {sm.get('rounds')} times per variant with `bench/time-runs` (posix_spawn to wait4, "
      "stdout to /dev/null; the variants interleaved, the order shuffled each round, after one untimed round): "
      "plain; with `LD_PRELOAD` of an empty shared library (the floor of loading any preload); with hugetext's "
      "preload on its default settings; and with `HUGETEXT_MATCH=.` (every library a candidate). Wall time "
      "in ms, **median [quartiles]**, then the difference and the ratio to plain. The goal per row (issue 37): "
      f"at most {g.get('ms', 0.02)} ms or {(g.get('ratio', 1.01) - 1) * 100:.0f}% of the run more than the empty "
      "preload, whichever is larger, decided on the paired differences (each round's run minus the empty "
      "preload's of the same round) by a 95% bootstrap interval of their median: *met* when it lies under "
      "the limit, *missed* when above, *not decided* when it straddles it. A row claims the goal only "
      "where the report runs show that nothing was moved.")
    w()
    progs = sm.get("programs", {})
    order = sm.get("order", list(progs))
    times(out, progs, order)
    where_time_goes(out, progs, order)


def times(out, progs, order):
    """Each program's wall times per variant, and whether the goal was met."""
    w = out.w
    w("| program | plain | empty preload | hugetext, default | hugetext, `HUGETEXT_MATCH=.` | goal met? |")
    w("|---|---|---|---|---|---|")
    for label in order:
        row = progs.get(label, {"na": "not measured"})
        if "na" in row:
            w(f"| `{label}` | {na(row)} | | | | |")
            continue
        p = row.get("plain")
        cells = [small_cell(row.get(k), p) for k in ("plain", "empty-preload", "default", "match-all")]
        verdicts = [goal(out, label, name, (row.get(k) or {}).get("goal"))
                    for k, name in (("default", "default"), ("match-all", "MATCH=."))]
        w(f"| `{label}` | " + " | ".join(cells) + " | " + "; ".join(verdicts) + " |")
    w()


def goal(out, label, name, gl):
    """The goal cell of one variant (its summary row too); gl: the goal measure.py checked."""
    if not gl:
        return f"{name}: n/a"
    verdict = gl.get("verdict", "met" if gl.get("met") else "missed")
    if verdict == "n/a":
        return f"{name}: n/a ({gl.get('why', '')})"
    iv = gl.get("interval_ms")
    fig = f"{gl['diff_ms']:+.3f} ms" + (f" [{iv[0]:+.3f}, {iv[1]:+.3f}]" if iv else "")
    out.summary.append((f"`{label}`, preload {name} − empty preload", fig, f"≤ {gl['limit_ms']:.3f} ms",
                        {"met": "meets goal", "missed": "misses goal"}.get(verdict, "not decided")))
    vd = {"met": "met", "missed": "**missed**"}.get(verdict, "not decided")
    return f"{name}: {vd}, {fig} over the empty preload (limit {gl['limit_ms']:.3f} ms)"


def where_time_goes(out, progs, order):
    """The differences between the variants: loading, hugetext's own work, MATCH=."""
    w = out.w
    w("Where the time goes: **loading** is the empty preload against plain (ld.so opens, maps and "
      "relocates one more library); **hugetext's own work** is the default preload against the empty one "
      "(its larger library and its constructor: settings, /proc reads, the decision); `MATCH=.` adds the "
      "examination of every library. CPU time is the child's user+sys.")
    w()
    w("| program | loading (ms) | hugetext's own work (ms) | `MATCH=.` on top (ms) | CPU: plain / default (ms) | "
      "what the preload did (default) | (`MATCH=.`) |")
    w("|---|---|---|---|---|---|---|")
    for label in order:
        row = progs.get(label, {})
        if "na" in row:
            continue
        p, e, d, a = (row.get(k) for k in ("plain", "empty-preload", "default", "match-all"))
        cpu = f"{alt(p)['median']:.3f} / {alt(d)['median']:.3f}" if ok(alt(p)) and ok(alt(d)) else "n/a"
        did = row.get("did", {})
        w(f"| `{label}` | {diff(e, p)} | {diff(d, e)} | {diff(a, d)} | {cpu} | {did_text(did.get('default'))} | "
          f"{did_text(did.get('match-all'))} |")
    w()


def diff(x, y):
    return f"{x['median'] - y['median']:+.3f}" if ok(x) and ok(y) else "n/a"


def small_cell(x, plain):
    """A variant's median wall time, with its difference and ratio to plain."""
    if not ok(x):
        return na(x)
    c = f"{x['median']:.3f} [{x['q1']:.3f}–{x['q3']:.3f}]"
    if ok(plain) and x is not plain:
        c += f" ({x['median'] - plain['median']:+.3f} ms, {x['median'] / plain['median']:.2f}x)"
    return c


def did_text(d):
    """What the preload did in the checked runs: how often code was moved, and how long that took."""
    if not d:
        return "not checked"
    t = f"moved code in {d['moved_runs']} of {d['runs']} starts"
    if ok(d.get("move_ms")):
        t += f" ({d['move_ms']['median']:.2f} ms each)"
    st = ", ".join(f"{k}: {v}" for k, v in sorted(d.get("statuses", {}).items()))
    return t + (f"; report lines: {st}" if st else "; no report line")
