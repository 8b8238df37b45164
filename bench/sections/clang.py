"""Section 7: clang 14 compiling LLVM 14's own headers at -O2 (issue 13's workload).

One translation unit that includes a fixed list of LLVM's headers is
preprocessed once; each run is the `clang -cc1 ... -O2 -emit-obj` that the
driver would start for it, with HUGETEXT_MATCH='libLLVM|libclang-cpp' (the
two libraries hold nearly all of clang's code).  clang runs from copies of
its binary and libraries (bin/ and lib/, the libraries found through
LD_LIBRARY_PATH, which a first check confirms), one tree per page-cache
state:

  cold    its libraries' page cache kept in 4 KiB pages: plain, the copy
          path, explicit pages, the shared cache
  first   page cache made small before each run: the default settings'
          start with no set-up (HUGETEXT_COPY=auto: nothing copied at start,
          the copy deferred; it copies what runs if clang's CPU time passes
          the copy's wait), and the first start that copies
          now and reads the code back as 2 MiB pages (HUGETEXT_COPY=now)
  steady  read back as 2 MiB pages before each run (what `hugetext setup`'s
          warm key or a first start does): the default settings' steady
          state (keeps the kernel's pages)
  (cold)  the deferred copy made after 1 s of CPU time, of the whole spans
          (late) and of what runs (late_hot, HUGETEXT_COPY_HOT=1, with its
          later passes): what copying only what runs does to the copy's
          CPU time, to private memory and to the gain
  zc      zero configuration: the preload on and nothing else set (no
          HUGETEXT_MATCH: clang's libraries are taken as big libraries),
          the text service running (service.py).  Each round restarts the
          service with an empty cache and makes the tree's page cache small
          (the first compile after installing), runs clang, waits untimed
          until the service has done with what the start offered, and runs
          clang again (the second compile).
The shared caches run on the cold tree: hugetlbfs (a reserved pool), and a
tmpfs mounted huge=within_size (what `hugetext setup` mounts).

Every run's report must show what its row claims, or the run is invalid.
"""
import os
import shlex
import shutil

from .common import ARGS, DEFAULTS, ensure_pool, exec_bytes, interleave, log, run, sh, small_page_cache
from .service import Service

LLVM = "/usr/lib/llvm-14"
CLANGXX = "clang++-14"
MATCH = "libLLVM|libclang-cpp"
LIBS = ("libLLVM-14.so.1", "libclang-cpp.so.14")
# Big libraries the two load from the system, copied into each tree too, so
# that no row (the zero-configuration rows take every big library) warms or
# copies a system file that other rows then find on 2 MiB pages.
SYSTEM_LIBS = ("/usr/lib/x86_64-linux-gnu/libz3.so.4",)
# About 4.9 MB once preprocessed (--quick too: any few of them make most of it).
HEADERS = [
    "llvm/IR/IRBuilder.h", "llvm/IR/Module.h", "llvm/IR/PassManager.h", "llvm/Passes/PassBuilder.h",
    "llvm/Analysis/ScalarEvolution.h", "llvm/CodeGen/MachineFunction.h", "llvm/CodeGen/SelectionDAG.h",
    "llvm/Transforms/Utils/Cloning.h", "llvm/Support/CommandLine.h", "llvm/ADT/DenseMap.h",
    "llvm/ADT/SmallVector.h", "llvm/ADT/StringMap.h",
]
# (tree, settings, preload); a setting None: the default (no variable).
# bench's run() sets HUGETEXT_PAGE_CACHE=0 and HUGETEXT_COPY=now for every
# preloaded run unless the row asks for the default.
ROWS = {
    "plain": ("cold", None, False),
    "auto": ("first", DEFAULTS, True),
    "first": ("first", {"HUGETEXT_PAGE_CACHE": None}, True),
    "steady": ("steady", DEFAULTS, True),
    "copy": ("cold", {"HUGETEXT_MODE": "thp", "HUGETEXT_PAGE_CACHE": "0"}, True),
    "explicit": ("cold", {"HUGETEXT_MODE": "explicit", "HUGETEXT_PAGE_CACHE": "0"}, True),
    "share": ("cold", {"HUGETEXT_SHARE": "1", "HUGETEXT_PAGE_CACHE": "0"}, True),
    "tmpfs": ("cold", {"HUGETEXT_SHARE": "1", "HUGETEXT_PAGE_CACHE": "0"}, True),
    "late": ("cold", {"HUGETEXT_MODE": "thp", "HUGETEXT_PAGE_CACHE": "0", "HUGETEXT_COPY": "auto",
                      "HUGETEXT_COPY_AFTER_MS": "1000", "HUGETEXT_COPY_HOT": "0"}, True),
    "late_hot": ("cold", {"HUGETEXT_MODE": "thp", "HUGETEXT_PAGE_CACHE": "0", "HUGETEXT_COPY": "auto",
                          "HUGETEXT_COPY_AFTER_MS": "1000", "HUGETEXT_COPY_HOT": "1"}, True),
    "zc_first": ("zc", DEFAULTS, True),
    "zc_second": ("zc", DEFAULTS, True),
}
# Rows with no HUGETEXT_MATCH: what the preload takes by itself.
ZERO_CONFIG = ("zc_first", "zc_second")
POOL = 200  # 2 MiB pages: the explicit copy (about 75) and the shared cache's (as many)


