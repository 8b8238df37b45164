"""The machine table: CPU, kernel, THP settings, tool versions."""
import os
import re
import statistics
import subprocess
import time

from .common import ARGS, ROOT, meminfo, read, sh

FRESH_MIB = 64
FRESH_STARTS = 5


def fresh_pages():
    """ms per MiB to fault in fresh anonymous memory: 2 MiB pages, 4 KiB pages, 2 MiB reused.

    Each start of bench/fresh-pages, 2 s after the last, faults in 64 MiB as
    2 MiB pages, then as 4 KiB pages, then both again: the second round gets
    the pages the first just gave back.  A private copy of code pays the
    first figure for each MiB it fills.  On a VM whose host takes free memory
    back (free page reporting), a fresh 2 MiB page costs the host's backing
    it again, far more than clearing it.
    """
    exe = os.path.join(ARGS.bin, "fresh-pages")
    if not os.access(exe, os.X_OK):
        return None
    huge, small, reused, got = [], [], [], []
    for _ in range(FRESH_STARTS):
        time.sleep(2)
        p = subprocess.run([exe, str(FRESH_MIB), "2"], capture_output=True, text=True, timeout=120)
        rows = [line.split() for line in p.stdout.splitlines()]
        if p.returncode != 0 or len(rows) != 2:
            return {"error": (p.stderr or p.stdout).strip()[-200:]}
        huge.append(float(rows[0][0]) / FRESH_MIB)
        small.append(float(rows[0][1]) / FRESH_MIB)
        reused.append(float(rows[1][0]) / FRESH_MIB)
        got.append(int(rows[0][2]) * 2)
    rep = "/sys/module/page_reporting/parameters/page_reporting_order"
    return {"mib": FRESH_MIB, "starts": FRESH_STARTS,
            "huge": [min(huge), statistics.median(huge), max(huge)],
            "small": [min(small), statistics.median(small), max(small)],
            "reused": [min(reused), statistics.median(reused), max(reused)],
            "huge_got_mib": min(got),
            "reporting_order": read(rep) if os.path.exists(rep) else None,
            "balloon": os.path.isdir("/sys/bus/virtio/drivers/virtio_balloon")}


def machine():
    cpu, fam = "", {}
    for line in read("/proc/cpuinfo").splitlines():
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k == "model name" and not cpu:
            cpu = v
        elif k in ("cpu family", "model", "stepping") and k not in fam:
            fam[k] = v
    if fam:
        cpu += f" (family {fam.get('cpu family')}, model {fam.get('model')}, stepping {fam.get('stepping')})"
    caches = sh("lscpu | grep -E '^(L1i|L2|L3) cache' | sed 's/  */ /g' | paste -sd ';'")
    thp = "/sys/kernel/mm/transparent_hugepage/"
    perf = sh("perf stat -e iTLB-load-misses,iTLB-loads -x, true 2>&1")
    perf_ok = bool(perf) and "not supported" not in perf and "<not" not in perf and \
        re.search(r"^\d+,", perf, re.M) is not None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "caches": caches,
        "mem_gib": round(meminfo().get("MemTotal", 0) / 1048576, 1),
        "kernel": os.uname().release,
        "hypervisor": sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'"),
        "os": sh(". /etc/os-release; echo $PRETTY_NAME"),
        "thp_enabled": read(thp + "enabled"),
        "thp_defrag": read(thp + "defrag"),
        "thp_khugepaged_defrag": read(thp + "khugepaged/defrag"),
        "thp_shmem": read(thp + "shmem_enabled"),
        "pool_pages": ARGS.pool_set,
        "perf_itlb": perf_ok,
        "perf_itlb_output": perf[-300:],
        "node": sh("node --version"),
        "gxx": sh("g++ --version | head -1"),
        "rustc": sh(f"{ARGS.rustc} --version") if ARGS.rustc else "",
        "commit": sh(f"git -C {ROOT} log -1 --format=%h -- lib"),
        "lib_dirty": bool(sh(f"git -C {ROOT} status --porcelain -- lib")),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "quick": ARGS.quick,
        "fresh_pages": fresh_pages(),
    }
