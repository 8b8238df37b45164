"""Containers: servers in Podman containers, plain against annotated (issue 37).

Run by `bench/run.sh --only containers` (Podman and runc from Debian; the
engine, hook and service set up as sections/podman.py says).  Parts:

  node, postgres   a Node HTTP server under wrk, and PostgreSQL 15 under
                   pgbench -S, each in a container on the host's network:
                   plain (no annotation) against annotated (--annotation
                   io.hugetext/enable=1: the hook injects the preload, the
                   preload runs on its defaults).  Each has an image of its
                   own per row, the same files under another layer, so that
                   the annotated row's page cache (which the text service
                   turns into 2 MiB pages) is not the plain row's, which is
                   kept in 4 KiB pages before each of its runs, as on a
                   machine without hugetext.  Before the rounds, one
                   annotated start of the program's first start (it offers
                   its file; the service warms it) and a wait until the
                   service is done: every measured annotated run is a second
                   start or later.  Then interleaved rounds (the order
                   shuffled each round), one fresh container per run: one
                   untimed load, then the timed one; throughput, latency p50
                   and p99, and the server's CPU per request (all of the
                   container's processes, from /proc).  After the load each
                   run reads its processes' smaps and checks its row's claim
                   (ctrproc.claim).
  memory           four node containers of one image at once, plain and
                   annotated: their code's memory over the four, and whether
                   the annotated ones share one copy (the same frames).
  floor            programs with nothing to move in an annotated container
                   against an empty preload in the same image (ctrfloor.py).

BENCH_CONTAINERS=node,postgres,memory,floor runs only those parts;
BENCH_CONTAINER_ROUNDS=N sets the servers' rounds (10; 3 with --quick).
"""
import os
import pwd
import random
import shutil
import subprocess
import threading
import time

from . import ctrfloor, ctrproc
from .common import ARGS, TMP, exec_bytes, guarded, log, note, pool_pages, read, small_page_cache, stats
from .podman import Engine, Tree, wait_for
from .servers import PG_BIN, clean_env, cpu_ticks, pgbench, report_summary, wait_port, wrk

NODE = "/usr/bin/node"
POSTGRES = f"{PG_BIN}/postgres"
PG_USER = "postgres"
# Below the ephemeral range (32768-60999): no client's own port can be in the way of a listen.
PORTS = {"node": 18280, "postgres": 15532}
ROWS = ("plain", "annotated")  # the images, and the rows of every server
# A row of node's beside them: the annotated image with HUGETEXT_COPY=never in the container's
# environment (the hook's preload with no copy at all: what the page cache's pages alone give).
NEVER = {"never": ("annotated", ["-e", "HUGETEXT_COPY=never"])}
REPORTS = "/hugetext-reports"  # a volume of the bench's in every container: the preload's reports
NODE_JS = ("const port = +process.argv[2];\n"
           "require('http').createServer((q, s) => { s.setHeader('content-type', 'text/plain');"
           " s.end('hello ' + q.url.length + '\\n'); }).listen(port, '127.0.0.1');\n")


def set_pool(n):
    try:
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(n))
    except OSError:
        pass


def thp():
    d = "/sys/kernel/mm/transparent_hugepage"
    return {k: read(f"{d}/{k}") for k in ("enabled", "shmem_enabled", "defrag")}


# ---------------------------------------------------------------- the servers

class NodeServer:
    name, binary, port = "node", NODE, PORTS["node"]
    extra = NEVER

    def tree(self, work):
        t = Tree(os.path.join(work, "tree-node"))
        t.with_libs(shutil.which("node") or NODE, NODE)
        t.text("/server.js", NODE_JS)
        t.dir("/etc")
        t.dir("/tmp", 0o1777)
        return t

    def prepare(self, work):
        return None

    def argv(self, port=None):
        return [NODE, "/server.js", str(port or self.port)], ["--stop-signal", "SIGKILL"]

    def first(self):
        """The first start: a short one that offers the file and ends, so that the service can warm it."""
        return [NODE, "-e", "0"]

    def load(self, dur, work):
        return wrk(self.port, dur)


