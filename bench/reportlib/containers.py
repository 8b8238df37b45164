"""Containers under Podman with the OCI hook (bench/sections/containers.py), after the servers."""
from .common import fmt, na, ok
from .paired import paired
from .small import did_text, small_cell

SERVERS = (("node", "Node.js HTTP server, wrk -t2 -c32", "requests"),
           ("postgres", "PostgreSQL 15, pgbench -S -c 4 -j 2", "transactions"))
# How a ratio of annotated over plain reads, by what is better.
LABELS = {"annotated": "annotated", "never": "annotated, `HUGETEXT_COPY=never`"}
MORE = {"higher": "more, decided", "lower": "fewer, decided", "same": "the same within 2%, decided"}
LESS = {"higher": "more, decided", "lower": "less, decided", "same": "the same within 2%, decided"}


def write(out, R):
    w = out.w
    c = R.get("containers", {})
    w("## Containers: Podman with the OCI hook")
    w()
    if not c:
        w("Not measured in this run: `bench/run.sh --only containers` (about 12 minutes) measures it.")
        w()
        return
    mc = (R.get("machines") or {}).get("containers")
    if mc:
        w(f"Measured on {mc.get('date')}{' with --quick' if mc.get('quick') else ''} by `bench/run.sh --only "
          f"containers` (`{mc.get('cpu')}`, kernel `{mc.get('kernel')}`, library at commit `{mc.get('commit')}`), "
          f"in {(R.get('seconds') or {}).get('containers', 0) / 60:.1f} minutes; the machine table above is the "
          "run's that measured the other sections.")
        w()
    carried = (R.get("carried") or {}).get("containers")
    if carried:
        w(f"From the run of {carried} (`bench/run.sh --only containers`); its machine and load were that run's.")
        w()
    if out.missing(c):
        return
    intro(out, c)
    for key, title, unit in SERVERS:
        server(out, c.get(key, {}), title, unit)
    memory(out, c.get("memory", {}))
    floor(out, c.get("floor", {}))
    limits(out)


def intro(out, c):
    st = c.get("settings", {})
    out.w(f"Podman {c.get('podman', '?')} with {c.get('runc', 'runc')}, cgroupfs, on the host's network; "
          "the bench's own Podman configuration (`CONTAINERS_CONF`), hooks.d directory (`--hooks-dir`: the "
          "package's file with the build's command and preload) and text service, in the bench's mount "
          "namespace with a tmpfs on `/run/hugetext` (bench/sections/podman.py). Images are made from the "
          "host's own files (the program, its `ldd` libraries and what it reads) with `podman import`; nothing "
          "is pulled. **plain**: no annotation; **annotated**: `--annotation io.hugetext/enable=1`, the "
          "preload on its defaults; node also has **never**: the annotated image with `-e HUGETEXT_COPY=never` "
      "(the hook's preload, no copy at all: what the page cache's 2 MiB pages alone give). Each row has an image of its own, the same files in another layer, so "
          "the plain row's page cache is its own, kept in 4 KiB pages before each of its runs (as on a "
          "machine without hugetext), while the annotated row's is what the text service made of it. Before "
          "the rounds the annotated image starts once (its first start: it offers the program's file, the "
          "service warms it) and the bench waits for the service: every annotated run below is a second "
          f"start or later. {st.get('rounds', '?')} interleaved rounds (the order shuffled each round), a "
          f"fresh container per run, one untimed load, then {st.get('seconds_per_load', '?')} s timed; "
          "median [min–max]. CPU per request: all of the container's processes, from the host's /proc. The "
          f"bench's explicit page pool is set aside for the section ({c.get('pool_during', '?')} pages during it): "
          "the defaults copy into explicit pages where a pool has free pages, which a user's machine has not. The "
          "paired columns: annotated over plain round by round through `hugetext measure --stats` (the "
          "Hodges-Lehmann estimate of the paired log-ratios, the exact Wilcoxon signed-rank interval; decided "
          "where the 99.5% interval excludes 1 or lies within 2% of it); \"not decided\" is no claim either way.")
    out.w()
    out.w("**claim**, checked in every run from the host's `/proc/PID/smaps` of the container's processes while "
          "the load runs: plain maps no preload and has no code on huge pages; annotated maps the preload "
          "(`/run/hugetext/libhugetext-preload.so`) in every process, its code is on shared huge pages (the "
          "page cache's, `FilePmdMapped`, or the shared cache's, `ShmemPmdMapped`: the same pages in every "
          "container) and nothing of it is a private copy (an anonymous executable mapping, `AnonHugePages` "
          "its huge part). A row whose run shows otherwise says what it found.")
    out.w()


