"""The machine table: CPU, kernel, THP settings, tool versions."""
import os
import re
import time

from .common import ARGS, ROOT, meminfo, read, sh


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
    }
