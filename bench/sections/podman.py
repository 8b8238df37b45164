"""Podman with runc for the containers section (sections/containers.py).

What the section needs from an engine, set up the way tests/containers
does it and leaving the machine as it was:

  - Podman's configuration of its own (CONTAINERS_CONF: runc, cgroupfs, no
    default ulimits, events to a file), whatever /etc/containers has: this
    VM's hard ulimits are below Podman's defaults, and crun refuses the
    hybrid cgroup layout; /etc/containers is never written;
  - a hooks.d directory of its own, the package's file
    (data/50-hugetext.json.in) with the build's command and preload, passed
    as --hooks-dir: nothing is installed in /usr/share/containers;
  - the text service in the bench's mount namespace (bench/run.sh starts
    measure.py under `unshare -m`): /run/hugetext is a tmpfs of that
    namespace (service.py), where the hook keeps its records and log, so
    neither a service nor a hook log of the machine takes part;
  - images built from the host's files (a program, its ldd libraries and
    the files it reads), imported with `podman import` and named
    hugetext-bench-*: nothing is pulled; they are removed at the end
    (BENCH_KEEP_IMAGES=1 keeps them), and so is every container.
"""
import json
import os
import re
import shutil
import subprocess
import time

from .common import ARGS, ROOT, log, read
from .service import Service

PREFIX = "hugetext-bench"
ANNOTATION = "io.hugetext/enable=1"
CONF = ('[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n'
        'events_logger = "file"\n')
HOOK_LOG = "/run/hugetext/oci-hook.log"


def tool():
    return os.path.join(os.path.dirname(os.path.dirname(ARGS.preload)), "tools", "hugetext")


class Tree:
    """A directory that becomes an image: host files at their own paths, with what they need."""

    def __init__(self, root):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        self.root = root

    def at(self, path):
        dest = self.root + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        return dest

    def file(self, src, dest=None, mode=None):
        d = self.at(dest or src)
        shutil.copyfile(src, d)
        shutil.copymode(src, d)
        if mode is not None:
            os.chmod(d, mode)

    def text(self, dest, s, mode=0o644):
        with open(self.at(dest), "w") as f:
            f.write(s)
        os.chmod(self.root + dest, mode)

    def dir(self, path, mode=0o755):
        os.makedirs(self.root + path, exist_ok=True)
        os.chmod(self.root + path, mode)

    def tree(self, src, skip=()):
        """A host directory, copied whole but for the names in skip."""
        shutil.copytree(src, self.root + src, symlinks=True, dirs_exist_ok=True,
                        ignore=lambda d, names: [n for n in names if n in skip])

    def with_libs(self, prog, dest=None):
        """prog (at dest), and the libraries ldd names, at their host paths (the loader too)."""
        self.file(os.path.realpath(prog), dest or prog)
        out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
        for lib in re.findall(r"(?:=> |^\s+)(/\S+)", out, re.M):
            if not os.path.exists(self.root + lib):
                self.file(os.path.realpath(lib), lib)


