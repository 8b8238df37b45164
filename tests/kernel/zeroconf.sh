#!/bin/bash
# The zero-configuration check (issue 21): the shipped /etc/hugetext.conf,
# the preload on and nothing else set, the text service started by hand with
# the command its unit runs (`hugetext serve`); each program started twice,
# and the second start must take a zero-copy path (the page cache's 2 MiB
# folios kept, or the service's cache entry hit) with nothing copied
# privately.  Also measures where code loads (where.py): an object whose
# address and file offset disagree modulo 2 MiB can take neither path, and
# the check then says so instead of failing.
#
# Usage: zeroconf.sh BUILD_DIR OUT.json [RESULT]
# Appends to OUT.json (the probe's output, which kernels-doc.py reads) the
# "load" lines of where.py and the report lines of each start, tagged
# zc_PROGRAM_1 and zc_PROGRAM_2, and the service's state (zc_service).
# Writes RESULT (default: next to OUT.json, zeroconf.result) a line per
# program: "ok NAME: path", "skipped NAME: why" (the load address rules
# it out) or "failed NAME: why".  The programs: tests/robust/bigtext-aligned,
# tests/bigtext-pie (linked with 4 KiB segments; started as the kernel
# starts it, and through ld.so) and, with HT_CLANG=1, clang++ compiling a
# small file (its big libraries, libLLVM, libclang-cpp and libz3, copied
# onto the disk under test, at $TMPDIR, and bound over the installed ones),
# whose object must equal the plain one.
# Runs in a private mount namespace: a tmpfs on /run holds the
# service's socket, state and cache, and nothing of it outlives the check.
set -u
build=$1 out=$2 result=${3:-$(dirname "$2")/zeroconf.result}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${HT_ZC_NS:-}" ]; then
	HT_ZC_NS=1 exec unshare --mount --propagation private bash "$0" "$build" "$out" "$result"
fi
src=$(cd "$here/../.." && pwd)
tool=$build/tools/hugetext
preload=$build/lib/libhugetext-preload.so
dir=$(mktemp -d "${TMPDIR:-/tmp}/hugetext-zc.XXXXXX") || exit 1
: >"$result"
svc=
cleanup() {
	[ -n "$svc" ] && kill "$svc" 2>/dev/null && { wait "$svc"; } 2>/dev/null
	umount -l /run/hugetext/text 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# say RESULT NAME TEXT: a verdict, in RESULT and as a zc_result line.
say() {
	echo "$1 $2: $3" | tee -a "$result"
	python3 -c 'import json, sys; print(json.dumps({"case": "zc_result", "program": sys.argv[2],
	"result": sys.argv[1], "text": sys.argv[3]}, separators=(",", ":")))' "$@" >>"$out"
}

# The shipped configuration: it sets nothing, so a machine without the
# file is the same; where the file exists, the shipped one covers it.
conf=$src/data/hugetext.conf
if grep -v '^[[:space:]]*#' "$conf" | grep -q '[^[:space:]]'; then
	echo "zeroconf: $conf sets something: the check assumes it sets nothing" >&2
fi
[ -e /etc/hugetext.conf ] && mount --bind "$conf" /etc/hugetext.conf
# A tmpfs over /run in this namespace: nothing is made in the machine's /run.
mount -t tmpfs -o mode=0755,size=16m zc-run /run && mkdir -p /run/hugetext ||
	{ say failed all "cannot mount a tmpfs on /run"; exit 1; }

# A fresh copy of $1 at $2 on the disk under test, out of the page cache.
fresh() {
	cp "$1" "$2" && sync "$2" &&
		python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$2"
}

# Tags each report line of $2 with case $1 and appends it to OUT.json.
tag() {
	if [ -s "$2" ]; then
		sed "s/^{/{\"case\":\"$1\",/" "$2" >>"$out"
	else
		echo "{\"case\":\"$1\",\"status\":\"no report\"}" >>"$out"
	fi
}

# One start with nothing but the preload set: the environment holds no
# HUGETEXT_ variable but the report's.
start() {
	local rep=$1
	shift
	rm -f "$rep"
	env $(env | sed -n 's/^\(HUGETEXT_[A-Z_]*\)=.*/-u \1/p') LD_PRELOAD="$preload" HUGETEXT_REPORT="$rep" "$@"
}

