"""Real servers under real clients, on loopback only.

  postgres  PostgreSQL 15 (Debian's), pgbench -S (select-only) and the
            default TPC-B-like script, scale that fits in memory
  mariadb   MariaDB 10.11 (mariadbd), sysbench oltp_read_only and
            oltp_point_select
  node      a Node.js HTTP server (http.createServer, one short answer),
            wrk; beside Node's own --use-largepages=on

Each server is started fresh for every run, with the preload in the
environment of the process that starts it (so its workers inherit it):

  plain       no preload
  defaults    the preload's defaults (HUGETEXT_COPY=auto: a private copy
              waits until the process has used enough CPU time to pay)
  setup       the defaults after what `hugetext setup` does: the binary's
              page cache read back as 2 MiB pages (`hugetext warm`) and
              the shared cache on a tmpfs mounted huge=within_size
              (HUGETEXT_SHARE_DIR; /run/hugetext is left alone, since the
              machine may be shared)
  now         HUGETEXT_COPY=now: the copy before main()
  cover       HUGETEXT_COPY=now and HUGETEXT_COVER_ENDS=1 (item 3 of
              issue 20: the code's end pages with their read-only bytes)
  explicit    HUGETEXT_COPY=now, HUGETEXT_MODE=explicit (hugetlb pool)
  largepages  node only: node --use-largepages=on, no preload

Variants are interleaved (the order shuffled each round); figures are
medians with min and max over the rounds: throughput, latency p50 and p99
(from the client's own histogram or per-transaction log) and, where the
client reports it, the server's CPU per transaction (from /proc, all of
its processes).  After each run every process of the server is read from
/proc/PID/smaps: its code's bytes on huge pages, and the huge bytes
private to it, summed over all processes (a copy inherited through fork
is shared, counted once).  Each row checks its claim from those figures:
plain must have no code on huge pages, every other row its main process's
code on huge pages (or the row says what the reports said instead).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import time

from .common import (ARGS, TMP, ensure_pool, exec_bytes, interleave, log, note, read, sh, small_page_cache,
                     terminate)

PG_BIN = "/usr/lib/postgresql/15/bin"
MARIADBD = "/usr/sbin/mariadbd"
PORTS = {"postgres": 55432, "mariadb": 53306, "node": 58080}
POOL = 64  # 2 MiB pages: mariadbd's 9 MiB, postgres's 5, node's 27 (one at a time)
VARIANTS = ("plain", "defaults", "setup", "now", "cover", "explicit")


def hugetext_tool():
    return os.path.join(os.path.dirname(os.path.dirname(ARGS.preload)), "tools", "hugetext")


def variant_env(v, report):
    """The environment a server starts with; None values are removed."""
    if v in ("plain", "largepages"):
        return {"LD_PRELOAD": None}
    e = {"LD_PRELOAD": ARGS.preload, "HUGETEXT_REPORT": report}
    if v == "setup" and ARGS.text_cache_dir:
        e.update(HUGETEXT_SHARE="1", HUGETEXT_SHARE_DIR=ARGS.text_cache_dir)
    if v in ("now", "cover", "explicit"):
        e.update(HUGETEXT_COPY="now", HUGETEXT_PAGE_CACHE="0")
    if v == "cover":
        e["HUGETEXT_COVER_ENDS"] = "1"
    if v == "explicit":
        e["HUGETEXT_MODE"] = "explicit"
    return e


def clean_env(extra):
    e = {k: v for k, v in os.environ.items()
         if not (k.startswith("HUGETEXT_") or k.startswith("HUGETLB_") or k == "LD_PRELOAD")}
    e.update(extra)
    return {k: v for k, v in e.items() if v is not None}


def prepare_page_cache(v, binary):
    """setup: the binary's code read back as 2 MiB pages; every other row: 4 KiB pages."""
    if v == "setup":
        sh(f"{hugetext_tool()} warm {binary}")
    else:
        small_page_cache(binary)


def wait_port(port, timeout=60):
    t = time.time()
    while time.time() - t < timeout:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


# ---------------------------------------------------------------- /proc

def descendants(pid):
    """pid and every process below it."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = read(f"/proc/{d}/stat")
            if st:
                ppid = int(st.rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def cpu_ticks(root):
    """CPU ticks of a server: its main process with the children it reaped
    (postgres's backends that ended), and every live process below it."""
    total = 0
    for p in descendants(root):
        st = read(f"/proc/{p}/stat")
        if st:
            f = st.rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])  # utime, stime
            if p == root:
                total += int(f[13]) + int(f[14])  # cutime, cstime
    return total


