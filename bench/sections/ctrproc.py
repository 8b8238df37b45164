"""What a container's processes map, read from the host's /proc (containers section).

Paths in the host's /proc/PID/maps of a container's process are the
container's own (/usr/bin/node, /run/hugetext/libhugetext-preload.so), so
the rows can check what they claim by name:

  preload    the process maps the hook's preload (/run/hugetext/...)
  code       the executable mappings in the program's address range (its
             own, an anonymous copy's, a shared-cache entry's): their Rss,
             Pss and private bytes; shared huge pages (the page cache's 2
             MiB pages, FilePmdMapped; the shared cache's, ShmemPmdMapped:
             the same pages in every container); and a private copy (an
             anonymous executable mapping: the container's own), with its
             part on huge pages (AnonHugePages, or explicit pages: hugetlb)
"""
import re

from .common import read
from .servers import descendants

PRELOAD = "libhugetext-preload.so"
HUGE = 2 << 20
_MAP = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \S+\s*(.*)$")


def smaps(pid):
    """The mappings of pid: lo, hi, perms, path and every kB field."""
    out, cur = [], None
    for line in read(f"/proc/{pid}/smaps").splitlines():
        m = _MAP.match(line)
        if m:
            cur = {"lo": int(m.group(1), 16), "hi": int(m.group(2), 16), "perms": m.group(3),
                   "off": int(m.group(4), 16), "path": m.group(5)}
            out.append(cur)
        elif cur is not None and line.endswith(" kB"):
            k, v = line.split(":", 1)
            cur[k] = int(v.split()[0])
    return out


def code_maps(maps, binary):
    """The executable mappings of binary's 2 MiB-rounded range: its own, anonymous and cache entries.

    The range is the ELF image's, as the loader mapped it (address minus
    file offset the same as its first mapping's): node's V8 maps a part of
    its own file again elsewhere (its builtins, near the JIT's code), which
    is not the program's image, and the JIT's anonymous code is not a copy.
    """
    first = [r for r in maps if r["path"] == binary and r["off"] == 0]
    if not first:
        return []
    bias = first[0]["lo"]
    named = [r for r in maps if r["path"] == binary and r["lo"] - r["off"] == bias]
    lo = min(r["lo"] for r in named) // HUGE * HUGE
    hi = (max(r["hi"] for r in named) + HUGE - 1) // HUGE * HUGE
    keep = lambda p: p in (binary, "") or p.startswith("/run/hugetext/text/") or p.startswith("/anon_hugepage")
    return [r for r in maps if r["lo"] >= lo and r["hi"] <= hi and "x" in r["perms"] and keep(r["path"])]


def code_view(maps, binary):
    """kB of binary's code in one process: rss, pss, private; file_huge: on the page cache's or
    the shared cache's 2 MiB pages (the same pages in every container); anon: in a copy (an
    anonymous executable mapping), anon_huge the part of it on huge pages; *_own: the part no
    other process maps (the rest came through fork)."""
    v = dict.fromkeys(("rss", "pss", "private", "file_huge", "anon", "anon_own", "anon_huge", "anon_huge_own"), 0)
    for r in code_maps(maps, binary):
        priv = r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)
        v["rss"] += r.get("Rss", 0)
        v["pss"] += r.get("Pss", 0)
        v["private"] += priv
        v["file_huge"] += r.get("FilePmdMapped", 0) + r.get("ShmemPmdMapped", 0)
        if r["path"] == "" or r["path"].startswith("/anon_hugepage"):
            # A copy: THP (AnonHugePages, in Rss) or explicit pages (hugetlb, not in Rss); its huge
            # part, and what only this process maps (the rest came through fork).
            own_htlb, shared_htlb = r.get("Private_Hugetlb", 0), r.get("Shared_Hugetlb", 0)
            anon, huge = r.get("Anonymous", r.get("Rss", 0)), r.get("AnonHugePages", 0)
            v["anon"] += anon + own_htlb + shared_htlb
            v["anon_own"] += min(anon, priv) + own_htlb
            v["anon_huge"] += huge + own_htlb + shared_htlb
            v["anon_huge_own"] += min(huge, priv) + own_htlb
    return v