# A number of the service's state file (0 when absent).
state_num() {
	python3 -c 'import json, sys
try: print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))
except (OSError, ValueError): print(0)' /run/hugetext/service.json "$1"
}

# Waits (at most $1 s) until the service has settled every offer: warmed,
# filled or refused as many files as it took, nothing pending.
settle() {
	local i want
	want=$(state_num offers)
	for ((i = 0; i < $1 * 5; i++)); do
		[ "$(state_num pending)" = 0 ] &&
			[ $(($(state_num warmed_total) + $(state_num filled_total) + $(state_num refused_total))) -ge "$want" ] &&
			return 0
		sleep 0.2
	done
	return 1
}

# Judges the second start's report $2 for program $1, objects matching $3:
# every one on huge pages from the page cache or the cache, none private.
# where.py's line of each object is the one named as its file, plus $4.
# The verdict goes to RESULT and, as a zc_result line, to OUT.json.
judge() {
	python3 - "$1" "$2" "$3" "$out" "$4" <<'PY' | tee -a "$result"
import json, re, sys
name, path, pattern, out, suffix = sys.argv[1:]


def verdict(result, text):
    print("%s %s: %s" % (result, name, text))
    with open(out, "a") as f:
        f.write(json.dumps({"case": "zc_result", "program": name, "result": result, "text": text},
                           separators=(",", ":")) + "\n")


lines = []
for l in open(path) if path else []:
    try:
        lines.append(json.loads(l))
    except ValueError:
        pass
# where.py's measure of each object: in how many starts its address agreed.
loads = {}
for l in open(out):
    try:
        l = json.loads(l)
    except ValueError:
        continue
    if l.get("case") == "load" and " on " not in l.get("object", ""):
        loads[l["object"]] = l
lines = [l for l in lines if re.search(pattern, l.get("object", "")) and int(l.get("bytes", 0) or 0)]
if not lines:
    verdict("failed", "no report line for " + pattern)
    sys.exit()
said, bad, skip = [], [], []
for l in lines:
    obj = l["object"].rsplit("/", 1)[-1]
    size, huge, kept = int(l.get("bytes", 0)), int(l.get("huge_bytes", 0)), int(l.get("kept_bytes", 0))
    private = int(l.get("private_code_bytes", 0))
    err = l.get("cache_error", "")
    load = loads.get(obj + suffix, {})
    if "not 2 MiB-aligned" in err:
        skip.append("%s: %s" % (obj, err))
        continue
    if load.get("agree", 1) < load.get("starts", 0) and not huge and not private:
        skip.append("%s: its address and file offset disagree modulo 2 MiB in %d of %d starts (where.py), "
                    "neither the page cache nor an entry can serve it; nothing copied" % (
                        obj, load["starts"] - load["agree"], load["starts"]))
        continue
    if kept == size and not private:
        said.append("%s page cache kept %d MiB" % (obj, kept >> 20))
    elif l.get("cache") == "hit" and huge == size and not private:
        said.append("%s cache hit %d MiB" % (obj, huge >> 20))
    else:
        bad.append("%s: status %s, cache %s%s, %d/%d MiB huge, %d kept, %d MiB private" % (
            obj, l.get("status"), l.get("cache", "none"), (" (%s)" % err) if err else "", huge >> 20,
            size >> 20, kept >> 20, private >> 20))
if bad:
    verdict("failed", "; ".join(bad + said + skip))
elif skip:
    verdict("skipped", "; ".join(skip + said))
else:
    verdict("ok", "%s, 0 MiB private" % "; ".join(said))
PY
}

# Two starts of a program ($1 its name; the command after --), the service
# given up to $2 s between them to settle; $3 and $4 as judge's.
twice() {
	local name=$1 wait=$2 pattern=$3 suffix=$4
	shift 5
	start "$dir/$name-1.json" "$@" >/dev/null 2>"$dir/$name.err"
	tag "zc_${name}_1" "$dir/$name-1.json"
	settle "$wait" || echo "zeroconf: $name: the service had not settled after $wait s" >&2
	start "$dir/$name-2.json" "$@" >/dev/null 2>>"$dir/$name.err"
	tag "zc_${name}_2" "$dir/$name-2.json"
	judge "$name" "$dir/$name-2.json" "$pattern" "$suffix"
}

# The programs, on the disk under test.
for p in bigtext-aligned bigtext-pie; do
	src_p=$build/tests/robust/$p
	[ -e "$src_p" ] || src_p=$build/tests/$p
	fresh "$src_p" "$dir/$p" || { say failed all "cannot copy $p"; exit 1; }
