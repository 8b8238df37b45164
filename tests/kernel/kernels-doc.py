#!/usr/bin/env python3
"""Writes docs/kernels.md (on stdout) from the kernel matrix's runs.

Usage: kernels-doc.py [--keep OLD.md LABEL] [RUNS_DIR] [--arm64 ARM64_RUNS_DIR],
where each RUNS_DIR/<kernel>-<fs>-<thp>/ holds env.txt, probe.json and
testlog.json (tests/kernel/matrix.sh; tests/arm64/run.sh for the arm64
runs, whose rows make a section of their own, with the real-program check
in real.result).  With --keep, the rows and notes of OLD.md (an earlier
docs/kernels.md) for configurations the runs do not hold are kept, marked
with LABEL: a run of one configuration, or of one architecture, does not
erase the others.
"""
import json
import os
import re
import shlex
import sys

MIB = 1 << 20
# The fixed text of the section "Where code loads" (what the table means,
# how it is measured, and what the library does where code does not agree).
WHERE_TEXT = [
    "Sharing code without a copy needs the object's code at an address that agrees",
    "with its file offset modulo 2 MiB: the kernel maps a 2 MiB page-cache folio",
    "into a process only at such an address, and one shared cache entry serves",
    "every start only when the object's load address is on the 2 MiB grid (lib/share.c,",
    "`share_refusal`: \"load address not 2 MiB-aligned\"). Each cell is in how many",
    "of 20 starts the object's biggest executable segment agreed, measured in each",
    "configuration by `tests/kernel/where.py` (run by tests/kernel/zeroconf.sh; by",
    "hand: `python3 tests/kernel/where.py 20 libLLVM-14.so.1=$(realpath",
    "/usr/bin/clang++):/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1 node=/usr/bin/node`):",
    "a library's base is what `LD_TRACE_LOADED_OBJECTS=1 PROGRAM` prints (ld.so maps",
    "every object as a real start does, then stops), a program's load bias is",
    "`AT_ENTRY` (`LD_SHOW_AUXV=1`) minus its ELF entry. clang's libraries are the",
    "copies the check put on the disk under test; `bigtext-aligned` is linked with",
    "2 MiB segment alignment, `bigtext-pie` and `libbigtext` with 4 KiB, as",
    "Debian links its programs and libraries; node is this machine's `/usr/bin/node`",
    "(a non-PIE build, at a fixed address); *via ld.so* is the same `bigtext-pie`",
    "started as `/lib64/ld-linux-x86-64.so.2 bigtext-pie`; *on /* is Debian's",
    "libLLVM where the machine's root holds it (in a guest, the host's root over 9p",
    "under overlayfs).",
    "",
    "What decides it:",
    "",
    "- **Libraries:** ld.so maps each with one `mmap()` of the whole object at an",
    "  address the kernel picks, and ext4's and XFS's mappings of 2 MiB and more are",
    "  placed where address and file offset agree modulo 2 MiB",
    "  (`thp_get_unmapped_area`, on 6.1, 6.12 and 6.18 alike). So libLLVM,",
    "  libclang-cpp and every big library load on the grid on these file systems, as",
    "  the distribution ships them; a file system without that hook (9p under",
    "  overlayfs here) places them on the 4 KiB grid.",
    "- **PIE programs:** the kernel's ELF loader puts a position-independent program",
    "  at a random base on the grid of its largest segment alignment, 4 KiB for",
    "  Debian's (postgres, mariadbd, qemu, gdb: 5-9 MiB of code each, all linked so):",
    "  they never agree, on any kernel. Non-PIE programs load at their link address,",
    "  which agrees when the linker put their code at an offset congruent to its",
    "  address (node here does).",
    "- **Where they do not agree, no zero-copy path is left:** the kernel maps a",
    "  page-cache folio with a 2 MiB page only at an address that agrees with its",
    "  file offset, and one cache entry holds the code at one alignment while each",
    "  start draws another of 512. The library then offers nothing to the service",
    "  (nothing it could warm or fill would serve a later start), says `load address",
    "  not 2 MiB-aligned` in the report when a text cache exists, and leaves the code",
    "  to the private copy, made only once the process has run long enough to pay",
    "  (`HUGETEXT_COPY=auto`). `hugetext edit --align` fixes a file until its package",
    "  is upgraded; started through ld.so (*via ld.so*), the same unedited file loads",
    "  as a library does, on the grid wherever libraries do, and its second start is",
    "  zero-copy (the zero-configuration column's `bigtext-pie-ldso`). That is a way",
    "  for a service's own start command, not a default: the process's",
    "  `/proc/PID/exe` and name become ld.so's, and a set-user-ID or file-capability",
    "  program loses them.",
]
KERNEL_ORDER = {"6.1": 0, "6.12": 1, "host": 2}
COLUMNS = ["kernel", "fs", "THP", "huge page count", "1st start", "2nd start", "`HUGETEXT_PAGE_CACHE=0`",
           "explicit", "shared cache", "default start", "after `hugetext setup`", "zero config, 2nd start",
           "suite"]