class PgServer:
    name, binary, port = "postgres", POSTGRES, PORTS["postgres"]
    extra = {}

    def tree(self, work):
        t = Tree(os.path.join(work, "tree-postgres"))
        t.with_libs(POSTGRES)
        t.tree("/usr/share/postgresql/15")
        t.tree(f"{PG_BIN}/../lib", skip=("bitcode", "llvmjit.so", "llvmjit_types.bc"))
        t.tree("/usr/share/zoneinfo")
        pw = [ln for ln in read("/etc/passwd").splitlines() if ln.split(":")[0] in ("root", PG_USER)]
        gr = [ln for ln in read("/etc/group").splitlines() if ln.split(":")[0] in ("root", PG_USER)]
        t.text("/etc/passwd", "\n".join(pw) + "\n")
        t.text("/etc/group", "\n".join(gr) + "\n")
        t.dir("/tmp", 0o1777)
        return t

    def prepare(self, work):
        """A data directory made on the host (initdb, pgbench -i), which each container mounts."""
        self.work = work
        self.data = os.path.join(work, "pgdata")
        os.makedirs(self.data, exist_ok=True)
        shutil.chown(self.data, PG_USER, PG_USER)
        r = as_pg(f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "--no-locale", "-E", "UTF8")
        if r.returncode != 0:
            return "initdb: " + r.stderr.strip()[-200:]
        # -l: the server started must not hold our pipes open.
        r = as_pg(f"{PG_BIN}/pg_ctl", "-D", self.data, "-w", "-l", os.path.join(work, "pg-init.log"), "-o",
                  f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={work}", "start")
        try:
            if r.returncode != 0:
                return "pg_ctl start: " + (r.stderr or r.stdout).strip()[-200:]
            return self.fill()
        finally:
            as_pg(f"{PG_BIN}/pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")

    def fill(self):
        scale = 2 if ARGS.quick else 10
        for cmd in (["createdb", "bench"], ["pgbench", "-i", "-q", "-s", str(scale), "bench"]):
            r = as_pg(f"{PG_BIN}/{cmd[0]}", "-h", "127.0.0.1", "-p", str(self.port), *cmd[1:])
            if r.returncode != 0:
                return f"{cmd[0]}: " + r.stderr.strip()[-200:]
        return None

    def argv(self, port=None):
        opts = ["--user", pg_ids(), "-v", f"{self.data}:/pgdata", "--stop-signal", "SIGINT", "--shm-size", "256m"]
        return [POSTGRES, "-D", "/pgdata", "-p", str(port or self.port), "-c", "listen_addresses=127.0.0.1",
                "-c", "unix_socket_directories=/tmp", "-c", "shared_buffers=256MB", "-c", "max_connections=20",
                "-c", "fsync=off"], opts

    def first(self):
        return [POSTGRES, "--version"]

    def load(self, dur, work):
        return pgbench(["-S"], self.port, dur, work)


def as_pg(*argv):
    return subprocess.run(["runuser", "-u", PG_USER, "--"] + list(argv), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=clean_env({}), timeout=600)


def pg_ids():
    p = pwd.getpwnam(PG_USER)
    return f"{p.pw_uid}:{p.pw_gid}"


# ---------------------------------------------------------------- one run

class Rows:
    """One server's two images and what each run needs: the engine, the work dir, the reports."""

    def __init__(self, eng, srv, work):
        self.eng, self.srv, self.work = eng, srv, work
        self.reports = os.path.join(work, "reports")
        os.makedirs(self.reports, exist_ok=True)
        os.chmod(self.reports, 0o1777)

    def images(self):
        """An image per row: the same tree, a marker file apart (so another layer, another page cache)."""
        t = self.srv.tree(self.work)
        self.image, self.real = {}, {}
        for v in ROWS:
            t.text("/hugetext-bench-row", v + "\n")
            self.image[v] = self.eng.image(f"{self.srv.name}-{v}", t)
            self.real[v] = self.eng.layer_file(self.image[v], self.srv.binary)
            small_page_cache(self.real[v])
        shutil.rmtree(t.root, ignore_errors=True)

    def rows(self):
        return ROWS + tuple(self.srv.extra)

    def start(self, v, argv, opts, tag):
        """A container of row v running argv; (name, pid, report file on the host)."""
        image, more = self.srv.extra.get(v, (v, []))
        opts = list(opts) + more
        rep = f"{tag}.json"
        host_rep = os.path.join(self.reports, rep)
        if os.path.exists(host_rep):
            os.unlink(host_rep)
        opts = list(opts) + ["-v", f"{self.reports}:{REPORTS}", "-e", f"HUGETEXT_REPORT={REPORTS}/{rep}"]
        name, pid = self.eng.start(self.image[image], argv, image == "annotated", opts)
        return name, pid, host_rep

    def first_start(self):
        """The annotated image's first start (it offers its file), then the service's work on it."""
        argv = self.srv.first()
        svc = self.eng.service
        before = svc.state()
        name, pid, rep = self.start("annotated", argv, [], "first")
        wait_for(lambda: self.eng.podman(["inspect", "--format", "{{.State.Status}}", name]).stdout.strip()
                 == "exited", 60)
        said = self.eng.hook_said(name)
        self.eng.remove(name)
        offered = sum(1 for x in read_reports(rep) if x.get("cache") == "offered")
        st = served(svc, before, offered) if offered else svc.state()
        new = lambda k: [x for x in st.get(k, []) if x not in before.get(k, [])]
        return {"argv": argv, "hook": said, "reports": report_summary(rep), "moved": report_moves(rep),
                "offered": offered, "warmed": new("warmed"), "filled": new("filled"), "refused": new("refused")}

    def once(self, v, dur):
        """One run of row v: a fresh container, an untimed load, the timed one, smaps; (result, problem)."""
        if v == "plain":
            small_page_cache(self.real[v])  # as on a machine without hugetext (no service warms it)
        argv, opts = self.srv.argv()
        name, pid, rep = self.start(v, argv, opts, f"run-{v}")
        try:
            if not wait_port(self.srv.port):
                logs = self.eng.podman(["logs", name])
                return None, f"{self.srv.name} did not listen: {(logs.stdout + logs.stderr).strip()[-200:]}"
            self.srv.load(min(dur, 4), self.work)  # connections, caches, a deferred copy's CPU
            c0 = cpu_ticks(pid)
            res, prob, view = self.load_and_look(pid, dur)
            if prob:
                return None, prob
            res["cpu_us_per_tx"] = (cpu_ticks(pid) - c0) * 1e6 / os.sysconf("SC_CLK_TCK") / max(1, res["tx"])
            # After the load too: the worse of the two views is the row's (a copy may come late).
            after, moved = settled_view(pid, self.srv.binary, rep)
            view = after if after["copy_kb"] > view["copy_kb"] or not view["processes"] else view
            res.update(view=view, moved=moved, reports=report_summary(rep),
                       claim=ctrproc.claim(v != "plain", view, moved["copied_kb"]),
                       hook=self.eng.hook_said(name) if v != "plain" else None)
            return res, None
        finally:
            self.eng.remove(name)
            if v != "plain":
                self.settle()

    def settle(self, timeout=60):
        """Until the service holds no offer: a run's offer is served once its container is gone (the
        service warms no file its sender still runs), and a warm drops and reads back the pages no
        process maps, which the next run's start must not meet half done."""
        svc = self.eng.service
        if not wait_for(lambda: not svc.state().get("pending"), timeout, 0.2):
            log(f"  {self.srv.name}: the service still held an offer after {timeout} s")


    def load_and_look(self, pid, dur):
        """The timed load, and the container's processes read while it runs (postgres's backends
        live only as long as their connections); (result, problem, view)."""
        got = {}
        t = threading.Thread(target=lambda: got.update(zip(("res", "prob"), self.srv.load(dur, self.work))))
        t.start()
        t.join(dur * 0.9)  # late in the load: a deferred copy has had its time
        view = ctrproc.container_view(pid, self.srv.binary)
        t.join()
        return got.get("res"), got.get("prob", "the load thread failed"), view


def read_reports(path):
    return ctrfloor.json_lines(read(path))


def served(svc, before, offered, timeout=120):
    """The service's state once it has done with @offered more offers than in @before and holds none
    pending (offers that earlier, running senders made may stay held: not waited for)."""
    done = lambda st: sum(st.get(k, 0) for k in ("warmed_total", "filled_total", "refused_total"))
    want = done(before) + offered

    def ready():
        st = svc.state()
        return st if st.get("offers", 0) >= before.get("offers", 0) + offered and done(st) >= want \
            and not st.get("pending") else None
    st = wait_for(ready, timeout, 0.2)
    if not st:
        log(f"  the text service had not done the first start's {offered} offer(s) in {timeout} s")
    return st or svc.state()


def service_delta(before, after):
    """What the service did between two of its states: offers, warms and fills, the last lines."""
    out = {k: after.get(k, 0) - before.get(k, 0) for k in ("offers", "warms", "warmed_total", "filled_total",
                                                           "refused_total")}
    out["lines"] = [x for k in ("warmed", "filled", "refused") for x in after.get(k, [])
                    if x not in before.get(k, [])][-4:]
    return out


def settled_view(pid, binary, rep, timeout=5):
    """The container's view once it shows the copies its reports say were made (a report line is
    written after its copy; a deferred copy runs late, when the load has left it the CPU); and
    what the reports say."""
    def look():
        v, m = ctrproc.container_view(pid, binary), report_moves(rep)
        return (v, m) if v["copy_kb"] >= m["copied_kb"] else None
    got = wait_for(look, timeout, 0.25)
    return got or (ctrproc.container_view(pid, binary), report_moves(rep))


def report_moves(path):
    """What the preload's report lines say it did: kept (the page cache's 2 MiB pages) and copied, in kB."""
    lines = read_reports(path)
    ok = [x for x in lines if x.get("status") == "ok"]
    return {"kept_kb": max([x.get("kept_bytes", 0) for x in lines] or [0]) // 1024,
            "copied_kb": sum(x.get("private_huge_bytes", 0) for x in ok) // 1024,
            "copies": sum(1 for x in ok if x.get("private_huge_bytes", 0))}


# ---------------------------------------------------------------- rounds

def rounds(rows, reps, dur):
    """reps interleaved rounds of both rows; per row the runs in round order (None: failed)."""
    runs = {v: [] for v in rows.rows()}
    order = list(rows.rows())
    for i in range(reps):
        random.shuffle(order)
        for v in order:
            res, prob = rows.once(v, dur)
            if prob:
                log(f"  {rows.srv.name} {v}: {prob}")
            runs[v].append(res or {"problem": prob})
        log(f"  {rows.srv.name}: round {i + 1}/{reps}")
    return runs


def summarize(runs):
    """Per row: each figure's values in round order (paired statistics need them so), the claims."""
    out = {}
    for v, rs in runs.items():
        ok = [r for r in rs if "problem" not in r]
        failed = len(rs) - len(ok)
        d = {"runs": len(rs), "failed_runs": failed, "problems": [r["problem"] for r in rs if "problem" in r][:3]}
        for key in ("tps", "p50", "p99", "cpu_us_per_tx"):
            s = stats([r.get(key) for r in ok])
            if s:
                s["failed_runs"] = failed + sum(1 for r in ok if r.get(key) is None)
                d[key] = s
        d["claims"] = [r["claim"] for r in ok]
        d["moved"] = [r["moved"] for r in ok]
        if ok:
            d.update(view=ok[-1]["view"], reports=ok[-1]["reports"], hook=ok[-1]["hook"])
        out[v] = d
    return out


def server(eng, srv, reps, dur):
    work = os.path.join(eng.work, srv.name)
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o777)
    why = srv.prepare(work)
    if why:
        return {"na": why}
    rows = Rows(eng, srv, work)
    rows.images()
    log(f"{srv.name}: the annotated image's first start")
    first = rows.first_start()
    log(f"{srv.name}: {len(rows.rows())} rows x {reps} rounds, {dur} s per load")
    srv.rows = rows  # the memory part runs on the same images
    before = eng.service.state()
    out = {"binary": srv.binary, "first_start": first, "rows": summarize(rounds(rows, reps, dur))}
    out["service"] = service_delta(before, eng.service.state())
    out["exec_mib"] = round(exec_bytes(rows.real["plain"]) / 1048576, 2)
    return out