def container_view(pid, binary):
    """Over the container's processes that run binary: how many, how many map the preload, their code.

    shared_huge_kb: on the file's huge pages, the most any process maps
    (one copy for the machine); copy_kb and private_huge_kb: in anonymous
    copies, all of them and their huge part, each process's own part
    summed, plus what forked processes share counted once.
    """
    out = {"processes": 0, "with_preload": 0, "others_with_preload": 0, "main": None,
           "shared_huge_kb": 0, "private_huge_kb": 0, "copy_kb": 0, "pss_kb": 0, "rss_kb": 0}
    forked = {"copy_kb": 0, "private_huge_kb": 0}
    for p in descendants(pid):
        maps = smaps(p)
        mapped = any(r["path"].endswith("/" + PRELOAD) for r in maps)
        c = code_view(maps, binary)
        if not c["rss"]:
            out["others_with_preload"] += mapped  # a process of another program
            continue
        out["processes"] += 1
        out["with_preload"] += mapped
        out["shared_huge_kb"] = max(out["shared_huge_kb"], c["file_huge"])
        for key, all_, own in (("copy_kb", "anon", "anon_own"), ("private_huge_kb", "anon_huge", "anon_huge_own")):
            out[key] += c[own]
            forked[key] = max(forked[key], c[all_] - c[own])
        out["pss_kb"] += c["pss"]
        out["rss_kb"] += c["rss"]
        if p == pid or out["main"] is None:
            out["main"] = c
    for key, kb in forked.items():
        out[key] += kb
    return out


def mib(kb):
    return f"{kb / 1024:.1f} MiB"


def claim(annotated, view, copied_kb=0):
    """None when a row shows what it claims, else what it shows instead.

    plain: no process maps the preload, no code on huge pages, no copy.
    annotated (from the second start on): every process maps the preload,
    its code is on shared huge pages, and nothing is copied (no private
    bytes, huge or not).  copied_kb: what the preload's reports say it
    copied, which counts too (a deferred copy may come after smaps was read).
    """
    if not view["processes"]:
        return "no process of the program found in the container"
    if not annotated:
        if view["with_preload"] or view["others_with_preload"]:
            return f"{view['with_preload']} of {view['processes']} processes map the preload"
        huge = view["shared_huge_kb"] + view["private_huge_kb"]
        return f"{mib(huge)} of code on huge pages" if huge else None
    if view["with_preload"] < view["processes"]:
        return f"only {view['with_preload']} of {view['processes']} processes map the preload"
    if view["shared_huge_kb"] and not view["copy_kb"] and not copied_kb:
        return None
    found = [f"{mib(view['shared_huge_kb'])} on shared huge pages"] if view["shared_huge_kb"] else []
    if view["copy_kb"]:
        found.append(f"a private copy of {mib(view['copy_kb'])} ({mib(view['private_huge_kb'])} on huge pages)")
    if copied_kb and not view["copy_kb"]:
        found.append(f"no copy in smaps, but the reports say {mib(copied_kb)} was copied (later)")
    return "expected shared huge pages and no copy; found " + (" and ".join(found) or "no code on huge pages")


def frames(pid, binary):
    """{virtual page: physical frame} of binary's present code pages in pid (root reads the frames)."""
    out = {}
    try:
        f = open(f"/proc/{pid}/pagemap", "rb")
    except OSError:
        return out
    with f:
        for r in code_maps(smaps(pid), binary):
            f.seek(r["lo"] // 4096 * 8)
            data = f.read((r["hi"] - r["lo"]) // 4096 * 8)
            for i in range(len(data) // 8):
                e = int.from_bytes(data[i * 8:i * 8 + 8], "little")
                if e >> 63 and e & ((1 << 55) - 1):
                    out[r["lo"] // 4096 + i] = e & ((1 << 55) - 1)
    return out


def same_frames(maps):
    """Over several processes' frames(): pages present in all, and how many of those share one frame."""
    if not maps:
        return {"in_all": 0, "same_frame": 0}
    common = set(maps[0]).intersection(*maps[1:])
    same = sum(1 for v in common if len({m[v] for m in maps}) == 1)
    return {"in_all": len(common), "same_frame": same}