# The objects of where.py's "load" lines, in the order of the doc's table.
LOAD_ORDER = ["bigtext-aligned", "bigtext-pie", "bigtext-pie via ld.so", "libbigtext", "node", "libLLVM-14.so.1", "libclang-cpp.so.14",
              "libLLVM-14.so.1 on /"]


def read_lines(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def read_env(path):
    env = {}
    if os.path.exists(path):
        for line in open(path):
            key, _, value = line.strip().partition(" ")
            env[key] = value
    return env


def read_commit(run_dir):
    """The commit a run tested, as tests/kernel/matrix.sh wrote it."""
    try:
        with open(os.path.join(run_dir, "commit")) as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def mib(n):
    return "%d" % round(int(n) / MIB)


def start_path(line):
    """One start of the program: what the library did, in a few words."""
    if not line:
        return "not run"
    if line.get("status") not in ("ok", "skipped"):
        return "%s: %s" % (line.get("status", "?"), line.get("error", line.get("status", "")))
    kept = int(line.get("kept_bytes", 0))
    huge = int(line.get("huge_bytes", 0))
    size = int(line.get("bytes", 0))
    parts = []
    if kept:
        parts.append("page cache kept %s MiB" % mib(kept))
    copied = huge - kept
    if copied > 0 or not kept:
        what = "explicit pages" if line.get("mode") == "explicit" else "copy"
        parts.append("%s %s/%s MiB huge (%s)" % (what, mib(max(copied, 0)), mib(size - kept),
                                                 line.get("fill", "?")))
    if int(line.get("warmed_bytes", 0)):
        parts.append("read back %s MiB" % mib(line["warmed_bytes"]))
    return ", ".join(parts)


def share_path(miss, hit):
    if not miss:
        return "not run"
    if miss.get("cache") == "miss" and hit and hit.get("cache") == "hit":
        return "miss, then hit"
    if not miss.get("cache") or not hit:
        why = miss.get("cache_error") or miss.get("error") or miss.get("status", "")
        return "%s / %s: %s" % (miss.get("cache", "?"), (hit or {}).get("cache", "?"), why)
    kept = int(hit.get("kept_bytes", 0))
    if not hit.get("cache") and kept:
        return "%s, then the page cache's 2 MiB folios kept (%s MiB): no look-up" % (miss["cache"], mib(kept))
    then = hit.get("cache", "no look-up")
    if hit.get("cache_error"):
        then += " (%s)" % hit["cache_error"]
    if kept:
        then += ", the page cache kept %s MiB" % mib(kept)
    return "%s, then %s" % (miss["cache"], then)


def default_path(line):
    """A start with the preload's defaults (HUGETEXT_COPY=auto)."""
    if not line:
        return "not run"
    if line.get("status") == "skipped" and "deferred" in line.get("error", ""):
        return "nothing copied (the copy deferred)"
    return start_path(line)


def setup_path(first, second):
    """Two starts with the defaults after `hugetext setup` (its tmpfs cache)."""
    if not first:
        return "not run"
    if first.get("status") not in ("ok", "skipped"):
        return "%s%s" % (first.get("status", "?"), (": " + first["error"]) if first.get("error") else "")
    if not second:
        return "%s, 2nd start not run" % first.get("cache", "no cache")
    if second.get("status") not in ("ok", "skipped"):
        return "%s, then %s: %s" % (first.get("cache", "no cache"), second.get("status", "?"),
                                    second.get("error", ""))
    parts = []
    if int(second.get("kept_bytes", 0)):
        parts.append("the page cache kept %s MiB" % mib(second["kept_bytes"]))
    if second.get("cache"):
        parts.append(second["cache"] + (" (%s)" % second["cache_error"] if second.get("cache_error") else ""))
    then = ", ".join(parts) or "%s (%s)" % (second.get("status", "?"), second.get("error", ""))
    return "%s, then %s: %s/%s MiB huge, %s MiB copied privately" % (
        first.get("cache", "no cache"), then, mib(second.get("huge_bytes", 0)), mib(second.get("bytes", 0)),
        mib(second.get("private_code_bytes", 0)))


def zeroconf_path(probe_lines):
    """The zero-configuration check (zeroconf.sh): each program's verdict on
    its second start."""
    verdicts = [l for l in probe_lines if l.get("case") == "zc_result"]
    if not verdicts:
        return "not run"
    cells = []
    for v in verdicts:
        program, text = v.get("program", "?"), v.get("text", "")
        # A program of one object: its name once.
        first = re.match(r"(\S+?):? ", text)
        if first and program.startswith(first.group(1)):
            text = text[first.end():]
        cells.append("%s %s: %s" % (program, v.get("result", "?"), text))
    return "; ".join(cells)


def skip_reason(stdout):
    """A skipped test's own reason: its last "SKIP: ..." line."""
    reasons = [l[5:].strip() for l in stdout.splitlines() if l.startswith("SKIP:")]
    return reasons[-1] if reasons else "see its log"


def suite_counts(path):
    p = f = s = 0
    failed, skipped = [], []
    for t in read_lines(path):
        r = t.get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            p += 1
        elif r == "SKIP":
            s += 1
            skipped.append((t.get("name", "?"), skip_reason(t.get("stdout", ""))))
        else:
            f += 1
            failed.append(t.get("name", "?"))
    return p, f, s, failed, skipped


def console_counts(path):
    """A run stopped before its end: the tests its console shows done."""
    done = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = re.match(r"\s*\d+/\d+ \S+ / (\S+)\s+(OK|FAIL|SKIP|TIMEOUT|ERROR)", line.replace("\0", ""))
            if m:
                done[m.group(1)] = m.group(2)
    return done


# The suites a whole run leaves out: fuzz (matrix.sh), and package on arm64 (run.sh).
WHOLE_SUITE_SKIPS = {"fuzz", "package"}


def meson_args(d):
    """The meson test arguments a run was given (job.env's HT_MESON_ARGS,
    written by matrix.sh and run.sh: "none" for no suite), as words; None
    when the run dir does not say."""
    path = os.path.join(d, "job.env")
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        key, _, value = line.rstrip("\n").partition("=")
        if key == "HT_MESON_ARGS":
            # One quoted value, which guest.sh splits into words unquoted.
            try:
                return " ".join(shlex.split(value)).split()
            except ValueError:
                return None
    return None


def names(words, most=8):
    """@words as a list, the first few only past @most."""
    if len(words) <= most:
        return ", ".join(words)
    return "%s and %d more" % (", ".join(words[:most - 3]), len(words) - most + 3)


def selection(args):
    """What of the suite a run was asked for, in words: "" for the whole
    suite (what matrix.sh and run.sh run without --suite or --test), else
    "partial: ..." naming the tests or suites picked, and "each N times"
    for meson's --repeat."""
    tests, suites, left_out, other = [], [], [], []
    repeat = None
    i = 0
    while args and i < len(args):
        a = args[i]
        if a in ("--suite", "--no-suite") and i + 1 < len(args):
            (suites if a == "--suite" else left_out).append(args[i + 1])
            i += 2
            continue
        if a.startswith("--repeat"):
            if "=" in a:
                repeat = a.partition("=")[2]
            elif i + 1 < len(args):
                repeat, i = args[i + 1], i + 1
        elif a.startswith("-"):
            other.append(a)
        else:
            tests.append(a)
        i += 1
    parts = []
    if tests:
        parts.append("%d test%s: %s" % (len(tests), "" if len(tests) == 1 else "s", names(tests)))
    if suites:
        parts.append("suite%s %s" % ("" if len(suites) == 1 else "s", ", ".join(suites)))
    extra = [s for s in left_out if s not in WHOLE_SUITE_SKIPS]
    if extra and not suites:
        parts.append("without suite%s %s" % ("" if len(extra) == 1 else "s", ", ".join(extra)))
    parts += other
    what = "partial: " + "; ".join(parts) if parts else ""
    if repeat:
        what += ("; " if what else "") + "each run %s times" % repeat
    return what


def suite_cell(d):
    args = meson_args(d)
    if args == ["none"]:
        real, real_failed = real_cell(d)
        return "probe only" + real, ["real program " + p for p in real_failed], []
    # A run of some tests only says so: its counts are not the suite's.
    asked = selection(args)
    asked = " (%s)" % asked if asked else ""
    if os.path.exists(os.path.join(d, "testlog.json")):
        p, f, s, failed, skipped = suite_counts(os.path.join(d, "testlog.json"))
        cell = "%d passed, %d failed, %d skipped%s" % (p, f, s, asked)
        clang = os.path.join(d, "clang.result")
        if os.path.exists(clang):
            cell += "; clang: %s" % (open(clang).read().strip() or "?")[:60]
        real, real_failed = real_cell(d)
        return cell + real, failed + ["real program " + p for p in real_failed], skipped
    done = console_counts(os.path.join(d, "console.log"))
    ok = sum(1 for r in done.values() if r == "OK")
    bad = sorted(t for t, r in done.items() if r not in ("OK", "SKIP"))
    skip = sorted((t, "see its log") for t, r in done.items() if r == "SKIP")
    return "stopped early: %d passed, %d failed, %d skipped%s" % (ok, len(bad), len(skip), asked), bad, skip


def why(kernel, second, first):
    """Why the second start took its path."""
    if not second or second.get("status") not in ("ok", "skipped"):
        return ""
    if int(second.get("kept_bytes", 0)):
        return "the page cache holds the code in 2 MiB folios, which the kernel maps huge by itself"
    if int(first.get("warmed_bytes", 0)):
        return "the read-back made 2 MiB folios, but the kernel does not map them huge"
    return "no 2 MiB page-cache folios for this file system on this kernel: each start copies"


def arch_of(release):
    """The architecture of a kernel release, from Debian's flavour name."""
    return "arm64" if release.endswith("-arm64") or release.startswith("arm64") else "x86-64"


def real_cell(d):
    """The real-program check (tests/arm64/real.sh): its ok lines, and the
    programs that failed."""
    path = os.path.join(d, "real.result")
    if not os.path.exists(path):
        return "", []
    ok, failed = [], []
    for line in open(path, errors="replace"):
        m = re.match(r"(ok|failed) (\S+?):", line)
        if m:
            (ok if m.group(1) == "ok" else failed).append(m.group(2))
    return "; real programs: %d ok%s" % (len(ok), (", %d failed" % len(failed)) if failed else ""), failed


def family(release):
    """The matrix's label of a kernel release: 6.1, 6.12 or host."""
    for label in ("6.12", "6.1"):
        if release.startswith(label + "."):
            return label
    return "host"


# The suite cell of an earlier file's row that a probe-only run replaced:
# the last suite run of that configuration, kept beside "probe only".
SUITES = {}


def earlier(path, label, have):
    """Rows and notes of an earlier docs/kernels.md whose configurations are
    not in @have, a set of (architecture, kernel label, fs, THP):
    ({key: cells}, {key: [note]}, {key: cells of "Where code loads"})."""
    rows, notes, loads = {}, {}, {}
    if not path or not os.path.exists(path):
        return rows, notes, loads
    header = None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("| kernel |"):
            header = [c.strip() for c in line.strip("|").split("|")]
            continue
        if header and line.startswith("| ") and not line.startswith("|---"):
            cells = dict(zip(header, [c.strip() for c in line.strip("|").split("|")]))
            key = (arch_of(cells.get("kernel", "")), family(cells.get("kernel", "")), cells.get("fs", ""),
                   cells.get("THP", ""))
            if "huge page count" not in header:
                if key not in have:
                    loads[key] = cells
                continue
            if "(earlier run" not in cells.get("suite", ""):
                cells["suite"] = "%s (%s)" % (cells.get("suite", "?"), label)
            if key not in have:
                rows[key] = cells
            elif not cells["suite"].startswith("probe only"):
                SUITES[key] = cells["suite"]
            continue
        m = re.match(r"- (\S+), (\S+), THP (\S+): (.*)$", line)
        if m:
            key = (arch_of(m.group(1)), family(m.group(1)), m.group(2), m.group(3))
            if key not in have and "(earlier run" in m.group(4):
                notes.setdefault(key, []).append(line)
            elif key not in have:
                notes.setdefault(key, []).append("- %s, %s, THP %s: %s (%s)." % (
                    m.group(1), m.group(2), m.group(3), m.group(4).rstrip("."), label))
    return rows, notes, loads


def run_rows(runs):
    """The configurations a runs dir holds with a probe, each (order, kernel
    label, fs, THP, env, probe, dir)."""
    rows = []
    if not runs or not os.path.isdir(runs):
        return rows
    for name in os.listdir(runs):
        d = os.path.join(runs, name)
        env = read_env(os.path.join(d, "env.txt"))
        lines = read_lines(os.path.join(d, "probe.json"))
        probe = {l.get("case"): l for l in lines}
        if not env or not probe:
            continue
        # Cases with a line per program or object keep them all.
        probe["zc_results"] = [l for l in lines if l.get("case") == "zc_result"]
        probe["loads"] = [l for l in lines if l.get("case") == "load"]
        kernel, fs, thp = (name.split("-") + ["", "", ""])[:3]
        rows.append((KERNEL_ORDER.get(kernel, 9), kernel, fs, thp, env, probe, d))
    return rows


def table(arch, rows, old_rows, old_notes, commits, tested):
    """Prints one architecture's table and its notes."""
    for key in old_rows:
        if key[0] == arch:
            rows.append((KERNEL_ORDER.get(key[1], 9), key[1], key[2], key[3], None, None, None))
    rows.sort(key=lambda r: (r[0], r[2], r[3]))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    notes = []
    for _, kernel, fs, thp, env, probe, d in rows:
        if probe is None:
            cells = old_rows[(arch, kernel, fs, thp)]
            print("| " + " | ".join(cells.get(c, "not run") for c in COLUMNS) + " |")
            notes += old_notes.get((arch, kernel, fs, thp), [])
            continue
        k = probe.get("kernel", {})
        count = "`PAGEMAP_SCAN`" if k.get("pagemap_scan") else "smaps"
        if not k.get("madv_collapse"):
            count += ", no `MADV_COLLAPSE`"
        suite, failed, skipped = suite_cell(d)
        if len(tested) > 1:
            suite += " (commit %s)" % commits[d]
        if suite.startswith("probe only") and (arch, kernel, fs, thp) in SUITES:
            suite += "; suite: " + SUITES[(arch, kernel, fs, thp)]
        release = env.get("kernel", k.get("release", kernel))
        cells = [release, fs, thp, count, start_path(probe.get("first")), start_path(probe.get("second")),
                 start_path(probe.get("copy")), start_path(probe.get("explicit")),
                 share_path(probe.get("share_miss"), probe.get("share_hit")), default_path(probe.get("default")),
                 setup_path(probe.get("setup_first"), probe.get("setup_second")),
                 zeroconf_path(probe["zc_results"]), suite]
        print("| " + " | ".join(cells) + " |")
        reason = why(kernel, probe.get("second"), probe.get("first") or {})
        if reason:
            notes.append("- %s, %s, THP %s: %s." % (release, fs, thp, reason))
        if env.get("read_ahead_kb") and kernel == "host":
            notes.append("- %s, %s, THP %s: the disk image's loop device reads ahead %s KiB." % (
                release, fs, thp, env["read_ahead_kb"]))
        for t in failed:
            notes.append("- %s, %s, THP %s: test `%s` failed." % (release, fs, thp, t))
        for v in probe["zc_results"]:
            if v.get("result") == "failed":
                notes.append("- %s, %s, THP %s: the zero-configuration check of %s failed." % (
                    release, fs, thp, v.get("program", "?")))
        for name, reason in skipped:
            notes.append("- %s, %s, THP %s: test `%s` skipped: %s." % (release, fs, thp, name, reason))
    print()
    print("Why the second start took its path, and what did not pass:")
    print()
    for n in notes:
        print(n)


def loads_table(rows, old, label):
    """The section "Where code loads": where.py's lines of each run."""
    print()
    print("## Where code loads")
    print()
    for line in WHERE_TEXT:
        print(line)
    print()
    cols = ["kernel", "fs", "THP"] + LOAD_ORDER
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    out = []
    for _, kernel, fs, thp, env, probe, d in rows:
        if not probe or not probe["loads"]:
            continue
        by = {l.get("object"): l for l in probe["loads"]}
        cells = [env.get("kernel", kernel), fs, thp]
        for o in LOAD_ORDER:
            l = by.get(o)
            if not l:
                cells.append("not run")
            elif l.get("error"):
                cells.append("error: " + l["error"][:60])
            else:
                cells.append("%d/%d" % (l.get("agree", 0), l.get("starts", 0)))
        out.append(((KERNEL_ORDER.get(kernel, 9), fs, thp), cells))
    for key, cells in old.items():
        if key[0] != "x86-64":
            continue
        c = [cells.get(k, "not run") for k in cols]
        if "(earlier run" not in " ".join(c):
            c[-1] += " (%s)" % label
        out.append(((KERNEL_ORDER.get(key[1], 9), key[2], key[3]), c))
    for _, cells in sorted(out, key=lambda r: r[0]):
        print("| " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    keep = keep_label = arm64_runs = runs = None
    if args[:1] == ["--keep"]:
        keep, keep_label, args = args[1], args[2], args[3:]
    while args:
        if args[0] == "--arm64":
            arm64_runs, args = args[1], args[2:]
        else:
            runs, args = args[0], args[1:]
    rows = {"x86-64": run_rows(runs), "arm64": run_rows(arm64_runs)}
    commits = {r[6]: read_commit(r[6]) for a in rows for r in rows[a]}
    have = {(a, r[1], r[2], r[3]) for a in rows for r in rows[a]}
    old_rows, old_notes, old_loads = earlier(keep, keep_label, have)

    print("# The library on each kernel")
    print()
    print("Generated by `tests/kernel/matrix.sh --all` (then `--doc`) and, for arm64,")
    print("`tests/arm64/run.sh --all`, from the probe each configuration runs:")
    print("`tests/robust/bigtext-aligned` (42 MiB of code on the 2 MiB grid) started under")
    print("the preload with `HUGETEXT_REPORT`, from a cold page cache on the disk under")
    print("test; see tests/kernel/probe.sh. Timing under qemu (TCG) means nothing, so only")
    print("the path is shown. Do not edit: run the matrix again.")
    tested = sorted(set(commits.values()))
    if tested:
        print()
        print("The runs tested commit%s %s%s." % (
            "s" if len(tested) > 1 else "", ", ".join("`%s`" % c for c in tested),
            " (each row names its own)" if len(tested) > 1 else ""))
    if old_rows:
        print()
        print("Rows and notes marked *(earlier run ...)* were not run again: they are")
        print("kept from a previous version of this file, and name the commit of that version.")
    print()
    table("x86-64", rows["x86-64"], old_rows, old_notes, commits, tested)
    loads_table(rows["x86-64"], old_loads, keep_label)
    if rows["arm64"] or any(k[0] == "arm64" for k in old_rows):
        print()
        print("## arm64")
        print()
        print("Debian's arm64 kernels under `qemu-system-aarch64 -M virt -cpu max` (TCG),")
        print("an arm64 Debian 12 root, the project cross-built (tests/arm64/run.sh). The")
        print("suite column adds the real-program check (tests/arm64/real.sh: node, g++,")
        print("clang++, rustc and java, each with the same output with and without the")
        print("preload and its code on huge pages).")
        print()
        table("arm64", rows["arm64"], old_rows, old_notes, commits, tested)
    print()
    print("Columns: *huge page count* is how the library asks the kernel what is on huge")
    print("pages (`PAGEMAP_SCAN` from Linux 6.7, else `/proc/self/smaps`). *1st start* is a")
    print("program not run since the disk was mounted; *2nd start* the same file again.")
    print("*kept* is code the kernel already mapped from 2 MiB page-cache folios and the")
    print("library left in place; *copy* is code copied to anonymous memory and confirmed")
    print("huge with `MADV_COLLAPSE` (`pread` from the file, or `memcpy`); *read back* is the")
    print("copied range dropped from the page cache and read again as 2 MiB folios for the")
    print("next start. *explicit* is `HUGETEXT_MODE=explicit` with a hugetlb pool; *shared")
    print("cache* is two starts with `HUGETEXT_SHARE=1` on a hugetlbfs directory. These")
    print("columns are the copy's paths (`HUGETEXT_COPY=now`, `HUGETEXT_SHARE=0`); the")
    print("next two are the preload's defaults (`HUGETEXT_COPY=auto`, `HUGETEXT_SHARE=auto`).")
    print("*default start* is a first start of a program that ends soon; *after `hugetext")
    print("setup`* is two starts once `hugetext setup` has mounted its shared text cache (a")
    print("tmpfs with `huge=within_size`): the first fills it (miss), the second maps it")
    print("(hit) and copies nothing. *zero config, 2nd start* is tests/kernel/zeroconf.sh:")
    print("the shipped `/etc/hugetext.conf`, the preload, and `hugetext serve` started by")
    print("hand as its unit starts it, nothing else set; each program started twice, and")
    print("the second start's report must show the page cache's 2 MiB folios kept or the")
    print("service's entry hit, with 0 bytes copied privately (*ok*), or, where the")
    print("load address rules both out (section \"Where code loads\"), that it is so")
    print("(*skipped*). clang's object must equal the plain one. The programs:")
    print("`bigtext-aligned`; `bigtext-pie` (4 KiB segments), started by the kernel and")
    print("through ld.so (`bigtext-pie-ldso`); `clang++ -O2 -c` of a small file, with")
    print("Debian's libLLVM and libclang-cpp copied onto the disk under test and bound")
    print("over the installed files (full runs only, as the clang check). *suite* counts")
    print("the meson tests the run ran: the whole suite but fuzz (and, on arm64, the")
    print("package suite), unless it says *partial* and names the tests or suites it was")
    print("given (`--test`, `--suite`; *each run N times* for meson's `--repeat`).")


if __name__ == "__main__":
    main()
