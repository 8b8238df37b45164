"""Paired comparisons of interleaved rows, through `hugetext measure --stats`.

The benchmark and `hugetext measure` mean the same by an interval and by
"decided": both hand the rounds' values to the same code (tools/stats.c).
Rows a and b must have run in the same rounds (bench's interleave(): one
run of each per round) with no run left out, or the rounds do not pair.
"""
import json
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_cache = {}


def tool():
    """The hugetext command: BENCH_HUGETEXT (bench/run.sh sets it), the bench's build, or PATH's."""
    for t in (os.environ.get("BENCH_HUGETEXT"), os.path.join(ROOT, "build-bench", "tools", "hugetext"),
              shutil.which("hugetext")):
        if t and os.access(t, os.X_OK):
            return t
    return None


def stats(a, b, margin=0.02):
    """The comparison of the lists a against b (a / b), as measure computes it; None when it cannot."""
    key = (tuple(a), tuple(b), margin)
    if key in _cache:
        return _cache[key]
    t = tool()
    out = None
    if t and a and len(a) == len(b):
        r = subprocess.run([t, "measure", "--stats"], input=json.dumps({"a": a, "b": b, "margin": margin}),
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            out = json.loads(r.stdout)
    _cache[key] = out
    return out


def values(row, key=None):
    """A row's values in round order (its CPU times with key='cpu'), or None when some run did not count."""
    if not isinstance(row, dict) or row.get("failed_runs"):
        return None
    if key:
        row = (row.get("alt") or {}).get(key)
        if not isinstance(row, dict):
            return None
    v = row.get("values")
    return v if v else None


def paired(a, b, key=None, margin=0.02):
    """The comparison of row a against row b round by round (a / b), or None."""
    av, bv = values(a, key), values(b, key)
    if not av or not bv or len(av) != len(bv):
        return None
    return stats(av, bv, margin)


WORDS = {"lower": "faster, decided", "higher": "slower, decided", "same": "the same within 2%, decided",
         "undecided": "not decided"}


def cell(p):
    """"0.984x (95%: 0.920–1.064), not decided at 11 rounds" (a time ratio: below 1 faster), or "n/a"."""
    if not p:
        return "n/a (the rounds do not pair, or `hugetext measure --stats` is not built)"
    iv = f" (95%: {p['lo']:.3f}–{p['hi']:.3f})" if p.get("lo") else ""
    d = WORDS.get(p["decision"], p["decision"])
    if p["decision"] == "undecided":
        d += f" at {p['n']} rounds"
    return f"{p['ratio']:.3f}x{iv}, {d}"