def make_tree(root):
    """bin/clang and lib/ with copies of the libraries (copied once); the libraries' paths."""
    pairs = [(f"{LLVM}/bin/clang", os.path.join(root, "bin", "clang"))] + \
        [(f"{LLVM}/lib/{x}", os.path.join(root, "lib", x)) for x in LIBS] + \
        [(x, os.path.join(root, "lib", os.path.basename(x))) for x in SYSTEM_LIBS if os.path.exists(x)]
    for src, dst in pairs:
        src = os.path.realpath(src)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst) or os.path.getsize(dst) != os.path.getsize(src):
            shutil.copyfile(src, dst + ".tmp")
            os.chmod(dst + ".tmp", 0o755)
            os.rename(dst + ".tmp", dst)
    return [dst for _src, dst in pairs[1:]]


def translation_unit(work):
    """The preprocessed translation unit, and the -cc1 command line the driver makes for it."""
    src, ii = os.path.join(work, "llvm-headers.cpp"), os.path.join(work, "llvm-headers.ii")
    with open(src, "w") as f:
        f.write("".join(f'#include "{h}"\n' for h in HEADERS))
    flags = shlex.split(sh(f"{LLVM}/bin/llvm-config --cxxflags"))
    r = run([CLANGXX] + flags + ["-E", src, "-o", ii])
    if r.rc != 0:
        return None, None, f"clang++-14 -E failed: {r.err.strip()[-200:]}"
    lang = [x for x in flags if x.startswith(("-std=", "-f"))]
    r = run([CLANGXX, "-###"] + lang + ["-O2", "-c", ii, "-o", os.path.join(work, "llvm-headers.o")], cwd=work)
    cc1 = [shlex.split(x) for x in r.err.splitlines() if '"-cc1"' in x]
    if not cc1:
        return None, None, f"no -cc1 line in clang++-14 -###: {r.err.strip()[-200:]}"
    return ii, cc1[0], None