def code_smaps(pid, binary):
    """The code mappings of @binary in @pid: huge kB (any kind), private huge kB, shared huge kB."""
    txt = read(f"/proc/{pid}/smaps")
    if not txt:
        return None
    # The binary's address range: from its first to its last mapping by name, moved spans included.
    ranges, cur = [], None
    for line in txt.splitlines():
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
        if m:
            cur = {"lo": int(m.group(1), 16), "hi": int(m.group(2), 16), "perms": m.group(3),
                   "path": m.group(4)}
            ranges.append(cur)
        elif cur is not None and ":" in line:
            k, v = line.split(":", 1)
            if v.strip().endswith("kB"):
                cur[k] = int(v.split()[0])
    named = [r for r in ranges if r["path"] == binary]
    if not named:
        return None
    # A moved span may have taken the object's first or last mapping (cover-ends): 2 MiB around it.
    huge = 2 << 20
    lo = min(r["lo"] for r in named) // huge * huge
    hi = (max(r["hi"] for r in named) + huge - 1) // huge * huge
    out = {"huge_kb": 0, "private_huge_kb": 0, "shared_huge_kb": 0}
    for r in ranges:
        if r["lo"] < lo or r["hi"] > hi or "x" not in r["perms"]:
            continue
        if r["path"] not in (binary, "") and not r["path"].startswith("/anon_hugepage") and \
                "hugetext" not in r["path"] and ".text" not in r["path"]:
            continue
        anon = r.get("AnonHugePages", 0)
        htlb = r.get("Private_Hugetlb", 0) + r.get("Shared_Hugetlb", 0)
        # The page cache's 2 MiB folios, and the shared cache's huge tmpfs pages.
        pmd = r.get("FilePmdMapped", 0) + r.get("ShmemPmdMapped", 0)
        out["huge_kb"] += anon + htlb + pmd
        if anon:
            priv = r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)
            out["private_huge_kb"] += min(anon, priv)
            out["shared_huge_kb"] += anon - min(anon, priv)
        out["private_huge_kb"] += r.get("Private_Hugetlb", 0)
        out["shared_huge_kb"] += r.get("Shared_Hugetlb", 0) + pmd
    return out


def server_memory(root_pid, binary, code_bytes):
    """Summed over the server's processes: code on huge pages and what it costs."""
    procs, moved, private, shared = 0, 0, 0, 0
    main_huge = 0
    for p in descendants(root_pid):
        exe = ""
        try:
            exe = os.readlink(f"/proc/{p}/exe")
        except OSError:
            continue
        if exe != binary:
            continue
        s = code_smaps(p, binary)
        if s is None:
            continue
        procs += 1
        moved += s["huge_kb"] > 0
        private += s["private_huge_kb"]
        shared = max(shared, s["shared_huge_kb"])
        if p == root_pid:
            main_huge = s["huge_kb"]
    return {"processes": procs, "moved": moved, "main_huge_mib": round(main_huge / 1024, 1),
            "private_huge_mib": round(private / 1024, 1), "shared_huge_mib": round(shared / 1024, 1),
            "code_mib": round(code_bytes / 1048576, 1),
            # Copies of the code in huge pages: private ones plus one shared.
            "copies": round((private + shared) * 1024 / code_bytes, 2) if code_bytes else 0}


def report_summary(path):
    """What the preload's reports said, by status and error: {"ok": 3, "skipped: ...": 1}."""
    out = {}
    for line in read(path).splitlines():
        try:
            x = json.loads(line)
        except ValueError:
            continue
        k = x.get("status", "?") + (": " + x["error"] if x.get("error") else "")
        out[k] = out.get(k, 0) + 1
    return out


def claim(v, mem, reports):
    """None when the run shows what its row claims, else why not."""
    if v == "plain":
        return None if mem["main_huge_mib"] == 0 else f"plain has {mem['main_huge_mib']} MiB of code on huge pages"
    if v == "largepages":
        return None if mem["main_huge_mib"] > 0 else "--use-largepages=on put no code on huge pages"
    if mem["main_huge_mib"] > 0:
        return None
    said = "; ".join(f"{k} x{n}" for k, n in reports.items()) or "no report line"
    return f"no code on huge pages in the main process (reports: {said})"


# ---------------------------------------------------------------- clients

