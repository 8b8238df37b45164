"""Section 9: `hugetext measure` itself, on what the README shows a new user
(`node -e`) and on clang's LLVM-headers compile (the clang section's
translation unit and -cc1 line).

Each is one run of the command as a user would type it, with --copy and
--json; its JSON is kept whole.  measure keeps its variants apart by
itself (its own copies of the big objects, its own text service in a
private /run/hugetext as root), so nothing here prepares page caches.
"""
import json
import os
import shutil
import subprocess

from .clang import CLANGXX, LLVM, translation_unit
from .common import ARGS, log

NODE_JS = "let s = 0; for (let i = 0; i < 3e7; i++) s += i % 7; if (s < 0) console.log(s)"


def tool():
    return os.path.join(os.path.dirname(os.path.dirname(ARGS.preload)), "tools", "hugetext")


def run_measure(argv, runs, cwd=None):
    """measure's JSON for argv, or {"na": why}."""
    cmd = [tool(), "measure", "--json", "--copy", "--runs", str(runs), "--preload", ARGS.preload, "--"] + argv
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUGETEXT_") and k != "LD_PRELOAD"}
    log(f"hugetext measure --copy --runs {runs} -- {os.path.basename(argv[0])} ...")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=3600)
    except subprocess.TimeoutExpired:
        return {"na": "hugetext measure did not end within an hour"}
    if r.returncode != 0:
        return {"na": f"hugetext measure exited {r.returncode}: {r.stderr.strip()[-300:]}"}
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"na": "hugetext measure printed no JSON"}


def measure():
    res = {}
    if not os.access(tool(), os.X_OK):
        return {"na": f"no {tool()}"}
    node = shutil.which("node")
    res["node"] = run_measure([node, "-e", NODE_JS], 9 if ARGS.quick else 30) if node else \
        {"na": "node is not installed"}
    res["node_js"] = NODE_JS
    if not os.path.exists(f"{LLVM}/bin/clang") or not shutil.which(CLANGXX):
        res["clang"] = {"na": "clang 14 is not installed (Debian: clang-14)"}
        return res
    work = os.path.realpath(os.path.join(ARGS.bin, "clang-measure"))
    os.makedirs(work, exist_ok=True)
    ii, cc1, why = translation_unit(work)
    if why:
        res["clang"] = {"na": why}
        return res
    res["clang"] = run_measure([f"{LLVM}/bin/clang"] + cc1[1:], 5 if ARGS.quick else 15, cwd=work)
    res["clang_tu_bytes"] = os.path.getsize(ii)
    return res
