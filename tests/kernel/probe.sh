#!/bin/bash
# The probe: a fixed set of runs of one program (tests/robust/bigtext-aligned,
# 42 MiB of code on the 2 MiB grid) under the preload, whose JSON reports
# say which path the library takes on this kernel, file system and THP
# mode.  Usage: probe.sh BUILD_DIR OUT.json.  Each line of OUT.json is a
# report line with "case" added; the "kernel" line holds what was asked of
# the kernel directly.  Changes the hugetlb pool and puts it back; runs
# `hugetext setup` (its shared text cache) and then --undo.
set -u
build=$1 out=$2
preload=$build/lib/libhugetext-preload.so
dir=${TMPDIR:-/tmp}/hugetext-probe.$$
pool=/proc/sys/vm/nr_hugepages
mkdir -p "$dir" || exit 1
: >"$out"
old_pool=$(cat "$pool")
share=
setup_done=
cleanup() {
	[ -n "$setup_done" ] && "$build/tools/hugetext" setup --undo --state "$dir/setup.state" >/dev/null
	echo "$old_pool" >"$pool"
	[ -n "$share" ] && rm -rf "$share"
	rm -rf "$dir"
}
trap cleanup EXIT

# A fresh file whose pages are not in the page cache: as a program
# installed earlier and not run since boot.
fresh() {
	cp "$build/tests/robust/bigtext-aligned" "$dir/prog"
	sync "$dir/prog"
	python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$dir/prog"
}

# run CASE [--defaults] VAR=VALUE...: one start of the program, its report
# lines tagged.  The copy at start-up (HUGETEXT_COPY=now) and no shared
# cache (HUGETEXT_SHARE=0) unless the case sets them, or --defaults leaves
# the preload's own defaults.
run() {
	local name=$1 rep=$dir/report.json vars=(HUGETEXT_COPY=now HUGETEXT_SHARE=0) unset=()
	shift
	if [ "${1:-}" = --defaults ]; then
		vars=() unset=(-u HUGETEXT_COPY -u HUGETEXT_SHARE)
		shift
	fi
	rm -f "$rep"
	env "${unset[@]}" LD_PRELOAD="$preload" HUGETEXT_REPORT="$rep" "${vars[@]}" "$@" "$dir/prog" \
		>/dev/null 2>"$dir/err"
	local st=$?
	if [ -s "$rep" ]; then
		sed "s/^{/{\"case\":\"$name\",\"exit\":$st,/" "$rep" >>"$out"
	else
		echo "{\"case\":\"$name\",\"exit\":$st,\"status\":\"no report\"}" >>"$out"
	fi
}

# What the kernel offers, asked directly: PAGEMAP_SCAN (an ioctl on
# pagemap since 6.7: ENOTTY before), MADV_COLLAPSE (6.1), the huge page
# size of the page cache's folios is seen in the runs below.
kernel_line() {
	python3 - <<'PY' >>"$out"
import ctypes, errno, fcntl, json, mmap, os, platform
facts = {"case": "kernel", "release": platform.release()}
arg = bytearray(96)  # struct pm_scan_arg: size first, the rest zero
arg[0:8] = (96).to_bytes(8, "little")
fd = os.open("/proc/self/pagemap", os.O_RDONLY)
try:
    fcntl.ioctl(fd, 0xC0606610, arg)  # PAGEMAP_SCAN
    facts["pagemap_scan"] = True
except OSError as e:
    facts["pagemap_scan"] = e.errno != errno.ENOTTY
os.close(fd)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
size = 4 << 20
p = libc.mmap(None, size, 3, 0x22, -1, 0)
base = (p + (2 << 20) - 1) & ~((2 << 20) - 1)
ctypes.memset(base, 1, 4096)
rc = libc.madvise(ctypes.c_void_p(base), ctypes.c_size_t(2 << 20), 25)  # MADV_COLLAPSE
facts["madv_collapse"] = rc == 0 or ctypes.get_errno() not in (errno.EINVAL,)
for name in ("enabled", "defrag", "shmem_enabled"):
    try:
        with open("/sys/kernel/mm/transparent_hugepage/" + name) as f:
            facts["thp_" + name] = f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        facts["thp_" + name] = ""
print(json.dumps(facts, separators=(",", ":")))
PY
}

kernel_line
fresh
run first
run second
fresh
run copy HUGETEXT_PAGE_CACHE=0
run thp_only HUGETEXT_PAGE_CACHE=0 HUGETEXT_MODE=thp
# The preload's defaults (HUGETEXT_COPY=auto, HUGETEXT_SHARE=auto): a
# program that ends this soon pays for no copy.
fresh
run default --defaults
# 42 MiB of code: 21 pages to move it, as many again for the shared cache.
echo $((old_pool + 48)) >"$pool"
run explicit HUGETEXT_PAGE_CACHE=0 HUGETEXT_MODE=explicit
mnt=$(awk '$3 == "hugetlbfs" { print $2; exit }' /proc/self/mounts)
if [ -n "$mnt" ]; then
	share=$mnt/hugetext-probe.$$
	mkdir -m 0700 "$share"
	run share_miss HUGETEXT_SHARE=1 HUGETEXT_SHARE_DIR="$share"
	run share_hit HUGETEXT_SHARE=1 HUGETEXT_SHARE_DIR="$share"
else
	echo '{"case":"share_miss","status":"no hugetlbfs mounted"}' >>"$out"
fi
echo "$old_pool" >"$pool"

# After `hugetext setup` (its shared text cache, a tmpfs mounted with
# huge=within_size), two starts with the preload's defaults: the first
# fills the cache, the second maps it and copies nothing.  --undo after.
tool=$build/tools/hugetext
if "$tool" setup --help 2>/dev/null | grep -q text_cache_size; then
	mkdir -m 0755 "$dir/etc"
	printf 'text_cache_size = 256M\n' >"$dir/etc/hugetext.conf"
	if "$tool" setup --config "$dir/etc/hugetext.conf" --state "$dir/setup.state" >"$dir/setup.out" 2>&1; then
		setup_done=1
		fresh
		run setup_first --defaults
		run setup_second --defaults
	else
		python3 -c 'import json, sys; print(json.dumps({"case": "setup_first", "status": "setup failed",
			"error": open(sys.argv[1]).read().strip()[-300:]}))' "$dir/setup.out" >>"$out"
	fi
else
	echo '{"case":"setup_first","status":"no shared text cache in this hugetext setup"}' >>"$out"
fi
echo "probe: $(wc -l <"$out") lines in $out"