def percentiles(lat_ms):
    if not lat_ms:
        return None, None
    lat_ms = sorted(lat_ms)
    return lat_ms[len(lat_ms) // 2], lat_ms[min(len(lat_ms) - 1, int(len(lat_ms) * 0.99))]


def pgbench(args, port, dur, work):
    logdir = os.path.join(work, "pglog")
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    os.chmod(logdir, 0o777)
    cmd = ["runuser", "-u", "postgres", "--", f"{PG_BIN}/pgbench", "-h", "127.0.0.1", "-p", str(port),
           "-n", "-c", "4", "-j", "2", "-T", str(dur), "-l", "--log-prefix", os.path.join(logdir, "tx")] + \
        args + ["bench"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=dur + 120, cwd=logdir,
                       env=clean_env({}))
    m = re.search(r"tps = ([0-9.]+) \(without initial", p.stdout)
    if p.returncode != 0 or not m:
        return None, f"pgbench: {(p.stderr or p.stdout).strip()[-200:]}"
    lat = []
    for f in os.listdir(logdir):
        for line in read(os.path.join(logdir, f)).splitlines():
            x = line.split()
            if len(x) >= 3:
                lat.append(int(x[2]) / 1000.0)
    p50, p99 = percentiles(lat)
    tx = int(re.search(r"number of transactions actually processed: (\d+)", p.stdout).group(1))
    return {"tps": float(m.group(1)), "p50": p50, "p99": p99, "tx": tx}, None


def sysbench(test, sock, dur):
    cmd = ["sysbench", test, "--db-driver=mysql", f"--mysql-socket={sock}", "--mysql-user=root",
           "--mysql-db=sbtest", "--tables=4", "--table-size=20000", "--threads=4", f"--time={dur}",
           "--histogram=on", "--report-interval=0", "run"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=dur + 120, env=clean_env({}))
    m = re.search(r"transactions:\s+(\d+)\s+\(([0-9.]+) per sec", p.stdout)
    if p.returncode != 0 or not m:
        return None, f"sysbench: {(p.stderr or p.stdout).strip()[-200:]}"
    # The histogram: "value |*** count" lines, latency in ms.
    hist = [(float(a), int(b)) for a, b in re.findall(r"^\s*([0-9.]+) \|[* ]*\s(\d+)\s*$", p.stdout, re.M)]
    p50 = p99 = None
    total = sum(c for _, c in hist)
    acc = 0
    for v, c in hist:
        acc += c
        if p50 is None and acc >= total * 0.5:
            p50 = v
        if p99 is None and acc >= total * 0.99:
            p99 = v
    return {"tps": float(m.group(2)), "p50": p50, "p99": p99, "tx": int(m.group(1))}, None


def wrk(port, dur):
    p = subprocess.run(["wrk", "-t2", "-c32", f"-d{dur}s", "--latency", f"http://127.0.0.1:{port}/"],
                       capture_output=True, text=True, timeout=dur + 60, env=clean_env({}))
    m = re.search(r"Requests/sec:\s+([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        return None, f"wrk: {(p.stderr or p.stdout).strip()[-200:]}"

    def ms(label):
        q = re.search(rf"^\s+{label}%\s+([0-9.]+)(us|ms|s)\s*$", p.stdout, re.M)
        if not q:
            return None
        return float(q.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[q.group(2)]
    tx = re.search(r"(\d+) requests in", p.stdout)
    return {"tps": float(m.group(1)), "p50": ms("50"), "p99": ms("99"), "tx": int(tx.group(1)) if tx else 0}, None


# ---------------------------------------------------------------- servers

class Server:
    """start(variant) -> root pid or None with a reason; stop()."""
    name = binary = ""

    def __init__(self, work):
        self.work, self.proc = work, None

    def stop(self):
        terminate(self.proc, 60)
        self.proc = None


class Postgres(Server):
    name, binary = "postgres", f"{PG_BIN}/postgres"

    def init(self, scale):
        self.data = os.path.join(self.work, "pgdata")
        self.sock = os.path.join(self.work, "pgsock")
        for d in (self.data, self.sock):
            os.makedirs(d, exist_ok=True)
            shutil.chown(d, "postgres", "postgres")
        r = subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust"],
                           capture_output=True, text=True, env=clean_env({}))
        if r.returncode != 0:
            return f"initdb: {r.stderr.strip()[-200:]}"
        pid, why = self.start("plain", None)
        if not pid:
            return why
        port = PORTS["postgres"]
        for cmd in (["createdb", "-h", "127.0.0.1", "-p", str(port), "bench"],
                    ["pgbench", "-h", "127.0.0.1", "-p", str(port), "-i", "-q", "-s", str(scale), "bench"]):
            r = subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/{cmd[0]}"] + cmd[1:],
                               capture_output=True, text=True, env=clean_env({}))
            if r.returncode != 0:
                self.stop()
                return f"{cmd[0]}: {r.stderr.strip()[-200:]}"
        self.stop()
        return None

    def start(self, v, report):
        port = PORTS["postgres"]
        argv = ["runuser", "-u", "postgres", "--", self.binary, "-D", self.data, "-p", str(port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.sock}",
                "-c", "shared_buffers=256MB", "-c", "max_connections=20", "-c", "fsync=off"]
        self.proc = subprocess.Popen(argv, env=clean_env(variant_env(v, report)),
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "pg.log"), "a"))
        if not wait_port(port):
            self.stop()
            return None, "postgres did not start (see pg.log)"
        # runuser forks the server: its child is the postmaster.
        kids = [p for p in descendants(self.proc.pid) if p != self.proc.pid]
        post = [p for p in kids if read(f"/proc/{p}/comm") == "postgres"]
        return (min(post) if post else self.proc.pid), None

    def loads(self, dur):
        return (("select", lambda: pgbench(["-S"], PORTS["postgres"], dur, self.work)),
                ("tpcb", lambda: pgbench([], PORTS["postgres"], dur, self.work)))


