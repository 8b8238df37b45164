"""How to run the benchmark, whole or by hand (static text)."""

RUN = [
    "apt-get update && apt-get install -y meson ninja-build pkg-config libelf-dev libjson-c-dev catch2 g++",
    "bench/run.sh            # everything, 13-20 min here; installs its own extra Debian packages",
    "bench/run.sh --quick    # fewer rounds, a few minutes",
    "bench/run.sh --only itlb,startup   # some steps, merged into the last results",
    "bench/run.sh --only small          # programs with nothing to move (section 6)",
    "bench/run.sh --only clang          # clang compiling LLVM's headers (section 7)",
    "bench/run.sh --report-only         # redo this page and the plots from the last results",
]
BY_HAND = [
    "B=build-bench; P=$B/lib/libhugetext-preload.so",
    "$B/bench/bt-46 remap thp auto          # our remap cost, one fresh process",
    "$B/bench/bt-46 floor                   # the one-copy floor",
    "$B/bench/bt-46 chain 10000000          # iTLB chain loop on 4 KiB pages",
    "HUGETEXT_MODE=thp LD_PRELOAD=$P $B/bench/bt-46 chain 10000000",
    "echo 64 > /proc/sys/vm/nr_hugepages; HUGETEXT_MODE=explicit LD_PRELOAD=$P $B/bench/bt-46 loop 5000000",
    "HUGETLB_ELFMAP=R $B/bench/bt-46-lh chain 10000000     # libhugetlbfs (needs a hugetlbfs mount)",
    "HUGETEXT_MODE=thp HUGETEXT_REPORT=/dev/stderr LD_PRELOAD=$P node -e 0",
    "HUGETEXT_MODE=thp HUGETEXT_ASYNC=1 HUGETEXT_REPORT=/dev/stderr LD_PRELOAD=$P node -e 0",
]


def write(out, R):
    w = out.w
    w("## Reproduce")
    w()
    sh_block(out, RUN)
    w("Single measurements by hand (after `bench/build.sh`, with `B=build-bench`):")
    w()
    sh_block(out, BY_HAND)


def sh_block(out, lines):
    out.w("```sh")
    for line in lines:
        out.w(line)
    out.w("```")
    out.w()