def pcell(p, words):
    if not p:
        return "n/a (the rounds do not pair)"
    iv = f" (95%: {p['lo']:.3f}–{p['hi']:.3f})" if p.get("lo") else ""
    d = words.get(p["decision"], f"not decided at {p['n']} rounds")
    return f"{p['ratio']:.3f}x{iv}, {d}"


def server(out, s, title, unit):
    w = out.w
    w(f"### {title}")
    w()
    if out.missing(s):
        return
    rows = s.get("rows", {})
    p = rows.get("plain", {})
    w(f"`{s.get('binary')}`: {s.get('exec_mib', '?')} MiB of code.")
    w()
    w(f"| row | {unit} per s | p50 ms | p99 ms | CPU µs per request |")
    w("|---|---|---|---|---|")
    for name, r in rows.items():
        if r.get("failed_runs") and not ok(r.get("tps")):
            w(f"| {name} | n/a: {'; '.join(r.get('problems', []))} | | | |")
            continue
        w(f"| {name} | {fmt(r.get('tps'), nd=0)} | {fmt(r.get('p50'), nd=3)} | {fmt(r.get('p99'), nd=3)} | "
          f"{fmt(r.get('cpu_us_per_tx'), nd=1)} |")
    w()
    for name, a in rows.items():
        if name == "plain":
            continue
        w(f"- {LABELS.get(name, name)} over plain, paired: throughput {pcell(paired(a.get('tps'), p.get('tps')), MORE)}; "
          f"p50 latency {pcell(paired(a.get('p50'), p.get('p50')), LESS)}; CPU per request "
          f"{pcell(paired(a.get('cpu_us_per_tx'), p.get('cpu_us_per_tx')), LESS)}.")
    w()
    claims(out, rows)
    first(out, s.get("first_start"))
    sv = s.get("service")
    if sv:
        w(f"The text service during the rounds: {sv['offers']} offers, {sv['warms']} warms ({sv['warmed_total']} "
          f"done as warmed), {sv['filled_total']} cache fills, {sv['refused_total']} refused; each annotated run "
          "waits, after its container is gone, until the service holds no offer"
          + (f"; its last lines: {'; '.join(sv['lines'])}." if sv.get("lines") else "."))
        w()


