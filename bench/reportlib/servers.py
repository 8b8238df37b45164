"""Servers under real clients (bench/sections/servers.py), after the clang section."""
from .common import fmt, na, ratio, rfmt

SERVERS = (("postgres", "PostgreSQL 15", (("select", "pgbench -S"), ("tpcb", "pgbench TPC-B-like"))),
           ("mariadb", "MariaDB 10.11", (("read_only", "sysbench oltp_read_only"),
                                         ("point_select", "sysbench oltp_point_select"))),
           ("node", "Node.js HTTP", (("http", "wrk, 32 connections"),)))
LABELS = {"plain": "plain", "defaults": "defaults", "setup": "defaults after setup", "now": "HUGETEXT_COPY=now",
          "cover": "now + HUGETEXT_COVER_ENDS=1", "explicit": "now + explicit pages",
          "largepages": "node --use-largepages=on"}


def write(out, R):
    w = out.w
    sv = R.get("servers", {})
    w("## Servers under real clients")
    w()
    if not sv:
        w("Not measured in this run: `bench/run.sh --only servers` (about 35 minutes) measures it.")
        w()
        return
    if out.missing(sv):
        return
    carried = (R.get("carried") or {}).get("servers")
    if carried:
        w(f"From the run of {carried} (`bench/run.sh --only servers`): a full run keeps the last servers "
          "results, which take half an hour to measure; its machine and load were that run's.")
        w()
    st = sv.get("settings", {})
    w(f"Each server is started fresh for each run with the variant's environment, on loopback; one load "
      f"warms it, then each load runs {st.get('seconds_per_load', '?')} s; {st.get('rounds', '?')} interleaved "
      f"rounds; median [min–max]. Clients: {st.get('clients', '?')}. Throughput in transactions (requests) per "
      "second, ratio against plain; latency p50 and p99 in ms from the client's own per-transaction log or "
      "histogram; CPU per transaction: all of the server's processes, from /proc. Memory after the run, over "
      "all of the server's processes: how many have code on huge pages, the main "
      "process's code on huge pages, the private huge bytes summed over all processes, the shared huge bytes "
      "(counted once), and copies: those huge bytes over the code's bytes (cover-ends spans also hold read-only data, so one copy can show above 1). **claim**: plain has no code on huge pages, every "
      "other row its main process's code on huge pages, checked from smaps; otherwise what the reports said.")
    w()
    for key, title, loads in SERVERS:
        server(out, sv.get(key, {}), title, loads)


def server(out, s, title, loads):
    w = out.w
    w(f"### {title}")
    w()
    if out.missing(s):
        return
    w(f"`{s.get('binary', '?')}`: {s.get('code_mib', '?')} MiB of code" +
      (f"; scale {s['scale']}" if "scale" in s else "") + ".")
    w()
    v = s.get("variants", {})
    plain = v.get("plain", {})
    for lk, label in loads:
        w(f"{label}:")
        w()
        w("| variant | per s | / plain | p50 ms | p99 ms | CPU µs/tx | / plain |")
        w("|---|---|---|---|---|---|---|")
        for name, x in v.items():
            if "na" in x:
                w(f"| {LABELS.get(name, name)} | {na(x)} | | | | | |")
                continue
            d, p = x.get(lk, {}), plain.get(lk, {})
            r = ratio(d.get("tps"), p.get("tps"))
            c = ratio(d.get("cpu_us_per_tx"), p.get("cpu_us_per_tx"))
            w(f"| {LABELS.get(name, name)} | {fmt(d.get('tps'), nd=0)} | {rfmt(r, 3) if name != 'plain' else ''} | "
              f"{fmt(d.get('p50'), nd=3)} | {fmt(d.get('p99'), nd=3)} | {fmt(d.get('cpu_us_per_tx'), nd=0)} | "
              f"{rfmt(c, 3) if name != 'plain' else ''} |")
        w()
    w("| variant | processes moved | main process's code huge MiB | private huge MiB (sum) | shared huge MiB | "
      "copies | claim | reports (last run) |")
    w("|---|---|---|---|---|---|---|---|")
    for name, x in v.items():
        if "na" in x:
            continue
        m = x.get("memory", {})
        claims = [c for c in x.get("claims", []) if c]
        rep = "; ".join(f"{k} x{n}" for k, n in x.get("reports", {}).items()) or "-"
        moved = ", ".join(f"{round(f * n)}/{n}" for f, n in zip(x.get("moved_fraction", []), x.get("processes", [])))
        w(f"| {LABELS.get(name, name)} | {moved} | {m.get('main_huge_mib', '?')} of {m.get('code_mib', '?')} | "
          f"{m.get('private_huge_mib', '?')} | {m.get('shared_huge_mib', '?')} | {m.get('copies', '?')} | "
          f"{'holds' if not claims else claims[0]} | {rep} |")
    w()
