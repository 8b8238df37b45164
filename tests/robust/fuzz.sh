#!/bin/sh
# fuzz.sh NAME [SECONDS]: builds the libFuzzer harness fuzz/fuzz-NAME.c with
# clang (-fsanitize=fuzzer,address,undefined) and runs it for SECONDS
# (default: $HT_FUZZ_SECONDS, else 10) from the seed corpus corpus/NAME.
# Exits 77 (skipped) when clang or its libFuzzer runtime is missing.
#
# The harness is built here rather than by meson: meson builds with the
# project's compiler (gcc), and a harness that does not build must fail
# this test, not the whole build.  New inputs go to a scratch directory;
# crashes are kept in the build directory (fuzz-NAME-crash-*) and named in
# the output.  Reproduce one with: BUILD/tests/robust/fuzz/fuzz-NAME FILE
set -u

name=${1:?usage: fuzz.sh NAME [SECONDS]}
secs=${2:-${HT_FUZZ_SECONDS:-10}}
here=$(cd "$(dirname "$0")" && pwd)
src=${HT_SOURCE_ROOT:-$here/../..}
build=${HT_BUILD_ROOT:?HT_BUILD_ROOT is not set (run through meson test)}
clang=${CLANG:-clang}
out=$build/tests/robust/fuzz
corpus=$here/corpus/$name

if ! command -v "$clang" >/dev/null 2>&1; then
	echo "SKIP: $clang is not installed (Debian 12: apt-get install clang libclang-rt-14-dev)"
	exit 77
fi
mkdir -p "$out" || exit 1
probe=$out/probe-$name.c
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$clang" -fsanitize=fuzzer "$probe" -o "$out/probe-$name" >"$out/probe-$name.log" 2>&1; then
	echo "SKIP: $clang cannot link -fsanitize=fuzzer (libFuzzer runtime missing?):"
	cat "$out/probe-$name.log"
	exit 77
fi

lib=$src/lib
# lib/arch/<cpu>/arch.h as lib/meson.build picks it (generic elsewhere).
arch=$(uname -m)
[ -d "$lib/arch/$arch" ] || arch=generic
cflags="-D_GNU_SOURCE -include $build/config.h -I$lib -I$lib/include -I$lib/arch/$arch -I$src/tools -I$here/fuzz"
# The system call layer, lib/sys.c and its lib/sys-*.c, into $sys_objs:
# in a folder of this harness's own, since meson runs the harnesses side by
# side and two compilers writing one .o while a linker reads it fail at random.
build_sys() {
	sys_objs=
	mkdir -p "$out/sys-$name" || return 1
	for f in "$lib"/sys.c "$lib"/sys-*.c; do
		o=$out/sys-$name/$(basename "$f" .c).o
		# shellcheck disable=SC2086
		${CC:-cc} -c -O1 -fPIC $cflags "$f" -o "$o" || return 1
		sys_objs="$sys_objs $o"
	done
}

case $name in
maps) srcs="$lib/maps.c $lib/region.c $lib/plan.c" ;;
smaps) srcs="$lib/maps.c" ;;
proc)
	# sys*.c, the system call layer, is not fuzzed; it is built with the
	# project's compiler because clang rejects its table's initializer.
	build_sys || exit 1
	srcs="$lib/pool.c $lib/objects.c $lib/options.c $lib/report.c $lib/strings.c $lib/pagesize.c $lib/maps.c $sys_objs"
	;;
conf)
	build_sys || exit 1
	srcs="$lib/conf.c $lib/maps.c $sys_objs"
	;;
elf)
	if [ ! -f "$src/tools/elfcheck.c" ]; then
		echo "SKIP: tools/elfcheck.c does not exist yet"
		exit 77
	fi
	srcs="$src/tools/elfcheck.c -lelf"
	;;
*)
	echo "fuzz.sh: unknown harness '$name'"
	exit 2
	;;
esac

bin=$out/fuzz-$name
# shellcheck disable=SC2086 # $srcs is a list
if ! "$clang" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	$cflags "$here/fuzz/fuzz-$name.c" $srcs -o "$bin"; then
	echo "fuzz.sh: the harness fuzz-$name does not build"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hugetext-fuzz-$name.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
echo "fuzz-$name: $secs s from $(ls "$corpus" 2>/dev/null | wc -l) seeds"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	-print_final_stats=1 -error_exitcode=1 -artifact_prefix="$out/fuzz-$name-" "$work" "$corpus" >"$work/log" 2>&1
rc=$?
grep -v -E '^#[0-9]+.*(NEW|REDUCE|pulse)' "$work/log" | tail -60
if [ "$rc" -ne 0 ]; then
	echo "fuzz-$name failed (exit $rc); the input is kept as:"
	ls -t "$out"/fuzz-"$name"-crash-* "$out"/fuzz-"$name"-leak-* "$out"/fuzz-"$name"-timeout-* \
		"$out"/fuzz-"$name"-oom-* 2>/dev/null | head -3
	exit 1
fi
exit 0
