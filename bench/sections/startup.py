"""Section 2: start-up of node and of the 46 MiB synthetic program."""
import json
import os
import re
import shutil

from .common import ARGS, DEFAULTS, bt, check_report, ensure_pool, interleave, log, run, small_page_cache


NODE_TEXT_JS = r"""
const fs = require('fs');
let cur = '', kb = {anon: 0, hugetlb: 0, filepmd: 0};
for (const l of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
  if (/^[0-9a-f]+-[0-9a-f]+ /.test(l)) { cur = l; continue; }
  const m = /^(AnonHugePages|Private_Hugetlb|Shared_Hugetlb|FilePmdMapped):\s+(\d+)/.exec(l);
  if (!m || !/ r-xp /.test(cur) && !/\/node$/.test(cur) && !/^\S+ r-xp/.test(cur)) continue;
  const k = m[1] === 'AnonHugePages' ? 'anon' : m[1] === 'FilePmdMapped' ? 'filepmd' : 'hugetlb';
  kb[k] += +m[2];
}
console.log(JSON.stringify(kb));
"""
def node_text_kb(argv):
    """kB of node's code on huge pages by kind (anon, hugetlb, filepmd), from its own smaps."""
    v = run(argv + ["-e", NODE_TEXT_JS])
    try:
        return json.loads(v.out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"stderr": v.err.strip()[:200]}



