# The parts the x86-64 matrix (tests/kernel/matrix.sh) and the arm64
# harness (tests/arm64/run.sh) share: sourced by both, after they set
#   ht_name   the prefix of their messages (matrix, arm64)
#   ht_arch   Debian's name of the guest's architecture (amd64, arm64)
#   cache     where downloads, unpacked kernels and initramfs images go
# shellcheck shell=bash

die() {
	echo "$ht_name: $*" >&2
	exit 2
}

# Installs the Debian packages named, the lists updated first when the
# install fails (CI starts bare).
install_packages() {
	[ $# -eq 0 ] && return 0
	echo "$ht_name: installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null ||
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null; } ||
		die "cannot install $*"
}

# The package name of a kernel label (6.1: Debian 12's own, which the
# metapackage linux-image-$ht_arch names; 6.12: bookworm's newest).
kernel_package() {
	local meta
	case $1 in
	6.1)
		(cd "$cache/debs" && apt-get download "linux-image-$ht_arch:$ht_arch" >/dev/null 2>&1) || return 1
		meta=$(ls -t "$cache/debs/linux-image-${ht_arch}_"*.deb | head -1)
		dpkg-deb -f "$meta" Depends | tr ',|' '\n\n' | sed 's/ *(.*//; s/^ *//; s/:[a-z0-9]*$//' |
			grep -m1 '^linux-image-6\.1\.'
		;;
	6.12)
		apt-cache search --names-only "^linux-image-6\\.12\\.[0-9]+\\+deb12-$ht_arch\$" | awk '{ print $1 }' |
			sort -V | tail -1
		;;
	esac
}

# Downloads and unpacks a kernel once; prints its directory.
kernel_dir() {
	local pkg deb dir
	mkdir -p "$cache/debs" "$cache/unpacked"
	pkg=$(kernel_package "$1")
	[ -n "$pkg" ] || { echo "$ht_name: no package for kernel $1 (apt-get update?)" >&2; return 1; }
	dir=$cache/unpacked/$pkg
	if [ ! -d "$dir/boot" ]; then
		deb=$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -1)
		if [ -z "$deb" ]; then
			(cd "$cache/debs" && apt-get download "$pkg:$ht_arch" >/dev/null 2>&1) ||
				{ echo "$ht_name: cannot download $pkg" >&2; return 1; }
			deb=$(ls "$cache/debs/${pkg}"_*.deb | head -1)
		fi
		rm -rf "$dir.tmp.$$"
		dpkg-deb -x "$deb" "$dir.tmp.$$" && mv -T "$dir.tmp.$$" "$dir" 2>/dev/null ||
			{ rm -rf "$dir.tmp.$$"; [ -d "$dir/boot" ] || return 1; }
	fi
	echo "$dir"
}

# The modules the guest needs, dependencies first, decompressed into
# $2/modules with their load order in $2/modules.load (tests/kernel/init
# loads them).  mod_path maps names to the kernel's files; kdir_mods is
# the kernel's lib/modules/VERSION.
declare -A mod_path mod_seen
add_module() {
	local name=${1//-/_} file dep
	[ -n "${mod_seen[$name]:-}" ] && return 0
	mod_seen[$name]=1
	file=${mod_path[$name]:-}
	if [ -z "$file" ]; then
		# Built in, or not on this architecture (crc32c_intel on arm64).
		grep -q "/${name}.ko" "$kdir_mods/modules.builtin" 2>/dev/null ||
			grep -q "/${1}.ko" "$kdir_mods/modules.builtin" 2>/dev/null ||
			echo "$ht_name: module $1 neither built in nor in the package" >&2
		return 0
	fi
	case $file in
	*.xz) xz -dc "$file" >"$2/modules/$name.ko" ;;
	*.zst) zstd -dqc "$file" >"$2/modules/$name.ko" ;;
	*) cp "$file" "$2/modules/$name.ko" ;;
	esac
	for dep in $(tr '\0' '\n' <"$2/modules/$name.ko" | sed -n 's/^depends=//p' | tr ',' ' '); do
		add_module "$dep" "$2"
	done
	echo "$name.ko" >>"$2/modules.load"
}