def regions(r, libdir):
    """Per library of the tree in libdir: what the report says was done to its code."""
    out = {}
    for x in r.report:
        lib = next((n for n in LIBS if x.get("object") == os.path.join(libdir, n)), None)
        if not lib:
            continue
        d = out.setdefault(lib, {"status": [], "mode": set(), "huge": 0, "kept": 0, "copied": 0,
                                 "warmed": 0, "cache": set(), "ms": 0.0, "hot": 0, "bytes": 0})
        d["status"].append(x.get("status") + (f" ({x['error']})" if x.get("error") else ""))
        d["huge"] += x.get("huge_bytes", 0)
        d["kept"] += x.get("kept_bytes", 0)
        if x.get("status") == "ok":
            d["mode"].add(x.get("mode"))
            if x.get("cache") != "hit":  # a hit maps the cache's copy: nothing copied here
                d["copied"] += max(0, x.get("huge_bytes", 0) - x.get("kept_bytes", 0))
        d["warmed"] += x.get("warmed_bytes", 0)
        d["hot"] += x.get("hot_bytes", 0)
        d["bytes"] = max(d["bytes"], x.get("bytes", 0))
        if x.get("cache"):
            d["cache"].add(x["cache"])
        d["ms"] += x.get("ms", 0.0)
    return out


def claim_problem(k, d):
    """None when one library's report shows what row k claims, else the reason."""
    failed = [s for s in d["status"] if s.startswith("failed")]
    if failed:
        return failed[0]
    # The default start defers; the deferred copy (of what runs) may come due before clang ends.
    if k in ("auto", "zc_first") and not any("deferred" in s for s in d["status"]):
        return f"default start: {', '.join(d['status'])}; must defer the copy"
    # Both start from a page cache made small: 2 MiB pages there would mean
    # that something (a warm) changed the tree after it was made small.
    if k in ("auto", "zc_first") and d["kept"]:
        return f"cold start: kept {d['kept']} bytes of 2 MiB page-cache pages; the page cache must be small"
    if k in ("auto", "zc_first") and d["copied"] and not d["hot"]:
        return (f"default start: copied {d['copied']} bytes, none as a copy of what runs "
                f"({', '.join(d['status'])}); only the deferred copy of what runs may copy")
    if k == "first" and not (d["copied"] > 0 and d["warmed"] > 0):
        return f"first start: copied {d['copied']} bytes, read back {d['warmed']} (both must be > 0)"
    if k == "steady" and not (d["kept"] > 0 and d["copied"] == 0):
        return f"steady state: kept {d['kept']} bytes, copied {d['copied']} (kept > 0, nothing copied)"
    if k in ("copy", "explicit") and not d["copied"] > 0:
        return f"nothing copied ({', '.join(d['status'])})"
    if k == "copy" and d["mode"] != {"thp"}:
        return f"copy path: mode {sorted(d['mode'])}, not thp"
    if k == "explicit" and d["mode"] != {"explicit"}:
        return f"explicit pages: mode {sorted(d['mode'])}"
    if k in ("share", "tmpfs") and d["cache"] != {"hit"}:
        return f"shared cache: {sorted(d['cache']) or 'no cache key'}, not hit"
    if k in ("late", "late_hot") and not d["copied"] > 0:
        return f"the deferred copy was not made ({', '.join(d['status'])})"
    if k == "late" and d["hot"]:
        return f"copied what runs ({d['hot']} bytes hot), not the whole span"
    if k == "late_hot" and not (d["hot"] > 0 and d["copied"] < d["bytes"]):
        return (f"copied {d['copied']} of {d['bytes']} bytes, {d['hot']} hot "
                "(must copy what runs, less than the span)")
    if k == "zc_second" and d["copied"]:
        return f"copied {d['copied']} bytes privately ({', '.join(d['status'])}); must copy nothing"
    if k == "zc_first" and "offered" not in d["cache"]:
        return f"not offered to the text service ({', '.join(d['status'])}; cache {sorted(d['cache'])})"
    if k == "zc_second" and not (d["huge"] > 0 and (d["kept"] >= d["huge"] or d["cache"] == {"hit"})):
        return (f"second start: {d['huge']} bytes huge, kept {d['kept']}, cache {sorted(d['cache'])} "
                f"({', '.join(d['status'])}); must be kept by the page cache or a cache hit")
    return None


