#!/usr/bin/env python3
"""huge-sum.py PATH PID...: how the code of PATH sits in a group of processes.

For each PID: the bytes of PATH's executable mapping(s) on huge pages (smaps:
AnonHugePages, ShmemPmdMapped, FilePmdMapped, Private_Hugetlb, Shared_Hugetlb)
and whether its text is moved at all.  Over all of them: the distinct 2 MiB
physical pages (from /proc/PID/pagemap; root only) that back those huge
mappings, which counts a page shared through fork once, however many
processes map it.  Prints one JSON object."""
import errno, json, os, struct, sys

HUGE_KEYS = ("AnonHugePages", "ShmemPmdMapped", "FilePmdMapped",
             "Private_Hugetlb", "Shared_Hugetlb")


def code_ranges(pid, path):
    """Executable mappings of PATH, and anonymous or deleted ones right
    after or inside its span (a moved copy replaces the file's mapping)."""
    lo = hi = None
    out = []
    with open(f"/proc/{pid}/maps") as f:
        rows = [l.split(None, 5) for l in f]
    for r in rows:
        if len(r) == 6 and r[5].strip() == path:
            a, b = (int(x, 16) for x in r[0].split("-"))
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    if lo is None:
        return []
    for r in rows:
        a, b = (int(x, 16) for x in r[0].split("-"))
        if a >= lo and b <= hi and "x" in r[1]:
            out.append((a, b))
    return out


def smaps_huge(pid, ranges):
    total = 0
    cur = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                a, b = (int(x, 16) for x in head.split("-"))
                cur = (a, b) in ranges
            elif cur and head.rstrip(":") in HUGE_KEYS:
                total += int(line.split()[1]) * 1024
    return total


def huge_pfns(pid, ranges):
    """The PFN of each 2 MiB-aligned page in ranges whose 512 entries are
    present and physically contiguous from an aligned PFN (a huge page)."""
    pfns = set()
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        for a, b in ranges:
            start = (a + (2 << 20) - 1) & ~((2 << 20) - 1)
            for va in range(start, b - (2 << 20) + 1, 2 << 20):
                f.seek(va // 4096 * 8)
                buf = f.read(512 * 8)
                if len(buf) != 512 * 8:
                    # The process ended while it was read: counted as gone, as one that ended before.
                    raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
                ents = struct.unpack("512Q", buf)
                first = ents[0] & ((1 << 55) - 1)
                if not all(e >> 63 for e in ents) or first == 0 or first % 512:
                    continue
                if all((e & ((1 << 55) - 1)) == first + i for i, e in enumerate(ents)):
                    pfns.add(first)
    return pfns


def main():
    path, pids = sys.argv[1], [int(p) for p in sys.argv[2:]]
    procs, union = [], set()
    for pid in pids:
        try:
            rg = code_ranges(pid, path)
            huge = smaps_huge(pid, rg)
            pf = huge_pfns(pid, rg)
        except OSError as e:
            # ESRCH: the process was ending while it was read; gone, as ENOENT says.
            if e.errno == errno.ESRCH:
                e = OSError(errno.ENOENT, os.strerror(errno.ENOENT))
            procs.append({"pid": pid, "error": str(e)})
            continue
        union |= pf
        procs.append({"pid": pid, "huge_bytes": huge, "huge_pages": len(pf)})
    print(json.dumps({"processes": procs,
                      "moved": sum(1 for p in procs if p.get("huge_bytes", 0) > 0),
                      "distinct_huge_bytes": len(union) * (2 << 20),
                      "mapped_huge_bytes": sum(p.get("huge_bytes", 0) for p in procs),
                      "errors": sum(1 for p in procs if "error" in p)}))


main()
