#!/bin/sh
# The main job on the bundled example: run itlb-demo (64 MiB of code called
# in random order) on 4 KiB pages and with the preload, interleaved, and
# print coverage and time for each.
#
# Two preload runs: the defaults (HUGETEXT_COPY=auto), where the copy waits
# until the program has used enough CPU time for it to pay (40 ms per MiB:
# about 2.5 s for this code) and then moves the code while it runs; and
# HUGETEXT_COPY=now, which copies before main().  A run of 60 million calls
# (about 5 s on 4 KiB pages here) is long enough for the default to pay.
# Usage: examples/demo.sh [BUILD_DIR] [RUNS] [CALLS]
set -eu
build=${1:-build}
runs=${2:-3}
calls=${3:-60000000}
demo="$build/examples/itlb-demo"
preload="$build/lib/libhugetext-preload.so"
[ -x "$demo" ] || { echo "demo.sh: $demo is missing; build first (ninja -C $build)" >&2; exit 1; }

seconds() { echo "$1" | sed -n 's/.* in \([0-9.]*\) s.*/\1/p'; }
plain_times=""; auto_times=""; now_times=""
i=1
while [ "$i" -le "$runs" ]; do
	echo "== run $i of $runs: 4 KiB pages"
	out=$("$demo" "$calls"); echo "$out"
	plain_times="$plain_times $(seconds "$out")"
	echo "== run $i of $runs: LD_PRELOAD=$preload (the defaults)"
	out=$(HUGETEXT_VERBOSE=1 LD_PRELOAD="$preload" "$demo" "$calls" 2>&1); echo "$out"
	auto_times="$auto_times $(seconds "$out")"
	echo "== run $i of $runs: LD_PRELOAD=$preload HUGETEXT_COPY=now"
	out=$(HUGETEXT_VERBOSE=1 HUGETEXT_COPY=now LD_PRELOAD="$preload" "$demo" "$calls" 2>&1); echo "$out"
	now_times="$now_times $(seconds "$out")"
	i=$((i + 1))
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "$plain_times"); a=$(median "$auto_times"); n=$(median "$now_times")
echo
echo "median time, 4 KiB pages:                      $p s"
echo "median time, hugetext defaults (copy deferred): $a s"
echo "median time, hugetext HUGETEXT_COPY=now:        $n s"
awk -v p="$p" -v a="$a" -v n="$n" 'BEGIN { if (a > 0 && n > 0) printf "speed-up: %.2fx (defaults), %.2fx (copy now)\n", p / a, p / n }'
