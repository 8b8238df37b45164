#!/bin/bash
# Builds what the benchmarks need, into BUILD (default build-bench):
#   BUILD/                    the library and the hugetext command (meson)
#   BUILD/bench/bt-N          N MiB of synthetic code, linked the usual way
#                             (4 KiB segment alignment, non-PIE), placed so the
#                             code starts on a 2 MiB address but NOT at a
#                             2 MiB-congruent file offset: the kernel cannot map
#                             it with PMDs from the page cache, so it really
#                             runs on 4 KiB pages until hugetext moves it
#   BUILD/bench/bt-N-2m       the same, relinked with 2 MiB segment alignment
#   BUILD/bench/bt-N-lh       bt-N-2m linked with libhugetlbfs (when installed)
#   BUILD/bench/time-runs     times short programs, variants interleaved
#   BUILD/bench/fresh-pages   what faulting in fresh 2 MiB and 4 KiB pages costs
#   BUILD/bench/libempty-preload.so  a preload with nothing in it
# Usage: bench/build.sh [BUILD] [SIZES...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-bench}
shift || true
SIZES=${*:-8 16 32 46 64 128}
OUT=$BUILD/bench
CC=${CC:-cc}

if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" -Dtests=false -Dtools=true -Dbuildtype=release >/dev/null
else
	# Older build directories were set up without the command (hugetext warm).
	meson configure "$BUILD" -Dtools=true >/dev/null
fi
ninja -C "$BUILD" lib/libhugetext-internal.a lib/libhugetext-preload.so tools/hugetext >/dev/null
mkdir -p "$OUT"

LIB=$BUILD/lib/libhugetext-internal.a
CFLAGS=(-O2 -Wall -Ilib/include)
SRC=(bench/bench-text.c bench/bigtext.S)
have_lh=0
if [ -e /usr/lib/x86_64-linux-gnu/libhugetlbfs.so ] || [ -e /usr/lib/libhugetlbfs.so ]; then
	have_lh=1
fi

# The jump chain: at most 2048 functions, every K-th, and a step coprime
# with their number M, about 0.38 of the way round: each jump lands far
# from the last, and the cycle visits all M.
chain_for() {
	/usr/bin/python3 -c '
import math, sys
n = int(sys.argv[1]) * 1048576 // 4160
k = -(-n // 2048)
m = n // k
s = int(m * 0.381966)
while math.gcd(s, m) != 1:
    s += 1
print(f"-DBT_K={k} -DBT_M={m} -DBT_STEP={s}")' "$1"
}

newer() { # target is newer than every source
	local t=$1; shift
	[ -e "$t" ] || return 1
	for s in "$@"; do [ "$s" -nt "$t" ] && return 1; done
	return 0
}

# The small-program timer and the empty preload (section "small").
if ! newer "$OUT/time-runs" bench/time-runs.c bench/build.sh; then
	$CC -O2 -Wall -Wextra -o "$OUT/time-runs" bench/time-runs.c
fi
# What fresh memory costs here (the machine table).
if ! newer "$OUT/fresh-pages" bench/fresh-pages.c bench/build.sh; then
	$CC -O2 -Wall -Wextra -o "$OUT/fresh-pages" bench/fresh-pages.c
fi
if ! newer "$OUT/libempty-preload.so" bench/empty-preload.c bench/build.sh; then
	$CC -O2 -Wall -shared -fPIC -o "$OUT/libempty-preload.so" bench/empty-preload.c
fi

for mib in $SIZES; do
	read -r -a chain <<<"$(chain_for "$mib")"
	defs=(-DBT_MIB="$mib" "${chain[@]}")
	if ! newer "$OUT/bt-$mib" "${SRC[@]}" "$LIB" bench/build.sh; then
		echo "build: bt-$mib"
		# Pass 1 finds where the code lands; pass 2 shifts the whole image so
		# the code starts on a 2 MiB address.  The file offset stays 4 KiB
		# aligned only, as in any normally linked program.
		$CC "${CFLAGS[@]}" "${defs[@]}" -DBT_ALIGN=12 -no-pie -Wl,-Ttext-segment=0x400000 \
			-o "$OUT/bt-$mib.pass1" "${SRC[@]}" "$LIB" -lpthread
		a=$(nm "$OUT/bt-$mib.pass1" | awk '$3 == "bigtext_start" { print $1 }')
		base=$(( 0x400000 + ((0x200000 - (0x$a % 0x200000)) % 0x200000) ))
		$CC "${CFLAGS[@]}" "${defs[@]}" -DBT_ALIGN=12 -no-pie \
			-Wl,-Ttext-segment="$(printf '0x%x' "$base")" \
			-o "$OUT/bt-$mib" "${SRC[@]}" "$LIB" -lpthread
		rm -f "$OUT/bt-$mib.pass1"
	fi
	relink=(-Wl,-zmax-page-size=0x200000 -Wl,-zcommon-page-size=0x200000)
	if ! newer "$OUT/bt-$mib-2m" "${SRC[@]}" "$LIB" bench/build.sh; then
		echo "build: bt-$mib-2m"
		$CC "${CFLAGS[@]}" "${defs[@]}" -DBT_ALIGN=21 "${relink[@]}" \
			-o "$OUT/bt-$mib-2m" "${SRC[@]}" "$LIB" -lpthread
	fi
	if [ $have_lh = 1 ] && ! newer "$OUT/bt-$mib-lh" "${SRC[@]}" "$LIB" bench/build.sh; then
		echo "build: bt-$mib-lh"
		$CC "${CFLAGS[@]}" "${defs[@]}" -DBT_ALIGN=21 "${relink[@]}" \
			-o "$OUT/bt-$mib-lh" "${SRC[@]}" "$LIB" -lpthread -Wl,--no-as-needed -lhugetlbfs
	fi
done