# ---------------------------------------------------------------- four at once

def four(eng, node_rows, dur):
    """Four node containers of one image at once, per row: their code's memory and frames."""
    out = {}
    for v in ROWS:
        if v == "plain":
            small_page_cache(node_rows.real[v])
        else:
            # Right before: a first start, and the service done with it (and with every earlier offer).
            out["first_start"] = node_rows.first_start()
        started = []
        try:
            for i in range(4):
                argv, opts = node_rows.srv.argv(PORTS["node"] + 1 + i)
                started.append(node_rows.start(v, argv, opts, f"four-{v}-{i}"))
            out[v] = four_views(node_rows, v, started, dur)
        finally:
            for name, _, _ in started:
                eng.remove(name)
    return out


def four_views(rows, v, started, dur):
    for i in range(len(started)):
        if not wait_port(PORTS["node"] + 1 + i):
            logs = rows.eng.podman(["logs", started[i][0]])
            return {"na": f"container {i + 1} of 4 did not listen: {(logs.stdout + logs.stderr).strip()[-200:]}"}
        wrk(PORTS["node"] + 1 + i, dur)  # each serves a while: what a running server maps, a copy's CPU
    time.sleep(1)
    views, moved = zip(*[settled_view(pid, NODE, rep) for _, pid, rep in started])
    sums = {k: sum(x[k] for x in views) for k in ("pss_kb", "rss_kb", "private_huge_kb", "copy_kb")}
    sums["shared_huge_kb"] = max(x["shared_huge_kb"] for x in views)
    claims = [ctrproc.claim(v == "annotated", x, m["copied_kb"]) for x, m in zip(views, moved)]
    return {"containers": views, "moved": moved, "sum": sums, "claims": claims,
            "frames": ctrproc.same_frames([ctrproc.frames(pid, NODE) for _, pid, _ in started])}


