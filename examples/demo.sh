#!/bin/sh
# The main job on the bundled example: run itlb-demo on 4 KiB pages and
# with the preload, interleaved, and print coverage and time for both.
# Usage: examples/demo.sh [BUILD_DIR] [RUNS]
set -eu
build=${1:-build}
runs=${2:-3}
demo="$build/examples/itlb-demo"
preload="$build/lib/libhugetext-preload.so"
[ -x "$demo" ] || { echo "demo.sh: $demo is missing; build first (ninja -C $build)" >&2; exit 1; }

plain_times=""; huge_times=""
i=1
while [ "$i" -le "$runs" ]; do
	echo "== run $i of $runs: 4 KiB pages"
	out=$("$demo"); echo "$out"
	plain_times="$plain_times $(echo "$out" | sed -n 's/.* in \([0-9.]*\) s.*/\1/p')"
	echo "== run $i of $runs: LD_PRELOAD=$preload"
	out=$(HUGETEXT_VERBOSE=1 LD_PRELOAD="$preload" "$demo" 2>&1); echo "$out"
	huge_times="$huge_times $(echo "$out" | sed -n 's/.* in \([0-9.]*\) s.*/\1/p')"
	i=$((i + 1))
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "$plain_times"); h=$(median "$huge_times")
echo
echo "median time, 4 KiB pages:      $p s"
echo "median time, with hugetext:    $h s"
awk -v p="$p" -v h="$h" 'BEGIN { if (h > 0) printf "speed-up: %.2fx\n", p / h }'