def claims(out, rows):
    w = out.w
    w("| row | processes (with the preload) | shared huge MiB | private copy MiB (on huge pages) | code Pss MiB "
      "(all processes) | the reports: kept / copied MiB (runs) | claim | the preload's report lines (last run) |")
    w("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        v = r.get("view")
        if not v:
            w(f"| {name} | {na(r)} | | | | | |")
            continue
        bad = [c for c in r.get("claims", []) if c]
        verdict = "holds in every run" if not bad else \
            f"**fails** in {len(bad)} of {len(r.get('claims', []))} runs: {bad[-1]}"
        rep = "; ".join(f"{k} x{n}" for k, n in (r.get("reports") or {}).items()) or "-"
        w(f"| {name} | {v['processes']} ({v['with_preload']}) | {v['shared_huge_kb'] / 1024:.1f} | "
          f"{v['copy_kb'] / 1024:.1f} ({v['private_huge_kb'] / 1024:.1f}) | {v['pss_kb'] / 1024:.1f} | "
          f"{moved(r.get('moved'))} | {verdict} | {rep} |")
    w()
    hook = (rows.get("annotated") or {}).get("hook")
    if hook:
        w(f"The hook's log for the last annotated run: \"{hook}\".")
        w()


def moved(ms):
    """The reports' kept and copied MiB per run, e.g. "24 / 2, 24 / 2"."""
    if not ms:
        return "-"
    runs = [f"{m['kept_kb'] / 1024:.0f} / {m['copied_kb'] / 1024:.0f}" for m in ms]
    seen = list(dict.fromkeys(runs))  # each value once, in the order first seen, with its count
    return ", ".join(f"{v} (x{runs.count(v)})" if runs.count(v) > 1 else v for v in seen)


def first(out, f):
    if not f:
        return
    served = "; ".join(f.get("warmed", []) + f.get("filled", []) + f.get("refused", [])) or "nothing"
    rep = "; ".join(f"{k} x{n}" for k, n in (f.get("reports") or {}).items()) or "no report line"
    m = f.get("moved") or {}
    out.w(f"The annotated image's first start (`{' '.join(f.get('argv', []))}`): reports {rep} "
          f"(kept / copied MiB: {moved([m]) if m else '-'}); {f.get('offered', 0)} file(s) offered; the service "
          f"then: {served}.")
    out.w()


def memory(out, m):
    w = out.w
    w("### Four node containers of one image at once")
    w()
    if out.missing(m):
        return
    w("Four containers of the row's node image serve at once (each on its own port, each put under wrk for a "
      "while, then read): node's code over the four containers' processes, from smaps (Pss summed: what the "
      "code costs the machine; Rss summed: what the four map), the shared huge pages (one copy for all, "
      "counted once), the private copies summed, and from `/proc/PID/pagemap` the code pages present in all "
      "four at the same address and how many of them are on the same physical frame in all four.")
    w()
    w("| row | code Pss MiB (sum) | code Rss MiB (sum) | shared huge MiB (once) | private copies MiB (sum) | "
      "pages in all four | on the same frame | one copy? | claims |")
    w("|---|---|---|---|---|---|---|---|---|")
    for name in ("plain", "annotated"):
        x = m.get(name, {})
        if "sum" not in x:
            w(f"| {name} | {na(x)} | | | | | | | |")
            continue
        s, fr = x["sum"], x.get("frames", {})
        copy = s.get("copy_kb", 0)
        one = fr.get("in_all") and fr.get("same_frame") == fr.get("in_all") and not copy
        diff = fr.get("in_all", 0) - fr.get("same_frame", 0)
        verdict = "yes" if one else f"no: {diff * 4 / 1024:.1f} MiB on separate frames, {copy / 1024:.1f} MiB copied"
        bad = [c for c in x.get("claims", []) if c]
        cl = "hold" if not bad else f"**fail** in {len(bad)} of 4: {bad[0]}"
        w(f"| {name} | {s['pss_kb'] / 1024:.1f} | {s['rss_kb'] / 1024:.1f} | {s['shared_huge_kb'] / 1024:.1f} | "
          f"{copy / 1024:.1f} | {fr.get('in_all', 0)} | {fr.get('same_frame', 0)} | {verdict if name != 'plain' else '-'} | {cl} |")
    first(out, m.get("first_start"))


def floor(out, f):
    w = out.w
    w("### Programs with nothing to move, in a container")
    w()
    if out.missing(f):
        return
    g = f.get("goal", {})
    w(f"A container's start costs Podman and runc some hundreds of ms, so the programs' own starts are timed "
      "inside long-lived containers of one image (the programs, their libraries, bench/time-runs and the "
      "empty preload): in a plain one, each program plain and with `LD_PRELOAD` of the empty preload; in a "
      "plain one with a file naming the empty preload bound read-only over `/etc/ld.so.preload` (the hook's "
      "way in, with the least a preload can be); in an annotated one, with hugetext's preload from the hook's "
      "`/etc/ld.so.preload`, on its defaults and with `HUGETEXT_MATCH=.`. Each container's main process is "
      "`time-runs --serve`, which runs one timed start (posix_spawn to wait4, inside the container) per line "
      "the bench sends it, so the variants are interleaved round by round across the containers "
      f"({f.get('rounds')} rounds, the order shuffled each round); ms, median [quartiles]. The goal and its "
      f"verdict are section 6's: at most {g.get('ms', 0.02)} ms or {(g.get('ratio', 1.01) - 1) * 100:.0f}% of "
      "the run over the empty preload, on the paired differences by a 95% bootstrap interval of their median; "
      "claimed only where the preload's reports (extra runs) show it moved nothing. The verdict's baseline is "
      "the empty preload through `/etc/ld.so.preload`, as hugetext's comes: the loader opens, maps and reads "
      "that file, which `LD_PRELOAD` does not, and that cost is any injected preload's. The figure against "
      "`LD_PRELOAD`'s empty preload is beside it (what the hook gives against the cheapest preload an image "
      "could carry in its environment).")
    w()
    w("| program | plain | empty preload, `LD_PRELOAD` | empty preload, `/etc/ld.so.preload` | hugetext, default "
      "| hugetext, `HUGETEXT_MATCH=.` | goal (against `/etc/ld.so.preload`'s empty preload) "
      "| against `LD_PRELOAD`'s |")
    w("|---|---|---|---|---|---|---|---|")
    progs = f.get("programs", {})
    for label in f.get("order", list(progs)):
        row = progs.get(label, {})
        if "na" in row:
            w(f"| `{label}` | {na(row)} | | | | | | |")
            continue
        p = row.get("plain")
        cells = [small_cell(row.get(k), p) for k in ("plain", "empty-preload", "empty-ld.so.preload", "default",
                                                    "match-all")]
        cols = []
        for key, against in (("goal", "`/etc/ld.so.preload`'s"), ("goal_ld_preload", "`LD_PRELOAD`'s")):
            cols.append("; ".join(goal(out, label, n, (row.get(k) or {}).get(key), against)
                                  for k, n in (("default", "default"), ("match-all", "MATCH=."))))
        w(f"| `{label}` | " + " | ".join(cells) + " | " + " | ".join(cols) + " |")
    w()
    for label in f.get("order", []):
        did = (progs.get(label) or {}).get("did")
        if did:
            w(f"- `{label}`: default: {did_text(did.get('default'))}; `MATCH=.`: {did_text(did.get('match-all'))}.")
    w()


def goal(out, label, name, gl, against="`/etc/ld.so.preload`'s"):
    if not gl:
        return f"{name}: n/a"
    v = gl.get("verdict")
    if v == "n/a":
        return f"{name}: n/a ({gl.get('why', '')})"
    iv = gl.get("interval_ms")
    fig = f"{gl['diff_ms']:+.3f} ms" + (f" [{iv[0]:+.3f}, {iv[1]:+.3f}]" if iv else "")
    out.summary.append((f"`{label}` in an annotated container, preload {name} − {against} empty preload", fig,
                        f"≤ {gl['limit_ms']:.3f} ms", {"met": "meets goal", "missed": "misses goal"}.get(v, "not decided")))
    return f"{name}: {({'met': 'met', 'missed': '**missed**'}).get(v, 'not decided')}, {fig}"


def limits(out):
    out.w("node's last 2 MiB page of code (0x2400000-0x2600000 in Debian's build) is one its code mapping ends "
          "8 KiB inside: the preload keeps it from the page cache by mapping the file over that page where the "
          "space after the code is free (docs/how-it-works.md, step 1), and the service's warm reads its 2 MiB "
          "too. A private copy in an annotated node row means that did not happen; the row's reports say how "
          "much the page cache gave (`kept_bytes`). With `HUGETEXT_COPY=never` nothing is ever copied.")
    out.w()
    out.w("Limits: Podman with runc only (crun refuses this VM's hybrid cgroup layout); CRI-O and Kubernetes "
          "are not run here (not in Debian 12, no cluster). Images come from the host's files through `podman "
          "import`, one layer each. On this Linux 6.18 overlayfs places a big library's mapping off the 2 MiB "
          "grid (docs/containers.md, \"Limits\"), and a PIE program's load address is the kernel's choice: "
          "neither the page cache's 2 MiB pages nor a shared cache entry can serve those, so libLLVM-size "
          "libraries are not shared in containers, and PostgreSQL (PIE) gets at most a private copy; node "
          "(non-PIE, at its fixed aligned address) is served.")
    out.w()