class Mariadb(Server):
    name, binary = "mariadb", MARIADBD

    def init(self, scale):
        self.data = os.path.join(self.work, "mydata")
        self.sock = os.path.join(self.work, "my.sock")
        os.makedirs(self.data, exist_ok=True)
        r = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.data}", "--user=root",
                            "--auth-root-authentication-method=normal"], capture_output=True, text=True,
                           env=clean_env({}))
        if r.returncode != 0:
            return f"mariadb-install-db: {r.stderr.strip()[-200:]}"
        pid, why = self.start("plain", None)
        if not pid:
            return why
        r = subprocess.run(["mariadb", "-S", self.sock, "-uroot", "-e", "CREATE DATABASE IF NOT EXISTS sbtest"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run(["sysbench", "oltp_read_only", "--db-driver=mysql", f"--mysql-socket={self.sock}",
                                "--mysql-user=root", "--mysql-db=sbtest", "--tables=4",
                                f"--table-size={20000}", "prepare"], capture_output=True, text=True)
        self.stop()
        return None if r.returncode == 0 else f"sysbench prepare: {(r.stderr or r.stdout).strip()[-200:]}"

    def start(self, v, report):
        argv = [self.binary, "--no-defaults", f"--datadir={self.data}", f"--socket={self.sock}",
                f"--port={PORTS['mariadb']}", "--bind-address=127.0.0.1", "--user=root",
                "--innodb-buffer-pool-size=256M", "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"]
        self.proc = subprocess.Popen(argv, env=clean_env(variant_env(v, report)), stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "my.log"), "a"))
        if not wait_port(PORTS["mariadb"]):
            self.stop()
            return None, "mariadbd did not start (see my.log)"
        return self.proc.pid, None

    def loads(self, dur):
        return (("read_only", lambda: sysbench("oltp_read_only", self.sock, dur)),
                ("point_select", lambda: sysbench("oltp_point_select", self.sock, dur)))


class Node(Server):
    name = "node"

    def init(self, scale):
        self.binary = os.path.realpath(shutil.which("node") or "/usr/bin/node")
        self.script = os.path.join(self.work, "server.js")
        with open(self.script, "w") as f:
            f.write("require('http').createServer((q, s) => { s.setHeader('content-type', 'text/plain');"
                    " s.end('hello ' + q.url.length + '\\n'); })"
                    f".listen({PORTS['node']}, '127.0.0.1');\n")
        return None

    def start(self, v, report):
        argv = [self.binary] + (["--use-largepages=on"] if v == "largepages" else []) + [self.script]
        self.proc = subprocess.Popen(argv, env=clean_env(variant_env(v, report)), stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "node.log"), "a"))
        if not wait_port(PORTS["node"]):
            self.stop()
            return None, "node did not start (see node.log)"
        return self.proc.pid, None

    def loads(self, dur):
        return (("http", lambda: wrk(PORTS["node"], dur)),)


# ---------------------------------------------------------------- the section