done
clang= root_libs=()
if [ "${HT_CLANG:-0}" = 1 ] && command -v clang++ >/dev/null; then
	clang=$(realpath "$(command -v clang++)")
	# Where libLLVM loads from the machine's root (in a guest, 9p under
	# overlayfs), before the copy on the disk under test is bound over it.
	lib=$(LD_TRACE_LOADED_OBJECTS=1 "$clang" | sed -n 's/.*=> \(\S*libLLVM\S*\) .*/\1/p')
	[ -n "$lib" ] && root_libs=("$(basename "$lib") on /=$clang:$(realpath "$lib")")
	python3 "$here/where.py" 20 "${root_libs[@]}" >>"$out"
	# Every big library clang loads (libz3 too): the service then warms or
	# fills only the check's own copies, never a file of the machine's.
	for lib in $(LD_TRACE_LOADED_OBJECTS=1 "$clang" | sed -n 's/.*=> \(\S*\) (0x.*/\1/p'); do
		real=$(realpath "$lib")
		[ "$(stat -c %s "$real")" -ge $((8 << 20)) ] || continue
		fresh "$real" "$dir/$(basename "$real")" && mount --bind "$dir/$(basename "$real")" "$real" ||
			{ say failed clang "cannot put $real on the disk under test"; clang=; break; }
	done
fi

# Where code loads: 20 starts each.
targets=("bigtext-aligned=$dir/bigtext-aligned" "bigtext-pie=$dir/bigtext-pie" "bigtext-pie via ld.so=@$dir/bigtext-pie"
	"libbigtext=$build/tests/dso-linked:$build/tests/libbigtext.so")
command -v node >/dev/null && targets+=("node=$(realpath "$(command -v node)")")
if [ -n "$clang" ]; then
	for lib in $(LD_TRACE_LOADED_OBJECTS=1 "$clang" | sed -n 's/.*=> \(\S*\(libLLVM\|libclang-cpp\)\S*\) .*/\1/p'); do
		targets+=("$(basename "$lib")=$clang:$(realpath "$lib")")
	done
fi
python3 "$here/where.py" 20 "${targets[@]}" >>"$out"

# The service, as its unit starts it.
"$tool" serve --config "$conf" >"$dir/serve.log" 2>&1 &
svc=$!
for ((i = 0; i < 100; i++)); do
	[ -s /run/hugetext/service.json ] && break
	sleep 0.1
done
[ -s /run/hugetext/service.json ] || { say failed all "the service did not start: $(head -c 300 "$dir/serve.log")"; exit 1; }

# Under qemu (TCG) filling 150 MiB and comparing it takes a while.
twice bigtext-aligned 120 'bigtext-aligned$' '' -- "$dir/bigtext-aligned"
# Linked with 4 KiB segments, as Debian links its programs: the kernel puts
# it anywhere on the 4 KiB grid, so neither path can serve it.
twice bigtext-pie 120 'bigtext-pie$' '' -- "$dir/bigtext-pie"
# The same file started through ld.so, which maps it as a library: where the
# kernel aligns file mappings of 2 MiB and more, it loads on the grid.
ldso=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import where; print(where.interpreter(sys.argv[2]))' \
	"$here" "$dir/bigtext-pie")
twice bigtext-pie-ldso 120 'bigtext-pie$' ' via ld.so' -- "$ldso" "$dir/bigtext-pie"
if [ -n "$clang" ]; then
	cp "$here/clang-input.cpp" "$dir/t.cpp"
	clang++ -O2 -c "$dir/t.cpp" -o "$dir/plain.o"
	twice clang 300 'libLLVM|libclang-cpp|libz3' '' -- clang++ -O2 -c "$dir/t.cpp" -o "$dir/moved.o"
	if ! cmp -s "$dir/plain.o" "$dir/moved.o"; then
		say failed clang-object "the object differs from the plain one ($(head -c 200 "$dir/clang.err"))"
	fi
elif [ "${HT_CLANG:-0}" = 1 ]; then
	say skipped clang "no clang++"
fi
python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); s["case"] = "zc_service"
print(json.dumps(s, separators=(",", ":")))' /run/hugetext/service.json >>"$out" 2>/dev/null

echo "zeroconf: $SECONDS s"
! grep -q '^failed' "$result"