def report_problem(k, r, libdir):
    """None when run r of row k did what the row is for, else the reason."""
    if r.rc != 0:
        return f"exit status {r.rc}: {r.err.strip()[-200:]}"
    if k == "plain":
        return None
    got = regions(r, libdir)
    for lib in LIBS:
        if lib not in got:
            return f"no report line for {lib}"
        why = claim_problem(k, got[lib])
        if why:
            return f"{lib}: {why}"
    return None


def summary(r, libdir):
    """What one run's report says, for the results (sets made lists)."""
    return {lib: {k: sorted(v) if isinstance(v, set) else v for k, v in d.items()}
            for lib, d in regions(r, libdir).items()}


def tree_env(root, settings):
    return dict(settings, LD_LIBRARY_PATH=os.path.join(root, "lib"))


def loads_tree(root):
    """None when the tree's clang loads the tree's own libraries, else the reason."""
    r = run([os.path.join(root, "bin", "clang")], tree_env(root, {"LD_TRACE_LOADED_OBJECTS": "1"}))
    missing = [x for x in LIBS if os.path.join(root, "lib", x) not in r.out] + \
        [os.path.basename(x) for x in SYSTEM_LIBS
         if os.path.exists(x) and os.path.join(root, "lib", os.path.basename(x)) not in r.out]
    return f"{root}/bin/clang does not load its tree's {', '.join(missing)}" if missing else None