def one_run(srv, v, dur, code_bytes):
    """Starts @srv as @v, warms it, runs each load, reads memory; {load: {...}} or a problem."""
    report = os.path.join(srv.work, "report.json")
    # Servers that drop root (postgres) append to it too.
    with open(report, "w"):
        pass
    os.chmod(report, 0o666)
    if v == "explicit" and not ensure_pool(POOL):
        return None, "the explicit page pool could not be sized"
    prepare_page_cache(v, srv.binary)
    t0 = time.time()
    pid, why = srv.start(v, report)
    if not pid:
        return None, why
    try:
        out = {}
        loads = srv.loads(dur)
        loads[0][1]()  # a first load, not counted: connections, caches, the deferred copy's CPU
        for name, fn in loads:
            c0, t = cpu_ticks(pid), time.time()
            res, prob = fn()
            if prob:
                return None, prob
            ticks = cpu_ticks(pid) - c0
            res["cpu_us_per_tx"] = ticks * 1e6 / os.sysconf("SC_CLK_TCK") / max(1, res["tx"])
            res["seconds"] = round(time.time() - t, 1)
            out[name] = res
        mem = server_memory(pid, srv.binary, code_bytes)
        mem["after_s"] = round(time.time() - t0, 1)
        reports = report_summary(report)
        prob = claim(v, mem, reports)
        out["memory"], out["reports"], out["claim"] = mem, reports, prob
        return out, None
    finally:
        srv.stop()


def measure(srv, variants, reps, dur):
    code = exec_bytes(srv.binary)
    runs = {v: [] for v in variants}
    probs = {v: [] for v in variants}

    def thunk(v):
        def f():
            res, prob = one_run(srv, v, dur, code)
            if prob:
                probs[v].append(prob)
                log(f"  {srv.name} {v}: {prob}")
            else:
                runs[v].append(res)
            return 0, None
        return f
    interleave({v: thunk(v) for v in variants}, reps, None, srv.name)
    out = {"code_mib": round(code / 1048576, 2), "binary": srv.binary, "variants": {}}
    for v in variants:
        if not runs[v]:
            out["variants"][v] = {"na": probs[v][0] if probs[v] else "no run"}
            continue
        d = {"runs": len(runs[v]), "failed_runs": len(probs[v]), "problems": probs[v][:3],
             "memory": runs[v][-1]["memory"], "reports": runs[v][-1]["reports"],
             "claims": [r["claim"] for r in runs[v]]}
        for load in [k for k in runs[v][0] if k not in ("memory", "reports", "claim")]:
            d[load] = {}
            for key in ("tps", "p50", "p99", "cpu_us_per_tx"):
                xs = [r[load][key] for r in runs[v] if r[load].get(key) is not None]
                if xs:
                    xs.sort()
                    d[load][key] = {"median": xs[len(xs) // 2] if len(xs) % 2 else
                                    (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2,
                                    "min": xs[0], "max": xs[-1], "n": len(xs), "values": xs}
        d["moved_fraction"] = [round(r["memory"]["moved"] / max(1, r["memory"]["processes"]), 2) for r in runs[v]]
        d["processes"] = [r["memory"]["processes"] for r in runs[v]]
        out["variants"][v] = d
    return out


def servers():
    res = {}
    reps = 2 if ARGS.quick else 5
    dur = 5 if ARGS.quick else 15
    res["settings"] = {"rounds": reps, "seconds_per_load": dur, "clients": "pgbench -c 4 -j 2; sysbench --threads=4; "
                       "wrk -t2 -c32", "cpus": os.cpu_count()}
    work = os.path.join(TMP, "servers")
    os.makedirs(work, exist_ok=True)
    os.chmod(TMP, 0o755)
    os.chmod(work, 0o777)
    need = {"postgres": os.path.exists(f"{PG_BIN}/postgres") and shutil.which("runuser"),
            "mariadb": os.path.exists(MARIADBD) and shutil.which("sysbench"),
            "node": shutil.which("node") and shutil.which("wrk")}
    only = set(filter(None, os.environ.get("BENCH_SERVERS", "").split(",")))
    for cls, scale in ((Postgres, 2 if ARGS.quick else 10), (Mariadb, 1), (Node, 1)):
        name = cls.name
        if only and name not in only:
            continue
        if not need[name]:
            res[name] = {"na": f"{name} or its client is not installed"}
            continue
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        srv = cls(d)
        why = srv.init(scale)
        if why:
            res[name] = {"na": why}
            note(f"servers: {name}: {why}")
            continue
        variants = VARIANTS + (("largepages",) if name == "node" else ())
        log(f"{name}: {len(variants)} variants x {reps} rounds, {dur} s per load")
        try:
            res[name] = measure(srv, variants, reps, dur)
        finally:
            srv.stop()
        res[name]["scale"] = scale
    return res