class Engine:
    """The engine, hook and service of the section; setup() first, finish() always."""

    def __init__(self, work):
        self.work = work
        self.conf = os.path.join(work, "containers.conf")
        self.hooks = os.path.join(work, "hooks.d")
        self.service = Service(tool())
        self.images, self.count = [], 0

    # ------------------------------------------------------------ set-up

    def setup(self):
        """None when containers can run here with the hook, else why not."""
        if os.geteuid() != 0:
            return "needs root (Podman runs the hook as root)"
        for p in ("podman", "runc"):
            if not shutil.which(p):
                return f"{p} is not installed (apt-get install podman runc)"
        with open(self.conf, "w") as f:
            f.write(CONF)
        r = self.podman(["info", "--format", "{{.Host.OCIRuntime.Name}}"], 120)
        if r.returncode != 0:
            return "podman does not work here: " + last_line(r.stderr)
        why = self.write_hook()
        if why:
            return why
        why = self.service.setup()
        return why or self.service.start()

    def write_hook(self):
        """The package's hooks.d file with the build's command and preload, and an empty policy file."""
        src = os.path.join(ROOT, "data", "50-hugetext.json.in")
        try:
            hook = json.loads(read(src).replace("@bindir@", "/x").replace("@libdir@", "/x"))
        except ValueError:
            return f"cannot read {src}"
        policy = os.path.join(self.work, "hugetext.conf")
        open(policy, "w").close()
        os.chmod(policy, 0o644)
        hook["hook"]["path"] = tool()
        hook["hook"]["args"] = hook["hook"]["args"][:2] + ["--preload", ARGS.preload, "--config", policy]
        os.makedirs(self.hooks, exist_ok=True)
        with open(os.path.join(self.hooks, "50-hugetext.json"), "w") as f:
            json.dump(hook, f)
        return None

    # ------------------------------------------------------------ podman

    def env(self):
        """Podman's environment: ours without the preload's settings, with the section's configuration."""
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("HUGETEXT_") or k.startswith("HUGETLB_") or k == "LD_PRELOAD")}
        env["CONTAINERS_CONF"] = self.conf
        return env

    def podman(self, args, timeout=120, **kw):
        return subprocess.run(["podman"] + args, env=self.env(), capture_output=True, text=True, timeout=timeout,
                              **kw)

    def image(self, name, tree):
        """tree imported as localhost/hugetext-bench-NAME; its tag, or raises."""
        tag = f"localhost/{PREFIX}-{name}:latest"
        tar = os.path.join(self.work, name + ".tar")
        subprocess.run(["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                        "-C", tree.root, "-cf", tar, "."], check=True)
        self.podman(["rmi", "-f", tag])
        r = self.podman(["import", "-q", tar, tag], 600)
        os.unlink(tar)
        if r.returncode != 0:
            raise RuntimeError("podman import: " + last_line(r.stderr))
        self.images.append(tag)
        return tag

    def layer_file(self, image, path):
        """The real file behind path in an imported (one-layer) image: the one whose page cache counts."""
        r = self.podman(["image", "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", image])
        return r.stdout.strip() + path

    def start(self, image, argv, annotated, opts=()):
        """A detached container on the host's network; (name, pid of its first process) or raises."""
        self.count += 1
        name = f"{PREFIX}-{os.getpid()}-{self.count}"
        args = ["--hooks-dir", self.hooks, "run", "-d", "--name", name, "--network", "host"]
        args += ["--annotation", ANNOTATION] if annotated else []
        r = self.podman(args + list(opts) + [image] + list(argv))
        if r.returncode != 0:
            self.remove(name)
            raise RuntimeError("podman run: " + last_line(r.stderr))
        return name, self.pid(name)

    def pid(self, name):
        r = self.podman(["inspect", "--format", "{{.State.Pid}}", name])
        return int(r.stdout.strip() or 0)

    def cid(self, name):
        return self.podman(["inspect", "--format", "{{.Id}}", name]).stdout.strip()

    def hook_said(self, name):
        """The hook's log line for a container (what it injected, or why not)."""
        cid = self.cid(name)
        lines = [ln.split(" ", 2)[2] for ln in read(HOOK_LOG).splitlines()
                 if ln.split(" ")[1:2] == [cid] and " stopped:" not in ln]
        return lines[-1] if lines else "no line in the hook's log"

    def remove(self, name, grace=10):
        """Stopped (its stop signal, SIGKILL after grace seconds) and removed."""
        self.podman(["rm", "-f", "-t", str(grace), name], grace + 60)

    # ------------------------------------------------------------ the end

    def finish(self):
        """Every container and image of ours gone, the service stopped, its mounts undone."""
        r = self.podman(["ps", "-a", "--filter", f"name=^{PREFIX}-{os.getpid()}-", "--format", "{{.Names}}"])
        for name in r.stdout.split():
            self.remove(name, 2)
        if os.environ.get("BENCH_KEEP_IMAGES") != "1":
            for tag in self.images:
                self.podman(["rmi", "-f", tag])
        self.service.finish()


def last_line(err):
    lines = [ln.strip() for ln in (err or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    return ((errors or lines or ["(no message)"])[-1])[:300]


def wait_for(cond, timeout, step=0.1):
    """Polls cond() until true or timeout seconds; its last value."""
    end = time.time() + timeout
    v = cond()
    while not v and time.time() < end:
        time.sleep(step)
        v = cond()
    return v


def note_load(what):
    log(f"  {what} (load average {read('/proc/loadavg').split()[0]})")