# The initramfs of kernel directory $1: the static busybox $2,
# tests/kernel/init, and the modules named after them (dependencies
# first).  Made again when init or the calling script is newer.
initramfs() {
	local kdir=$1 busybox=$2 out tree f n
	shift 2
	out=$cache/initrd/$(basename "$kdir").cpio.gz
	kdir_mods=$(ls -d "$kdir"/lib/modules/* | head -1)
	if [ -f "$out" ] && [ "$out" -nt "$ht_lib_dir/init" ] && [ "$out" -nt "$0" ] &&
		[ "$out" -nt "$ht_lib_dir/lib.sh" ]; then
		echo "$out"
		return 0
	fi
	mkdir -p "$cache/initrd"
	tree=$(mktemp -d) || return 1
	mkdir -p "$tree/bin" "$tree/modules" "$tree/proc" "$tree/sys" "$tree/dev"
	cp "$busybox" "$tree/bin/busybox"
	cp "$ht_lib_dir/init" "$tree/init"
	chmod 755 "$tree/init"
	: >"$tree/modules.load"
	mod_path=() mod_seen=()
	while read -r f; do
		n=$(basename "$f")
		n=${n%%.ko*}
		mod_path[${n//-/_}]=$f
	done < <(find "$kdir_mods/kernel" -name '*.ko*')
	for n in "$@"; do
		add_module "$n" "$tree"
	done
	# A name of this process's own, then a rename: two runs at once.
	(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp.$$" && mv "$out.tmp.$$" "$out"
	rm -rf "$tree"
	echo "$out"
}

# The source dir a meson build dir $1 was set up from.
source_of() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
		"$1/meson-info/meson-info.json"
}

# A disk image of file system $2 at $1 holding src/ and build/ of the
# project: the source $4 without .git and build dirs, the build dir $5.
# ext4 is filled here; XFS by the guest from the stage $3 (mkfs.xfs cannot
# fill an image).
make_disk() {
	local img=$1 fs=$2 stage=$3 src=$4 build=$5 size
	rm -rf "$stage" "$img"
	mkdir -p "$stage/src" "$stage/build"
	# 755 as mkdir makes it: the disk's root takes the stage's mode.
	chmod 755 "$stage"
	tar -C "$src" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$stage/src" -xf - || return 1
	# Hard links when the cache is on the build's file system: a build
	# dir holds more than a GiB of generated programs.
	cp -al "$build/." "$stage/build/" 2>/dev/null || cp -a "$build/." "$stage/build/" || return 1
	# Room for the tests' own copies of programs and libraries.
	size=$(($(du -sm "$stage" | cut -f1) * 2 + 3072))
	truncate -s "${size}M" "$img"
	case $fs in
	ext4) mkfs.ext4 -q -F -d "$stage" "$img" ;;
	xfs) mkfs.xfs -q -f "$img" ;;
	esac
}

# job.env in $1, which tests/kernel/init sources (busybox sh): each
# KEY=VALUE argument, the value single-quoted.
job_env() {
	local out=$1 kv
	shift
	: >"$out/job.env"
	for kv in "$@"; do
		printf "%s='%s'\n" "${kv%%=*}" "$(printf %s "${kv#*=}" | sed "s/'/'\\\\''/g")" >>"$out/job.env"
	done
}

# Counts a run in $1: the meson test log's tests, the clang check
# (clang.result) and the lines of the real-program and zero-configuration
# checks (real.result, zeroconf.result: one per program).  Prints "passed
# failed skipped".
count() {
	python3 - "$1/testlog.json" "$1/clang.result" "$1/real.result" "$1/zeroconf.result" <<'PY'
import json, os, sys
p = f = s = 0
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): p += 1
        elif r == "SKIP": s += 1
        else: f += 1
if os.path.exists(sys.argv[2]):
    first = open(sys.argv[2]).read().strip().splitlines()[-1:] or [""]
    if first[0] == "ok": p += 1
    elif first[0].startswith("skipped"): s += 1
    else: f += 1
for path in sys.argv[3:]:
    if not os.path.exists(path):
        continue
    broken = 0
    for line in open(path):
        if line.startswith("ok "): p += 1
        elif line.startswith("failed "): f += 1
        elif line.startswith("skipped "): s += 1
        elif line.strip(): broken = 1
    # Anything else is the check itself breaking: one failure more.
    f += broken
print(p, f, s)
PY
}

# The source's commit, and whether it had uncommitted changes.
commit_of() {
	local c
	c=$(git -C "$1" rev-parse --short=7 HEAD 2>/dev/null) || { echo unknown; return 0; }
	git -C "$1" diff --quiet HEAD -- 2>/dev/null || c="$c with uncommitted changes"
	echo "$c"
}

# Every configuration of $kernels x $fss x $thps, output in $1/KERNEL-FS-THP:
# run_config KERNEL THP FS OUT (the caller's) runs one; a line per run,
# "$ht_name: KERNEL FS THP: N passed, N failed, N skipped" (and "(the
# run did not finish)", which .ci/run counts as a failure), then all those
# lines again.  Sets failed (1 when anything failed) and tp tf ts, the
# sums, where a run that did not finish counts one failure more.
run_configs() {
	local runs=$1 kernel fs thp out p f s rc line summary=()
	failed=0 tp=0 tf=0 ts=0
	for kernel in $kernels; do
		for fs in $fss; do
			for thp in $thps; do
				out=$runs/$kernel-$fs-$thp
				rm -rf "$out"
				mkdir -p "$out"
				echo "$ht_name: kernel $kernel, $fs, THP $thp (output in $out)"
				# The commit the run tested, for the doc's rows.
				commit_of "$src" >"$out/commit"
				run_config "$kernel" "$thp" "$fs" "$out"
				read -r p f s < <(count "$out")
				rc=$(cat "$out/rc" 2>/dev/null || echo none)
				line="$ht_name: $kernel $fs $thp: $p passed, $f failed, $s skipped${ht_line_note:-}"
				[ "$f" -eq 0 ] && [ "$rc" = 0 ] || failed=1
				if [ "$rc" = none ]; then
					line="$line (the run did not finish)"
					tf=$((tf + 1))
				fi
				tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
				summary+=("$line")
				echo "$line"
			done
		done
	done
	[ ${#summary[@]} -eq 0 ] || printf '%s\n' "${summary[@]}"
}

ht_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
