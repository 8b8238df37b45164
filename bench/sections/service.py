"""The text service for the zero-configuration rows (docs/service.md).

bench/run.sh starts measure.py in a mount namespace of its own (`unshare
-m`).  Here /run/hugetext is a small tmpfs of that namespace, and `hugetext
serve` runs in it with the command its unit runs, as the package would
start it; it mounts the shared text cache at /run/hugetext/text with its
default size limit.  So neither a service nor a cache of the machine takes
part, the preloaded runs of the bench find this service where the preload
looks for one, and nothing is left behind when the bench ends.

Contract: setup() says why the service cannot run here (or None); reset()
restarts it with an empty cache (a first start after installing); stop()
ends it and removes its socket, so that starts offer nothing;
wait_served(n) waits until n offers are done with; memory() reads the
cache's limit and use; finish() stops it and unmounts what setup() and the
service mounted.
"""
import json
import os
import subprocess
import time

from .common import TMP, log, read, terminate

RUN = "/run/hugetext"
STATE = os.path.join(RUN, "service.json")
SOCKET = os.path.join(RUN, "service.sock")
CACHE = os.path.join(RUN, "text")
SHARED = os.path.join(CACHE, "shared")


def mounted(path):
    return any(line.split()[1] == path for line in read("/proc/self/mounts").splitlines())


class Service:
    def __init__(self, tool):
        self.tool = tool
        self.proc = None
        self.made_dir = False
        self.log = os.path.join(TMP, "serve.log")

    def setup(self):
        """None when the service runs in the bench's own /run/hugetext, else why not."""
        if not os.path.exists(self.tool):
            return f"no {self.tool}"
        # The parent is bench/run.sh, in the machine's namespace (unshare execs us).
        if os.readlink("/proc/self/ns/mnt") == os.readlink(f"/proc/{os.getppid()}/ns/mnt"):
            return "the bench does not run in a mount namespace of its own (bench/run.sh starts it so)"
        if not os.path.isdir(RUN):
            os.makedirs(RUN, mode=0o755)
            self.made_dir = True
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=16m", "hugetext-bench", RUN],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"cannot mount a tmpfs at {RUN}: {r.stderr.strip()}"
        return None

    def start(self):
        out = open(self.log, "a")
        self.proc = subprocess.Popen([self.tool, "serve"], stdout=out, stderr=out)
        out.close()
        for _ in range(100):
            if os.path.exists(SOCKET) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return None if os.path.exists(SOCKET) else f"hugetext serve did not start: {read(self.log)[-300:]}"

    def stop(self):
        """Stopped, its socket gone: the preload finds no service (its cache and state stay)."""
        terminate(self.proc, 10)
        self.proc = None
        if os.path.exists(SOCKET):
            os.unlink(SOCKET)

    def reset(self):
        """Restarted with no entries and no memory of earlier offers; None or why not."""
        self.stop()
        for d in (STATE, SOCKET):
            if os.path.exists(d):
                os.unlink(d)
        if os.path.isdir(SHARED):
            for name in os.listdir(SHARED):
                os.unlink(os.path.join(SHARED, name))
        return self.start()

    def state(self):
        try:
            with open(STATE) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def wait_served(self, n, timeout=120):
        """Waits until n offers were warmed, filled or refused; the state then (None on timeout)."""
        end = time.time() + timeout
        while time.time() < end:
            s = self.state()
            done = sum(s.get(k, 0) for k in ("warmed_total", "filled_total", "refused_total"))
            if s.get("offers", 0) >= n and done >= n and not s.get("pending"):
                return s
            time.sleep(0.2)
        log(f"the text service had not done {n} offers in {timeout} s: {self.state()}")
        return None

    def memory(self):
        """The cache's limit and use, from the service and the mount."""
        s = self.state()
        out = {"limit": s.get("cache_size", 0), "used": 0, "entries": 0,
               "evicted_total": s.get("evicted_total", 0)}
        if os.path.isdir(SHARED):
            st = os.statvfs(CACHE)
            out["used"] = (st.f_blocks - st.f_bfree) * st.f_frsize
            out["entries"] = len(os.listdir(SHARED))
        return out

    def finish(self):
        self.stop()
        for d in (CACHE, RUN):
            if mounted(d):
                subprocess.run(["umount", d], capture_output=True)
        if self.made_dir:
            try:
                os.rmdir(RUN)
            except OSError:
                pass
