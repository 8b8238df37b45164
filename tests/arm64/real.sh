#!/bin/bash
# The real-program check of the arm64 harness (issue 22, item 4), run in
# the guest after the suite (tests/kernel/guest.sh, HT_REAL): Debian's
# arm64 node, g++ (cc1plus), clang++ with libLLVM and libclang-cpp picked
# by HUGETEXT_MATCH, rustc (librustc_driver, libLLVM) and java (libjvm,
# which java loads with dlopen: the arm64 dlopen() entry's path), each run
# without and with the preload.  Each must give the same output (the same
# object file, byte for byte, for the compilers) and its report must show
# its code on huge pages.  HUGETEXT_COPY=now: the copy at start-up, which
# the check is about (the default would defer it past a short run).
#
#   real.sh BUILD_DIR
#
# Prints one line per program, "ok NAME: what is on huge pages" or
# "failed NAME: why", and exits 1 when any failed.  A missing program
# fails: tests/arm64/run.sh installs them all in the root.  Inputs are
# tiny: the guest runs under TCG.
set -u
build=$1
preload=$build/lib/libhugetext-preload.so
dir=$(mktemp -d "${TMPDIR:-/tmp}/hugetext-real.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
failed=0
# Emulated, a compile takes minutes; a hang must not stop the guest.
limit=1200

fail() {
	echo "failed $1: $2"
	failed=1
	return 1
}

# The bytes on huge pages of the report $1's objects matching the regex
# $2: "moved N" (status ok) and "kept N" (left where the kernel already
# maps them huge), over the lines that did not fail.
huge_of() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
moved = kept = 0
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if not re.search(sys.argv[2], r.get("object", "")) or r.get("status") == "failed":
        continue
    if r.get("status") == "ok":
        moved += r.get("huge_bytes", 0)
    else:
        kept += r.get("huge_bytes", 0)
print(moved, kept)
PY
}

# Checks the report $2 of program $1 for at least $4 MiB of objects
# matching $3 on huge pages; prints the line.
check_huge() {
	local name=$1 report=$2 pattern=$3 min=$4 moved kept
	# Not "read < <(...)": the guest's devtmpfs has no /dev/fd.
	# shellcheck disable=SC2046
	set -- $(huge_of "$report" "$pattern")
	moved=${1:-0} kept=${2:-0}
	if [ $(((moved + kept) >> 20)) -lt "$min" ]; then
		fail "$name" "$(((moved + kept) >> 20)) MiB of $pattern on huge pages, $min expected; report: $(head -c 600 "$report" 2>/dev/null)"
		return 1
	fi
	echo "ok $name: $((moved >> 20)) MiB of $pattern moved, $((kept >> 20)) MiB kept huge by the kernel"
}

# Runs "$@" with the preload, its report in $report and HUGETEXT_MATCH=$match.
with_preload() {
	local vars=(LD_PRELOAD="$preload" HUGETEXT_COPY=now HUGETEXT_REPORT="$report")
	[ -z "$1" ] || vars+=(HUGETEXT_MATCH="$1")
	shift
	env "${vars[@]}" timeout "$limit" "$@"
}

have() {
	command -v "$1" >/dev/null || { fail "$1" "not installed in the root (tests/arm64/run.sh installs it)"; return 1; }
}

cp "$(dirname "$0")/../kernel/clang-input.cpp" "$dir/t.cpp"

# A compiler: the object without and with the preload, byte for byte.
compiler() {
	local name=$1 match=$2 pattern=$3 min=$4 cc=$5
	report=$dir/$name.json
	have "$cc" || return
	timeout "$limit" "$cc" -O2 -c "$dir/t.cpp" -o "$dir/$name-plain.o" 2>"$dir/err" ||
		{ fail "$name" "fails without the preload: $(head -c 300 "$dir/err")"; return; }
	with_preload "$match" "$cc" -O2 -c "$dir/t.cpp" -o "$dir/$name-moved.o" 2>"$dir/err" ||
		{ fail "$name" "fails with the preload: $(head -c 300 "$dir/err")"; return; }
	[ -s "$dir/err" ] && { fail "$name" "says with the preload: $(head -c 300 "$dir/err")"; return; }
	cmp -s "$dir/$name-plain.o" "$dir/$name-moved.o" || { fail "$name" "the objects differ"; return; }
	check_huge "$name" "$report" "$pattern" "$min"
}

# A program: its standard output and error without and with the preload.
same_output() {
	local name=$1 match=$2 pattern=$3 min=$4
	shift 4
	report=$dir/$name.json
	timeout "$limit" "$@" >"$dir/plain.out" 2>"$dir/plain.err" ||
		{ fail "$name" "fails without the preload: $(head -c 300 "$dir/plain.err")"; return; }
	with_preload "$match" "$@" >"$dir/moved.out" 2>"$dir/moved.err" ||
		{ fail "$name" "fails with the preload: $(head -c 300 "$dir/moved.err")"; return; }
	{ cmp -s "$dir/plain.out" "$dir/moved.out" && cmp -s "$dir/plain.err" "$dir/moved.err"; } ||
		{ fail "$name" "the output differs: $(head -c 300 "$dir/moved.out" "$dir/moved.err")"; return; }
	check_huge "$name" "$report" "$pattern" "$min"
}

# The minimums (MiB) are about half of the .text of Debian 12's arm64
# builds, so that a partial move fails: libnode 23 MiB, cc1plus 19,
# libLLVM-14 44, libclang-cpp 34, librustc_driver 38, libjvm 12.
if have node; then
	# Debian's node keeps its code in libnode.so, which the preload takes
	# only when named.
	same_output node '/libnode\.so' 'libnode' 10 node -e 'console.log([1, 2, 3].map((x) => x * x).join())'
fi
compiler g++ '' 'cc1plus' 8 g++
if have clang++; then
	# Two lines: libLLVM's and libclang-cpp's, from the same report.
	compiler clang 'libLLVM|libclang-cpp' 'libLLVM' 20 clang++ &&
		check_huge clang-cpp "$dir/clang.json" 'libclang-cpp' 15
fi
if have rustc; then
	report=$dir/rustc.json
	printf 'fn main() { let v: Vec<u64> = (1..=10).map(|i| i * i).collect(); println!("hello {:?}", v); }\n' >"$dir/hello.rs"
	if with_preload 'librustc_driver|libLLVM' rustc -O "$dir/hello.rs" -o "$dir/hello" 2>"$dir/err" &&
		[ ! -s "$dir/err" ]; then
		out=$("$dir/hello")
		if [ "$out" = "hello [1, 4, 9, 16, 25, 36, 49, 64, 81, 100]" ]; then
			check_huge rustc "$report" 'librustc_driver|libLLVM' 40
		else
			fail rustc "the program it built printed: $out"
		fi
	else
		fail rustc "fails with the preload: $(head -c 300 "$dir/err")"
	fi
fi
if have java; then
	printf 'public class Hello { public static void main(String[] a) { System.out.println("hello " + (6 * 7)); } }\n' >"$dir/Hello.java"
	# The source launcher: java compiles Hello.java in memory and runs it.
	same_output java 'libjvm' 'libjvm' 6 java "$dir/Hello.java"
fi
exit "$failed"
