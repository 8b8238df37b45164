"""Section 1: the cost of moving N MiB of synthetic code, against one-copy floors."""
from .common import ARGS, bt, ensure_pool, interleave, log, run


def remap_cost():
    sizes = [16, 46, 128]
    reps = 3 if ARGS.quick else 15
    res = {}
    for mib in sizes:
        log(f"remap cost, {mib} MiB: {reps} rounds")
        prog = bt(mib)
        run([prog, "start"])  # page cache warm

        def ours(mode, fill):
            def f():
                if mode == "explicit" and not ensure_pool(mib // 2 + 8):
                    return None, "cannot size the explicit pool"
                j = run([prog, "remap", mode, fill]).json()
                if not j:
                    return None, "no output"
                if j.get("status") != "ok":
                    return None, f"{j.get('status')}: {j.get('error')} (errno {j.get('errno')})"
                if j.get("mode") != mode:
                    return None, f"asked for {mode}, got {j.get('mode')}"
                return {"wall": j["ms"], "cpu": j.get("cpu_ms", 0.0)}, None
            return f

        def floor(how="resident"):
            j = run([prog, "floor", how]).json()
            if not j or "ms" not in j:
                return None, "no output"
            if j.get("huge_bytes", 0) < j.get("bytes", 1):
                return None, f"floor copy only {j.get('huge_bytes', 0) >> 20} MiB on huge pages"
            return {"wall": j["ms"], "cpu": j.get("cpu_ms", 0.0)}, None

        def floor_how(how):
            return lambda: floor(how)

        fills = {}

        def which_fill(mode, fill):
            j = run([prog, "remap", mode, fill]).json() or {}
            fills[f"{mode}-{fill}"] = j.get("fill", "")

        for m, fl in (("thp", "auto"), ("thp", "pread"), ("thp", "memcpy")):
            which_fill(m, fl)
        res[mib] = interleave({
            "floor": floor,
            "floor-populate": floor_how("populate"),
            "floor-pread": floor_how("pread"),
            "thp-auto": ours("thp", "auto"),
            "thp-pread": ours("thp", "pread"),
            "thp-memcpy": ours("thp", "memcpy"),
            "explicit-auto": ours("explicit", "auto"),
        }, reps, lambda: None, f"remap {mib} MiB")
        res[mib]["fill_used"] = fills
    return res