def startup():
    res = {"node": {}, "synthetic": {}}
    node = shutil.which("node")
    reps = 9 if ARGS.quick else 31
    # node's start-up is short and this VM noisy: more rounds for its medians.
    node_reps = 15 if ARGS.quick else 61
    share = {"HUGETEXT_SHARE": "1", "HUGETEXT_SHARE_DIR": ARGS.share_dir} if ARGS.share_dir else None
    if not node:
        res["node"] = {"na": "node is not installed"}
    else:
        node = os.path.realpath(node)
        obj = re.escape(node) + "$"
        # The copying variants start from node's code in 4 KiB page-cache
        # pages (as on a machine up for a while) and, with
        # HUGETEXT_PAGE_CACHE=0, leave it so.
        small_page_cache(node)
        copy_only = {"HUGETEXT_PAGE_CACHE": "0"}
        variants = {
            "plain": ([node, "-e", "0"], None, False),
            "preload-off": ([node, "-e", "0"], {"HUGETEXT_MODE": "off"}, True),
            "thp": ([node, "-e", "0"], {"HUGETEXT_MODE": "thp", **copy_only}, True),
            # The copy in a background thread while node starts; the report
            # line (written when the move is done) must still say ok.
            "thp-async": ([node, "-e", "0"], {"HUGETEXT_MODE": "thp", "HUGETEXT_ASYNC": "1", **copy_only}, True),
            "explicit": ([node, "-e", "0"], {"HUGETEXT_MODE": "explicit", **copy_only}, True),
            "share-warm": ([node, "-e", "0"], {**share, **copy_only} if share else None, True),
            "node-largepages": ([node, "--use-largepages=on", "-e", "0"], None, False),
        }
        # The default settings, on a copy of node (so that node itself keeps
        # its small pages for the rows above): a first start that copies
        # (HUGETEXT_COPY=now; the default defers a copy that a run this short
        # cannot pay for) reads the code back as 2 MiB page-cache pages; the
        # default starts after it keep those and copy nothing: the last,
        # partial 2 MiB, which no read-back can put on a 2 MiB page (node's
        # code mapping ends inside it), is left to the deferred copy, which a
        # run this short never pays for.
        # The first start is timed on its own, cold each time.
        copy = os.path.join(ARGS.bin, "node-copy")
        shutil.copyfile(node, copy)
        os.chmod(copy, 0o755)
        firsts = []
        for _ in range(3 if ARGS.quick else 7):
            small_page_cache(copy)
            r = run([copy, "-e", "0"], {**DEFAULTS, "HUGETEXT_COPY": "now"}, preload=True)
            line = next((x for x in r.report if x.get("status") == "ok"), {})
            firsts.append({"wall_ms": r.wall_ms, "ms": line.get("ms"),
                           "warmed_bytes": line.get("warmed_bytes", 0), "rc": r.rc})
        res["first_start"] = firsts
        variants["default"] = ([copy, "-e", "0"], DEFAULTS, True)
        # The default settings on node itself, its code in 4 KiB page-cache
        # pages and no set-up: the copy is deferred, node -e 0 ends first.
        variants["default-cold"] = ([node, "-e", "0"], DEFAULTS, True)
        variants["default-plain"] = ([copy, "-e", "0"], None, False)

        def report_problem(k, r):
            """None when run r of variant k did what the variant is for, else the reason."""
            if r.rc != 0:
                return f"exit status {r.rc}"
            if k in ("thp", "explicit", "thp-async"):
                return check_report(r, obj, k.split("-")[0])
            if k == "default":
                mine = [x for x in r.report if re.search(re.escape(copy) + "$", x.get("object", ""))
                        and x.get("bytes", 0) >= 8 << 20]
                if not mine or not all(x.get("kept_bytes", 0) > 0 for x in mine):
                    return "the kernel's 2 MiB page-cache pages were not kept"
                if any(x.get("private_huge_bytes") for x in mine):
                    return "copied at start: " + ", ".join(x.get("status", "") for x in mine)
                return None
            if k == "default-cold":
                # node's code segment (its small first and last pieces have no whole 2 MiB page)
                mine = [x for x in r.report if re.search(obj, x.get("object", "")) and x.get("bytes", 0) > 0]
                if not mine or any(x.get("status") == "ok" or "deferred" not in x.get("error", "") for x in mine):
                    return "the default start on a cold page cache did not defer its copy"
                return None
            if k == "share-warm":
                return check_report(r, obj, None, need_cache=True)
            return None

        checks = {}
        for k, (argv, env, pre) in variants.items():
            if checks.get(k):
                continue
            if k == "share-warm" and not share:
                checks[k] = "no hugetlbfs mount for the shared cache"
                continue
            if k == "explicit":
                ensure_pool(32)
            r = run(argv, env, preload=pre)
            if k == "share-warm":
                r = run(argv, env, preload=pre)  # second run: the cache is warm now
            checks[k] = report_problem(k, r)
            if k == "default-plain":
                kb = res["default_plain_text_kb"] = node_text_kb([copy])
                checks[k] = checks[k] or (None if kb.get("filepmd", 0) > 0 else
                                          f"the kernel mapped none of the copy's code huge ({kb.get('stderr', '')})")
            elif k == "node-largepages":
                kb = res["node_largepages_text_kb"] = node_text_kb([node, "--use-largepages=on"])
                checks[k] = checks[k] or (None if kb.get("anon", 0) > 0 else
                                          f"node --use-largepages=on left no code on huge pages ({kb.get('stderr', '')})")
        res["plain_text_kb"] = node_text_kb([node])
        r = run([node, "-e", "0"], {"HUGETEXT_MODE": "thp", **copy_only}, preload=True)
        res["thp_report"] = r.report
        log(f"node start-up: {node_reps} interleaved rounds of {len(variants)} variants")

        def thunk(k):
            argv, env, pre = variants[k]

            def f():
                if k == "explicit":
                    ensure_pool(32)
                r = run(argv, env, preload=pre)
                p = report_problem(k, r)
                if p:
                    return None, p
                return r.times(), None
            return f
        ok = {k: thunk(k) for k in variants if not checks.get(k)}
        res["node"] = interleave(ok, node_reps, None, "node")
        for k, why in checks.items():
            if why:
                res["node"][k] = {"na": why}
        res["node_order"] = list(variants)

    # The synthetic program (46 MiB): ours against libhugetlbfs and the kernel.
    mib = 46
    variants = {
        "plain": ([bt(mib), "start"], None, False),
        "thp": ([bt(mib), "start"], {"HUGETEXT_MODE": "thp"}, True),
        "explicit": ([bt(mib), "start"], {"HUGETEXT_MODE": "explicit"}, True),
        "libhugetlbfs": ([bt(mib, "-lh"), "start"], {"HUGETLB_ELFMAP": "R"}, False),
        "relinked-plain": ([bt(mib, "-2m"), "start"], None, False),
    }
    if ARGS.htlb_dir:
        variants["libhugetlbfs"][1]["HUGETLB_PATH"] = ARGS.htlb_dir
    checks = {}
    for k, (argv, env, pre) in variants.items():
        if not os.path.exists(argv[0]):
            checks[k] = "not built (libhugetlbfs is not installed)"
            continue
        ensure_pool(64)
        if k in ("thp", "explicit"):
            checks[k] = check_report(run(argv, env, preload=pre), "bt-46$", k)
        elif k == "libhugetlbfs":
            j = run([bt(mib, "-lh"), "chain", "10"], env).json() or {}
            checks[k] = None if j.get("hugetlb_kb", 0) > 0 else \
                "libhugetlbfs left the code on small pages"
        else:
            checks[k] = None
    log(f"synthetic start-up ({mib} MiB): {reps} interleaved rounds")

    def sthunk(k):
        argv, env, pre = variants[k]

        def f():
            if k in ("explicit", "libhugetlbfs"):
                ensure_pool(64)
            r = run(argv, env, preload=pre)
            if r.rc != 0:
                return None, f"exit status {r.rc}"
            if k in ("thp", "explicit"):
                p = check_report(r, "bt-46$", k)
                if p:
                    return None, p
            return r.times(), None
        return f
    res["synthetic"] = interleave({k: sthunk(k) for k in variants if not checks.get(k)},
                                  reps, None, "synthetic")
    for k, why in checks.items():
        if why:
            res["synthetic"][k] = {"na": why}
    res["synthetic_order"] = list(variants)
    return res
