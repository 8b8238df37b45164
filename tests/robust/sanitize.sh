#!/bin/sh
# tests/robust/sanitize.sh BUILD_DIR [MESON TEST ARGS...]
#
# Sets up (or reuses) an ASan+UBSan build of the whole project in BUILD_DIR
# and runs the test suite in it; prints how long the tests took.
#
# Programs started with the ASan-built preload need the ASan runtime ahead
# of every other library, or the runtime refuses to start ("ASan runtime
# does not come first in initial library list").  The tests put
# HT_SANITIZER_PRELOAD first in LD_PRELOAD: tests/robust does it in
# ld_preload(), the other tests once tests/helpers.cpp does the same.
# Until then verify_asan_link_order=0 lets the runtime start anyway: an
# instrumented program still finds ASan's malloc ahead of libc's, because
# its own DT_NEEDED libasan comes before libc in the lookup order.
set -u

dir=${1:?usage: sanitize.sh BUILD_DIR [meson test args...]}
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-cc}

if [ -f "$dir/build.ninja" ]; then
	meson configure "$dir" -Db_sanitize=address,undefined -Db_lundef=false || exit 1
else
	meson setup "$dir" "$src" -Db_sanitize=address,undefined -Db_lundef=false || exit 1
fi
start=$(date +%s)
ninja -C "$dir" || exit 1
built=$(date +%s)

asan=$("$cc" -print-file-name=libasan.so)
case $asan in
/*) ;;
*)
	echo "sanitize: $cc does not know where libasan.so is"
	exit 1
	;;
esac
export HT_SANITIZER_PRELOAD="$asan"
# Leaks count; a sanitizer report ends the program with a clear status.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1:detect_stack_use_after_return=1:verify_asan_link_order=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}"

# The sanitizers make every test several times slower; the time limits
# are set for the plain build.
meson test -C "$dir" --print-errorlogs --timeout-multiplier 3 "$@"
rc=$?
end=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((end - built)) s, exit $rc"
exit $rc
