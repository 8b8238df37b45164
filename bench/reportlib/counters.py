"""Section 8: whether the machine has iTLB miss counters."""


def write(out, R):
    w = out.w
    m = R.get("machine", {})
    w("## 8. iTLB miss counters")
    w()
    if m.get("perf_itlb"):
        w("`perf stat -e iTLB-load-misses` works here; the counts are in section 3.")
    else:
        w("`perf stat -e iTLB-load-misses,iTLB-loads true` reports the events as not supported: this VM "
          "exposes no hardware performance counters (`perf record -e cpu-clock` works, it is a software "
          "clock). So there are no miss counts; the loops of section 3 measure the effect by time alone. "
          "On a machine with counters, `bench/run.sh` records them for the chain loop at 46 MiB.")
        w()
        w("```")
        w(m.get("perf_itlb_output", "").strip())
        w("```")
    w()
