#!/bin/bash
# The clang check of the matrix: clang++ compiles a C++ file to the same
# object with libLLVM and libclang-cpp moved (HUGETEXT_MATCH) as without
# the preload.  Usage: real-clang.sh BUILD_DIR.  Prints "ok" and exits 0,
# or says what differed and exits 1; "skipped: ..." (exit 0) without clang.
set -u
build=$1
clang=$(command -v clang++ || true)
if [ -z "$clang" ]; then
	echo "skipped: no clang++"
	exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/hugetext-clang.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$(dirname "$0")/clang-input.cpp" "$dir/t.cpp"
"$clang" -O2 -c "$dir/t.cpp" -o "$dir/plain.o" || { echo "clang++ fails without the preload"; exit 1; }
# HUGETEXT_COPY=now: the copy at start-up, which the check is about (with
# the preload's default a compile this short defers it and copies nothing).
LD_PRELOAD=$build/lib/libhugetext-preload.so HUGETEXT_MATCH='libLLVM|libclang-cpp' HUGETEXT_COPY=now \
	HUGETEXT_REPORT=$dir/report.json "$clang" -O2 -c "$dir/t.cpp" -o "$dir/moved.o" 2>"$dir/err"
st=$?
if [ "$st" -ne 0 ] || [ -s "$dir/err" ]; then
	echo "clang++ with the preload: exit $st, stderr: $(head -c 300 "$dir/err")"
	exit 1
fi
if ! cmp -s "$dir/plain.o" "$dir/moved.o"; then
	echo "the objects differ"
	exit 1
fi
for lib in libLLVM libclang-cpp; do
	# "ok", or kept as it was: the kernel already maps it huge.
	if ! grep "\"object\":\"[^\"]*$lib" "$dir/report.json" | grep -v '"status":"failed"' |
		grep -q '"huge_bytes":[1-9]'; then
		echo "$lib is not on huge pages: $(grep "$lib" "$dir/report.json" | head -c 400)"
		exit 1
	fi
done
echo "ok"
