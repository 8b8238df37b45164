#!/bin/sh
# The main job on the bundled example: itlb-demo (64 MiB of code, called in
# random order) runs for a fixed CPU time on 4 KiB pages and with the
# preload, interleaved, and each run's rate of calls per CPU second is
# compared with the plain one.  The work is sized by time, not by a count,
# so that a slow machine and a fast one both run long enough for the
# default to pay; by CPU time, which is also what the default's wait
# counts, so that a loaded machine shows the same thing.
#
# Three rows:
# - 4 KiB pages: the program alone.
# - the preload's defaults (HUGETEXT_COPY=auto): the copy waits until the
#   program has used enough CPU time for it to pay (40 ms per MiB: about
#   2.5 s for this code), then moves the code while it runs.  The demo
#   works in a thread of its own, as runtimes and servers do: the defaults
#   give a single-threaded program no thread of theirs, so none copies.
# - HUGETEXT_COPY=now: the copy before main().
# Each row's huge pages are counted twice, by the program (its smaps: THP,
# page cache, shmem and hugetlb) and by the library's report, and the
# summary says in one line why each row is what it is.
#
# Usage: examples/demo.sh [BUILD_DIR] [ROUNDS] [SECONDS]   (default: build 3 8)
set -eu
build=${1:-build}
rounds=${2:-3}
seconds=${3:-8}
demo="$build/examples/itlb-demo"
preload="$build/lib/libhugetext-preload.so"
[ -x "$demo" ] || { echo "demo.sh: $demo is missing; build first (ninja -C $build)" >&2; exit 1; }
[ -f "$preload" ] || { echo "demo.sh: $preload is missing; build first (ninja -C $build)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hugetext-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A field of the program's output or of the report's last line.
rate() { sed -n 's/^calls: .*, \([0-9.]*\) M calls\/s$/\1/p' "$1"; }
huge_mib() { sed -n 's/^code: .*on huge pages: \([0-9]*\) MiB.*/\1/p' "$1"; }
moved_at() { sed -n 's/^code on huge pages: from \([0-9.]*\) CPU s.*/\1/p' "$1"; }
field() {
	tail -n 1 "$1" 2>/dev/null |
		sed -n -e "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p; t" -e "s/.*\"$2\":\([0-9.]*\).*/\1/p"
}

# run ROW: one run of the row; keeps its output and report as ROW.N.*
run() {
	row=$1 out="$work/$1.$i.out" report="$work/$1.$i.json"
	case $row in
	plain) "$demo" --seconds "$seconds" > "$out" ;;
	auto) HUGETEXT_REPORT="$report" LD_PRELOAD="$preload" "$demo" --seconds "$seconds" > "$out" ;;
	now) HUGETEXT_REPORT="$report" HUGETEXT_COPY=now LD_PRELOAD="$preload" "$demo" --seconds "$seconds" > "$out" ;;
	esac
	line="$(rate "$out") M calls/s, $(huge_mib "$out") MiB of code on huge pages"
	at=$(moved_at "$out")
	[ -n "$at" ] && [ "$row" = auto ] && line="$line from $at CPU s"
	if [ -f "$report" ]; then
		line="$line; report: $(field "$report" status)"
		hb=$(field "$report" huge_bytes)
		[ -n "$hb" ] && line="$line, $((hb / 1048576)) MiB huge ($(field "$report" mode))"
		# The program and the library count the same pages: say so when they do not.
		[ -n "$hb" ] && [ "$((hb / 1048576))" != "$(huge_mib "$out")" ] &&
			line="$line (the program counts $(huge_mib "$out") MiB: they disagree)"
	fi
	echo "  $row: $line"
	eval "${row}_rates=\"\${${row}_rates:-} $(rate "$out")\""
}

echo "itlb-demo: 64 MiB of code called in random order, $seconds CPU s a run, $rounds rounds"
i=1
while [ "$i" -le "$rounds" ]; do
	echo "round $i of $rounds"
	run plain
	run auto
	run now
	i=$((i + 1))
done

median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "$plain_rates"); a=$(median "$auto_rates"); n=$(median "$now_rates")
# The last round's runs say why each row is what it is.
last=$((i - 1))
echo
echo "median rate, 4 KiB pages:                      $p M calls/s"
echo "median rate, hugetext defaults (copy deferred): $a M calls/s"
echo "median rate, hugetext HUGETEXT_COPY=now:        $n M calls/s"
awk -v p="$p" -v a="$a" -v n="$n" 'BEGIN { if (p > 0) printf "speed-up: %.2fx (defaults), %.2fx (copy now)\n", a / p, n / p }'
echo
echo "why:"
echo "  4 KiB pages: the kernel maps the program's code with 4 KiB pages; nearly every call misses the instruction TLB."
st=$(field "$work/auto.$last.json" status) at=$(moved_at "$work/auto.$last.out")
if [ "$st" = ok ] && [ -n "$at" ]; then
	echo "  defaults: nothing was copied before main(); the copy waited until the program had used enough CPU time to pay for it (40 ms per MiB), then moved $(huge_mib "$work/auto.$last.out") MiB while it ran, $at CPU s in; the rate counts the whole run, the wait included."
elif [ "$st" = skipped ]; then
	echo "  defaults: no copy during the run ($(field "$work/auto.$last.json" error)): it waits until the program has used 40 ms of CPU time per MiB of code; run longer (examples/demo.sh $build $rounds $((seconds * 2))) to see it move."
else
	echo "  defaults: the report says $(field "$work/auto.$last.json" status): $(field "$work/auto.$last.json" error)"
fi
if [ "$(field "$work/now.$last.json" status)" = ok ]; then
	echo "  copy now: $(huge_mib "$work/now.$last.out") MiB copied onto $(field "$work/now.$last.json" mode) huge pages before main(), in $(field "$work/now.$last.json" ms) ms, paid by every run however short."
else
	echo "  copy now: the report says $(field "$work/now.$last.json" status): $(field "$work/now.$last.json" error)"
fi
awk -v p="$p" -v a="$a" -v n="$n" 'BEGIN {
	if (p > 0 && n / p < 1.02)
		print "  no gain: on this processor (or under this load) the 2 MiB pages gave the code less than 2%; the copy-now row shows what they give at most."
	else if (p > 0 && a / p < 1.02)
		print "  the defaults gained less than 2% here: the wait for the copy to pay took most of the run."
}'