# ---------------------------------------------------------------- the section

def containers():
    work = os.path.join(TMP, "containers")
    os.makedirs(work, exist_ok=True)
    os.chmod(TMP, 0o755)
    os.chmod(work, 0o755)
    eng = Engine(work)
    reps = int(os.environ.get("BENCH_CONTAINER_ROUNDS") or (3 if ARGS.quick else 10))
    dur = 3 if ARGS.quick else 6
    res = {"settings": {"rounds": reps, "seconds_per_load": dur, "cpus": os.cpu_count(),
                        "clients": "wrk -t2 -c32; pgbench -S -c 4 -j 2"}, "thp_before": thp()}
    pool = pool_pages()
    try:
        # The bench's explicit page pool (bench/run.sh) set aside: the preload's defaults copy into
        # explicit pages where a pool has free pages, which a user's machine does not have by default.
        set_pool(0)
        res["pool_during"] = pool_pages()
        why = eng.setup()
        if why:
            return dict(res, na=why)
        res["podman"] = eng.podman(["version", "--format", "{{.Client.Version}}"]).stdout.strip()
        res["runc"] = (subprocess.run(["runc", "--version"], capture_output=True, text=True).stdout
                       .splitlines() or ["?"])[0]
        res.update(parts(eng, reps, dur))
    finally:
        eng.finish()
        set_pool(pool)
        res["thp_after"] = thp()
        if res["thp_after"] != res["thp_before"]:
            note(f"containers: THP settings changed during the section: {res['thp_before']} -> {res['thp_after']}")
    return res


def parts(eng, reps, dur):
    out = {}
    node = NodeServer()
    for key, fn in (("node", lambda: server(eng, node, reps, dur)),
                    ("postgres", lambda: server(eng, PgServer(), reps, dur)),
                    ("memory", lambda: four_after(eng, node, min(dur, 3))),
                    ("floor", lambda: ctrfloor.floor(eng, 100 if ARGS.quick else 1500))):
        if os.environ.get("BENCH_CONTAINERS") and key not in os.environ["BENCH_CONTAINERS"].split(","):
            continue
        t = time.time()
        out[key] = guarded(fn, "part")
        out.setdefault("seconds", {})[key] = round(time.time() - t, 1)
    return out


def four_after(eng, node, dur):
    """The memory part, on the node images of the server part (made here when that part did not run)."""
    rows = getattr(node, "rows", None)
    if rows is None:
        work = os.path.join(eng.work, "node")
        os.makedirs(work, exist_ok=True)
        rows = Rows(eng, node, work)
        rows.images()
    return four(eng, rows, dur)