def clang():
    if not os.path.exists(f"{LLVM}/bin/clang") or not shutil.which(CLANGXX):
        return {"na": "clang 14 is not installed (Debian: clang-14)"}
    # 11, not 7: the zero-configuration row is judged to 1%, and a round's
    # runs spread by ±5% here.
    reps = 3 if ARGS.quick else 11
    work = os.path.realpath(os.path.join(ARGS.bin, "clang"))
    os.makedirs(work, exist_ok=True)
    trees = {t: make_tree(os.path.join(work, t)) for t in ("cold", "first", "steady", "zc")}
    for t in trees:
        why = loads_tree(os.path.join(work, t))
        if why:
            return {"na": why}
    ii, cc1, why = translation_unit(work)
    if why:
        return {"na": why}
    res = {"tu_bytes": os.path.getsize(ii), "headers": HEADERS,
           "cc1": [os.path.basename(cc1[0])] + cc1[1:], "match": MATCH,
           "code_mib": round(sum(exec_bytes(p) for p in trees["cold"]
                                 if os.path.basename(p) in LIBS) / 1048576, 1)}
    share = {"HUGETEXT_SHARE_DIR": ARGS.share_dir} if ARGS.share_dir else None
    tmpfs = {"HUGETEXT_SHARE_DIR": ARGS.text_cache_dir} if ARGS.text_cache_dir else None

    def argv(k):
        return [os.path.join(work, ROWS[k][0], "bin", "clang")] + cc1[1:]

    def env(k):
        s = tree_env(os.path.join(work, ROWS[k][0]), ROWS[k][1] or {})
        if ROWS[k][2] and k not in ZERO_CONFIG:
            s["HUGETEXT_MATCH"] = MATCH
        if k == "share":
            s.update(share or {})
        if k == "tmpfs":
            s.update(tmpfs or {})
        return s

    def prepare(k):
        """The page-cache state row k starts from."""
        # The text service answers the zero-configuration rows only: every
        # other preloaded start offers its libraries too, and the service's
        # warms would put the cold and first trees in 2 MiB pages (plain's
        # too) between a row's drop of the page cache and its run.
        if k not in ZERO_CONFIG:
            service.stop()
        if k in ("plain", "first", "auto"):
            for lib in trees[ROWS[k][0]]:
                small_page_cache(lib)
        if k in ("explicit", "share"):
            ensure_pool(POOL)
        if k == "steady":
            reread.append(restore_steady())
        if k == "zc_first":
            why = service.reset()
            for lib in trees["zc"]:
                small_page_cache(lib)
            return why
        return None

    def restore_steady():
        """MiB of the steady tree's code that an untimed start had to read back again.

        The 2 MiB page-cache pages of files nobody maps do not last on a busy
        machine: here most were gone within minutes.  A quick preloaded start
        (clang --version) reads back what was lost, so that the timed run
        starts from the steady state it claims; how much it found lost is kept.
        """
        r = run([argv("steady")[0], "--version"], dict(env("steady"), HUGETEXT_COPY="now"), preload=True)
        return round(sum(d["warmed"] for d in regions(r, libdir("steady")).values()) / 1048576)

    def libdir(k):
        return os.path.join(work, ROWS[k][0], "lib")

    def once(k):
        why = prepare(k)
        r = run(argv(k), env(k), preload=ROWS[k][2], cwd=work)
        if why:
            r.rc, r.err = -1, why
        if k == "zc_first" and r.rc == 0:
            served.append(after_first(r))
        return r

    def after_first(r):
        """Untimed: waits for the service to do what the first start offered; what it did."""
        offered = sum(1 for x in r.report if x.get("cache") == "offered")
        st = service.wait_served(offered) or service.state()
        return {"offered": offered, "warmed": st.get("warmed", []), "filled": st.get("filled", []),
                "refused": st.get("refused", []), "memory": service.memory()}

    for lib in trees["cold"] + trees["steady"]:
        small_page_cache(lib)
    checks, seen, starts, reread, served = {}, {}, {}, [], []
    service = Service(os.path.join(os.path.dirname(os.path.dirname(ARGS.preload)), "tools", "hugetext"))
    no_service = service.setup()

    def timed():
        """The claim checks, then the interleaved rounds, into res."""
        for k in ROWS:
            if k in ZERO_CONFIG and no_service:
                checks[k] = no_service
                continue
            if k == "zc_second" and checks.get("zc_first"):
                checks[k] = "its first compile did not show what it claims (the row above)"
                continue
            if k == "share" and not share:
                checks[k] = "no hugetlbfs mount for the shared cache"
                continue
            if k == "tmpfs" and not tmpfs:
                checks[k] = "no tmpfs (huge=within_size) mount for the shared cache"
                continue
            # The warm cache needs an earlier start that fills it; a steady start
            # that still copied some 2 MiB (a page the read-back did not get
            # whole) has read that back too, so a second try may be steady.
            for n in range(1, 5 if k in ("steady", "share", "tmpfs") else 2):
                r = once(k)
                checks[k] = report_problem(k, r, libdir(k))
                if not checks[k]:
                    break
            starts[k] = n
            seen[k] = summary(r, libdir(k))
            log(f"clang {k}: {r.wall_ms / 1e3:.2f} s, {checks[k] or 'as claimed'} (start {n})")
        res["first_check"] = seen
        res["check_starts"] = starts
        # The first check of the copy rows left the cold tree as it was; make sure.
        for lib in trees["cold"]:
            small_page_cache(lib)
        log(f"clang -cc1 -O2 of {res['tu_bytes'] / 1e6:.1f} MB: {reps} interleaved rounds")
        last = {}

        def thunk(k):
            def f():
                r = once(k)
                why = report_problem(k, r, libdir(k))
                last[k] = summary(r, libdir(k))
                if why:
                    return None, why
                return {"wall": r.wall_ms / 1e3, "cpu": r.cpu_ms / 1e3}, None
            return f
        res["rows"] = interleave({k: thunk(k) for k in ROWS if not checks.get(k)}, reps, None, "clang",
                                 follow={"zc_second": "zc_first"})
        for k, why in checks.items():
            if why:
                res["rows"][k] = {"na": why}
        res["last_report"] = last

    try:
        timed()
    finally:
        res["zc_memory"] = service.memory() if not no_service else None
        service.finish()
    res["zc_served"] = served
    res["steady_reread_mib"] = reread
    res["order"] = list(ROWS)
    return res
